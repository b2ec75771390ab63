"""What a study runs: one dataclass, one docstring per field, read from YAML or flags.

    family: loo            # every leave-one-out variant of `base`, and `base`
    base: scalerl
    seeds: 1
    steps: 400
    eval_every: 20

Fields split in two: those that decide what each run *is* (family, base, values, only,
seeds, budget, model, overrides; see :data:`RUN_FIELDS`) and those that only decide how the
runs are executed or analysed (backend, threads, rule, bootstrap, ...). A study directory
may be continued with different values of the second kind; a run already on disk whose
configuration differs from the plan is refused (see :mod:`scalerl.study.run_state`).

No torch here: ``scalerl study --help`` and ``scalerl report`` stay fast.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from scalerl.config import from_dict, load_yaml, to_dict
from scalerl.errors import ConfigError, InputError

#: Compute columns a study may budget and fit against (those every run log has).
X_COLUMNS = ("flops", "gpu_hours", "tokens", "samples", "step")


@dataclass
class StudySpec:
    """A family of runs, its budget, and how to compare them."""

    family: str = "loo"
    """Which runs: loo (the base recipe and each of its leave-one-out variants), recipes (the five
    presets), batch-size, generations, gen-length or model-size (sweeps of one knob of the base
    recipe). ``scalerl study --list`` shows every family and its variants."""
    base: str = "scalerl"
    """The recipe every variant is compared with (a preset from ``scalerl recipes``). For the
    recipes family it must be one of the five presets."""
    values: list[int | str] = field(default_factory=list)
    """Sweep families: the knob's values (prompts per step, generations per prompt, generation
    length in tokens, or tiny model size names); empty = the family's defaults around the base."""
    base_value: int | str | None = None
    """Sweep families: the value that is the baseline (default: the base recipe's own value,
    added to ``values`` if missing)."""
    only: list[str] = field(default_factory=list)
    """Run only these variants of the family (labels as ``--list`` prints them); the base always
    runs. Empty = all."""
    seeds: int = 1
    """Seeds per variant (run seeds 0, 1, ..., seeds-1); the fit pools them and its intervals
    include the seed spread."""
    steps: int = 400
    """Optimizer steps per run (with ``compute``: the first stretch, after which runs are extended).
    The curves must get well past C_mid for A to be identified: on the tiny model 200 steps were
    not enough (A ran to its bound of 1; docs/study.md)."""
    compute: float | None = None
    """Compute budget per run in the ``x`` column (e.g. 2e13 FLOPs): each run is extended, in
    whole evaluation intervals, until its last evaluation reaches it. Null = the ``steps`` budget.
    Use it when variants cost different compute per step (batch size, model size)."""
    max_steps: int = 5000
    """With ``compute``: no run trains past this many steps, whatever its compute."""
    eval_every: int = 20
    """Evaluate (mean@k on the held-out set) every this many steps; each evaluation is one point
    of the fitted curve."""
    x: str = "flops"
    """Compute column the curves are fitted and budgeted against: flops (deterministic), gpu_hours
    (measured; noisy on a shared machine), tokens, samples or step."""
    model: str = "tiny"
    """Model every run starts from: tiny (the CPU toy model), tiny-s / tiny-m / tiny-l (the
    arithmetic-mix workload's model-size ladder), a Hugging Face directory or hub id."""
    task: str = "arithmetic"
    """Task every run trains and evaluates on: arithmetic (2-digit addition, learnable to ~100%),
    arithmetic-mix (2-4-column addition under a thinking budget: a ceiling below 1, docs/workload.md)
    or math (with ``task.data=FILE`` in ``overrides``). The scale profile follows model and task."""
    overrides: list[str] = field(default_factory=list)
    """``key=value`` overrides applied to every run (as ``scalerl train --set``), after the scale
    profile and before the variant's own change (a sweep's knob wins over them)."""
    backend: Literal["local", "ray"] = "local"
    """local: runs on this machine -- one after another in this process, or ``parallel`` at once in
    worker processes; ray: runs in parallel, one Ray task each."""
    ray_address: str | None = None
    """ray: address of a running cluster; null starts a local one."""
    parallel: int = 0
    """At most this many runs at once. local: 0 or 1 = one after another in this process (with
    progress bars), N > 1 = N worker processes (no progress bars; give each run ``threads`` so that
    N x threads fits the cores); ray: 0 = as many as the cluster's CPUs allow."""
    threads: int = 0
    """torch CPU threads per run (ray: also the CPUs each task reserves); 0 = the trainer's default
    (torch's; under PipelineRL-k on the local backend, the cores its generator threads leave)."""
    rule: Literal["intervals", "paper"] = "intervals"
    """Classification rule of :func:`scalerl.curves.compare`: bootstrap intervals, or the paper's
    +-0.02 margin on A with a shared-A refit."""
    bootstrap: int = 300
    """Bootstrap resamples for every interval of the analysis."""
    extrapolate: float = 10.0
    """The report predicts each variant's pass rate at this multiple of the budget."""
    calibration: str | None = None
    """A calibration file from ``scalerl calibrate`` (your own earlier runs): the bands of the
    report's forecasts use its factors (default: the shipped ones). The runs' own live forecasts
    take it with ``overrides: [forecast.calibration=FILE]``."""
    progress: bool = True
    """Show each run's progress bar (local backend)."""
    auto_profile: dict[str, str] = field(default_factory=dict)
    """Written by the study into its ``study.yaml``, not for a spec file: the scale profile ``profile: auto``
    chose for a user model (by model), which the study plans with from then on -- the profile sets the base's
    batch, lengths and rates the variants are made from, and choosing it counts the model's parameters on this
    machine's device, so the report on a machine without the model (or another device) planned otherwise."""

    def validate(self) -> "StudySpec":
        from scalerl.study.families import FAMILIES

        problems = []
        if self.family not in FAMILIES:
            problems.append(f"family: unknown family {self.family!r}; known: {', '.join(FAMILIES)}")
        if not 1 <= self.seeds <= MAX_SEEDS:  # the plan lists every run: 10**12 seeds would never finish
            problems.append(f"seeds must be in 1..{MAX_SEEDS}, got {self.seeds}")
        if self.steps < 1:
            problems.append(f"steps must be >= 1, got {self.steps}")
        if self.eval_every < 1:
            problems.append(f"eval_every must be >= 1, got {self.eval_every}")
        elif self.steps // self.eval_every < MIN_EVALUATIONS:
            problems.append(
                f"steps {self.steps} with eval_every {self.eval_every} gives {self.steps // self.eval_every} "
                f"evaluations after R0; a sigmoid fit needs at least {MIN_EVALUATIONS} -- lower eval_every or raise steps"
            )
        # Finite too: an infinite budget is never reached, so every run would train to max_steps.
        if self.compute is not None and not 0 < self.compute < math.inf:
            problems.append(f"compute must be a finite number > 0 or null, got {self.compute}")
        if self.max_steps < self.steps:
            problems.append(f"max_steps ({self.max_steps}) must be >= steps ({self.steps})")
        if self.x not in X_COLUMNS:
            problems.append(f"x: unknown compute column {self.x!r}; known: {', '.join(X_COLUMNS)}")
        from scalerl.tasks.registry import TASKS

        if self.task not in TASKS:  # caught here, not by every run failing one after another
            problems.append(f"task: unknown task {self.task!r}; known: {', '.join(sorted(TASKS))}")
        if self.parallel < 0 or self.threads < 0:
            problems.append("parallel and threads must be >= 0")
        if self.bootstrap < MIN_BOOTSTRAP:
            problems.append(f"bootstrap must be >= {MIN_BOOTSTRAP}, got {self.bootstrap}")
        if not 1 < self.extrapolate < math.inf:
            problems.append(f"extrapolate must be a finite number > 1 (a multiple of the budget), got {self.extrapolate}")
        for item in self.overrides:
            if "=" not in item:
                problems.append(f"overrides: {item!r} must look like key=value")
        if self.calibration:
            from scalerl.curves.bands import DEFAULT_LEVEL, read_calibration

            try:  # at the report's band level: refused here, not after every run has trained
                read_calibration(self.calibration, level=DEFAULT_LEVEL)
            except InputError as exc:
                problems.append(f"calibration: {exc}")
        if problems:
            raise ConfigError("invalid study: " + "; ".join(problems))
        return self


#: More seeds per variant than any study can run (each is a whole training run).
MAX_SEEDS = 1000

#: Fewest bootstrap resamples an interval is computed from (fewer give no usable 95% interval).
MIN_BOOTSTRAP = 20

#: Evaluations after R0 a run needs for its curve to be fitted: the sigmoid has 3 free parameters
#: (R0 is the first evaluation) and the fit wants one point more to measure the noise
#: (scalerl.curves.solver.check_fittable). With fewer, every run trains and then none can be
#: fitted or compared, so such a budget is refused before anything trains.
MIN_EVALUATIONS = 4

#: Fields that decide what each run is; changing them changes the plan, not just its execution.
RUN_FIELDS = ("family", "base", "values", "base_value", "only", "seeds", "steps", "compute", "max_steps",
              "eval_every", "x", "model", "task", "overrides")

SPEC_FILE = "study.yaml"


def load_spec(path: str | Path) -> StudySpec:
    """A spec file (strict: an unknown key is an error naming the known ones)."""
    return load_yaml(StudySpec, path)


def load_saved_spec(path: str | Path) -> StudySpec:
    """A study directory's own ``study.yaml``. Unlike a spec file a user writes, where an empty file
    means every default, an empty saved spec means it was lost (``save_spec`` writes every field,
    atomically): read as the defaults, it re-planned another study over the runs on disk."""
    path = Path(path)
    try:
        empty = not path.read_text(errors="replace").strip()
    except OSError:
        empty = False  # unreadable: load_spec says why
    if empty:
        raise LostSpec(f"{path} is empty, so this study's spec is lost; give the spec the study was made with: "
                       f"scalerl study SPEC.yaml --output {shlex.quote(str(path.parent))} (--dry-run first "
                       f"names any run that does not "
                       "match it; finished runs are skipped)")
    return load_spec(path)


class LostSpec(InputError):
    """A study directory's ``study.yaml`` is empty (see :func:`load_saved_spec`)."""


def spec_from_dict(data: dict) -> StudySpec:
    return from_dict(StudySpec, data)


def with_changes(spec: StudySpec, changes: dict) -> StudySpec:
    """``spec`` with the given fields replaced (values given on the command line)."""
    unknown = [k for k in changes if k not in {f.name for f in dataclasses.fields(StudySpec)}]
    if unknown:
        raise ConfigError(f"unknown study field {unknown[0]!r}")
    return from_dict(StudySpec, {**to_dict(spec), **changes})
