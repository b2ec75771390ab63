"""``--x cum:TIMER``: the time a run spent saving checkpoints and validating, inside a summed timer.

A trainer's per-step timer is the natural compute axis (``cum:timing_s/step``: seconds of the run so
far), but some wrap more than the training step: verl's ``timing_s/step`` held its checkpoint saves
(~2,330 s each, against ~155 s for a step, on a Qwen2-7B GRPO run) and its validation until verl
moved both out of it (PR #3117, August 2025). Summed, those seconds put a jump into the compute axis
at every save -- a distorted x for the sigmoid's C_mid and B -- with nothing said. A glob over a
trainer's timers (``cum:timing/*``, ``cum:timeperf/*``) adds such timers up directly.

Whether a timer sits inside the summed one is told from the log itself, not from a version number:
on the rows that log it, the summed timer must be larger than on the rows that do not, by about the
timer's own value (a least-squares fit of the summed timer on the known timers, each coefficient 1
when inside, 0 when outside; judged only where its confidence interval rules the other answer out).
Only the known timers below are looked at.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
from scipy import stats

#: Timers of work that is not training, by the exact name each framework logs, with what it times and
#: where that name and its nesting come from.
NOT_TRAINING: dict[str, str] = {
    # verl (verl/trainer/ppo/ray_trainer.py): marked_timer("testing") and marked_timer("save_checkpoint")
    # nested inside marked_timer("step") from early 2025 until PR #3117 (2025-08-19) moved both after it.
    "timing_s/save_checkpoint": "checkpoint saves",
    "timing_s/testing": "validation",
    # verl 0.1 (late 2024): metrics['timing/testing'], a phase of its own, summed by cum:timing/*.
    "timing/testing": "validation",
    # NeMo-RL (nemo_rl/algorithms/grpo.py): timer.time("checkpointing") and validate() both run inside
    # timer.time("total_step_time"); validation's own timer is logged under timing/validation/ at the same step.
    "timing/train/checkpointing": "checkpoint saves",
    "timing/validation/total_validation_time": "validation",
    # SkyRL (skyrl/train/trainer.py): Timer("save_checkpoints") and Timer("save_hf_model") inside
    # Timer("step"); Timer("eval") after it.
    "timing/save_checkpoints": "checkpoint saves",
    "timing/save_hf_model": "model exports",
    "timing/eval": "validation",
    # AReaL (areal/trainer/rl_trainer.py): stats_tracker.record_timing("save" / "checkpoint_for_recover" /
    # "eval"), logged as timeperf/<name> beside the training phases that cum:timeperf/* adds up.
    "timeperf/save": "checkpoint saves",
    "timeperf/checkpoint_for_recover": "checkpoint saves",
    "timeperf/eval": "validation",
    # prime-rl (src/prime_rl/trainer/rl/train.py): the checkpoint save runs inside the trainer's time/step.
    "time/save_ckpt": "checkpoint saves",
}
# Not here: OpenRLHF (timing/step_total is the sum of its training phases; no save or eval timer), TRL /
# HF Trainer (no per-step timers), ROLL (time/val_step is inside time/step_total, but step_total is
# logged one step late, so a row's two never coincide).

#: How sure the fit must be: a timer is judged inside (or outside) the summed one only where the other
#: answer lies outside the fit's 95% confidence interval.
CONFIDENCE = 0.95
#: Timers logged on the very same rows are judged together (which of them the summed timer holds); past
#: this many, only whether it holds them all or none.
MAX_SUBSETS_OF = 4


def _number(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else 0.0


def summed_rows(rows: list[dict], summed: list[str]) -> list[dict]:
    """The rows that log one of the ``summed`` columns: the rows ``cum:`` adds a step's time from, and
    so the only rows a timer taken off it is taken off (a validation before training, on a row of its
    own, is inside no step's time)."""
    return [r for r in rows if any(isinstance(v := r.get(c), (int, float)) and not isinstance(v, bool)
                                   and math.isfinite(v) for c in summed)]


def _answers(ts: np.ndarray) -> list[tuple[float, tuple[bool, ...]]]:
    """For timers logged on the same rows (``ts``: a column each), each answer to which of them the
    summed timer holds, with the coefficient the fit on their sum gives under it (the held timers'
    share of their sum: 0 for none, 1 for all)."""
    total = float(ts.sum())
    shares = ts.sum(axis=0) / total
    if ts.shape[1] > MAX_SUBSETS_OF:
        return [(0.0, (False,) * ts.shape[1]), (1.0, (True,) * ts.shape[1])]
    return [(float(sum(sh for sh, held in zip(shares, which) if held)), which)
            for which in itertools.product((False, True), repeat=ts.shape[1])]


def _inside(rows: list[dict], summed: list[str], timers: list[str]) -> dict[str, bool | None]:
    """For each of ``timers`` (not among ``summed``): whether the summed timers include it (None: the
    log cannot tell). On the rows that log the summed timers, a least-squares fit of their sum on the
    timers (and a constant, the step's own time): a timer inside adds its own value (coefficient 1),
    one outside nothing (0). The answer is the one nearest the fitted coefficient, where the fit's
    confidence interval rules out the other; else the log cannot tell (too few rows without the
    timers, a timer on every row, or a fit too noisy). Timers logged on the very same rows (verl's
    save and validation, both every 10 steps) cannot be told apart by their coefficients -- the fit
    is as ill-conditioned as the two are alike --: their sum is fitted, and its coefficient is the
    share of it the summed timer holds (0, the validation's share, the save's, or 1)."""
    timed = summed_rows(rows, summed)
    s = np.array([sum(_number(r.get(c)) for c in summed) for r in timed])
    t = np.array([[_number(r.get(k)) for k in timers] for r in timed]).reshape(len(timed), len(timers))
    groups: dict[bytes, list[int]] = {}  # the rows a timer is logged on -> the timers logged on them
    for j in range(len(timers)):
        groups.setdefault((t[:, j] != 0).tobytes(), []).append(j)
    members = [js for js in groups.values() if t[:, js].any()]
    unknown = {k: None for k in timers}
    design = np.column_stack([np.ones(len(timed)), *(t[:, js].sum(axis=1) for js in members)])
    clean = int((t == 0).all(axis=1).sum())
    dof = len(timed) - design.shape[1]
    if not members or clean < 2 or dof < 2 or np.linalg.matrix_rank(design) < design.shape[1]:
        return unknown
    coef, rss, *_ = np.linalg.lstsq(design, s, rcond=None)
    residual = float(rss[0]) if len(rss) else float(((design @ coef - s) ** 2).sum())
    se = np.sqrt(np.diag(np.linalg.inv(design.T @ design)) * residual / dof)
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, dof) * se
    out = dict(unknown)
    for g, js in enumerate(members, start=1):
        answers = sorted(_answers(t[:, js]), key=lambda a: abs(a[0] - coef[g]))
        (_, which), others = answers[0], answers[1:]
        if all(abs(c - coef[g]) > half[g] for c, _ in others):
            out.update({timers[j]: held for j, held in zip(js, which)})
    return out


def _taken_off_outside(runs: dict[object, list[dict]], plus: list[str], minus: list[str]) -> list[str]:
    """The columns ``minus`` that the log shows are not inside ``plus`` (in some run)."""
    wrong: list[str] = []
    for run_rows in runs.values():
        logged = [k for k in minus if any(_number(r.get(k)) for r in run_rows)]
        if logged:
            wrong += [k for k, v in _inside(run_rows, plus, logged).items() if v is False and k not in wrong]
    return wrong


def overhead_note(rows: list[dict], x: str, plus: list[str], minus: list[str], run_column: str | None = None) -> str:
    """What ``--x x`` (``cum:`` adding up ``plus`` less ``minus``) counts of checkpoint saves and
    validation as compute, and the ``--x`` that leaves them out; "" when it counts none."""
    keys = set().union(*rows) if rows else set()
    known = [k for k in NOT_TRAINING if k in keys and k not in minus]
    runs: dict[object, list[dict]] = defaultdict(list)
    for r in rows:
        runs[r.get(run_column) if run_column else None].append(r)
    wrong = _taken_off_outside(runs, plus, minus)
    if wrong:
        return (f"{x} takes off {', '.join(wrong)}, but in this log {' + '.join(plus)} does not grow with "
                f"{'it' if len(wrong) == 1 else 'them'} (not part of it: verl times testing and save_checkpoint "
                "after its step since PR #3117, August 2025): the compute is short by that much -- leave "
                f"{'it' if len(wrong) == 1 else 'them'} out of --x")
    if not known:
        return ""
    summed_in = [k for k in known if k in plus]  # a glob adds them up itself
    nested = [k for k in known if k not in plus]
    inside: dict[str, bool | None] = {}
    for run_rows in runs.values():
        for k, v in _inside(run_rows, plus, nested).items() if nested else ():
            inside[k] = v if k not in inside else (inside[k] if inside[k] == v else None)
    counted = summed_in + [k for k in nested if inside.get(k)]
    unsure = [k for k in nested if inside.get(k) is None]
    # Over the rows x adds a step's time from, as the readers take the minus terms off those rows only.
    timed = summed_rows(rows, plus)
    total = sum(_number(r.get(c)) for r in timed for c in plus) - sum(_number(r.get(c)) for r in timed for c in minus)
    amounts = {k: sum(_number(r.get(k)) for r in timed) for k in known}
    counted = [k for k in counted if amounts[k] > 0]
    unsure = [k for k in unsure if amounts[k] > 0]
    if total <= 0 or not (counted or unsure):
        return ""
    listed = lambda ks: ", ".join(f"{k} ({NOT_TRAINING[k]}, {amounts[k]:.4g} in all)" for k in ks)  # noqa: E731
    share = lambda ks: 100.0 * sum(amounts[k] for k in ks) / total  # noqa: E731
    fix = lambda ks: f"--x '{x}{''.join('-' + k for k in ks)}'"  # noqa: E731
    summed = " + ".join(plus) if len(plus) <= 3 else f"the {len(plus)} columns of {x}"
    if counted:
        how = "adds up" if set(counted) <= set(summed_in) else "counts"
        return (f"{x} {how} time that is not training: {listed(counted)} -- {share(counted):.0f}% of x, logged on "
                f"the rows of {summed} and {'part of it' if how == 'counts' else 'summed with it'}, putting a jump "
                f"into the compute at each; {fix(counted)} leaves it out (a missing value counts as 0)"
                + (f"; {listed(unsure)} as well, if {summed} includes it ({fix(counted + unsure)})" if unsure else ""))
    return (f"{listed(unsure)} logged on the rows of {summed}: {share(unsure):.0f}% of x if {summed} includes it "
            f"(verl's timing_s/step did until verl PR #3117, August 2025; the log cannot tell), which "
            f"{fix(unsure)} would leave out")
