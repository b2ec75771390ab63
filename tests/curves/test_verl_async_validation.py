"""verl's fully-async trainer logs each validation at the step of the weights it scored, after later steps: its
console and its file logger keep those rows in place, no resume read into them (review dq)."""

from __future__ import annotations

import json


from scalerl.curves.verl_file_log import read_verl_file, read_verl_file_rows

VAL = "val-core/openai/gsm8k/reward/mean@1"


def _verl_fully_async_file(path):
    """verl's fully-async trainer (recipe/fully_async_policy/fully_async_trainer.py) with the file
    logger: per parameter version V a training line and a param-sync timing line at step V; the
    rollouter's validation of version V arrives after version V+1 was logged and is logged at
    ``step=val_data.param_version`` (V), with its timing line."""
    lines = []

    def val(v):
        lines.append({"step": v, "data": {VAL: round(0.3 + 0.4 * (1 - 2.718 ** (-v / 8)), 6)}})
        lines.append({"step": v, "data": {"timing_s/testing": 30.0}})

    val(0)
    for v in range(1, 31):
        lines.append({"step": v, "data": {"actor/pg_loss": 0.01, "timing_s/step": 60.0, "critic/score/mean": 0.2}})
        lines.append({"step": v, "data": {"timing_s/wait_last_valid": 0.5, "timing_s/param_sync": 2.0}})
        if v > 1 and (v - 1) % 5 == 0:
            val(v - 1)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return lines


def test_verl_file_async_validation_is_not_a_resume(tmp_path):
    log = tmp_path / "exp.jsonl"
    lines = _verl_fully_async_file(log)
    rows, notes = read_verl_file_rows(log)
    assert not any("resumes from a checkpoint" in n for n in notes), notes
    assert len(rows) == len(lines)
    (curve,) = read_verl_file(log, "step", VAL)
    # the validations of versions 0, 5, 10, 15, 20 and 25, every one of them
    assert list(curve.x) == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]
    # seconds of training: version V's validation comes after V steps of 60 s each (read now as
    # 0, 300, 540, 780, ...: the step-(V+1) rows "abandoned" lose 60 s per validation)
    (timed,) = read_verl_file(log, "cum:timing_s/step", VAL)
    assert all(x >= 60.0 * v for x, v in zip(timed.x, [0, 5, 10, 15, 20, 25])), list(timed.x)


def test_verl_console_async_validation_is_not_a_resume(tmp_path):
    from scalerl.curves.io import read_curve

    # verl's console logger prints each tracker call as concat_dict_to_str: "step:N - key:value - ..."
    lines = _verl_fully_async_file(tmp_path / "exp.jsonl")
    log = tmp_path / "train.log"
    log.write_text("\n".join(f"step:{o['step']} - " + " - ".join(f"{k}:{v!r}" for k, v in o["data"].items())
                             for o in lines) + "\n")
    curve = read_curve(log, "cum:timing_s/step", VAL)
    assert not any("resumes from a checkpoint" in n for n in curve.notes), curve.notes
    assert len(curve.x) == 6
    assert all(x >= 60.0 * v for x, v in zip(curve.x, [0, 5, 10, 15, 20, 25])), list(curve.x)
