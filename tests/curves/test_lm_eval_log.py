"""lm-evaluation-harness results of a series of checkpoints: ``lm_eval --output_path OUT`` writes
``OUT/<model_name_sanitized>/results_<date>.json`` per evaluation (lm_eval/loggers/
evaluation_tracker.py, ``save_results_aggregated``), the model's path naming the checkpoint."""

import json
import math
import re

import pytest

from scalerl.curves.io import detect_format, log_columns, read_curve, read_curves
from scalerl.curves.rows import UnknownColumn


def _sanitized(model: str) -> str:
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model)  # lm_eval.utils.sanitize_model_name


def _accuracy(step: int) -> float:
    return round(0.2 + 0.5 / (1 + math.exp(-(step - 80) / 30)), 4)


def write_results(out, model: str, acc: float, date_id: str, task: str = "gsm8k", revision: str = "") -> None:
    """One ``results_<date>.json`` as lm-eval's evaluation tracker writes it (fields trimmed)."""
    results = {
        "results": {task: {"alias": task, "exact_match,strict-match": acc, "exact_match_stderr,strict-match": 0.012,
                           "exact_match,flexible-extract": acc + 0.01, "exact_match_stderr,flexible-extract": "N/A"}},
        "group_subtasks": {task: []},
        "configs": {task: {"task": task, "num_fewshot": 5}},
        "versions": {task: 3.0},
        "n-shot": {task: 5},
        "higher_is_better": {task: {"exact_match": True}},
        "n-samples": {task: {"original": 1319, "effective": 1319}},
        "config": {"model": "vllm", "model_args": f"pretrained={model},{revision and f'revision={revision},'}tensor_parallel_size=1", "batch_size": "auto"},
        "git_hash": "4e7e0d4",
        "date": 1764000000.0,
        "task_hashes": {},
        "model_source": "vllm",
        "model_name": model,
        "model_name_sanitized": _sanitized(model),
        "start_time": 1000.0,
        "end_time": 1500.0,
        "total_evaluation_time_seconds": "500.0",
    }
    d = out / _sanitized(model)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"results_{date_id}.json").write_text(json.dumps(results, indent=2))


def _series(out, run="qwen-grpo", steps=range(10, 210, 10), pattern="/ckpt/{run}/global_step_{step}/actor/huggingface"):
    for i, step in enumerate(steps):
        write_results(out, pattern.format(run=run, step=step), _accuracy(step), f"2026-11-01T10-{i:02d}-00.000000")


def test_a_directory_of_checkpoint_evaluations_is_a_curve_over_the_checkpoints_steps(tmp_path):
    out = tmp_path / "evals"
    _series(out)
    write_results(out, "Qwen/Qwen2.5-1.5B-Instruct", 0.21, "2026-10-31T09-00-00.000000")  # the base model
    assert detect_format(out) == "lm-eval"
    curve = read_curve(out, "step", "gsm8k/exact_match,strict-match")
    assert curve.name == "qwen-grpo"
    assert list(curve.x) == list(range(10, 210, 10))  # in step order, not the directories' (10, 100, 110, ...)
    assert list(curve.y) == [_accuracy(s) for s in range(10, 210, 10)]
    assert any("Qwen/Qwen2.5-1.5B-Instruct" in n and "no checkpoint step" in n for n in curve.notes)


def test_the_columns_are_named_as_lm_evals_wandb_logger_names_them(tmp_path):
    _series(tmp_path / "evals")
    with pytest.raises(UnknownColumn) as exc:
        read_curves(tmp_path / "evals", "step", "exact_match")
    assert "gsm8k/exact_match,strict-match" in str(exc.value)
    columns = log_columns(tmp_path / "evals")
    assert {"step", "gsm8k/exact_match,strict-match", "gsm8k/exact_match,flexible-extract"} <= set(columns)
    assert "gsm8k/exact_match_stderr,flexible-extract" not in columns  # "N/A": no number


def test_one_results_file_is_read_too(tmp_path):
    _series(tmp_path, steps=[40])
    (file,) = tmp_path.rglob("results_*.json")
    assert detect_format(file) == "lm-eval"
    curve = read_curve(file, "step", "gsm8k/exact_match,strict-match")
    assert list(curve.x) == [40]


def test_a_checkpoint_evaluated_again_keeps_its_latest_evaluation_once(tmp_path):
    out = tmp_path / "evals"
    _series(out, steps=[10, 20, 30])
    write_results(out, "/ckpt/qwen-grpo/global_step_20/actor/huggingface", 0.99, "2026-11-02T10-00-00.000000")
    curve = read_curve(out, "step", "gsm8k/exact_match,strict-match")
    assert list(curve.x) == [10, 20, 30]
    assert curve.y[1] == 0.99
    assert any("evaluated more than once" in n for n in curve.notes)


def test_tasks_evaluated_in_separate_invocations_join_at_their_checkpoint(tmp_path):
    out = tmp_path / "evals"
    for i, step in enumerate([10, 20]):
        model = f"runs/grpo/checkpoint-{step}"
        write_results(out, model, 0.3 + i / 10, f"2026-11-01T10-0{i}-00.000000")
        write_results(out, model, 0.5 + i / 10, f"2026-11-01T11-0{i}-00.000000", task="math500")
    curve = read_curve(out, "step", "math500/exact_match,strict-match")
    assert list(curve.x) == [10, 20] and list(curve.y) == [0.5, 0.6]
    assert list(read_curve(out, "step", "gsm8k/exact_match,strict-match").y) == [0.3, 0.4]


@pytest.mark.parametrize("pattern, name", [
    ("runs/{run}/checkpoint-{step}", "grpo-a"),  # HF Trainer / TRL
    ("/ckpt/{run}/global_step_{step}/actor/huggingface", "grpo-a"),  # verl, merged to HF
    ("/ckpt/{run}/iter_{step:07d}", "grpo-a"),  # Megatron (slime)
    ("/ckpt/{run}/step_{step}", "grpo-a"),  # NeMo-RL, SkyRL, prime-rl
])
def test_checkpoint_paths_of_the_trainers_and_two_runs(tmp_path, pattern, name):
    out = tmp_path / "evals"
    _series(out, run="grpo-a", steps=[10, 20, 30], pattern=pattern)
    _series(out, run="grpo-b", steps=[10, 20], pattern=pattern)
    curves = {c.name: c for c in read_curves(out, "step", "gsm8k/exact_match,strict-match")}
    assert set(curves) == {"grpo-a", "grpo-b"}
    assert list(curves[name].x) == [10, 20, 30]


@pytest.mark.parametrize("revision, step", [("step1000", 1000), ("stage1-step1000-tokens5B", 1000),
                                            ("checkpoint-1000", 1000)])
def test_hub_checkpoints_named_by_their_revision_take_its_step(tmp_path, revision, step):
    """``--model_args pretrained=EleutherAI/pythia-160m,revision=step1000`` (Pythia; OLMo names its
    branches ``stage1-step1000-tokens5B``): one model name for every checkpoint, the step in the
    revision; a revision that names no step (a commit) leaves the evaluation out, as before."""
    out = tmp_path / "evals"
    write_results(out, "EleutherAI/pythia-160m", 0.31, "2026-11-01T10-00-00.000000", revision=revision)
    write_results(out, "EleutherAI/pythia-160m", 0.42, "2026-11-01T10-01-00.000000",
                  revision=revision.replace("1000", "2000"))
    write_results(out, "EleutherAI/pythia-160m", 0.5, "2026-11-01T10-02-00.000000", revision="4e7e0d4a")
    curve = read_curve(out, "step", "gsm8k/exact_match,strict-match")
    assert curve.name == "pythia-160m"
    assert list(curve.x) == [step, 2 * step] and list(curve.y) == [0.31, 0.42]
    assert any("no checkpoint step" in n for n in curve.notes)


def test_the_listing_of_columns_names_exact_match_a_metric():
    """Without --y the columns are listed, metrics first: lm-eval's and lighteval's ``exact_match`` /
    ``extractive_match`` were listed under "other"."""
    from scalerl.curves.rows import likely_columns

    columns = ["gsm8k/exact_match,strict-match", "lighteval|math_500|0/extractive_match", "lr", "step"]
    assert likely_columns("y", columns) == columns[:2]


def test_checkpoints_of_two_trainings_in_folders_of_one_name_are_two_runs(tmp_path):
    """/u/exp1/ckpt/checkpoint-N and /u/exp2/ckpt/checkpoint-N were one run 'ckpt', exp1's scores overwritten
    by exp2's and said to be "evaluated more than once" (review cr)."""
    out = tmp_path / "lm_eval_out"
    for i, step in enumerate((100, 200, 300, 400)):
        write_results(out, f"/home/u/exp1/ckpt/checkpoint-{step}", 0.20 + 0.05 * i, f"2026-11-01T10-{i:02d}-00.000000")
        write_results(out, f"/home/u/exp2/ckpt/checkpoint-{step}", 0.50 + 0.05 * i, f"2026-11-01T11-{i:02d}-00.000000")
    curves = read_curves(out, "step", "gsm8k/exact_match,strict-match")
    assert sorted(c.name for c in curves) == ["exp1/ckpt", "exp2/ckpt"]
    got = {c.name: [round(float(v), 4) for v in c.y] for c in curves}
    assert got == {"exp1/ckpt": [0.2, 0.25, 0.3, 0.35], "exp2/ckpt": [0.5, 0.55, 0.6, 0.65]}
    assert not any("evaluated more than once" in n for c in curves for n in c.notes)


def test_one_trainings_checkpoints_named_with_and_without_dot_slash_are_one_run(tmp_path):
    out = tmp_path / "lm_eval_out"
    for i, model in enumerate(("out/checkpoint-100", "out/checkpoint-200", "./out/checkpoint-300", "./out/checkpoint-400")):
        write_results(out, model, 0.20 + 0.05 * i, f"2026-11-01T10-{i:02d}-00.000000")
    curves = read_curves(out, "step", "gsm8k/exact_match,strict-match")
    assert [(c.name, list(c.x)) for c in curves] == [("out", [100.0, 200.0, 300.0, 400.0])]


# Review ct: runs named before the rows are keyed.

def test_one_checkpoint_evaluated_by_an_absolute_and_a_relative_path_is_one_point(tmp_path):
    out = tmp_path / "lm_eval_out"
    models = ["/home/u/proj/out/checkpoint-100", "/home/u/proj/out/checkpoint-200", "/home/u/proj/out/checkpoint-300",
              "out/checkpoint-300"]  # step 300 evaluated again, later, from the project directory
    for i, (model, acc) in enumerate(zip(models, (0.30, 0.35, 0.50, 0.40))):
        write_results(out, model, acc, f"2026-11-01T10-{i:02d}-00.000000")
    (curve,) = read_curves(out, "step", "gsm8k/exact_match,strict-match")
    assert list(curve.x) == [100.0, 200.0, 300.0], curve.notes
    assert [round(float(v), 2) for v in curve.y] == [0.30, 0.35, 0.40]  # the latest evaluation's value
    assert any("evaluated more than once" in n for n in curve.notes), curve.notes


def test_one_checkpoint_evaluated_by_an_absolute_and_a_dot_dot_path_is_one_point(tmp_path):
    out = tmp_path / "lm_eval_out"
    models = ["/home/u/proj/out/checkpoint-100", "/home/u/proj/out/checkpoint-200", "/home/u/proj/out/checkpoint-300",
              "../proj/out/checkpoint-300"]  # step 300 evaluated again, later, from ~/lm-evaluation-harness
    for i, (model, acc) in enumerate(zip(models, (0.30, 0.35, 0.50, 0.40))):
        write_results(out, model, acc, f"2026-11-01T10-{i:02d}-00.000000")
    curves = read_curves(out, "step", "gsm8k/exact_match,strict-match")
    assert [(len(c.x), [round(float(v), 2) for v in c.y]) for c in curves] == [(3, [0.30, 0.35, 0.40])], \
        [(c.name, list(c.x)) for c in curves]
