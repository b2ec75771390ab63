"""The math task's held-out val share as a run uses it: the rows past the ones evaluated train, rows left out for
an evaluated prompt are counted, and warnings speak of the problems evaluated (review dj)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import yaml

from scalerl.cli import main
from test_user_data_runs import _user_model, _write_jsonl


def _args(model, data, output, *extra):
    return ["train", "--model", str(model), "--task", "math", "--data", str(data), "--output", str(output),
            "--no-progress", "--no-report", "--steps", "1", "--eval-every", "1",
            "--set", "pipeline=sync", "--set", "batch.prompts_per_step=2", "--set", "batch.generations_per_prompt=2",
            "--set", "eval.samples_per_problem=1", "--set", "length.mode=truncate",
            "--set", "length.max_new_tokens=4", "--set", "forecast.enabled=false", *extra]


def _sampler_prompts(run):
    import torch

    state = torch.load(run / "checkpoints" / "step_000001" / "state.pt", weights_only=False)
    return state["sampler"]["num_prompts"]


def test_held_out_rows_past_eval_problems_are_not_silently_lost(tmp_path, random_model, char_tokenizer, capsys, caplog):
    from scalerl.cli import main

    model = _user_model(tmp_path, random_model, char_tokenizer)
    n = 400
    data = _write_jsonl(tmp_path / "train.jsonl", [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(n)])
    run = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        assert main(_args(model, data, run, "--set", "eval.problems=2")) == 0, capsys.readouterr().err
    err = capsys.readouterr().err + "\n" + "\n".join(r.getMessage() for r in caplog.records)
    trained_on = _sampler_prompts(run)
    evaluated = 2
    lost = n - trained_on - evaluated
    # ~20 rows are held out as val (5%), 2 of them evaluated: the other ~18 must train (as the rows past
    # task.settings max_val do), or at least be counted in a warning -- not vanish from the experiment.
    said = any(str(lost) in line and "val" in line for line in err.splitlines())
    assert lost == 0 or said, f"{lost} of {n} rows neither trained on nor evaluated, unsaid; stderr:\n{err}"


def test_training_rows_dropped_for_a_held_out_prompt_are_counted(tmp_path, caplog):
    from scalerl.tasks.math import MathTask, _held_out

    rows, doubled = [], None
    for i in range(400):
        prompt = f"What is {i} + 1?"
        rows.append({"prompt": prompt, "answer": str(i + 1)})
        if doubled is None and _held_out(prompt, 0.05, "scalerl-math-v1") \
                and not _held_out(prompt + " ", 0.05, "scalerl-math-v1"):
            doubled = prompt
            rows.append({"prompt": prompt + " ", "answer": str(i + 1)})  # another export's trailing space
    assert doubled is not None
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    task = MathTask(data=str(data))
    with caplog.at_level(logging.WARNING):
        train, val = task.train_problems(), task.eval_sets()["val"]
    dropped = len(rows) - len(train) - len(val)
    assert dropped == 1  # the copy with the trailing space: neither trained on nor in val
    assert any("1 of its" in r.getMessage() or "left out" in r.getMessage() for r in caplog.records), \
        "a training row was removed for its prompt being held out, and no warning counted it"


def test_repeat_warning_speaks_of_the_problems_evaluated(tmp_path, random_model, char_tokenizer, capsys, caplog):
    from scalerl.cli import main
    from scalerl.tasks.math import _held_out

    model = _user_model(tmp_path, random_model, char_tokenizer)
    rows = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(400)]
    held = [r for r in rows if _held_out(r["prompt"], 0.05, "scalerl-math-v1")]
    assert len(held) > 3
    rows.append(dict(held[-1]))  # a copy of the last held-out problem: in val, far past the 2 evaluated
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    with caplog.at_level(logging.WARNING):
        assert main(_args(model, data, tmp_path / "run", "--set", "eval.problems=2")) == 0, capsys.readouterr().err
    said = capsys.readouterr().err + "\n".join(r.getMessage() for r in caplog.records)
    # The 2 problems evaluated are distinct: no copy "counts in its pass rate".
    assert "repeat an earlier one" not in said, said


# A math run saved before the cap was written into its config (no max_val): resumed with its own command or
# config.yaml given again, the cap was taken as a change of a setting never given (review dk).


def _math_data(tmp_path: Path) -> Path:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(400)))
    return data


def _old_math_run(tmp_path: Path, *overrides: str) -> Path:
    """A math run's config.yaml as scalerl wrote it before 1fd1075: task.settings without max_val (the run held
    out up to the default 1000 rows, and resumes so: the trainer reads the saved config as it is)."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    run = tmp_path / "run"
    run.mkdir()
    cfg = resolve(TrainConfig(), ["run.steps=2", "eval.every=1", "pipeline=sync", f"run.output={run}",
                                  "task.name=math", f"task.data={_math_data(tmp_path)}", "eval.problems=3",
                                  *overrides])
    settings = dict(cfg.task.settings)
    settings.pop("max_val")
    cfg.task.settings = settings
    save_yaml(cfg, run / "config.yaml", header="scalerl run run (resolved config)")
    return run


def test_old_math_run_resumes_with_its_own_config_extended(tmp_path, capsys):
    run = _old_math_run(tmp_path)
    edited = yaml.safe_load((run / "config.yaml").read_text())
    edited["run"]["steps"] = 9
    config = tmp_path / "extended.yaml"
    config.write_text(yaml.safe_dump(edited))
    capsys.readouterr()
    code = main(["train", "--config", str(config), "--output", str(run), "--resume", "--print-config"])
    err = capsys.readouterr()
    assert code == 0, err.err
    assert yaml.safe_load(err.out)["run"]["steps"] == 9


def test_old_math_run_resumes_with_its_original_task_settings(tmp_path, capsys):
    run = _old_math_run(tmp_path, "task.settings={prompt_field: prompt}")
    capsys.readouterr()
    code = main(["train", "--task", "math", "--data", str(tmp_path / "train.jsonl"), "--output", str(run), "--resume",
                 "--set", "eval.problems=3", "--set", "task.settings={prompt_field: prompt}", "--print-config"])
    err = capsys.readouterr().err
    assert code == 0, err
