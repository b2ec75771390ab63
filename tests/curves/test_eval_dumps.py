"""Evaluations dumped by trainers: verl's validation_data_dir, SkyRL's dumped_evals."""

import json

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.curves.io import detect_format, log_columns
from scalerl.errors import InputError

from .conftest import QWEN, REAL_CSV

SCORES = {0: 0.25, 10: 0.40, 20: 0.50, 30: 0.55, 40: 0.58}


def _verl_dumps(root, scores=SCORES, n=200, source=None):
    """A directory as verl's validation writes it: ``<step>.jsonl``, one line per sample, the
    reward's extra fields beside the score (``acc`` a bool, as verl's math reward returns it)."""
    root.mkdir()
    for step, p in scores.items():
        k = round(p * n)
        with open(root / f"{step}.jsonl", "w") as f:
            for i in range(n):
                line = {"input": "What is 2+2?", "output": "<think>...</think>4", "gts": "4",
                        "score": 1.0 if i < k else 0.0, "step": step, "acc": i < k, "pred": "4"}
                if source:
                    line["data_source"] = source
                f.write(json.dumps(line) + "\n")
    return root


def test_verl_validation_dumps_read_as_the_mean_score_per_step(tmp_path):
    d = _verl_dumps(tmp_path / "val_generations")
    assert detect_format(d) == "eval-dumps"
    c = read_curve(d, "step", "score")
    assert c.x.tolist() == sorted(SCORES) and np.allclose(c.y, [SCORES[s] for s in sorted(SCORES)])
    assert np.allclose(read_curve(d, "step", "acc").y, c.y)  # a bool field counts 1 / 0
    assert {"score", "acc", "samples", "step"} <= set(log_columns(d))
    assert read_curve(d, "samples", "score").x.tolist() == [200] * 5  # not a compute, but readable


def test_verl_dumps_with_a_data_source_give_per_set_columns_and_a_torn_line_is_noted(tmp_path):
    d = _verl_dumps(tmp_path / "val", source="openai/gsm8k")
    with open(d / "40.jsonl", "a") as f:
        f.write('{"input": "cut sho')
    c = read_curve(d, "step", "openai/gsm8k/score")
    assert np.allclose(c.y, [SCORES[s] for s in sorted(SCORES)])
    assert any("torn last line" in n for n in c.notes)
    (d / "50.jsonl").write_text("")  # killed as it began the next dump
    assert read_curve(d, "step", "openai/gsm8k/score").x.tolist() == sorted(SCORES)
    with open(d / "20.jsonl", "r+") as f:
        lines = f.readlines()
        lines[3] = "garbage\n"
        f.seek(0)
        f.writelines(lines)
    with pytest.raises(InputError, match=r"20.jsonl: line 4 is not a JSON object"):
        read_curves(d, "step", "score")


def test_skyrl_dumped_evals_read_from_the_export_path_or_the_dumps_directory(tmp_path):
    export = tmp_path / "export"
    for step, p in SCORES.items():
        d = export / "dumped_evals" / f"global_step_{step}_evals"
        d.mkdir(parents=True)
        (d / "aggregated_results.jsonl").write_text(json.dumps({"eval/all/avg_score": p, "eval/gsm8k/pass_at_4": p + 0.1}) + "\n")
        (d / "gsm8k.jsonl").write_text(json.dumps({"input_prompt": "q", "output_response": "a", "score": 1.0}) + "\n")
    (export / "dumped_evals" / "eval_only").mkdir()  # an evaluation without a training step: not a point
    for path in (export, export / "dumped_evals"):
        c = read_curve(path, "step", "eval/all/avg_score")
        assert c.name == "export" and c.x.tolist() == sorted(SCORES)
        assert np.allclose(c.y, [SCORES[s] for s in sorted(SCORES)])


def test_a_directory_of_dumps_forecasts_like_the_console_log(tmp_path):
    """The shipped verl run's scores written as dumps (its evaluation before training, step -1 in
    the CSV, at step 0 as verl dumps it): the same curve, the same fit."""
    import csv

    from scalerl.curves import Curve, forecast

    rows = [r for r in csv.DictReader(open(REAL_CSV)) if r["run"] == QWEN]
    scores = {max(int(r["step"]), 0): float(r["val_score"]) for r in rows}
    ref = Curve.from_arrays(list(scores), list(scores.values()), name="ref")
    c = read_curve(_verl_dumps(tmp_path / "dumps", scores, n=2000), "step", "score")
    assert np.allclose(c.x, ref.x) and np.allclose(c.y, ref.y, atol=3e-4)  # 2,000 samples: steps of 1/2000
    assert forecast(c, n_boot=0).fit.A == pytest.approx(forecast(ref, n_boot=0).fit.A, abs=2e-3)
