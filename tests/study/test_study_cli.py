"""``scalerl study`` on bad input: one line on stderr, exit status 2 -- and nothing trained."""

import argparse
import shutil
from pathlib import Path

import pytest

from scalerl.cli import main
from scalerl.study.runner import save_spec
from scalerl.study.spec import StudySpec

from .synthetic import write_study


def _one_line_error(capsys, code, *needles):
    err = capsys.readouterr().err.strip()
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scalerl study: error:"), err
    for n in needles:
        assert n in lines[0], (n, err)
    return lines[0]


@pytest.mark.parametrize("args,needles", [
    (["--family", "lool"], ["unknown family 'lool'", "known: loo, recipes"]),
    (["--family", "loo", "--only", "loo-loss-gspo"], ["unknown variant 'loo-loss-gspo'", "loo-loss-dapo"]),
    # qwen-dapo already has the DAPO loss: the variant was called "unknown"
    (["--family", "loo", "--base", "qwen-dapo", "--only", "loo-loss-dapo"],
     ["'loo-loss-dapo' would be the base qwen-dapo itself", "its variants: qwen-dapo, loo-aggregation-sample"]),
    (["--family", "recipes", "--base", "scalerl-loo-loss-dapo"], ["recipes family compares the presets"]),
    (["--base", "grpo"], ["unknown recipe 'grpo'"]),
    (["--family", "loo", "--values", "8", "16"], ["values/base_value apply to sweep families"]),
    (["--family", "model-size", "--values", "tiny-xl"], ["unknown tiny model size 'tiny-xl'"]),
    (["--family", "batch-size", "--values", "eight"], ["must be integers"]),
    (["--family", "batch-size", "--values", "16"], ["only its base (batch-16)", "--values 8 16 32"]),
    (["--family", "loo", "--only", "scalerl"], ["only its base (scalerl)", "besides the base"]),
    (["--set", "lr=abc"], ["expected a number"]),
    (["--set", "nope=1"], ["unknown key 'nope'"]),
    (["--steps", "20", "--eval-every", "10"], ["at least 4"]),
    # 3 evaluations after R0 were accepted, then no run could be fitted (the fit needs 4 points).
    (["--steps", "30", "--eval-every", "10"], ["gives 3 evaluations", "at least 4"]),
    (["--x", "wall"], ["unknown compute column 'wall'"]),
    # Settings the study owns: the runs evaluated every 5 steps while the spec and report said 20, etc.
    (["--set", "eval.every=5"], ["'eval.every=5' sets eval.every, which the study sets from its eval_every field"]),
    (["--set", "model.name_or_path=tiny-s"], ["from its model field"]),
    (["--set", "forecast.x=step"], ["from its x field"]),
    (["--set", "run.seed=7"], ["from its seeds field"]),
    # An infinite budget was accepted: never reached, every run trained to max_steps.
    (["--compute", "inf"], ["compute must be a finite number > 0"]),
    (["--extrapolate", "inf"], ["extrapolate must be a finite number > 1"]),
    (["--task", "nope"], ["unknown task 'nope'", "arithmetic-mix"]),
])
def test_bad_flags_exit_2_with_one_line(tmp_path, capsys, args, needles):
    code = main(["study", "--output", str(tmp_path / "s"), "--dry-run", *args])
    _one_line_error(capsys, code, *needles)
    assert not (tmp_path / "s").exists()


def test_a_spec_file_with_an_unknown_key_exits_2_naming_it(tmp_path, capsys):
    spec = tmp_path / "study.yaml"
    spec.write_text("family: loo\nsteps: 100\nseed: 3\n")
    line = _one_line_error(capsys, main(["study", str(spec), "--output", str(tmp_path / "s")]), "unknown key 'seed'")
    assert "did you mean 'seeds'" in line
    spec.write_text("family: [loo\n")
    _one_line_error(capsys, main(["study", str(spec), "--output", str(tmp_path / "s")]), "not valid YAML")
    _one_line_error(capsys, main(["study", str(tmp_path / "missing.yaml")]), "does not exist")


def test_resume_needs_a_study_directory(tmp_path, capsys):
    _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--resume"]), "holds no study")


def test_a_study_directory_is_not_reused_for_another_study(tmp_path, capsys):
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    _one_line_error(capsys, main(["study", "--family", "recipes", "--output", str(tmp_path), "--dry-run"]),
                    "holds a loo study of scalerl")
    _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--resume", "--set", "lr=3e-4", "--dry-run"]),
                    "configured differently", "recipe.optimizer.lr")


def test_dry_run_and_resume_of_a_finished_study_train_nothing(tmp_path, capsys):
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], seeds=2, steps=40, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    assert main(["study", "--output", str(tmp_path), "--dry-run"]) == 0  # no run flags: continue the saved study
    out = capsys.readouterr().out
    assert out.count("done ") == 4 and "4 runs (2 variants x 2 seed(s))" in out
    # Continuing a finished study skips every run and rewrites the report.
    assert main(["study", "--output", str(tmp_path), "--resume"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("already finished") == 4
    assert "loo-loss-dapo" in captured.out and (tmp_path / "report.html").exists()


def test_a_finished_run_stopped_while_its_report_was_written_gets_its_report_on_resume(tmp_path, capsys):
    """A study killed after a run saved final/ but before its own report was written (curve.png,
    sets.png, report.md, report.html) skipped that run as done on every resume: it never got its
    report, and the killed writer's temporary figure stayed in its directory."""
    from scalerl.train.report_files import REPORT_FILES

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    cut, whole = plans[0].directory, plans[1].directory
    dead = cut / ".curve.png.tmp-999999999-1.png"  # what a kill -9 of the report's writer leaves
    dead.write_bytes(b"")
    for name in REPORT_FILES:  # the other run's report is there, written after its log
        (whole / name).write_text("its report\n")
    log = cut / "runlog.jsonl"
    before = log.read_bytes()

    assert main(["study", "--output", str(tmp_path), "--resume"]) == 0
    assert capsys.readouterr().err.count("already finished") == 2
    assert all((cut / name).stat().st_size > 0 for name in REPORT_FILES)
    assert not dead.exists() and log.read_bytes() == before  # the run itself is not touched
    assert all((whole / name).read_text() == "its report\n" for name in REPORT_FILES)  # nothing rewritten


def _worker_killed(cfg_dict, budget):
    """In a --parallel study's worker: what the out-of-memory killer or a `kill -9` of the worker does."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_a_parallel_runs_worker_killed_fails_its_runs_saying_how_to_resume(tmp_path, monkeypatch):
    """A --parallel study whose worker process was killed failed every run with "BrokenProcessPool: A
    process in the process pool was terminated abruptly while the future was running or pending": not
    what happened, nor that the study resumes."""
    from scalerl.study import local_runs
    from scalerl.study.plan import Budget

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, parallel=2, threads=1,
                     progress=False)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    for p in plans:  # stopped short of the budget: each is a run to resume
        (p.directory / "final" / "config.json").unlink()
    monkeypatch.setattr(local_runs, "execute_dict", _worker_killed)
    lines, recorded = [], []
    outcomes = local_runs.run_parallel(plans, Budget.of(spec), spec, lines.append, recorded.append)
    assert [o.status for o in outcomes] == ["failed", "failed"] and len(recorded) == 2
    for o in outcomes:
        assert "a worker process of the study died (killed by a signal" in o.error, o.error
        assert o.error.endswith(f"continue with: scalerl study --output {tmp_path} --resume")


def test_list_shows_every_family_and_variant(capsys):
    assert main(["study", "--list"]) == 0
    out = capsys.readouterr().out
    for needle in ("loo:", "recipes:", "batch-size:", "generations:", "gen-length:", "model-size:",
                   "loo-no-positive-resampling-off", "minimax-m1", "batch-32", "model-tiny-l"):
        assert needle in out


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_an_output_that_is_a_file_or_a_training_runs_directory_is_refused(tmp_path, capsys, dry_run):
    """A file gave a traceback (FileExistsError); a run directory got a study.yaml written into it,
    after which `scalerl report DIR` no longer reported the run."""
    args = ["study", "--family", "loo", "--only", "loo-loss-dapo", "--steps", "40", "--eval-every", "10", *dry_run]
    afile = tmp_path / "notes.txt"
    afile.write_text("mine\n")
    _one_line_error(capsys, main([*args, "--output", str(afile)]), "is a file, not a directory")
    _one_line_error(capsys, main([*args, "--output", str(afile / "sub")]), "is a file, not a directory")
    assert afile.read_text() == "mine\n"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "runlog.jsonl").write_text('{"type": "header"}\n')
    _one_line_error(capsys, main([*args, "--output", str(run_dir)]), "holds a training run (runlog.jsonl)")
    assert sorted(p.name for p in run_dir.iterdir()) == ["runlog.jsonl"]


def test_train_refuses_to_write_a_run_into_a_study_directory(tmp_path, capsys):
    from scalerl.study.spec import SPEC_FILE
    from scalerl.train.run_directory import STUDY_SPEC

    assert STUDY_SPEC == SPEC_FILE  # the trainer names the study's file without importing the study layer
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["train", "--output", str(tmp_path), "--steps", "4", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("scalerl train: error:") and "holds a study (study.yaml)" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_run_with_a_damaged_log_fails_alone_and_is_left_untouched(tmp_path, capsys):
    """A malformed line in one run's log stopped the whole study (exit 2, no report) and
    `scalerl report` of the study with it; now that run is reported as failed and left as it is."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-aggregation-sample"], steps=200, eval_every=10,
                     bootstrap=50)
    laws = {"scalerl": (0.7, 1.5, 5e11), "loo-loss-dapo": (0.55, 1.5, 5e11), "loo-aggregation-sample": (0.7, 1.5, 1e12)}
    plans = write_study(tmp_path, spec, laws)
    damaged = next(p for p in plans if p.variant.label == "loo-aggregation-sample").directory
    log = damaged / "runlog.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[3] = "garbage\n"
    log.write_text("".join(lines))
    before = log.read_bytes()

    assert main(["study", "--output", str(tmp_path), "--dry-run"]) == 0
    assert f"damaged  {damaged}" in capsys.readouterr().out
    assert main(["study", "--output", str(tmp_path), "--resume"]) == 1
    captured = capsys.readouterr()
    assert "loo-aggregation-sample/seed0: FAILED" in captured.err and "line 4 is not a JSON object" in captured.err
    assert "resuming" not in captured.err and "1 failed" in captured.err
    assert log.read_bytes() == before and (damaged / "final").exists()
    assert "loo-loss-dapo" in captured.out and (tmp_path / "report.md").exists()  # the others still compared

    assert main(["report", str(tmp_path), "--bootstrap", "50"]) == 0
    from scalerl.study.analysis import analyse_study

    a = analyse_study(tmp_path, n_boot=50)
    assert a.variant("loo-loss-dapo").kind == "ceiling"
    assert a.variant("loo-aggregation-sample").left_out[0].startswith("seed0: damaged run log (")


def test_a_run_with_an_empty_config_is_named_as_such(tmp_path, capsys):
    """A run's config.yaml left empty (a run stopped while writing it) was read as every default and refused
    as "configured differently (eval.every: 10 on disk, 5 planned)": a difference that is not there."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=5, bootstrap=50)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    (plans[1].directory / "config.yaml").write_text("")
    line = _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--dry-run"]), "config.yaml is empty",
                           f"remove {plans[1].directory} to train it again")
    assert "configured differently" not in line


def test_flags_without_a_spec_file_change_the_directorys_own_study(tmp_path, capsys):
    """`scalerl study --output DIR --seeds 2` planned the default study (400 steps, evaluation every
    20) and was refused as clashing with the runs on disk; it adds a seed to DIR's study."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    assert main(["study", "--output", str(tmp_path), "--seeds", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("done ") == 2 and out.count("new ") == 2 and "seed1" in out
    assert "4 runs (2 variants x 2 seed(s)), 40 steps each, evaluation every 10 steps" in out
    # What defines the runs still may not change under them, and the advice names a working command.
    line = _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--set", "lr=3e-4", "--dry-run"]),
                           "configured differently")
    assert "scalerl study --output DIR --resume" in line


def test_a_budget_below_what_the_runs_trained_is_refused(tmp_path, capsys):
    """`--steps 20` on a study whose runs trained 40 steps counted them as done and rewrote study.yaml:
    the report then fitted 40-step curves under a '20 steps per run' budget."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=5, bootstrap=50)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    saved = (tmp_path / "study.yaml").read_text()
    for dry_run in (["--dry-run"], []):
        _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--steps", "20", *dry_run]),
                        "has trained to step 40, past this study's 20 steps", "keep steps >= 40")
    assert (tmp_path / "study.yaml").read_text() == saved
    assert main(["study", "--output", str(tmp_path), "--steps", "40", "--dry-run"]) == 0  # the same budget is fine


def test_fewer_seeds_or_a_narrower_only_than_the_runs_on_disk_is_refused(tmp_path, capsys):
    """Review z: `--seeds 1` on a finished study of 2 seeds was taken without a word, rewrote study.yaml, and
    from then on `scalerl report` left the seed1 runs still on disk out of every fit; so did an `--only` that
    left a variant out. Refused as a lowered --steps is: a study does not drop its runs."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-aggregation-sample"], seeds=2, steps=40,
                     eval_every=10, bootstrap=50)
    laws = {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11), "loo-aggregation-sample": (0.6, 1.5, 1e11)}
    write_study(tmp_path, spec, laws, points=5)
    saved = (tmp_path / "study.yaml").read_text()
    for dry_run in (["--dry-run"], []):
        _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--seeds", "1", *dry_run]),
                        "holds run(s) this study does not plan (loo-aggregation-sample/seed1, loo-loss-dapo/seed1, "
                        "scalerl/seed1", "a study does not drop its runs", "or use another --output")
    _one_line_error(capsys, main(["study", "--output", str(tmp_path), "--only", "loo-loss-dapo", "--dry-run"]),
                    "(loo-aggregation-sample/seed0, loo-aggregation-sample/seed1;", "keep the seeds, variants (--only)")
    assert (tmp_path / "study.yaml").read_text() == saved
    assert main(["study", "--output", str(tmp_path), "--seeds", "3", "--dry-run"]) == 0  # more is fine
    # A run directory that holds nothing of a run (a run that failed before it wrote a file) is no run.
    (tmp_path / "runs" / "scalerl" / "seed7").mkdir()
    assert main(["study", "--output", str(tmp_path), "--dry-run"]) == 0
    # A user's copy of a run beside it is no run of the study (it was refused as one: "holds scalerl/seed0-old").
    shutil.copytree(tmp_path / "runs" / "scalerl" / "seed0", tmp_path / "runs" / "scalerl" / "seed0-old")
    assert main(["study", "--output", str(tmp_path), "--dry-run"]) == 0


def test_an_empty_saved_spec_is_named_and_a_spec_file_restores_it(tmp_path, capsys):
    """An empty study.yaml was read as the default study: `scalerl report` planned 9 variants and
    listed the real runs as pending, `scalerl study` planned runs that clashed with those on disk."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, bootstrap=50)
    write_study(tmp_path / "s", spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    (tmp_path / "s" / "study.yaml").write_text("")
    code = main(["report", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "study.yaml is empty, so this study's spec is lost" in err, err
    _one_line_error(capsys, main(["study", "--output", str(tmp_path / "s"), "--dry-run"]), "is empty")
    # The spec it was made with restores it: the runs match, nothing trains, study.yaml is written again.
    (tmp_path / "spec.yaml").write_text("family: loo\nonly: [loo-loss-dapo]\nsteps: 40\neval_every: 10\nbootstrap: 50\n")
    assert main(["study", str(tmp_path / "spec.yaml"), "--output", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().err.count("already finished") == 2
    assert main(["report", str(tmp_path / "s")]) == 0


def test_a_spec_files_relative_calibration_is_saved_absolute(tmp_path, monkeypatch):
    """A spec file's `calibration: cal.json` was saved as written: `scalerl report DIR` from another
    working directory then found no calibration file (the --calibration flag's was made absolute)."""
    import argparse

    from scalerl.commands.study import add_arguments, resolve_spec
    import json

    from scalerl.curves import default_calibration

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cal.json").write_text(json.dumps(default_calibration().as_dict()))
    (tmp_path / "s.yaml").write_text("family: loo\nonly: [loo-loss-dapo]\ncalibration: cal.json\n")
    p = argparse.ArgumentParser()
    add_arguments(p)
    spec, _ = resolve_spec(p.parse_args(["s.yaml", "--output", str(tmp_path / "study")]))
    assert spec.calibration == str(tmp_path.resolve() / "cal.json")


def test_resuming_a_finished_ray_study_starts_no_cluster(tmp_path, capsys, monkeypatch):
    """A finished study on the Ray backend, resumed: every run was submitted as a Ray task, so a
    cluster started (~16 s) to skip them all. Now finished runs are skipped in the driver first."""
    pytest.importorskip("ray")
    from scalerl.pipeline import ray_cluster

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Ray cluster was started for a finished study")

    monkeypatch.setattr(ray_cluster, "init_ray", no_cluster)
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, bootstrap=50, backend="ray")
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    assert main(["study", "--output", str(tmp_path), "--resume"]) == 0
    err = capsys.readouterr().err
    assert err.count("already finished") == 2 and "[2/2] loo-loss-dapo/seed0: already finished" in err, err


def test_rerunning_the_same_command_does_not_duplicate_the_overrides(tmp_path):
    from scalerl.commands.study import add_arguments, resolve_spec

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = ["--family", "loo", "--only", "loo-loss-dapo", "--steps", "6", "--eval-every", "1", "--output",
            str(tmp_path), "--set", "eval.problems=16", "--set", "forecast.enabled=false"]
    first, _ = resolve_spec(parser.parse_args(argv))
    assert first.overrides == ["eval.problems=16", "forecast.enabled=false"]
    save_spec(first, tmp_path)  # what `scalerl study` saves before its runs
    # "Running the same command again therefore continues a killed study" (docs/study.md): the same spec.
    again, _ = resolve_spec(parser.parse_args(argv))
    assert again.overrides == first.overrides


def test_flags_change_the_saved_study_of_the_default_directory_too(tmp_path, monkeypatch):
    from scalerl.commands.study import add_arguments, resolve_spec

    monkeypatch.chdir(tmp_path)
    saved = StudySpec(family="loo", only=["loo-aggregation-sample"], steps=200, eval_every=20, bootstrap=50)
    write_study(tmp_path / "runs" / "study-loo", saved, {"scalerl": (0.70, 1.5, 5e11), "loo-aggregation-sample": (0.70, 1.5, 1.2e12)}, points=11)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    explicit, d1 = resolve_spec(parser.parse_args(["--output", "runs/study-loo", "--seeds", "2"]))
    default, d2 = resolve_spec(parser.parse_args(["--family", "loo", "--seeds", "2"]))
    assert d1 == d2 == Path("runs/study-loo")
    assert (explicit.seeds, explicit.only, explicit.steps) == (2, ["loo-aggregation-sample"], 200)  # adds a seed
    assert (default.seeds, default.only, default.steps) == (2, ["loo-aggregation-sample"], 200)


def test_a_set_given_again_replaces_the_saved_one_of_its_field_however_it_is_spelled():
    from scalerl.commands.study import _merged_overrides

    saved = ["k=2", "eval.problems=16"]
    assert _merged_overrides(saved, saved) == saved  # the same command again: the same spec
    assert _merged_overrides(saved, ["recipe.off_policy.k=4"]) == ["eval.problems=16", "recipe.off_policy.k=4"]
    assert _merged_overrides(saved, ["no.such.key=1"]) == [*saved, "no.such.key=1"]  # (refused where validated)


def _study_parser():
    from scalerl.commands.study import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser


def test_a_study_merges_two_mapping_overrides_given_together_as_train_does(tmp_path):
    from scalerl.commands.study import resolve_spec
    from scalerl.config import apply_overrides
    from scalerl.train.config import TrainConfig

    given = ["task.settings={digits: 3}", "task.settings={n_val: 100}"]
    argv = ["--family", "loo", "--only", "loo-loss-dapo", "--steps", "8", "--eval-every", "2",
            "--output", str(tmp_path / "study")]
    for item in given:
        argv += ["--set", item]
    spec, _ = resolve_spec(_study_parser().parse_args(argv))
    as_train = apply_overrides(TrainConfig(), given).task.settings
    assert as_train == {"digits": 3, "n_val": 100}
    assert apply_overrides(TrainConfig(), spec.overrides).task.settings == as_train, spec.overrides


def test_study_resume_with_a_spec_file_names_no_none(tmp_path, monkeypatch, capsys):
    from scalerl.cli import main

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "loo.yaml"
    spec.write_text("family: loo\nonly: [loo-loss-dapo]\nsteps: 8\neval_every: 2\n")
    rc = main(["study", str(spec), "--resume"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") <= 2, err
    assert "None" not in err, err
