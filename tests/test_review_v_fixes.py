"""Fixes after review v of the late-start warning, reward files and the start-over refusal: a given R0 is
not told it is the first evaluation; the compare note only on efficiency verdicts; a reward file's functions
run in a spawn process pool; the reward time limits are fields of the task, not settings, and eval takes them
with --set; a clock that restarts at a resume is told so, first."""

import json
import textwrap

import pytest

from scalerl.cli import main
from scalerl.curves import compare, fit_sigmoid, read_curve
from scalerl.curves.data import Curve
from scalerl.errors import InputError

# verl's Qwen2-7B GRPO GSM8K validation, as in tests/curves/test_compute_origin.py.
STEPS = list(range(0, 106, 5))
def _refused(argv):
    """The command stopped with an error (a return code or SystemExit, as the CLI does either)."""
    try:
        return main(argv) != 0
    except SystemExit as exc:
        return exc.code != 0


ACC = [0.229, 0.856, 0.879, 0.886, 0.892, 0.886, 0.900, 0.897, 0.896, 0.890, 0.895, 0.885,
       0.891, 0.893, 0.895, 0.889, 0.892, 0.897, 0.891, 0.889, 0.898, 0.898]


def test_a_given_r0_is_not_told_that_the_first_evaluation_is_taken_as_r0():
    late = Curve.from_arrays([1000 + s for s in STEPS], ACC, name="late", x_name="global_step", y_name="val_acc")
    fit = fit_sigmoid(late, r0=0.1)  # the later part of a run, its start given as the warning advises
    said = [w for w in fit.warnings if "starts at 1000" in w]
    assert not [w for w in said if "first evaluation is taken as the start (R0)" in w or "--r0" in w], said


def test_an_unstable_verdict_is_not_said_to_compare_compute():
    falls = ACC[:14] + [0.80, 0.70, 0.60, 0.50, 0.40, 0.30, 0.25, 0.20]
    base = Curve.from_arrays(STEPS, ACC, name="base", x_name="global_step")
    late = Curve.from_arrays([1000 + s for s in STEPS], falls, name="late", x_name="global_step")
    res = compare({"base": [base], "late": [late]}, baseline="base", n_boot=100)
    (cls,) = res.classifications
    assert cls.kind == "unstable run"
    assert not [n for n in res.notes if "verdict compares compute as each run counts it" in n], res.notes


def test_a_reward_file_that_uses_a_spawn_process_pool_scores(tmp_path):
    from scalerl.tasks.base import Problem
    from scalerl.tasks.rewards import UserReward

    path = tmp_path / "pool_reward.py"  # a sandbox run in a process pool (spawn: macOS; forkserver: Linux, 3.14)
    path.write_text(textwrap.dedent('''
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        def check(completion, answer):
            return completion.strip() == answer

        def score(completion, answer):
            with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
                return pool.submit(check, completion, answer).result()
        '''))
    with UserReward(f"{path}:score", timeout=60) as reward:
        assert reward(Problem(id="2+2", prompt="2+2=", answer="4"), "4") == 1.0, reward.stats.first_error


def test_reward_load_timeout_in_task_settings_is_an_input_error_not_a_traceback(capsys):
    assert _refused(["eval", "--task", "arithmetic", "--set", "task.settings={reward_load_timeout: 120}",
                     "--problems", "1", "--k", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert ("task.settings 'reward_load_timeout' is not a task setting but the reward function's "
            "task.reward_load_timeout: eval takes it as --set task.reward_load_timeout=SECONDS") in err


def test_train_refuses_a_reward_field_as_a_task_setting(tmp_path, capsys):
    assert _refused(["train", "--model", "tiny", "--steps", "1", "--output", str(tmp_path / "run"), "--no-progress",
                     "--set", "task.settings={reward_timeout: 30}"])
    assert "task.settings 'reward_timeout' is not a task setting but task.reward_timeout itself" in capsys.readouterr().err


def test_eval_takes_the_load_timeout_its_refusal_advises(capsys):
    try:
        rc = main(["eval", "--task", "arithmetic", "--set", "task.reward_load_timeout=120",
                   "--problems", "1", "--k", "1", "--no-progress"])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert "eval takes task.settings={KEY: VALUE, ...} only" not in err
    assert rc == 0, err


def test_a_clock_that_restarts_at_a_resume_is_not_told_to_delete_the_first_attempt(tmp_path):
    rows = []
    for s in range(10, 110, 10):
        rows.append({"step": s, "reward": round(0.1 + 0.003 * s, 3), "elapsed_time": f"0:{s // 10:02d}:00"})
    for s in range(60, 210, 10):  # resumed from checkpoint-50: the trainer's clock starts again
        rows.append({"step": s, "reward": round(0.1 + 0.003 * s, 3), "elapsed_time": f"0:{(s - 50) // 10:02d}:00"})
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    resumed = read_curve(path, "step", "reward")  # the reader sees one run, resumed at step 60
    assert any("resumes from a checkpoint" in n for n in resumed.notes)
    with pytest.raises(InputError) as exc:
        read_curve(path, "wall_time", "reward")
    text = str(exc.value)
    # Which of three it is cannot be told from x alone: the clock restarting at a resume is named first,
    # with what to choose instead (before: only "a training started anew ... delete the first attempt's rows").
    clock = text.index("is it a clock or counter that restarts when a training resumes from a checkpoint")
    assert "choose one that goes on: a global step, such as the global_step a reader gives, or cum: of a per-step time" in text
    assert clock < text.index("delete the first attempt's rows")


def test_eval_reward_limits_are_checked_as_trains(capsys):
    assert _refused(["eval", "--task", "arithmetic", "--set", "task.reward_load_timeout=0", "--problems", "1", "--k",
                     "1", "--no-progress"])
    assert "task.reward_load_timeout must be seconds in (0, 86400]" in capsys.readouterr().err


def test_a_ceiling_verdict_gets_no_compute_origin_note():
    higher = [a + (0.04 if i else 0.0) for i, a in enumerate(ACC)]
    base = Curve.from_arrays(STEPS, ACC, name="base", x_name="global_step")
    late = Curve.from_arrays([1000 + s for s in STEPS], higher, name="late", x_name="global_step")
    res = compare({"base": [base], "late": [late]}, baseline="base", n_boot=100)
    (cls,) = res.classifications
    if cls.kind != "efficiency":
        assert not [n for n in res.notes if "verdict compares compute as each run counts it" in n], res.notes
