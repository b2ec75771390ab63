"""What precedes the demo's one- or two-evaluation dips? An analysis of finished run logs (issue 12).

Reads the run directories given (``runlog.jsonl`` and ``samples.jsonl`` of ``scalerl demo`` /
``benchmarks/demo_figures.py`` runs; a run's *group* is its parent directory, the recipe variant),
trains nothing, and prints:

1. **The dips.** A one-evaluation dip is an evaluation at least ``--drop`` below both the mean of
   the two evaluations before it and the one after it; a two-evaluation dip is two consecutive
   evaluations both ``--drop`` below the mean of the two before and the one after them.
2. **Candidate precursors** of each dip's first evaluation ``i`` against every other evaluation
   of the same stage (steps with two evaluations before and one after; members of a dip and the
   evaluation after one left out): each feature z-scored within its evaluation step over the
   non-dip evaluations (so the curve's stage and the curriculum's drift do not count), then the
   AUC (P(a dip's value > a non-dip's)), the Mann-Whitney p, and how many dips lie beyond the
   non-dips' 10%/90% tail (hits) against how many non-dips do (false alarms). Features come from
   the evaluation before (``i-1`` vs ``i-2``), the 20 training steps leading to ``i`` ("window")
   and the 20 before those ("previous window").
3. **What moves at the dip**: evaluation ``i`` minus the mean of the two before, per column.
4. **Time course**: the training batches' columns around the dip, in 10-step bins, minus the same
   step's mean over the other runs of the group.
5. **The logged completions** (the first ``eval.log_samples`` problems of the set, the same at
   every evaluation) by their first error: ``copy`` (an operand digit miscopied), ``carry``,
   ``sum``, ``assembly`` (a complete, right scratchpad whose final answer is not its sum),
   ``interrupted-*`` (cut before the last column: the answer is guessed), ``format``.

    python benchmarks/demo_dips.py /tmp/b2/*/seed* /tmp/demolr/lr*/seed*
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

from scalerl.tasks.arithmetic import THINK_CLOSE, THINK_OPEN, columns

#: The length controller's interruption phrase starts with this (the run's config spells it out).
INTERRUPTION = "Okay, time is up."
LINE = re.compile(r"^(\d)\+(\d)\+(\d)=(\d{1,2})$")
TRAIN_COLUMNS = ("train_pass_rate", "filtered_frac", "mean_len", "frac_interrupted", "grad_norm", "adv_abs_mean",
                 "loss/ratio_max")


def load(run: Path) -> tuple[list[dict], dict[int, dict]]:
    """A run's evaluation rows and its training rows by step."""
    rows = [json.loads(line) for line in open(run / "runlog.jsonl")]
    train = {r["step"]: r for r in rows if r.get("type") == "train"}
    for r in train.values():  # a skipped step (every group filtered) made no update: no gradient, ratio 1
        r.setdefault("grad_norm", 0.0)
        r.setdefault("loss/ratio_max", 1.0)
    return [r for r in rows if r.get("type") == "eval"], train


def dips(y: list[float], drop: float) -> list[tuple[int, list[int], float]]:
    """(first index, member indices, level before) of each one- or two-evaluation dip of ``y``."""
    out, i = [], 2
    while i < len(y) - 1:
        pre = (y[i - 2] + y[i - 1]) / 2
        if y[i] <= min(pre, y[i + 1]) - drop:
            out.append((i, [i], pre))
            i += 2
        elif i + 2 < len(y) and max(y[i], y[i + 1]) <= min(pre, y[i + 2]) - drop:
            out.append((i, [i, i + 1], pre))
            i += 3
        else:
            i += 1
    return out


def first_error(prompt: str, completion: str, answer: str) -> str:
    """The first thing wrong in an arithmetic(-mix) completion, or ``correct``."""
    a, b = (int(t) for t in prompt.rstrip("=").split("+"))
    if not completion.startswith(THINK_OPEN) or THINK_CLOSE not in completion:
        return "format"
    think, _, ans = completion[len(THINK_OPEN):].partition(THINK_CLOSE)
    ans = ans.strip()
    interrupted = INTERRUPTION in think
    lines = [line for line in think.split(INTERRUPTION)[0].split("\n") if line]
    want = columns(a, b)
    for k, line in enumerate(lines):
        m = LINE.match(line)
        if not m:
            if interrupted and k == len(lines) - 1:
                break  # the line the interruption cut
            return "format"
        if k >= len(want):
            return "format"  # more columns than the sum has
        x, y, c, s = (int(g) for g in m.groups())
        if (x, y) != want[k][:2]:
            return "copy"
        if c != want[k][2]:
            return "carry"
        if s != x + y + c:
            return "sum"
    complete = len(lines) == len(want) and all(LINE.match(line) for line in lines)
    if not complete:
        if interrupted:  # cut before the last column: the answer can only be guessed
            return "interrupted-pass" if ans == answer else "interrupted-fail"
        return "format"
    if not ans.isdigit():
        return "format"
    return "correct" if ans == answer else "assembly"


def features(ev: list[dict], train: dict[int, dict], i: int, median_gn: float) -> dict[str, float]:
    """Candidate precursors of evaluation ``i``: all known before its pass rate is."""
    e, p, pp = ev[i], ev[i - 1], ev[i - 2]
    w = [train[s] for s in range(p["step"] + 1, e["step"] + 1) if s in train]
    w0 = [train[s] for s in range(pp["step"] + 1, p["step"] + 1) if s in train]

    def mean(rows, key):
        return float(np.mean([r[key] for r in rows]))

    return {
        "(a) val mean_len, i-1 minus i-2": p["val/mean_len"] - pp["val/mean_len"],
        "(a) val frac_interrupted, i-1 minus i-2": p["val/frac_interrupted"] - pp["val/frac_interrupted"],
        "(a) val frac_truncated at i-1": p["val/frac_truncated"],
        "(a) train mean_len, window": mean(w, "mean_len"),
        "(a) train mean_len, window minus previous": mean(w, "mean_len") - mean(w0, "mean_len"),
        "(a) train frac_interrupted, window": mean(w, "frac_interrupted"),
        "(b) prompts retired, previous window": p["retired_prompts"] - pp["retired_prompts"],
        "(b) prompts retired, window": e["retired_prompts"] - p["retired_prompts"],
        "(b) retired, window minus previous": (e["retired_prompts"] - p["retired_prompts"])
        - (p["retired_prompts"] - pp["retired_prompts"]),
        "(c) train pass rate, previous window": mean(w0, "train_pass_rate"),
        "(c) train pass rate, window": mean(w, "train_pass_rate"),
        "(c) train pass rate, last 5 steps": mean(w[-5:], "train_pass_rate"),
        "(c) filtered_frac, previous window": mean(w0, "filtered_frac"),
        "(c) filtered_frac, window": mean(w, "filtered_frac"),
        "(c) adv_abs_mean, window": mean(w, "adv_abs_mean"),
        "(c) grad_norm mean / run median, previous window": mean(w0, "grad_norm") / median_gn,
        "(c) grad_norm mean / run median, window": mean(w, "grad_norm") / median_gn,
        "(c) grad_norm max / run median, window": max(r["grad_norm"] for r in w) / median_gn,
        "(c) ratio_max mean, window": mean(w, "loss/ratio_max"),
        "(c) val pass rate, i-1 minus i-2": p["val/pass_rate"] - pp["val/pass_rate"],
        "(c) val pass@2 minus mean@2 at i-1": p["val/pass_at_k"] - p["val/pass_rate"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run directories (each with runlog.jsonl)")
    ap.add_argument("--drop", type=float, default=0.03, help="how far below its neighbours a dip lies (default 0.03)")
    args = ap.parse_args()
    runs = [r for r in args.runs if (r / "runlog.jsonl").exists()]
    loaded = {r: load(r) for r in runs}
    group = {r: r.parent.name for r in runs}
    name = {r: f"{r.parent.name}/{r.name}" for r in runs}

    print(f"1. DIPS ({len(runs)} runs; >= {args.drop} below the mean of the two evaluations before and the one after)")
    events, rows = [], []  # rows: (run, step, is_dip, features, what moved)
    for r, (ev, train) in loaded.items():
        y = [e["val/pass_rate"] for e in ev]
        found = dips(y, args.drop)
        members = {k for _, m, _ in found for k in m}
        after = {m[-1] + 1 for _, m, _ in found}
        first = {i for i, _, _ in found}
        for i, m, pre in found:
            events.append((r, i))
            low = min(y[k] for k in m)
            print(f"   {name[r]:22s} step {'+'.join(str(ev[k]['step']) for k in m):8s} {pre:.3f} -> {low:.3f} "
                  f"(depth {pre - low:.3f}), next {y[m[-1] + 1]:.3f}")
        median_gn = statistics.median(t["grad_norm"] for t in train.values())
        for i in range(2, len(y) - 1):
            if (i in members and i not in first) or i in after:
                continue
            moved = {k: ev[i][k] - (ev[i - 1][k] + ev[i - 2][k]) / 2
                     for k in ("val/pass_rate", "val/pass_at_k", "val/mean_len", "val/frac_interrupted", "val/frac_truncated")}
            rows.append((r, ev[i]["step"], i in first, features(ev, train, i, median_gn), moved))
    pos = [x for x in rows if x[2]]
    neg = [x for x in rows if not x[2]]
    if not pos:
        print("   none")
        return

    print(f"\n2. PRECURSORS: {len(pos)} dips against {len(neg)} other evaluations; z within the evaluation step")
    for key in pos[0][3]:
        ref = defaultdict(list)
        for x in neg:
            ref[x[1]].append(x[3][key])

        def z(x):
            sd = np.std(ref[x[1]], ddof=1)
            return (x[3][key] - np.mean(ref[x[1]])) / sd if sd > 0 else 0.0

        zp, zn = np.array([z(x) for x in pos]), np.array([z(x) for x in neg])
        u, p = mannwhitneyu(zp, zn)
        auc = u / (len(zp) * len(zn))
        side, cut = (">p90", np.quantile(zn, 0.9)) if auc >= 0.5 else ("<p10", np.quantile(zn, 0.1))
        hit = (lambda v: v > cut) if auc >= 0.5 else (lambda v: v < cut)
        print(f"   {key:50s} dips {np.mean([x[3][key] for x in pos]):8.3f}  others {np.mean([x[3][key] for x in neg]):8.3f}"
              f"  AUC {auc:.2f} (p {p:.3f})  {side}: {int(hit(zp).sum())}/{len(zp)} dips, {int(hit(zn).sum())}/{len(zn)} others")

    print("\n3. AT THE DIP (evaluation minus the mean of the two before)")
    for key in pos[0][4]:
        a, b = [x[4][key] for x in pos], [x[4][key] for x in neg]
        print(f"   {key:22s} dips {np.mean(a):+.4f} [{min(a):+.4f}, {max(a):+.4f}]   others {np.mean(b):+.4f} (sd {np.std(b):.4f})")

    print("\n4. TIME COURSE: training columns minus the same step's mean over the group's other runs, 10-step bins (s: the dip)")
    print("   " + " " * 18 + " ".join(f"{f's{b:+d}':>7s}" for b in range(-60, 40, 10)))
    for key in TRAIN_COLUMNS:
        series = {r: np.array([t[key] if (t := loaded[r][1].get(s)) else np.nan for s in range(1, 301)]) for r in runs}
        segs = []
        for r, i in events:
            others = [series[o] for o in runs if group[o] == group[r] and o != r]
            if not others:
                continue
            d = series[r] - np.nanmean(others, axis=0)
            s = loaded[r][0][i]["step"]
            segs.append([d[t - 1] if 1 <= t <= 300 else np.nan for t in range(s - 60, s + 40)])
        if segs:
            c = np.array(segs)
            bins = [np.nanmean(c[:, b:b + 10], axis=1) for b in range(0, 100, 10)]
            print(f"   {key:18s}" + " ".join(f"{np.mean(m):+7.3f}" for m in bins)
                  + f"   (bins below 0: {' '.join(str(int((m < 0).sum())) for m in bins)} of {len(segs)})")

    print("\n5. LOGGED COMPLETIONS by first error (the same few problems at every evaluation)")
    tally = defaultdict(Counter)
    for r, (ev, _) in loaded.items():
        y = [e["val/pass_rate"] for e in ev]
        found = dips(y, args.drop)
        role = {}
        for i, m, _ in found:
            role.update({ev[i - 1]["step"]: "the evaluation before", ev[m[-1] + 1]["step"]: "the evaluation after"})
            role.update({ev[k]["step"]: "dip evaluations" for k in m})
        inner = {e["step"] for e in ev[2:-1]}
        path = r / "samples.jsonl"
        for line in (open(path) if path.exists() else []):
            s = json.loads(line)
            if s["step"] in inner:
                tally[role.get(s["step"], "other evaluations")][first_error(s["prompt"], s["completion"], s["answer"])] += 1
    for who in ("dip evaluations", "the evaluation before", "the evaluation after", "other evaluations"):
        n = sum(tally[who].values())
        if n:
            print(f"   {who:22s} n {n:4d}: " + ", ".join(f"{k} {v / n:.2f}" for k, v in tally[who].most_common()))


if __name__ == "__main__":
    main()
