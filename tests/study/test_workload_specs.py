"""The arithmetic-mix workload's study families (configs/studies/workload-*.yaml), planned -- nothing trains."""

from pathlib import Path

import pytest

from scalerl.config import apply_overrides
from scalerl.models.tiny import LADDER, tiny_spec
from scalerl.study.analysis import _expected_better
from scalerl.study.plan import plan_study, tiny_spec_of
from scalerl.study.spec import StudySpec, load_spec
from scalerl.tasks.arithmetic_mix import ArithmeticMixTask

SPECS = Path(__file__).resolve().parents[2] / "configs" / "studies"


def _plans(name, tmp_path):
    spec = load_spec(SPECS / f"workload-{name}.yaml")
    return spec, plan_study(spec, tmp_path / name)


def _by_label(plans):
    return {p.variant.label: p for p in plans}


@pytest.mark.parametrize("name", ["model-size", "model-size-compute", "gen-length", "batch-size", "efficiency",
                                  "model-size-verified", "gen-length-verified", "batch-size-verified",
                                  "model-size-compute-verified", "efficiency-verified",
                                  "model-size-long-verified", "resampling-verified", "efficiency-long-verified",
                                  "model-size-long-compute-verified"])
def test_every_workload_family_runs_the_workload_with_three_seeds(name, tmp_path):
    spec, plans = _plans(name, tmp_path)
    assert spec.seeds >= 3 and {p.seed for p in plans} == set(range(spec.seeds))
    for p in plans:
        cfg = p.config
        assert cfg.task.name == "arithmetic-mix"
        # The cpu-tiny-mix profile (the demo's evaluation), one torch thread for each of 2 runs at once.
        assert (cfg.eval.problems, cfg.eval.samples_per_problem) == (500, 2)
        assert cfg.run.threads == 1 and spec.parallel == 2


def test_gen_length_caps_are_ordered_and_clearly_below_one(tmp_path):
    _, plans = _plans("gen-length", tmp_path)
    task = ArithmeticMixTask()
    caps = {p.variant.value: task.ceiling(tuple(p.config.recipe.length.think_budget)) for p in plans}
    assert caps[48] == pytest.approx(0.614, abs=1e-3)  # the base: the demo's budget [26, 34]
    assert caps[36] < 0.4 < caps[48] < caps[54] < 0.8  # an A to identify for every length
    for p in plans:  # the whole interrupted sequence fits: thinking + phrase + answer budget
        length = p.config.recipe.length
        assert length.think_budget[1] + length.answer_budget <= length.max_new_tokens


def test_model_size_on_the_ladder_uses_each_sizes_own_warm_start(tmp_path):
    spec, plans = _plans("model-size", tmp_path)
    runs = _by_label(plans)
    assert set(runs) == {f"model-{m}" for m in LADDER} and runs["model-tiny-m"].variant.is_base
    for name in LADDER:
        p = runs[f"model-{name}"]
        assert p.config.model.name_or_path == name and p.variant.arch is None
        assert tiny_spec_of(p) == tiny_spec(name)  # what prepare_models builds before any run starts
    base = runs["model-tiny-m"].variant
    assert _expected_better(spec, runs["model-tiny-l"].variant, base.value) is True
    assert _expected_better(spec, runs["model-tiny-s"].variant, base.value) is False


def test_batch_size_is_compared_at_equal_compute(tmp_path):
    spec, plans = _plans("batch-size", tmp_path)
    assert spec.compute and spec.x == "flops" and spec.max_steps >= 4 * spec.steps
    assert {p.variant.value: p.config.recipe.batch.prompts_per_step for p in plans} == {8: 8, 16: 16, 32: 32}


def test_model_size_at_equal_compute_gives_every_size_the_largest_ones_budget(tmp_path):
    spec, plans = _plans("model-size-compute", tmp_path)
    _, same = _plans("model-size", tmp_path)
    assert spec.compute and spec.x == "flops" and spec.max_steps >= 4 * spec.steps
    # The same runs as model-size's first 300 steps (so its finished runs can be continued).
    assert [p.config.model.name_or_path for p in plans] == [p.config.model.name_or_path for p in same]


def test_efficiency_family_is_the_four_efficiency_choices(tmp_path):
    _, plans = _plans("efficiency", tmp_path)
    runs = _by_label(plans)
    assert runs.pop("scalerl").variant.is_base
    assert sorted(c for p in runs.values() for c in p.variant.components[:1]) == sorted(
        ["aggregation", "advantages", "sampler", "off_policy"])
    ppo = runs["loo-pipeline-ppo-off-policy-8"].config.recipe.off_policy
    assert (ppo.pipeline, ppo.k) == ("ppo-off-policy-k", 8)


def test_task_is_part_of_what_a_run_is(tmp_path):
    """A study's task decides its runs: a study planned on arithmetic is not the one on arithmetic-mix."""
    base = StudySpec(family="loo", only=["loo-loss-dapo"], model="tiny-m")
    mix = plan_study(StudySpec(**{**base.__dict__, "task": "arithmetic-mix"}), tmp_path / "mix")
    plain = plan_study(base, tmp_path / "plain")
    assert {p.config.task.name for p in mix} == {"arithmetic-mix"} and {p.config.task.name for p in plain} == {"arithmetic"}
    # The profile follows the task: the workload's thinking budget, the 2-digit task's.
    assert {tuple(p.config.recipe.length.think_budget) for p in mix} == {(26, 34)}
    assert {tuple(p.config.recipe.length.think_budget) for p in plain} == {(18, 26)}


@pytest.mark.parametrize("name", ["model-size", "gen-length", "batch-size", "model-size-compute", "efficiency"])
def test_verified_families_are_the_same_runs_with_a_process_verified_reward(name, tmp_path):
    """Only the reward differs: every run of ``<name>-verified`` is ``<name>``'s with the task's
    ``verify_scratchpad`` on (so the cap by construction is a hard bound)."""
    _, plain = _plans(name, tmp_path / "plain")
    _, verified = _plans(f"{name}-verified", tmp_path / "verified")
    assert [p.variant.label for p in verified] == [p.variant.label for p in plain]
    for a, b in zip(plain, verified):
        assert a.config.task.settings == {} and b.config.task.settings == {"verify_scratchpad": True}
        b.config.task.settings = {}
        b.config.run.output = a.config.run.output
        assert b.config == a.config


@pytest.mark.parametrize("name", ["model-size-long-verified", "model-size-long-compute-verified"])
def test_model_size_long_is_the_ladder_at_gen_lengths_54_token_budgets(name, tmp_path):
    """The ladder at 54 tokens: tiny-m's runs are gen-length-verified's length-54 runs (the same
    length budgets as families.length_overrides gives, only the recorded recipe name differs), and
    tiny-s / tiny-l differ from them only in the model."""
    _, lengths = _plans("gen-length-verified", tmp_path / "lengths")
    _, sizes = _plans(name, tmp_path / "sizes")
    length_54 = {p.seed: p.config for p in lengths if p.variant.label == "length-54"}
    assert len(length_54) == 3 and {p.config.model.name_or_path for p in sizes} == {"tiny-s", "tiny-m", "tiny-l"}
    for p in sizes:
        # Seeds past gen-length's three: its seed-0 run with the seed (and the seeds derived from it) changed.
        cfg, ref = p.config, length_54.get(p.seed) or apply_overrides(length_54[0], [f"run.seed={p.seed}"])
        assert cfg.recipe.length == ref.recipe.length and cfg.recipe.length.max_new_tokens == 54
        cfg.model, cfg.recipe_name, cfg.run.output = ref.model, ref.recipe_name, ref.run.output
        assert cfg == ref


def test_resampling_runs_several_epochs_over_a_small_pool(tmp_path):
    """no-positive-resampling retires prompts for later epochs: the pool must be small enough that
    the budget runs several, and the variant must differ from the base in that switch alone."""
    from scalerl.tasks import get_task

    spec, plans = _plans("resampling-verified", tmp_path)
    by_label = _by_label(plans)
    assert set(by_label) == {"scalerl", "loo-no-positive-resampling-off"}
    cfg = by_label["scalerl"].config
    pool = len(get_task(cfg.task.name, **cfg.task.settings).train_problems())
    assert spec.steps * cfg.recipe.batch.prompts_per_step >= 3 * pool
    assert cfg.recipe.sampler.no_positive_resampling
    assert not by_label["loo-no-positive-resampling-off"].config.recipe.sampler.no_positive_resampling


def test_efficiency_long_extends_the_same_runs(tmp_path):
    """The 600-step family's runs are the 300-step family's, step budget aside (so a study extends them)."""
    _, short = _plans("efficiency-verified", tmp_path / "short")
    spec, long = _plans("efficiency-long-verified", tmp_path / "long")
    short = {(p.variant.label, p.seed): p.config for p in short}
    assert spec.steps == 600 and len(long) == 9
    for p in long:
        ref = short[(p.variant.label, p.seed)]
        p.config.run.steps, p.config.run.output = ref.run.steps, ref.run.output
        assert p.config == ref
