"""lighteval results of a series of checkpoints: ``lighteval vllm "model_name=CKPT" TASKS --output-dir
OUT`` writes ``OUT/results/<model_name>/results_<date>.json`` per evaluation
(src/lighteval/logging/evaluation_tracker.py, ``save_results``; the model's path kept as
directories), ``{"config_general": {"model_name": ...}, "results": {"<suite>|<task>|<shots>":
{"extractive_match": ..., "extractive_match_stderr": ...}, "all": {...}}, "versions": {...}, ...}``."""

import json
import math

from scalerl.curves.io import detect_format, log_columns, read_curve

TASK = "lighteval|math_500|0"


def _accuracy(step: int) -> float:
    return round(0.2 + 0.5 / (1 + math.exp(-(step - 80) / 30)), 4)


def write_results(out, model: str, acc: float, date_id: str, revision: str | None = None) -> None:
    results = {
        "config_general": {"lighteval_sha": "3fd1526", "num_fewshot_seeds": 1, "max_samples": None, "job_id": "0",
                           "start_time": 1234.5, "end_time": 1534.5, "total_evaluation_time_secondes": "300.0",
                           "model_name": model, "model_sha": "", "model_dtype": None, "model_size": None,
                           "model_config": {"model_name": model, "dtype": "bfloat16"}},
        "results": {TASK: {"extractive_match": acc, "extractive_match_stderr": 0.02},
                    "all": {"extractive_match": acc, "extractive_match_stderr": 0.02}},
        "versions": {TASK: 1},
        "config_tasks": {TASK: {"name": "math_500"}},
        "summary_tasks": {TASK: {"hashes": {}, "truncated": 0, "padded": 0}},
        "summary_general": {"hashes": {}, "truncated": 0, "padded": 0},
    }
    if revision is not None:
        results["config_general"]["model_config"]["revision"] = revision
    d = out / "results" / model.strip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / f"results_{date_id}.json").write_text(json.dumps(results, indent=2))


def test_a_directory_of_checkpoint_evaluations_is_a_curve_over_the_checkpoints_steps(tmp_path):
    out = tmp_path / "lighteval"
    for i, step in enumerate(range(10, 210, 10)):
        write_results(out, f"/ckpt/grpo/global_step_{step}/actor/huggingface", _accuracy(step),
                      f"2026-11-01T10-{i:02d}-00.000000")
    write_results(out, "/ckpt/grpo/global_step_50/actor/huggingface", 0.99, "2026-11-02T10-00-00.000000")  # again
    assert detect_format(out) == "lighteval"
    assert detect_format(next(out.rglob("results_*.json"))) == "lighteval"
    curve = read_curve(out, "step", f"{TASK}/extractive_match")
    assert curve.name == "grpo"
    assert list(curve.x) == list(range(10, 210, 10))
    assert list(curve.y) == [0.99 if s == 50 else _accuracy(s) for s in range(10, 210, 10)]
    assert any("evaluated more than once" in n for n in curve.notes)
    assert {"step", f"{TASK}/extractive_match", "all/extractive_match"} <= set(log_columns(out))


def test_hub_checkpoints_named_by_their_revision_take_its_step(tmp_path):
    """``lighteval vllm "model_name=allenai/OLMo-2-1124-7B,revision=stage1-step1000-tokens5B"``: the
    same model name for every checkpoint, the step in the revision."""
    out = tmp_path / "lighteval"
    for i, step in enumerate([1000, 2000, 3000]):
        write_results(out, "allenai/OLMo-2-1124-7B", _accuracy(step / 25), f"2026-11-01T10-{i:02d}-00.000000",
                      revision=f"stage1-step{step}-tokens{step // 200}B")
    curve = read_curve(out, "step", f"{TASK}/extractive_match")
    assert list(curve.x) == [1000, 2000, 3000]
    assert curve.name == "OLMo-2-1124-7B"
