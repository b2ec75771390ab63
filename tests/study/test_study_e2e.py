"""End to end: micro-studies of the real tiny model through ``scalerl study``.

Three optimizer steps of the tiny model need not lift its pass rate (that takes tens of steps
at full batch), so these tests check the machinery -- runs, resumption, files, the report and
the shape of its verdicts -- while tests/study/test_analysis.py checks the verdicts themselves
against known truth.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalerl.cli import main
from scalerl.study import local_runs, runner
from scalerl.study.one_run import execute_run
from scalerl.study.plan import Budget
from scalerl.study.run_state import run_status
from scalerl.study.spec import load_spec

from .conftest import kill_when_logged, micro_args

pytestmark = pytest.mark.slow

#: What the report's classification of a variant must hold when its curve could be fitted.
CLASSIFICATION_KEYS = {"label", "baseline", "kind", "better", "dA", "dA_interval", "shared_A", "B", "C_mid",
                       "dB_interval", "log_cmid_ratio_interval", "rule", "explanation"}

_current: list = [None]
_writes: dict = {}


def _audit(event, args):
    # Attribute every file a run creates, writes, renames, truncates or removes to that run.
    run = _current[0]
    if run is None:
        return
    path = None
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        mode, flags = args[1], args[2] or 0
        writing = any(c in mode for c in "wax+") if mode else bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        path = args[0] if writing else None
    elif event in ("os.rename", "os.mkdir", "os.remove", "os.truncate", "shutil.rmtree"):
        path = args[1] if event == "os.rename" else args[0]
    if isinstance(path, (str, bytes, os.PathLike)):
        _writes.setdefault(run, set()).add((event == "os.mkdir", Path(os.fsdecode(path)).resolve()))


sys.addaudithook(_audit)  # audit hooks cannot be removed; it does nothing outside _tracked runs


def _tracked(execute):
    def run(cfg_dict, budget):
        _current[0] = Path(cfg_dict["run"]["output"]).resolve()
        try:
            return execute(cfg_dict, budget)
        finally:
            _current[0] = None

    return run


def test_micro_study_end_to_end(study_cache, tmp_path, capsys, monkeypatch):
    """Two variants x two seeds: every run trains, the report is written, each verdict has its
    full structure -- and each run writes only inside its own directory. The runs use the default
    recipe, whose PipelineRL-8 is deterministic (seeded in-flight updates): the outcome does not
    depend on thread timing."""
    out = tmp_path / "study"
    monkeypatch.setattr(local_runs, "execute_run", _tracked(execute_run))
    t0 = time.perf_counter()
    code = main(micro_args(out, "--family", "loo", "--only", "loo-loss-dapo", "--seeds", "2"))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    runs = sorted((out / "runs").glob("*/seed*"))
    assert [f"{r.parent.name}/{r.name}" for r in runs] == [
        "loo-loss-dapo/seed0", "loo-loss-dapo/seed1", "scalerl/seed0", "scalerl/seed1"]
    spec = load_spec(out / "study.yaml")
    for r in runs:
        assert run_status(r, Budget.of(spec)) == "done"
        header = json.loads((r / "runlog.jsonl").read_text().splitlines()[0])
        assert header["recipe"] == ("scalerl" if r.parent.name == "scalerl" else "scalerl-loo-loss-dapo")
        assert header["config"]["run"]["seed"] == int(r.name.removeprefix("seed"))
        # Deterministic PipelineRL-8 (seeded updates on generator threads): no thread timing in the outcome.
        assert header["config"]["recipe"]["off_policy"]["pipeline"] == "pipeline-rl-k"
        assert (header["config"]["backend"]["workers"], header["config"]["backend"]["updates"]) == ("threads", "auto")
    for name in ("report.md", "report.html", "analysis.json", "progress.jsonl"):
        assert (out / name).stat().st_size > 0, name
    assert [json.loads(line)["status"] for line in (out / "progress.jsonl").read_text().splitlines()] == ["trained"] * 4

    analysis = json.loads((out / "analysis.json").read_text())
    variants = {v["label"]: v for v in analysis["variants"]}
    assert set(variants) == {"scalerl", "loo-loss-dapo"} and variants["scalerl"]["is_base"]
    assert all(v["seeds"] == [0, 1] for v in variants.values())
    dapo = variants["loo-loss-dapo"]
    assert dapo["expected"] == "ceiling" and dapo["components"] == ["loss"]
    if dapo["classification"] is not None:
        assert CLASSIFICATION_KEYS <= set(dapo["classification"])
        assert dapo["classification"]["kind"] in ("ceiling", "efficiency", "no clear effect", "unstable run")
        assert dapo["kind"] == dapo["classification"]["kind"] and dapo["agreement"] != "n/a"
        assert (out / "curves.png").exists() and (out / "intervals.png").exists()
    else:  # a curve (its own or the base's) that did not rise in four steps: the report says why
        assert dapo["not_classified"]
        row = "| loo-loss-dapo | loss | " + ("not fitted |" if dapo["fit_error"] else "not classified (see the notes) |")
        assert row in (out / "report.md").read_text()
    assert "what each choice moved" in captured.out

    # Share nothing mutable: every file a run wrote inside the study lies in its own directory
    # (creating the parent directories it lives in, exist_ok, is the only thing outside it).
    assert set(_writes) == {r.resolve() for r in runs}
    for run_dir, writes in _writes.items():
        inside = [(mkdir, p) for mkdir, p in writes if out.resolve() in p.parents]
        assert any(run_dir in p.parents for _, p in inside), run_dir
        for mkdir, p in inside:
            assert p == run_dir or run_dir in p.parents or (mkdir and p in run_dir.parents), (run_dir, p)
        assert not [p for _, p in writes if Path(study_cache).resolve() in p.parents]  # the shared cache is read-only
    print(f"micro-study: {time.perf_counter() - t0:.0f} s")


@pytest.mark.extended  # (make test-all: a killed study run's resume: tests/study/test_resume.py in the default run)
def test_killed_study_resumes_and_skips_finished_runs(study_cache, tmp_path, capsys):
    out = tmp_path / "study"
    args = micro_args(out, "--family", "loo", "--only", "loo-aggregation-sample", "--set", "pipeline=sync",
                      "--set", "k=1")
    proc = subprocess.Popen([sys.executable, "-m", "scalerl.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ))
    second = out / "runs" / "loo-aggregation-sample" / "seed0"
    # killed inside its second run, once it has trained a step
    kill_when_logged(proc, second / "runlog.jsonl", lambda line: '"type":"train"' in line,
                     "the second run to start training", timeout=300)
    first = out / "runs" / "scalerl" / "seed0"
    budget = Budget.of(load_spec(out / "study.yaml"))
    assert run_status(first, budget) == "done" and run_status(second, budget) == "partial"
    first_log = (first / "runlog.jsonl").read_bytes()

    assert main([*args]) == 0  # the same command again continues the study
    err = capsys.readouterr().err
    assert "[1/2] scalerl/seed0: already finished" in err
    assert "[2/2] loo-aggregation-sample/seed0: resuming" in err and "resumed in" in err
    assert (first / "runlog.jsonl").read_bytes() == first_log  # the finished run was not touched
    rows = [json.loads(line) for line in (second / "runlog.jsonl").read_text().splitlines()[1:]]
    assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 1, 2, 3, 4]  # no row lost or repeated
    assert run_status(second, budget) == "done" and (out / "report.md").exists()


# `extended` (make test-all, 25-70 s): a study's runs in worker processes are
# test_local_parallel_..., and training on a Ray cluster is tests/pipeline/test_ray_backend.py.
@pytest.mark.ray_cluster
@pytest.mark.extended
def test_ray_backend_runs_every_run_as_a_task(study_cache, tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "study"
    code = main(micro_args(out, "--family", "loo", "--only", "loo-fp32-head-off", "--backend", "ray",
                           "--threads", "1", "--parallel", "2"))
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("submitted") == 2
    budget = Budget.of(load_spec(out / "study.yaml"))
    for label in ("scalerl", "loo-fp32-head-off"):
        assert run_status(out / "runs" / label / "seed0", budget) == "done"
    statuses = [json.loads(line)["status"] for line in (out / "progress.jsonl").read_text().splitlines()]
    assert statuses == ["trained", "trained"]
    assert (out / "report.html").exists()


@pytest.mark.extended  # (make test-all: the micro study end to end is in the default run)
def test_local_parallel_runs_in_worker_processes_as_they_would_in_process(study_cache, tmp_path, capsys):
    """--parallel 2 on the local backend: both runs train at once in spawned workers, each records
    its CPU time, and a run trained in a worker is the run trained in this process (the default
    recipe's PipelineRL-8 is seeded: nothing in the outcome depends on where or how fast it ran)."""
    out = tmp_path / "study"
    code = main(micro_args(out, "--family", "loo", "--only", "loo-fp32-head-off", "--parallel", "2", "--threads", "1"))
    err = capsys.readouterr().err
    assert code == 0, err
    assert "2 run(s) to train, 2 at once, 1 torch thread(s) each" in err and "CPU-min" in err
    progress = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert sorted(o["label"] for o in progress) == ["loo-fp32-head-off", "scalerl"]
    assert all(o["status"] == "trained" and o["cpu_seconds"] > 0 for o in progress)
    assert "training CPU time (sum over runs)" in (out / "report.md").read_text()

    worker_run = out / "runs" / "scalerl" / "seed0"
    cfg = yaml_config(worker_run)
    cfg["run"]["output"] = str(tmp_path / "in-process")
    outcome = execute_run(cfg, Budget.of(load_spec(out / "study.yaml")))
    assert outcome.status == "trained" and outcome.cpu_seconds > 0

    def evals(run):
        return [(r["step"], r["val/pass_rate"]) for r in map(json.loads, (run / "runlog.jsonl").read_text().splitlines())
                if r.get("type") == "eval"]

    assert evals(worker_run) == evals(tmp_path / "in-process") and len(evals(worker_run)) == 5  # R0 + 4 steps


@pytest.mark.extended  # (the rule itself: tests/test_stop_signals.py, in the default run)
def test_a_parallel_study_whose_driver_fails_stops_its_runs_and_leaves_no_worker(study_cache, tmp_path):
    """The driver of a --parallel study failed while a run trained in a worker (here its output was
    closed, as under `scalerl study ... 2>&1 | head`; a progress.jsonl on a full disk is the same):
    leaving the worker pool waited for every run, queued ones too, to train to its end -- the study
    went on for as long as its runs took, recording none of them, and only then raised. Now the
    running runs stop as on Ctrl-C (SIGTERM: the run raises Terminated and cleans up, its worker
    exits normally), the run is left to resume, and the driver's error comes out with no worker left."""
    import multiprocessing

    from scalerl.study.spec import StudySpec
    from scalerl.train.checkpoint import latest_checkpoint

    out = tmp_path / "study"
    long_run = out / "runs" / "scalerl" / "seed0"
    failing = out / "runs" / "loo-fp32-head-off" / "seed0"
    failing.parent.mkdir(parents=True)
    failing.write_text("a file where the run's directory goes: the run fails as it starts\n")
    spec = StudySpec(family="loo", only=["loo-fp32-head-off"], steps=200, eval_every=50, parallel=2, threads=1,
                     progress=False, overrides=["batch.prompts_per_step=4", "batch.generations_per_prompt=4",
                                                "eval.problems=16", "eval.samples_per_problem=2",
                                                "forecast.enabled=false"])
    workers = []

    def echo(line):
        if "FAILED" not in line:
            return
        workers.extend(multiprocessing.active_children())
        deadline = time.monotonic() + 120
        while latest_checkpoint(long_run / "checkpoints") is None and time.monotonic() < deadline:
            time.sleep(0.1)  # the other run is under way, a checkpoint kept
        raise BrokenPipeError(32, "Broken pipe")  # what print() to a closed stderr raises

    with pytest.raises(BrokenPipeError):
        runner.run_study(spec, out, echo=echo)
    assert multiprocessing.active_children() == []
    assert workers  # the pool's worker processes at the failure
    assert [w.exitcode for w in workers] == [0] * len(workers)  # stopped by their runs' clean stop, not killed
    assert run_status(long_run, Budget.of(spec)) == "partial"  # stopped short of its 200 steps, resumable


def yaml_config(run: Path) -> dict:
    from scalerl.config import load_yaml, to_dict
    from scalerl.train.config import TrainConfig

    return to_dict(load_yaml(TrainConfig, run / "config.yaml"))
