"""Metrics saved as one JSON document (json.dump of a history, pandas' DataFrame.to_json in each
orient) read as the table they hold; shapes that are no table refused in one line."""

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalerl.curves import read_curves
from scalerl.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"


def _history() -> pd.DataFrame:
    """The shipped verl run, as a script would hold it before saving it."""
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return pd.DataFrame({"step": [max(int(r["step"]), 0) for r in rows],
                         "hours": [float(r["cum_wall_hours"]) for r in rows],
                         "acc": [float(r["val_score"]) for r in rows]})


@pytest.mark.parametrize("orient", ["columns", "records", "index", "split", "list-of-columns", "json.dump-pretty"])
def test_a_json_document_of_metrics_in_each_shape(tmp_path, orient):
    df = _history()
    path = tmp_path / f"metrics-{orient}.json"
    if orient == "list-of-columns":
        path.write_text(json.dumps(df.to_dict(orient="list")))
    elif orient == "json.dump-pretty":
        path.write_text(json.dumps(df.to_dict(orient="records"), indent=2))
    else:
        df.to_json(path, orient=orient)
    [curve] = read_curves(path, "hours", "acc")
    np.testing.assert_allclose(curve.x, df["hours"])
    np.testing.assert_allclose(curve.y, df["acc"])
    # the same without a .json name: told by its first character
    bare = tmp_path / "metrics"
    bare.write_bytes(path.read_bytes())
    [same] = read_curves(bare, "hours", "acc")
    np.testing.assert_array_equal(same.y, curve.y)


def test_tensorboards_download_of_a_scalar(tmp_path):
    # TensorBoard's UI, "Download JSON" under a scalar chart: [[wall_time, step, value], ...]
    df = _history()
    path = tmp_path / "run-grpo-tag-val_acc.json"
    path.write_text(json.dumps([[1.7e9 + 3600 * h, s, v] for h, s, v in zip(df["hours"], df["step"], df["acc"])]))
    [curve] = read_curves(path, "wall_time", "value")
    np.testing.assert_allclose(curve.x, df["hours"], atol=1e-6)
    np.testing.assert_allclose(curve.y, df["acc"])
    assert list(read_curves(path, "step", "value")[0].x) == list(df["step"])


def test_rows_per_run_and_a_missing_value(tmp_path):
    df = _history()
    later = df.assign(acc=df["acc"] * 0.9)
    later.loc[3, "acc"] = np.nan  # json.dump writes NaN; pandas null
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"base": df.to_dict(orient="records"), "ablation": later.to_dict(orient="records")}))
    curves = {c.name: c for c in read_curves(path, "step", "acc")}
    assert sorted(curves) == ["ablation", "base"]
    assert len(curves["ablation"]) == len(df) - 1 and curves["ablation"].dropped == 1


def test_json_documents_that_are_no_table(tmp_path):
    cases = {
        "ragged.json": ({"step": [0, 10, 20], "acc": [0.1, 0.2]}, "columns of different lengths .'step': 3, 'acc': 2"),
        "nested.json": ({"config": {"lr": 1e-6}, "final": 0.4}, "a JSON document that is no table of metrics"),
        "scalar.json": (0.5, "a JSON document that is no table of metrics"),
    }
    for name, (doc, message) in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        with pytest.raises(InputError, match=message):
            read_curves(path, "step", "acc")
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"step": 0, "acc": 0.1},\n  {"step": 10, "acc": 0.2\n]\n')
    with pytest.raises(InputError, match=r"broken\.json: not valid JSON, nor JSON lines \(Expecting ',' delimiter: line 4"):
        read_curves(broken, "step", "acc")


def test_clearmls_reported_scalars_saved_as_json(tmp_path):
    """``json.dump(task.get_reported_scalars(), f)``: {title: {series: {x, y}}}, verl's keys split at
    their first '/' by its ClearML logger, rebuilt as TITLE/SERIES."""
    df = _history()
    doc = {"val-core": {"openai/gsm8k/reward/mean@1": {"x": df["step"].tolist(), "y": df["acc"].tolist()}},
           "actor": {"pg_loss": {"x": list(range(int(df["step"].max()) + 1)),
                                 "y": [0.01] * (int(df["step"].max()) + 1)}}}
    path = tmp_path / "scalars.json"
    path.write_text(json.dumps(doc))
    (c,) = read_curves(path, "step", "val-core/openai/gsm8k/reward/mean@1")
    assert c.x.tolist() == df["step"].tolist() and np.allclose(c.y, df["acc"])
    doc["actor"]["pg_loss"]["x"][3] = "three"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="ClearML series 'actor/pg_loss': iteration 'three' is not a number"):
        read_curves(path, "step", "val-core/openai/gsm8k/reward/mean@1")


def test_tensorboard_download_json_first_point_not_compute_zero(tmp_path):
    t0 = 1.7e9  # the run's start; the validation every 50 steps, a step every 72 s
    doc = [[t0 + 72.0 * step, step, round(0.2 + 0.4 * step / (step + 200), 4)] for step in range(50, 501, 50)]
    path = tmp_path / "run-exp-tag-val_acc.json"  # the file name TensorBoard's UI gives the download
    path.write_text(json.dumps(doc))
    (curve,) = read_curves(path, "wall_time", "value")
    assert any("its wall_time counts from its first point, at step 50" in n for n in curve.notes), curve.notes
    (by_step,) = read_curves(path, "step", "value")
    assert not any("wall_time counts" in n for n in by_step.notes)
