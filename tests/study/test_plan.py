"""Planning a study: families, variants, run directories and configs, budgets -- nothing trains."""

import json

import pytest

from scalerl.config import load_yaml, to_dict
from scalerl.errors import ConfigError
from scalerl.rl.presets import LEAVE_ONE_OUT, PRESETS, changed_components, get_recipe
from scalerl.study.families import FAMILIES, length_overrides
from scalerl.study.plan import Budget, plan_study
from scalerl.study.run_state import check_existing, run_status
from scalerl.study.spec import StudySpec, load_spec
from scalerl.train.config import TrainConfig

from .synthetic import write_study


def _labels(plans):
    return list(dict.fromkeys(p.variant.label for p in plans))


def test_loo_is_the_base_and_every_leave_one_out_variant(tmp_path):
    plans = plan_study(StudySpec(family="loo"), tmp_path)
    assert _labels(plans) == ["scalerl", *(n.removeprefix("scalerl-") for n in LEAVE_ONE_OUT)]
    base = plans[0].config
    assert plans[0].variant.is_base and base.recipe_name == "scalerl"
    for p in plans[1:]:
        name = "scalerl-" + p.variant.label
        assert p.config.recipe_name == name
        # Exactly the one component the preset reverts differs from the base run's recipe.
        assert changed_components(p.config.recipe, base.recipe) == [LEAVE_ONE_OUT[name].component]
        # The cpu-tiny profile applies to every run alike.
        assert p.config.recipe.batch.prompts_per_step == 16 and p.config.recipe.optimizer.lr == 1e-4


def test_loo_of_another_base_makes_the_same_one_component_changes(tmp_path):
    plans = plan_study(StudySpec(family="loo", base="minimax-m1"), tmp_path)
    labels = _labels(plans)
    base = plans[0].config.recipe
    # MiniMax-M1 already has group normalisation, no zero-variance filter, plain epochs and
    # PPO-off-policy-8: those reversions would be the base itself, so they are not runs.
    for same in ("loo-normalization-prompt", "loo-zero-variance-off", "loo-no-positive-resampling-off",
                 "loo-pipeline-ppo-off-policy-8"):
        assert same not in labels
    assert "loo-loss-dapo" in labels and "loo-length-penalty" in labels
    for p in plans[1:]:
        assert len(changed_components(p.config.recipe, base)) == 1, p.variant.label
        assert p.config.recipe_name == f"minimax-m1+{p.variant.label}"


def test_recipes_family_is_the_five_presets_base_first(tmp_path):
    plans = plan_study(StudySpec(family="recipes", base="qwen-dapo"), tmp_path)
    assert _labels(plans) == ["qwen-dapo", *(n for n in PRESETS if n != "qwen-dapo")]
    for p in plans:
        # Only the scale profile (sizes, lr) separates each run from its preset.
        assert sorted(changed_components(p.config.recipe, get_recipe(p.variant.label))) == ["batch", "length", "optimizer"]


@pytest.mark.parametrize("family,path,expected", [
    ("batch-size", ("batch", "prompts_per_step"), [16, 8, 32]),
    ("generations", ("batch", "generations_per_prompt"), [8, 4, 16]),
    ("gen-length", ("length", "max_new_tokens"), [48, 32, 64]),
])
def test_sweeps_default_to_half_same_double_around_the_base(tmp_path, family, path, expected):
    plans = plan_study(StudySpec(family=family), tmp_path)
    got = [getattr(getattr(p.config.recipe, path[0]), path[1]) for p in plans]
    assert got == expected  # the base first
    assert plans[0].variant.is_base and not any(p.variant.is_base for p in plans[1:])


def test_gen_length_scales_the_thinking_budget_and_keeps_the_answer_budget():
    length = TrainConfig().recipe.length
    length.max_new_tokens, length.think_budget, length.answer_budget = 48, (18, 26), 8
    length.overlong_max_len, length.overlong_cache = 48, 16
    assert length_overrides(length, 96) == ["recipe.length.max_new_tokens=96", "recipe.length.think_budget=[36, 52]",
                                            "recipe.length.overlong_max_len=96", "recipe.length.overlong_cache=32"]
    short = length_overrides(length, 24)
    assert "recipe.length.think_budget=[9, 13]" in short  # 13 + the answer budget 8 fits in 24


def test_gen_length_keeps_the_interruption_phrase_free():
    """The forced phrase stays as the answer budget does: at 36 tokens of the arithmetic-mix workload's 48 (thinking
    [26, 34], answer 8, the tiny tokenizer's phrase 3 tokens) the proportional [20, 26] left an interrupted answer
    one token short, and every run of the shipped gen-length study's 36-token variant was refused as it started."""
    length = TrainConfig().recipe.length
    length.max_new_tokens, length.think_budget, length.answer_budget = 48, (26, 34), 8
    length.overlong_max_len, length.overlong_cache = 48, 16
    assert "recipe.length.think_budget=[20, 26]" in length_overrides(length, 36)  # the answer alone kept free
    assert "recipe.length.think_budget=[20, 25]" in length_overrides(length, 36, phrase=3)
    with pytest.raises(ConfigError, match=r"answer budget 8 \+ the interruption phrase's 3 tokens = 11\); use at least 12"):
        length_overrides(length, 11, phrase=3)


def test_every_shipped_study_plans_runs_that_start(tmp_path, monkeypatch):
    """Each configs/studies/*.yaml: every variant's length budgets fit with the interruption phrase counted by its
    model's tokenizer (what a run checks as it starts, after the study's other runs may have trained for an hour)."""
    from pathlib import Path

    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.rl.length import budget_problems
    from scalerl.study import plan as plan_module

    # The tiny ladder's sizes are warm-started models; their directories are not needed to check budgets.
    monkeypatch.setattr(plan_module, "tiny_size_dir", lambda arch, steps: arch)
    tokenizer = build_char_tokenizer()
    for path in sorted((Path(__file__).resolve().parents[2] / "configs" / "studies").glob("*.yaml")):
        for p in plan_study(load_spec(path), tmp_path / path.stem):
            assert budget_problems(p.config.recipe.length, tokenizer) == [], (path.name, p.variant.label)


def test_a_variant_whose_budget_cannot_hold_the_phrase_is_refused_before_any_run(tmp_path):
    """Resolving a config cannot count the phrase's tokens; the plan reads the model's tokenizer and refuses the
    variant by name, before anything trains."""
    spec = StudySpec(family="batch-size", overrides=["length.max_new_tokens=48", "length.think_budget=[26, 38]",
                                                     "length.answer_budget=8"])
    with pytest.raises(ConfigError, match=r"variant batch-16: invalid recipe: length: an interrupted sequence needs "
                                          r"think_budget hi \(38\) \+ the interruption phrase \(3 tokens"):
        plan_study(spec, tmp_path)


def test_sweep_values_and_base_value_are_honoured(tmp_path):
    plans = plan_study(StudySpec(family="batch-size", values=[4, 12], base_value=12), tmp_path)
    assert _labels(plans) == ["batch-12", "batch-4"]
    plans = plan_study(StudySpec(family="batch-size", values=[4, 32]), tmp_path)
    assert _labels(plans) == ["batch-16", "batch-4", "batch-32"]  # the base's own value is added


def test_model_size_gives_each_size_its_own_cached_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALERL_CACHE", str(tmp_path / "cache"))
    plans = plan_study(StudySpec(family="model-size"), tmp_path / "study")
    models = {p.variant.label: p.config.model.name_or_path for p in plans}
    assert models["model-tiny"] == "tiny"  # the standard model, shared with every other study
    assert models["model-tiny-s"] != models["model-tiny-l"]
    assert all(m.startswith(str(tmp_path / "cache" / "tiny")) for k, m in models.items() if k != "model-tiny")
    # A directory is not the name "tiny", but the cpu-tiny profile still applies.
    assert all(p.config.recipe.batch.prompts_per_step == 16 for p in plans)


def test_a_model_size_given_twice_runs_once(tmp_path, monkeypatch):
    """`values: [tiny-s, tiny-s]` ended in an AssertionError's traceback (two runs named model-tiny-s); a knob
    sweep's repeated value already ran once."""
    monkeypatch.setenv("SCALERL_CACHE", str(tmp_path / "cache"))
    plans = plan_study(StudySpec(family="model-size", values=["tiny-s", "tiny-s"]), tmp_path / "study")
    assert _labels(plans) == ["model-tiny", "model-tiny-s"]
    assert _labels(plan_study(StudySpec(family="batch-size", values=[8, 8]), tmp_path / "b")) == ["batch-16", "batch-8"]


def test_two_runs_never_share_a_directory(tmp_path):
    """Share nothing mutable, by construction: every (variant, seed) has its own directory, no
    directory inside another, and each run's config writes to exactly its own."""
    for family in FAMILIES:
        if family == "model-size":
            continue  # its directories are planned like every other family's (above: its models)
        plans = plan_study(StudySpec(family=family, seeds=2), tmp_path)
        dirs = [p.directory.resolve() for p in plans]
        assert len(set(dirs)) == len(dirs)
        for a in dirs:
            assert not any(a != b and b in a.parents for b in dirs), a
        for p in plans:
            assert p.config.run.output == str(p.directory) and p.config.run.seed == p.seed


def test_budget_extends_runs_in_whole_evaluation_intervals():
    b = Budget(steps=100, compute=1e12, max_steps=1000, x="flops", eval_every=20)
    assert b.next_target(None) == 100
    assert not b.reached({"step": 100, "flops": 4e11})
    # 4e9 per step measured: 150 more steps needed -> 8 intervals of 20 -> step 260.
    assert b.next_target({"step": 100, "flops": 4e11}) == 260
    assert b.reached({"step": 260, "flops": 1.04e12})
    assert Budget(100, 1e15, 300, "flops", 20).next_target({"step": 100, "flops": 4e11}) == 300  # the cap
    assert Budget(100, None, 300, "flops", 20).reached({"step": 100})


def test_a_finished_study_is_seen_as_done_and_its_spec_reloads(tmp_path):
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], seeds=2, steps=40, eval_every=10)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    assert to_dict(load_spec(tmp_path / "study.yaml")) == to_dict(spec)
    assert all(run_status(p.directory, Budget.of(spec)) == "done" for p in plans)
    assert run_status(tmp_path / "elsewhere", Budget.of(spec)) == "new"
    check_existing(plans)  # the same plan: nothing refused
    (plans[0].directory / "final" / "config.json").unlink()
    assert run_status(plans[0].directory, Budget.of(spec)) == "partial"


def test_a_run_directory_configured_differently_is_refused(tmp_path):
    from scalerl.errors import InputError

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    other = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, overrides=["lr=2e-4"])
    with pytest.raises(InputError, match="recipe.optimizer.lr"):
        check_existing(plan_study(other, tmp_path))
    # More steps or more seeds are the same runs, extended or added.
    check_existing(plan_study(StudySpec(family="loo", only=["loo-loss-dapo"], steps=80, eval_every=10, seeds=3),
                              tmp_path))
    assert load_yaml(TrainConfig, tmp_path / "runs" / "scalerl" / "seed0" / "config.yaml").run.seed == 0


@pytest.mark.parametrize("overrides, variant", [(["loss.name=dapo"], "loo-loss-dapo"),
                                                (["lr=2e-4", "aggregation=sample"], "loo-aggregation-sample")])
def test_an_override_that_makes_a_variant_the_base_itself_is_refused(tmp_path, overrides, variant):
    """--set loss.name=dapo in a leave-one-out study made loo-loss-dapo train exactly the base's run;
    the report then compared a run with itself under the variant's name."""
    with pytest.raises(ConfigError, match=rf"variant\(s\) {variant} would train the same run as the base scalerl"):
        plan_study(StudySpec(family="loo", overrides=overrides), tmp_path)
    # Overrides that leave every variant its own change are fine.
    assert len(plan_study(StudySpec(family="loo", overrides=["lr=2e-4"]), tmp_path)) == 9


def test_a_run_that_crashes_in_process_fails_alone_as_in_a_worker(tmp_path, monkeypatch):
    """On the local backend one after another, an error that is not a ScaleRLError (a bug, a torch
    RuntimeError) stopped the whole study with a traceback; in worker processes it failed that run only."""
    from scalerl.study import local_runs
    from scalerl.study.one_run import Outcome

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10)
    plans = plan_study(spec, tmp_path)

    def execute(cfg_dict, budget):
        if "loo-loss-dapo" in cfg_dict["run"]["output"]:
            raise RuntimeError("CUDA error: an illegal memory access\nmore detail")
        return Outcome("scalerl", 0, "trained", 1.0)

    monkeypatch.setattr(local_runs, "execute_run", execute)
    lines, records = [], []
    outcomes = local_runs.run_local(plans, Budget.of(spec), spec, lines.append, records.append)
    assert [(o.label, o.status) for o in outcomes] == [("scalerl", "trained"), ("loo-loss-dapo", "failed")]
    assert outcomes[1].error == "RuntimeError: CUDA error: an illegal memory access" and len(records) == 2
    assert any("loo-loss-dapo/seed0: FAILED" in line for line in lines)


def test_a_run_that_saved_a_lora_adapter_alone_counts_as_finished(tmp_path):
    """With model.lora.save=adapter, final/ holds adapter_config.json and no config.json: the study
    took such a run for unfinished forever (resumed on every invocation, never analysed)."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    final = plans[0].directory / "final"
    (final / "config.json").rename(final / "adapter_config.json")
    assert run_status(plans[0].directory, Budget.of(spec)) == "done"
    (final / "adapter_config.json").unlink()
    assert run_status(plans[0].directory, Budget.of(spec)) == "partial"


def test_a_run_whose_compute_cannot_be_measured_fails_instead_of_resuming_forever(tmp_path, monkeypatch):
    """With a compute budget, a last evaluation without the x column gave a target of `steps`, where the
    run already was: resumed to where it was, over and over (a hang). It now fails that run."""
    from scalerl.config import to_dict
    from scalerl.study.one_run import execute_run
    from scalerl.train import trainer

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, compute=1e20)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    log = plans[0].directory / "runlog.jsonl"
    lines = log.read_text().splitlines()
    last = json.loads(lines[-1])
    last["flops"] = None  # JSON has no NaN: the run log writes it as null
    log.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    resumes = []

    class Stuck:  # a resumed run that is already at its target step: nothing new is logged
        @classmethod
        def resumed(cls, out, steps, progress=None):
            resumes.append(steps)
            if len(resumes) > 3:
                raise AssertionError(f"resumed again and again: {resumes}")
            return cls()

        def run(self):
            return None

    monkeypatch.setattr(trainer, "Trainer", Stuck)
    o = execute_run(to_dict(plans[0].config), Budget.of(spec))
    assert o.status == "failed" and "cannot be extended to the budget (1e+20 flops)" in o.error
    assert "has flops = None" in o.error and len(resumes) == 1


def test_a_run_already_past_its_first_stretch_goes_straight_to_the_extension(tmp_path, monkeypatch):
    """A compute study's run that trained past the first stretch already -- the workload's base run at step 300,
    shared into a study whose stretch is 150 steps -- was first resumed to step 150, which said "past run.steps =
    150: nothing to train" just before the extension trained it on; it is now resumed to the extension's target
    only."""
    from scalerl.config import to_dict
    from scalerl.study.one_run import execute_run
    from scalerl.train import trainer

    longer = StudySpec(family="loo", only=["loo-loss-dapo"], steps=80, eval_every=10)
    plans = write_study(tmp_path, longer, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=9)
    resumes = []

    class Recorded:  # logs nothing new: the extension's own check then fails the run, after the first resume
        @classmethod
        def resumed(cls, out, steps, progress=None):
            resumes.append(steps)
            return cls()

        def run(self):
            return None

    monkeypatch.setattr(trainer, "Trainer", Recorded)
    ckpt = plans[0].directory / "checkpoints" / "step_000080"  # its latest checkpoint (train/checkpoint.py's layout)
    ckpt.mkdir(parents=True)
    (ckpt / "state.pt").write_text("")
    # 1e12 flops: step 100; no evaluation at step 45 (the shared run evaluated every 20 steps, the stretch ends at 150)
    budget = Budget(steps=45, compute=1e12, max_steps=400, x="flops", eval_every=10)
    assert run_status(plans[0].directory, budget) == "partial"
    execute_run(to_dict(plans[0].config), budget)
    assert resumes and resumes[0] > 80, resumes


def test_sweep_run_named_after_the_preset_is_the_preset(tmp_path):
    from scalerl.study.plan import base_config

    spec = StudySpec(family="batch-size", values=[8, 16], base_value=12, steps=200, eval_every=20)
    own = base_config(StudySpec(family="batch-size")).recipe.batch.prompts_per_step  # 16 under cpu-tiny
    plans = plan_study(spec, tmp_path)
    named = {p.variant.label: (p.config.recipe_name, p.config.recipe.batch.prompts_per_step) for p in plans}
    assert named["batch-12"][1] == 12 and own == 16  # the base runs 12 prompts, as asked
    for label, (recipe_name, prompts) in named.items():
        assert (recipe_name == "scalerl") == (prompts == own), named
