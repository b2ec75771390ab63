"""Where a stopped study run is resumed to when its budget changed between invocations (lowered or raised), or its
config.yaml's run.steps is another plan's (a run a user trained with --steps) -- reviews eo, ep, eq -- and the scale
profile a study keeps for its user model (review eo)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from scalerl.config import load_yaml, save_yaml
from scalerl.study.plan import Budget

from . import test_killed_runs as killed_runs
from . import test_killed_shared_runs as killed_shared_runs
from . import test_plan_phrase as plan_phrase

# ------------------------------------------------------------------ (2) Budget.stretch_end(rows, planned)


def test_a_stopped_run_resumed_under_a_lowered_steps_budget_stops_at_the_budget(tmp_path, monkeypatch):
    """A study run with steps=300 killed at step 45 (checkpoint at 40); the study run again with steps=100 (allowed:
    no run is past 100, check_existing takes it). The run must be resumed to step 100 -- it is resumed to 300, and
    the next `study --resume` refuses the directory ("has trained to step 300, past this study's 100 steps")."""
    k = killed_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    plan = k._plan(tmp_path / "study", steps=300)
    assert k._execute(plan, Budget(300, None, 5000, "flops", 20), sim, kill=(1, 45, "train")) is None
    assert k._end(plan) == ([0, 20, 40], None)
    outcome = k._execute(plan, Budget(100, None, 5000, "flops", 20), sim)
    assert outcome.status == "resumed"
    assert k._end(plan)[1] == 100 and sim.calls == [("resume", 100)], (sim.calls, k._end(plan))


def test_a_train_run_put_in_a_compute_study_is_resumed_to_the_budget_not_to_its_own_run_steps(tmp_path, monkeypatch):
    """The study's run, killed at step 45, whose config.yaml records run.steps=1000 (the run was started by
    `scalerl train --steps 1000`, or a user resumed it with --resume --steps 1000): the study (compute 6e11 flops,
    first stretch 150) must end it where the uninterrupted study run ends (step 450); it trains it to 800."""
    k = killed_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    reference = k._plan(tmp_path / "reference")
    k._execute(reference, k.BUDGET, sim)
    plan = k._plan(tmp_path / "study")
    assert k._execute(plan, k.BUDGET, sim, kill=(1, 45, "train")) is None
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.steps = 1000
    save_yaml(cfg, plan.directory / "config.yaml")
    k._execute(plan, k.BUDGET, sim)
    assert k._end(reference)[1] == 450
    assert k._end(plan)[1] == k._end(reference)[1], sim.calls


@pytest.mark.parametrize(("before", "ended"), [
    (Budget(steps=160, compute=3.5e11, max_steps=800, x="flops", eval_every=20), 260),  # a lower compute
    (Budget(steps=160, compute=6e11, max_steps=300, x="flops", eval_every=20), 300),  # a lower max_steps
], ids=["compute-raised", "max-steps-raised"])
def test_an_own_run_finished_under_a_lower_budget_then_raised_ends_where_the_uninterrupted_run_does(
        tmp_path, monkeypatch, before, ended):
    """Review ER: finished under the lower budget (final/ at 260, or 300 at the max_steps cap), the study run again
    under 6e11 / max_steps 800 was walked on from final/ (to 380, 360); the uninterrupted run goes 160 -> 440."""
    k = killed_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    raised = Budget(steps=160, compute=6e11, max_steps=800, x="flops", eval_every=20)
    reference = k._plan(tmp_path / "reference", steps=160)
    k._execute(reference, raised, sim)
    assert k._end(reference)[1] == 440  # 160 -> 440: every chain step a multiple of eval_every
    plan = k._plan(tmp_path / "study", steps=160)
    k._execute(plan, before, sim)
    assert k._end(plan)[1] == ended
    assert k._execute(plan, raised, sim).status == "resumed"  # `scalerl study --output DIR --compute 6e11`
    assert k._end(plan) == k._end(reference), (sim.calls, k._end(plan)[0][-3:])


# ------------------------------------------------------------------ (3) with_profile_pinned / save_spec


def test_a_spec_naming_profile_auto_gets_its_profile_pinned(tmp_path):
    """docs/study.md: 'for a user's model with `profile: auto` (the default) the study directory's study.yaml keeps
    the profile its size chose'. A spec whose overrides say profile=auto (as a user writes the default out) is
    saved with profile=auto: copied to a machine without the model, its report fails 'model path ... does not
    exist', as before the fix."""
    from scalerl.study.runner import save_spec
    from scalerl.study.spec import SPEC_FILE, StudySpec, load_saved_spec

    pp = plan_phrase
    model = pp._user_model(tmp_path / "model")
    study = tmp_path / "study"
    study.mkdir()
    save_spec(StudySpec(family="batch-size", model=str(model), task="math", overrides=["profile=auto"]), study)
    saved = load_saved_spec(study / SPEC_FILE)
    assert saved.auto_profile == {str(model): "cpu-small"}, saved


def test_a_pinned_profile_does_not_follow_the_study_to_another_model(tmp_path, monkeypatch):
    """On a GPU machine (device_type and count_parameters stood in for) a study of a 0.5B model is saved with
    profile=gpu-small pinned. Before any run is trained (stopped in prepare_models, a failed preflight), the user
    points the study at a 3B model (`scalerl study --output DIR --model BIG`): auto would give it profile none
    (paper scale), but the saved pin makes every run of the 3B model gpu-small's, without a word."""
    from scalerl.commands import study as study_cmd
    from scalerl.config import to_dict
    from scalerl.study.plan import base_config
    from scalerl.study.runner import save_spec
    from scalerl.study.spec import StudySpec
    from scalerl.train import profiles

    monkeypatch.setattr(profiles, "device_type", lambda device: "cuda")
    sizes = {"small": 5e8, "big": 3e9}
    monkeypatch.setattr(profiles, "count_parameters", lambda path: sizes[Path(path).name])
    study = tmp_path / "study"
    study.mkdir()
    save_spec(StudySpec(family="batch-size", model=str(tmp_path / "small"), task="math"), study)
    parser = argparse.ArgumentParser()
    study_cmd.add_arguments(parser)
    spec, _ = study_cmd.resolve_spec(parser.parse_args(["--output", str(study), "--model", str(tmp_path / "big")]))
    fresh = StudySpec(family="batch-size", model=str(tmp_path / "big"), task="math")
    assert to_dict(base_config(spec))["recipe"] == to_dict(base_config(fresh))["recipe"], spec.overrides


def test_a_study_yaml_used_as_a_spec_file_leaves_its_profile_pin_behind(tmp_path, capsys):
    """A study's study.yaml given as the spec of a new study (`scalerl study OLD/study.yaml --output NEW`): the
    profile auto chose for its model on the old study's machine was carried into the new study without a word
    (review EP). The new study chooses its own, and a note says which pin was left; the old directory's own
    study, continued with its study.yaml as the spec, keeps its pin."""
    from scalerl.commands import study as study_cmd
    from scalerl.study.runner import save_spec
    from scalerl.study.spec import SPEC_FILE, StudySpec

    model = plan_phrase._user_model(tmp_path / "model")
    old = tmp_path / "old"
    old.mkdir()
    save_spec(StudySpec(family="batch-size", model=str(model), task="math"), old)
    parser = argparse.ArgumentParser()
    study_cmd.add_arguments(parser)
    spec, _ = study_cmd.resolve_spec(parser.parse_args([str(old / SPEC_FILE), "--output", str(tmp_path / "new")]))
    assert spec.auto_profile == {}
    assert f"holds the profile another study chose for {model} (cpu-small)" in capsys.readouterr().err
    spec, _ = study_cmd.resolve_spec(parser.parse_args([str(old / SPEC_FILE), "--output", str(old)]))
    assert spec.auto_profile == {str(model): "cpu-small"} and "note:" not in capsys.readouterr().err


def test_a_run_killed_in_its_extension_resumed_under_a_lowered_compute_budget_ends_where_the_uninterrupted_does(
        tmp_path, monkeypatch):
    k = killed_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    lowered = Budget(steps=150, compute=4e11, max_steps=800, x="flops", eval_every=20)
    reference = k._plan(tmp_path / "reference")
    k._execute(reference, lowered, sim)  # the run as the lowered budget trains it, never killed
    assert k._end(reference)[1] == 310
    plan = k._plan(tmp_path / "study")
    # trained under compute 6e11: first stretch to 150, its extension set out for 450; killed at step 205
    assert k._execute(plan, k.BUDGET, sim, kill=(2, 205, "train")) is None
    assert k._end(plan)[0][-1] == 200 and sim.calls == [("new", 150), ("resume", 450)]
    from scalerl.study.run_state import check_existing

    check_existing([plan], lowered)  # taken: no evaluation of the run has met the lowered budget yet
    k._execute(plan, lowered, sim)  # `scalerl study --output DIR --compute 4e11`
    assert k._end(plan)[1] == k._end(reference)[1], (sim.calls, k._end(plan))


def test_a_run_killed_in_its_extension_resumed_under_a_raised_compute_budget_ends_where_the_uninterrupted_does(
        tmp_path, monkeypatch):
    """steps=160, eval_every=20 (the spec's default 400/20 has the same shape: steps a multiple of eval_every).
    Trained under compute 3.5e11: first stretch to 160, its extension set out for 260; killed at step 255 (last
    checkpointed evaluation 240). The study is run again with compute 4e11 (a raise: check_existing takes it).
    Uninterrupted under 4e11 the run goes 160 -> 300. Resumed, stretch_end finds next_target(row 240) == 260 under
    the new budget (one interval short of 4e11) and takes the old plan's 260: the run ends, 'done', at 260."""
    k = killed_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    old = Budget(steps=160, compute=3.5e11, max_steps=800, x="flops", eval_every=20)
    raised = Budget(steps=160, compute=4e11, max_steps=800, x="flops", eval_every=20)
    reference = k._plan(tmp_path / "reference", steps=160)
    k._execute(reference, raised, sim)
    assert sim.calls == [("new", 160), ("resume", 300)] and k._end(reference)[1] == 300
    plan = k._plan(tmp_path / "study", steps=160)
    assert k._execute(plan, old, sim, kill=(2, 255, "train")) is None
    assert sim.calls == [("new", 160), ("resume", 260)] and k._end(plan)[0][-1] == 240
    from scalerl.study.run_state import _check_not_past

    _check_not_past(plan, raised, old)  # taken
    k._execute(plan, raised, sim)
    assert k._end(plan)[1] == k._end(reference)[1], (sim.calls, k._end(plan))


def test_a_shared_run_killed_in_its_extension_resumed_under_a_raised_compute_budget_ends_where_the_uninterrupted_does(
        tmp_path, monkeypatch):
    """The workload's base run (300 steps) shared into a compute study (stretch 150). Under 6e11 its extension goes
    300 -> 360; killed at step 345 (checkpoint 340). Raised to 6.5e11, the uninterrupted shared run goes 300 -> 380.
    Resumed, stretch_end takes run.steps 360 (next_target(row 340) under 6.5e11 is 360) and the run is done at 360."""
    k = killed_shared_runs
    sim = k._Sim()
    k._install(monkeypatch, sim)
    old = Budget(steps=150, compute=6e11, max_steps=800, x="flops", eval_every=20)
    raised = Budget(steps=150, compute=6.5e11, max_steps=800, x="flops", eval_every=20)
    reference = k._shared(tmp_path, sim, "reference", 300)
    assert k._execute(reference, raised, sim).status == "resumed"
    assert sim.calls == [("resume", 380)] and k._end(reference)[1] == 380
    plan = k._shared(tmp_path, sim, "study", 300)
    assert k._execute(plan, old, sim, kill=(1, 345, "train")) is None
    assert sim.calls == [("resume", 360)] and k._end(plan)[0][-1] == 340
    k._execute(plan, raised, sim)
    assert k._end(plan)[1] == k._end(reference)[1], (sim.calls, k._end(plan))


# ------------------------------------------------------------------ review ET: the default directory's pins


def _study_with_a_pin(tmp_path):
    from scalerl.study.runner import save_spec
    from scalerl.study.spec import StudySpec

    model = plan_phrase._user_model(tmp_path / "model")
    study = tmp_path / "runs" / "study-batch-size"  # the default directory of a batch-size study
    study.mkdir(parents=True)
    save_spec(StudySpec(family="batch-size", model=str(model), task="math"), study)
    return model, study


def _resolve_spec_args(argv):
    from scalerl.commands import study as study_cmd

    parser = argparse.ArgumentParser()
    study_cmd.add_arguments(parser)
    return study_cmd.resolve_spec(parser.parse_args(argv))


def test_a_study_continued_with_its_own_study_yaml_and_no_output_keeps_its_pin_without_a_note(
        tmp_path, monkeypatch, capsys):
    from scalerl.study.spec import SPEC_FILE

    model, study = _study_with_a_pin(tmp_path)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    spec, directory = _resolve_spec_args([str(Path("runs/study-batch-size") / SPEC_FILE)])  # scalerl study runs/study-.../study.yaml
    assert directory.resolve() == study.resolve()
    err = capsys.readouterr().err
    assert spec.auto_profile == {str(model): "cpu-small"}, (spec.auto_profile, err)
    assert "another study" not in err, err


def test_a_plain_rerun_of_a_spec_file_on_its_default_directory_keeps_the_directorys_pin(tmp_path, monkeypatch):
    model, study = _study_with_a_pin(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text(f"family: batch-size\nmodel: {model}\ntask: math\n")
    kept, _ = _resolve_spec_args(["my.yaml", "--output", str(study)])
    assert kept.auto_profile == {str(model): "cpu-small"}  # (with --output: kept)
    spec, directory = _resolve_spec_args(["my.yaml"])  # the same study, its default directory
    assert directory.resolve() == study.resolve()
    assert spec.auto_profile == kept.auto_profile
