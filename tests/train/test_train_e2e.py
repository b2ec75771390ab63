"""End-to-end: the real tiny model trained for a few steps through the command line."""

import dataclasses
import json

import pytest

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh_wandb():
    """W&B keeps the settings of its first start in the process (an earlier test's offline mode):
    torn down before and after, a test's W&B reads its own environment, as a fresh command would."""
    wandb = pytest.importorskip("wandb")
    wandb.teardown()
    yield wandb
    wandb.teardown()


def _rows(out):
    header, rows, notes = read_runlog(out / "runlog.jsonl")
    return header, rows


@pytest.mark.parametrize("pipeline", ["pipeline-rl-k", "sync"])
def test_tiny_run_end_to_end(tiny_dir, tmp_path, capsys, pipeline):
    out = tmp_path / "run"
    code = main(small_args(out, "--set", f"pipeline={pipeline}", "--set", "k=1" if pipeline == "sync" else "k=8",
                           "--set", "eval.sets=[val, hard]"))
    assert code == 0, capsys.readouterr().err
    header, rows = _rows(out)
    assert header["recipe"] == "scalerl" and header["config"]["recipe"]["off_policy"]["pipeline"] == pipeline
    evals = [r for r in rows if r["type"] == "eval"]
    trains = [r for r in rows if r["type"] == "train"]
    assert [r["step"] for r in evals] == [0, 2, 4]
    assert [r["step"] for r in trains] == [1, 2, 3, 4]
    for r in evals:
        for key in ("gpu_hours", "flops", "tokens", "samples", "val/pass_rate", "hard/pass_rate", "lag_max_since_eval"):
            assert key in r, key
        assert 0.0 <= r["val/pass_rate"] <= 1.0
    assert evals[0]["flops"] == 0 and evals[0]["samples"] == 0
    assert evals[1]["samples"] == 2 * 16 and evals[2]["flops"] > evals[1]["flops"] > 0
    assert evals[-1]["forecast/status"]  # fitted, or a stated reason why not yet
    for r in trains:
        assert r["lag_max"] <= (8 if pipeline == "pipeline-rl-k" else 0)
    assert (out / "config.yaml").exists() and (out / "checkpoints" / "latest").exists()
    for f in ("report.md", "report.html", "curve.png", "sets.png"):
        assert (out / f).exists(), f
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out / "final")
    tok = AutoTokenizer.from_pretrained(out / "final")
    assert model.num_parameters() > 1e6 and len(tok) > 10


def test_a_local_model_directory_with_tensorboard(tiny_dir, tmp_path, capsys):
    """--model as a saved Hugging Face directory (the code path of a real model), TensorBoard on."""
    out = tmp_path / "run"
    args = small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--profile", "cpu-tiny",
                      "--set", "log.tensorboard=true")
    args[args.index("tiny")] = str(tiny_dir)
    assert main(args) == 0, capsys.readouterr().err
    header, _ = _rows(out)
    assert header["model"] == str(tiny_dir)
    assert list((out / "tensorboard").glob("events.out.tfevents*"))


def test_output_holding_a_run_is_refused(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--set", "k=1")) == 0
    capsys.readouterr()
    assert main(small_args(out)) == 2
    assert "--resume" in capsys.readouterr().err


def test_resume_extends_a_finished_run(tiny_dir, tmp_path, capsys):
    from scalerl.curves.bands import CALIBRATION_FILE

    out = tmp_path / "run"
    cal = tmp_path / "my-calibration.json"  # a user's calibration (scalerl calibrate); here the shipped one
    cal.write_text(CALIBRATION_FILE.read_text())
    assert main(small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--no-report",
                           "--set", f"forecast.calibration={cal}")) == 0
    assert "scalerl report" in capsys.readouterr().out and not (out / "report.html").exists()  # --no-report
    assert (out / "calibration.json").exists()  # the run keeps a copy ...
    cal.unlink()  # ... so resuming and reporting do not depend on the original
    assert main(["train", "--output", str(out), "--resume", "--steps", "6", "--no-progress"]) == 0
    _, rows = _rows(out)
    assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 2, 4, 6]
    assert (out / "report.html").exists()  # --no-report is not part of the run: the resumed one wrote it
    assert f"calibrated by {out / 'calibration.json'} (the run's copy of {cal}" in (out / "report.md").read_text()


def test_bad_model_path_exits_2(tmp_path, capsys):
    assert main(["train", "--model", str(tmp_path / "nope"), "--output", str(tmp_path / "r"), "--no-progress"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_eval_command(tiny_dir, capsys):
    code = main(["eval", "--model", "tiny", "--sets", "val", "--k", "2", "--problems", "10", "--json"])
    assert code == 0
    obj = json.loads(capsys.readouterr().out)
    assert 0.0 <= obj["sets"]["val"]["pass_rate"] <= 1.0


def test_eval_with_a_reward_that_fails_on_every_call_is_refused(tiny_dir, tmp_path, capsys):
    """As train does: a broken reward function is not a pass rate of 0."""
    module = tmp_path / "bad_reward.py"
    module.write_text("def reward(completion, answer):\n    raise RuntimeError('boom')\n")
    code = main(["eval", "--model", "tiny", "--reward", f"{module}:reward", "--sets", "val", "--k", "1",
                 "--problems", "3", "--max-new-tokens", "4", "--json"])
    err = capsys.readouterr().err
    assert code == 2 and "failed on all 3 calls of this evaluation" in err and "boom" in err, err


def test_eval_with_a_reward_reports_its_failed_calls(tiny_dir, tmp_path, capsys):
    module = tmp_path / "some_fail.py"
    module.write_text("def reward(prompt, completion, answer):\n"
                      "    if int(prompt.split('+')[0]) < 50:\n        return -1.0\n"
                      "    raise ValueError('boom')\n")
    args = ["eval", "--model", "tiny", "--reward", f"{module}:reward", "--sets", "val", "--k", "1",
            "--problems", "20", "--max-new-tokens", "4", "--reward-workers", "3"]  # (counted over every worker)
    assert main([*args, "--json"]) == 0, capsys.readouterr().err
    obj = json.loads(capsys.readouterr().out)
    assert obj["reward_calls"] == 20 and 0 < obj["reward_errors"] < 20 and obj["reward_timeouts"] == 0
    assert main(args) == 0
    assert f"{obj['reward_errors']} errors and 0 timeouts in 20 calls (each scored as a wrong answer (-1" in capsys.readouterr().out
    # Without failures nothing was scored -1 (review av: "0 errors and 0 timeouts in 8 calls (each scored -1)").
    module.write_text("def reward(completion, answer):\n    return 0.0\n")
    assert main(args[:-2]) == 0
    out = capsys.readouterr().out
    assert "0 errors and 0 timeouts in 20 calls\n" in out and "scored -1" not in out


def test_eval_run_takes_the_runs_reward_and_its_timeout(tmp_path):
    from scalerl.commands.evaluate import _run_settings
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig

    cfg = TrainConfig()
    cfg.task.reward, cfg.task.reward_timeout, cfg.task.reward_workers = "judge.py:score", 60.0, 4
    save_yaml(cfg, tmp_path / "config.yaml")
    (tmp_path / "final").mkdir()
    settings = _run_settings(str(tmp_path))
    assert (settings["reward"], settings["reward_timeout"], settings["reward_workers"]) == ("judge.py:score", 60.0, 4)


def test_demo_smoke(scalerl_cache, tmp_path, capsys, monkeypatch):
    """The demo's defaults (tiny-m on arithmetic-mix, the cpu-tiny-mix profile, its evaluation)
    for two steps. tiny-m's 700-step warm start (~2.5 CPU-minutes) is replaced by a 30-step
    stand-in of a smaller shape to keep the test fast; everything else is what the demo runs."""
    from scalerl.config import load_yaml
    from scalerl.models.tiny import TINY_MODELS, TinyArchitecture
    from scalerl.train.config import TrainConfig

    stand_in = dataclasses.replace(TINY_MODELS["tiny-m"], warm_start_steps=30, architecture=TinyArchitecture(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4))
    monkeypatch.setitem(TINY_MODELS, "tiny-m", stand_in)
    out = tmp_path / "demo"
    code = main(["demo", "--output", str(out), "--steps", "2", "--eval-every", "1", "--no-progress",
                 "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
                 "--set", "eval.problems=12"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "report:" in printed and (out / "report.html").exists() and (out / "final" / "config.json").exists()
    cfg = load_yaml(TrainConfig, out / "config.yaml")
    assert (cfg.model.name_or_path, cfg.task.name, cfg.recipe_name) == ("tiny-m", "arithmetic-mix", "scalerl")
    assert list(cfg.recipe.length.think_budget) == [26, 34] and cfg.recipe.length.max_new_tokens == 48
    assert (cfg.eval.samples_per_problem, cfg.eval.problems) == (2, 12)  # the demo's k; the user's --set wins
    assert cfg.recipe.off_policy.pipeline == "pipeline-rl-k" and cfg.recipe.off_policy.k == 8


def test_eval_of_a_run_reproduces_its_last_evaluation(tiny_dir, tmp_path, capsys):
    """`scalerl eval --run DIR` evaluates the final model with the run's settings and seeds."""
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "eval.sets=[val, hard]")) == 0
    _, rows = _rows(out)
    last = [r for r in rows if r["type"] == "eval"][-1]
    capsys.readouterr()
    assert main(["eval", "--run", str(out), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["model"] == str(out / "final") and set(obj["sets"]) == {"val", "hard"}
    for name in ("val", "hard"):
        assert obj["sets"][name]["pass_rate"] == pytest.approx(last[f"{name}/pass_rate"], abs=1e-9)
        assert obj["sets"][name]["frac_interrupted"] == pytest.approx(last[f"{name}/frac_interrupted"], abs=1e-9)
    # A flag overrides the run's setting.
    assert main(["eval", "--run", str(out), "--sets", "val", "--problems", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sets"]["val"]["problems"] == 5


def test_eval_of_a_directory_that_is_not_a_run_exits_2(tmp_path, capsys):
    assert main(["eval", "--run", str(tmp_path)]) == 2
    assert "config.yaml" in capsys.readouterr().err


def test_wandb_mirror_resumes_the_same_run_and_reads_back(tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb):
    """log.wandb_project (offline: no account, no network): a resumed run continues the same W&B run,
    and W&B's local run files read back as the run log's evaluations (`scalerl fit wandb/...`)."""
    from scalerl.curves import read_curves
    from scalerl.curves.wandb_run_log import exit_code, run_files

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    args = small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "log.wandb_project=scalerl-test",
                      "--no-report")
    args[args.index("--steps") + 1] = "2"
    assert main(args) == 0, capsys.readouterr().err
    run_id = (out / "wandb_run_id").read_text().strip()
    args[args.index("--steps") + 1] = "4"
    assert main([*args, "--resume"]) == 0, capsys.readouterr().err
    assert (out / "wandb_run_id").read_text().strip() == run_id
    # Two attempts, one run (an attempt that starts in the same second as another: W&B names its directory <id>-1).
    assert len([f for f in run_files(out / "wandb") if f.name == f"run-{run_id}.wandb"]) == 2  # (latest-run aside)
    _, rows = _rows(out)
    evals = [r for r in rows if r["type"] == "eval"]
    curve, = read_curves(out / "wandb", "step", "val/pass_rate")
    assert list(curve.x) == [r["step"] for r in evals] == [0, 2, 4]
    # both attempts' files whole as main returned: W&B's service writes their ends late (see _wandb_exit_codes)
    assert [exit_code(f) for f in run_files(out / "wandb")] == [0, 0]
    own, = read_curves(out, "step", "val/pass_rate")  # the run directory: its run log
    assert list(own.x) == list(curve.x) and list(own.y) == pytest.approx(list(curve.y))
    assert list(curve.y) == pytest.approx([r["val/pass_rate"] for r in evals])
    flops, = read_curves(out / "wandb", "flops", "val/pass_rate")
    assert list(flops.x) == pytest.approx([r["flops"] for r in evals])


def test_a_stopped_and_resumed_run_logs_each_step_once_to_tensorboard(tiny_dir, tmp_path, capsys, monkeypatch):
    """Stopped after step 3's row, past the checkpoint at step 2: the resume logs step 3 again. Both
    attempts' step 3 showed in TensorBoard (the curve went 1, 2, 3, 3, 4); the resumed attempt's event
    file now purges the stopped attempt's steps from 3 on, as TensorBoard's own loader shows."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator as ea

    from scalerl.train.trainer import Trainer

    step = Trainer._train_step

    def stopped_after_step_3(self):
        if self.step == 3:
            raise KeyboardInterrupt
        step(self)

    out = tmp_path / "run"
    args = small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "log.tensorboard=true", "--no-report")
    monkeypatch.setattr(Trainer, "_train_step", stopped_after_step_3)
    assert main(args) == 130
    monkeypatch.setattr(Trainer, "_train_step", step)
    assert main([*args, "--resume"]) == 0, capsys.readouterr().err
    acc = ea.EventAccumulator(str(out / "tensorboard"), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    _, rows = _rows(out)
    logged = [(e.step, e.value) for e in acc.Scalars("reward_mean")]
    assert logged == [(r["step"], pytest.approx(r["reward_mean"])) for r in rows if r["type"] == "train"]
    assert [s for s, _ in logged] == [1, 2, 3, 4]


def _wandb_exit_codes(wandb_dir):
    """The exit code each W&B run file under ``wandb_dir`` recorded (None: the run was never finished).
    Read as soon as the run returns, as a user's `scalerl fit RUN/wandb` right after training reads it:
    W&B's service process writes the file's end after ``finish()`` has returned (a CI run read None
    once here, and once a resumed run's last evaluation was missing), and the W&B sink's close waits
    for it (scalerl.train.loggers.wait_for_run_file)."""
    from scalerl.curves.wandb_run_log import exit_code

    return {f.stem: exit_code(f) for f in sorted(wandb_dir.glob("*/run-*.wandb"))}


def test_a_stopped_run_finishes_its_wandb_run_and_the_next_run_in_the_process_gets_its_own(
        tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb):
    """A run stopped (or failed) mid-training left its W&B run open, and W&B handed that open run to
    the next wandb.init in the process: a study's next run (in-process, or in a reused Ray worker)
    logged its metrics into the stopped run's W&B run. Now the stopped run's W&B run is finished as
    failed, and the next run writes a W&B run of its own that reads back as its evaluations."""
    from scalerl.curves import read_curves
    from scalerl.train.trainer import Trainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    step = Trainer._train_step

    def stopped_at_step_3(self):
        if self.step == 2:
            raise KeyboardInterrupt  # Ctrl-C (or a study's cancel) during the third step
        step(self)

    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setattr(Trainer, "_train_step", stopped_at_step_3)
    args = ["--set", "pipeline=sync", "--set", "k=1", "--set", "log.wandb_project=scalerl-test", "--no-report"]
    assert main(small_args(first, *args)) == 130
    assert "interrupted at step 2" in capsys.readouterr().err
    assert list(_wandb_exit_codes(first / "wandb").values()) == [1]  # finished, as failed
    monkeypatch.setattr(Trainer, "_train_step", step)
    assert main(small_args(second, *args)) == 0, capsys.readouterr().err
    assert list(_wandb_exit_codes(second / "wandb").values()) == [0]
    _, rows = _rows(second)
    curve, = read_curves(second / "wandb", "step", "val/pass_rate")
    assert list(curve.x) == [0, 2, 4]
    assert list(curve.y) == pytest.approx([r["val/pass_rate"] for r in rows if r["type"] == "eval"])
    stopped, = read_curves(first / "wandb", "step", "val/pass_rate")
    assert list(stopped.x) == [0, 2]  # the stopped run's evaluations only


def test_wandb_that_cannot_start_is_one_line_and_leaves_the_directory_to_the_same_command(
        tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb):
    """log.wandb_project without a W&B login: a wandb traceback, after the run had written its
    config and run log -- and then the same command, once logged in (or without W&B), was refused:
    the directory "already holds a run"."""
    import multiprocessing

    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_SILENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc, no W&B settings
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "home" / ".config" / "wandb"))
    out = tmp_path / "run"
    args = small_args(out, "--no-report")
    processes = ["--set", "backend.workers=processes", "--set", "backend.generators=1"]
    assert main([*args, *processes, "--set", "log.wandb_project=scalerl-test"]) == 2
    err = capsys.readouterr().err
    assert "log.wandb_project: W&B could not start the run" in err and "WANDB_MODE=offline" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not [p for p in ("runlog.jsonl", "config.yaml", "samples.jsonl") if (out / p).exists()]
    assert multiprocessing.active_children() == []  # the generator processes it had started: closed
    assert main(args) == 0, capsys.readouterr().err  # the same command, without W&B: not refused


@pytest.mark.parametrize("signame, status", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_stop_while_wandbs_run_file_is_awaited_says_the_run_is_complete(
        tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb, signame, status):
    """A complete run's W&B sink waits (up to 60 s) for W&B's service to write the run file's end.
    Ctrl-C or SIGTERM landing in that wait came out as a bare stop: "interrupted before training went
    on; resume with: ... --resume" on a finished run, and no report, nor a word of it. Now the line
    says the run is complete and how to write its report; W&B's file, finished as W&B tears down,
    reads as the run log; and a --resume says the run is done and writes the report."""
    import os
    import signal

    from scalerl.curves import read_curves
    from scalerl.curves import wandb_run_log

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    look, sent = wandb_run_log.exit_code, []

    def stopped_at_the_first_look(run_file):  # (the close's wait for the file: its first look)
        if not sent:
            sent.append(run_file)
            os.kill(os.getpid(), getattr(signal, signame))  # a real stop, raised by the handler in the wait
        return look(run_file)

    monkeypatch.setattr(wandb_run_log, "exit_code", stopped_at_the_first_look)
    out = tmp_path / "run"
    args = small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "log.wandb_project=scalerl-test")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # (a pytest-xdist worker ignores SIGINT)
    try:
        assert main(args) == status
    finally:
        signal.signal(signal.SIGINT, before)
    err = capsys.readouterr().err
    assert sent and "the run is complete" in err and f"scalerl report {out}" in err, err
    assert "--resume" not in err and "run the same command again" not in err, err
    assert (out / "final").is_dir() and not (out / "report.md").exists()
    fresh_wandb.teardown()  # (as the command's exit does: W&B's atexit hook)
    _, rows = _rows(out)
    evals = [r for r in rows if r["type"] == "eval"]
    curve, = read_curves(out / "wandb", "step", "val/pass_rate")  # `scalerl fit RUN/wandb`
    assert list(curve.x) == [r["step"] for r in evals] == [0, 2, 4]
    assert list(curve.y) == pytest.approx([r["val/pass_rate"] for r in evals])
    assert list(_wandb_exit_codes(out / "wandb").values()) == [0]
    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "the run is done, nothing to train" in err, err
    assert (out / "report.md").exists()


@pytest.mark.parametrize("when", ["training", "wait"])
def test_a_run_whose_wandb_service_is_killed_ends_with_a_warning_and_its_report(
        tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb, when):
    """W&B's service process killed (`pkill -f wandb-core`, the OOM killer) during the training, or
    after ``finish()`` while the close waits for the run file's end, which then never comes: the
    training goes on (a warning), the close gives up after RUN_FILE_WAIT_S with a warning naming the
    file, and the run exits 0 with its report; the run log has every row."""
    import contextlib
    import os
    import signal

    psutil = pytest.importorskip("psutil")
    from scalerl.curves import wandb_run_log
    from scalerl.train import loggers
    from scalerl.train.trainer import Trainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setattr(loggers, "RUN_FILE_WAIT_S", 1.0)
    killed = []

    def kill_service():
        if not killed:
            killed.extend(p.pid for p in psutil.Process().children(recursive=True) if "wandb-core" in p.name())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    step, look = Trainer._train_step, wandb_run_log.exit_code

    def killed_after_step_1(self):
        if when == "training" and self.step == 1:
            kill_service()
        step(self)

    def killed_at_the_first_look(run_file):
        if when == "wait":
            kill_service()
        return look(run_file)

    monkeypatch.setattr(Trainer, "_train_step", killed_after_step_1)
    monkeypatch.setattr(wandb_run_log, "exit_code", killed_at_the_first_look)
    if when == "wait":  # killed before it got to the run's end (a quiet service writes it at once, as finish() returns)
        from wandb.sdk.lib.service.service_connection import ServiceConnection

        monkeypatch.setattr(ServiceConnection, "inform_finish", lambda self, run_id: None)
    out = tmp_path / "run"
    try:
        code = main(small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "log.wandb_project=scalerl-test"))
    finally:
        with contextlib.suppress(ConnectionError):  # (W&B's connection to the killed service: its atexit hook goes)
            fresh_wandb.teardown()
    err = capsys.readouterr().err
    assert killed and code == 0, err
    if when == "wait":
        assert "warning: W&B's run file" in err and "did not hold the run's end" in err, err
    else:
        assert "warning: W&B failed at step" in err, err
    assert (out / "report.md").exists() and (out / "final").is_dir()
    _, rows = _rows(out)
    assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 2, 4]


@pytest.mark.parametrize("when", ["in-the-save", "before-the-save"])
def test_a_stop_during_the_final_save_records_the_wandb_run_as_it_ended(
        tiny_dir, tmp_path, capsys, monkeypatch, fresh_wandb, when):
    """A SIGTERM during the final model's save waits for the save, then stops the run: every step
    trained and logged, final/ in place, and the line says "the run is complete" -- but the sinks were
    closed as for a failed run, and W&B recorded it failed (exit code 1). Now W&B records it finished
    (0). A stop that lands before the save began (final/ not written) is a stop of an incomplete run:
    W&B records it failed, and the line says to resume (which saves final/)."""
    import os
    import signal

    from scalerl.train import trainer as trainer_module
    from scalerl.train.trainer import Trainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    save_policy = trainer_module.save_policy

    def stopped_in_the_save(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # a real `kill PID`, held until the save is done
        return save_policy(*args, **kwargs)

    def stopped_before_the_save(self):
        raise KeyboardInterrupt

    if when == "in-the-save":
        monkeypatch.setattr(trainer_module, "save_policy", stopped_in_the_save)
    else:
        monkeypatch.setattr(Trainer, "_save_final", stopped_before_the_save)
    out = tmp_path / "run"
    status = main(small_args(out, "--set", "pipeline=sync", "--set", "k=1", "--set", "log.wandb_project=scalerl-test",
                             "--no-report"))
    err = capsys.readouterr().err
    if when == "in-the-save":
        assert status == 143 and "the run is complete" in err and "--resume" not in err, err
        assert (out / "final" / "config.json").exists()
        assert list(_wandb_exit_codes(out / "wandb").values()) == [0]  # finished
    else:
        assert status == 130 and "last checkpoint at step 4" in err and "--resume" in err, err
        assert "the run is complete" not in err and not (out / "final").exists()
        assert list(_wandb_exit_codes(out / "wandb").values()) == [1]  # failed
