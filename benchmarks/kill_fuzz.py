"""Kill-fuzz campaign: kill a small training run at random moments, resume it, check the result.

    PYTHONPATH=src python benchmarks/kill_fuzz.py                       # 25 trials, default recipe
    PYTHONPATH=src python benchmarks/kill_fuzz.py --trials 12 --sync    # --set pipeline=sync as well
    PYTHONPATH=src python benchmarks/kill_fuzz.py --trials 10 --seed 3 --work /tmp/kf --keep
    PYTHONPATH=src python benchmarks/kill_fuzz.py --trials 6 --label nproc2 --extra "--nproc 2"
    PYTHONPATH=src python benchmarks/kill_fuzz.py --trials 6 --label lora --extra "--set model.lora.rank=8" --loose

``--extra ARGS`` fuzzes any other configuration: ARGS (split as a shell would) go after the small
run's arguments, the recipe is named ``--label``, and only it is fuzzed. Where the docs do not
promise that a resume repeats the uninterrupted log row for row, ``--loose`` checks what they do
promise instead: the evaluation and training rows are the reference's steps, once each and in order
(none lost or repeated by a resume); the rest of the checks below but the row and weight
comparisons (a difference there is a note).

A tool, not a CI test (minutes of CPU; the regression tests it led to are in tests/train/).
``--backend ray`` fuzzes Ray-backend runs instead, with the checks benchmarks/ray_kill_fuzz.py
describes (Ray runs are not reproducible: steps, processes and exit statuses are checked).

What it does, for each recipe (the default one -- PipelineRL -- and, with ``--sync``,
``--set pipeline=sync``):

1. one uninterrupted reference run of the tiny model (``--steps 12 --eval-every 4``, small
   batches and evaluations, ``--threads 1``; ~10-20 s on a CPU), timed;
2. ``--trials`` times: the same command in a fresh directory, killed at a moment drawn uniformly
   over the reference's wall time (start-up, the step-0 evaluation, steps, checkpoint writes, the
   final model's save, the report and the exit included), with SIGKILL (most trials), SIGTERM or
   SIGINT -- or, in a share of the trials (``--triggered``), the moment a file appears (a
   checkpoint's or ``final/``'s temporary directory, the ``latest`` pointer's temporary file,
   ``config.yaml``'s, the last checkpoint, the report's files: ``TRIGGERS``), which a uniform draw
   rarely hits; then the same command with ``--resume`` (or, when the stop left no run to resume -- a
   SIGTERM/SIGINT before the first checkpoint empties the directory, as its message says -- the same
   command again), itself killed in some trials, until it exits 0 (at most ``--max-attempts``);
3. after each trial: the run completed; its evaluation rows (step and every pass rate) equal the
   reference's; its whole run log does too (but for timing, pipeline and memory columns, and the
   ``resume`` rows); ``final/`` loads with ``AutoModelForCausalLM.from_pretrained`` and its weights
   equal the reference's bit for bit; no temporary file is left (``*.tmp-*``, ``*.old-*``, hidden
   ``.*.tmp-*``), nor a checkpoint beyond ``run.keep_checkpoints``; the run log has no torn line;
   ``scalerl report DIR`` exits 0; with ``--set log.tensorboard=true``, TensorBoard reads every
   scalar at the reference's steps, once each (a resumed attempt's purge mark drops what the killed
   one wrote past its checkpoint), with the reference's values; with ``--set log.wandb_project=P``
   (and ``WANDB_MODE=offline`` exported), ``RUN/wandb`` as ``scalerl fit`` reads it -- the offline
   attempts' run directories joined -- is one run with the reference's steps of ``WANDB_METRICS``,
   with its values (no stopped start's W&B run beside it); no process of the run is left -- after each stop (and at the
   end) every process that carries the trial's tag in its environment (the command, its trainer
   ranks, generator and reward worker processes: whatever they started) must be gone within
   ``SETTLE`` seconds; a ``kill -9`` of the command must take them with it; a SIGTERM/SIGINT stop
   exits 143/130 without a traceback (one that lands after the command's last "report:" line is a
   note, as in benchmarks/study_kill_fuzz.py); one that stops a first attempt once its ``final/`` is
   in place says the run is complete, with no ``--resume`` advice.

It prints one line per trial as it goes, then a table::

    recipe  trial  signal   t_kill  phase                      attempts  outcome
    default     3  SIGKILL   7.41s  step 6 (ckpt 4)            2         ok
    default     4  SIGTERM  12.90s  report                     2         FAIL: leftover final.old-123

``phase``: what the kill hit, read from the run directory right after it (the run log's last row,
the checkpoints and temporary directories present, ``final/``, the report's files). ``outcome``:
``ok`` or ``FAIL:`` with every check that failed; a summary per recipe and signal follows. Exit
status 1 if any trial failed. ``--keep`` keeps the failed trials' directories (always printed).
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from scalerl.runlog import read_runlog

STEPS, EVAL_EVERY = 12, 4
SMALL = ["--model", "tiny", "--steps", str(STEPS), "--eval-every", str(EVAL_EVERY), "--no-progress", "--threads", "1",
         "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
         "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2",
         "--set", "forecast.min_points=3", "--set", "forecast.bootstrap=20"]
RECIPES = {"default": [], "sync": ["--set", "pipeline=sync"]}
#: Columns no two runs share (wall-clock time, pipeline timing, memory).
TIMING = ("gpu_hours", "utc", "seconds")
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}
#: Seconds a stopped command's processes get to end: its ranks and workers die with it (the kernel kills
#: them: on a kill -9, ranks left longer trained on in the background and finished the run).
SETTLE = 3.0
#: W&B's own service processes, which watch their parent themselves, and the seconds they may take
#: to follow a ``kill -9``'d command (measured: ~4 s, wandb 0.31).
WANDB_SERVICE, WANDB_SETTLE = ("wandb-core", "wandb-symon"), 10.0


def command(out: Path, recipe: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "scalerl", "train", *SMALL, *RECIPES[recipe], "--output", str(out), *extra]


def run_timed(cmd: list[str], log: Path, env: dict | None = None) -> tuple[int, float]:
    t0 = time.perf_counter()
    with log.open("w") as err:
        rc = subprocess.run(cmd, stdout=err, stderr=subprocess.STDOUT, env=env).returncode
    return rc, time.perf_counter() - t0


def descendants(pid: int) -> list:
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 -- no psutil, or the process is gone
        return []


#: Trigger trials: the kill comes as soon as one of these appears in the run directory (polled
#: every millisecond), to hit the short windows a uniform draw rarely does.
TRIGGERS = ("checkpoints/step_*.tmp-*", "checkpoints/latest.tmp-*", "final.tmp-*", "final/config.json",
            ".config.yaml.tmp-*", "config.yaml", "checkpoints/step_000012", "report.md", "curve.png")


def wait_for_moment(proc: subprocess.Popen, at: float, out: Path | None, trigger: str | None) -> bool:
    """Wait until ``at`` seconds after now -- or, with ``trigger``, until that glob matches under
    ``out`` -- or until ``proc`` ends; whether it still runs (a stop is then sent)."""
    deadline = time.perf_counter() + at
    if trigger is not None:
        while proc.poll() is None and not any(out.glob(trigger)):
            time.sleep(0.001)
    while time.perf_counter() < deadline and proc.poll() is None:
        time.sleep(min(0.01, max(deadline - time.perf_counter(), 0)))
    return proc.poll() is None


def run_killed(cmd: list[str], log: Path, at: float, sig: int, out: Path | None = None,
               trigger: str | None = None, env: dict | None = None) -> tuple[int, bool, list]:
    """Start ``cmd``, send ``sig`` ``at`` seconds later -- or, with ``trigger``, as soon as that glob
    matches under ``out`` -- unless it ended first. (exit status, whether the signal was sent, the
    processes it had started)."""
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=env)
        if not wait_for_moment(proc, at, out, trigger):
            return proc.returncode, False, []
        children = descendants(proc.pid)
        proc.send_signal(sig)
        try:
            rc = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:  # a stop that hangs is a failure of its own
            proc.kill()
            rc = proc.wait()
            children.append("hung after the signal")
    return rc, True, children


def phase(out: Path) -> str:
    """What a stop hit, from the run directory it left."""
    if not out.exists():
        return "start-up (no dir)"
    if not (out / "config.yaml").exists():
        return "start-up (no config)"
    ckdir = out / "checkpoints"
    cks = sorted(p.name for p in ckdir.glob("step_*")) if ckdir.exists() else []
    tmp_ck = [n for n in cks if ".tmp-" in n]
    done = [int(n[5:11]) for n in cks if ".tmp-" not in n]
    if list(out.glob("final.tmp-*")) or list(out.glob("final.old-*")):
        return "final save"
    if (out / "final").exists():
        reports = [n for n in ("curve.png", "sets.png", "report.md", "report.html") if (out / n).exists()]
        return f"report ({len(reports)}/4 files)" if len(reports) < 4 else "report done / exit"
    if tmp_ck:
        return f"checkpoint write ({tmp_ck[-1].split('.')[0]})"
    if list(ckdir.glob("latest.tmp-*")) if ckdir.exists() else False:
        return "checkpoint pointer"
    last = "-"
    log = out / "runlog.jsonl"
    if log.exists() and log.stat().st_size:
        try:
            _, rows, _ = read_runlog(log)
            steps = [r for r in rows if "step" in r]
            if steps:
                last = f"{steps[-1]['type']} {steps[-1]['step']}"
        except Exception as exc:  # noqa: BLE001
            last = f"unreadable log ({type(exc).__name__})"
    else:
        last = "setup"
    return f"{last} (ckpt {done[-1] if done else '-'})"


def comparable(out: Path) -> tuple[list, list, list]:
    """(eval rows: step and pass rates, every row but timing, the run log's notes)."""
    _, rows, notes = read_runlog(out / "runlog.jsonl")
    evals = [{k: v for k, v in r.items() if k == "step" or k.endswith(("/pass_rate", "/pass_at_k"))}
             for r in rows if r.get("type") == "eval"]
    full = [{k: v for k, v in r.items() if k not in TIMING and not k.startswith(("pipeline/", "memory/"))}
            for r in rows if r.get("type") != "resume"]
    return evals, full, notes


def tensorboard_scalars(out: Path) -> dict | None:
    """{tag: [(step, value), ...]} of the run's TensorBoard event files as TensorBoard reads them
    (the killed attempts' events past a resumed attempt's purge mark dropped); None without any.
    Wall-clock, pipeline and memory tags are left out (no two runs share them)."""
    logdir = out / "tensorboard"
    if not logdir.is_dir():
        return None
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]
            if not any(t in tag for t in TIMING) and not tag.startswith(("pipeline/", "memory/"))}


#: What the W&B check compares, as ``scalerl fit RUN/wandb`` reads it (an evaluation metric, a training one).
WANDB_METRICS = ("val/pass_rate", "reward_mean", "loss")


def wandb_points(out: Path) -> tuple[dict | None, list[str]]:
    """({metric: [(step, value), ...]} of the run's W&B directory as ``scalerl fit RUN/wandb`` reads
    it -- an offline resume is a directory of its own, joined to the earlier ones --, the reader's
    notes); (None, []) without one. A W&B run that is not the run's (another id, as a stopped start
    left) shows as a second curve."""
    wandb_dir = out / "wandb"
    if not wandb_dir.is_dir():
        return None, []
    from scalerl.curves.wandb_run_log import read_wandb_run

    points, notes = {}, []
    for metric in WANDB_METRICS:
        curves = read_wandb_run(wandb_dir, "step", metric, bounded=False)
        points[metric] = [[(float(x), float(y)) for x, y in zip(c.x, c.y)] for c in curves]
        notes += [n for c in curves for n in c.notes if n not in notes]
    return points, notes


def final_weights(out: Path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(out / "final")
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def leftovers(out: Path) -> list[str]:
    bad = []
    for p in out.rglob("*"):
        rel = str(p.relative_to(out))
        if ".tmp-" in p.name or ".old-" in p.name or p.name.endswith((".tmp", ".partial")):
            bad.append(rel)
    cks = [p for p in (out / "checkpoints").glob("step_*")] if (out / "checkpoints").exists() else []
    if len(cks) > 2:  # run.keep_checkpoints defaults to 2
        bad.append(f"{len(cks)} checkpoints")
    return bad


def report_fails(out: Path, bad: list[str]) -> list[str]:
    """What every finished trial must show, whatever it promises of its rows: nothing left over
    (``bad``: what the caller's leftovers check found) and ``scalerl report`` on it exiting 0."""
    fails = [f"leftover {', '.join(bad)}"] if bad else []
    rep = subprocess.run([sys.executable, "-m", "scalerl", "report", str(out)], capture_output=True, text=True)
    if rep.returncode != 0:
        fails.append(f"report exit {rep.returncode}: {rep.stderr.strip()[-160:]}")
    return fails


def check(out: Path, ref: dict, rc: int, loose: bool = False) -> tuple[list[str], list[str]]:
    """(failures, notes) of a completed trial; ``loose``: rows and weights need not equal the
    reference's (a difference is a note), but every step must be there once, in order."""
    import torch

    fails, diffs = [], []
    if rc != 0:
        return [f"exit {rc}"], []
    try:
        evals, full, notes = comparable(out)
    except Exception as exc:  # noqa: BLE001
        return [f"run log unreadable: {exc}"], []
    if notes:
        fails.append(f"run log notes: {notes}")
    if loose:
        for kind in ("eval", "train"):
            steps = [r["step"] for r in full if r.get("type") == kind]
            want = [r["step"] for r in ref["full"] if r.get("type") == kind]
            if steps != want:
                fails.append(f"{kind} steps {steps} (the reference's: {want})")
    if evals != ref["evals"]:
        diffs.append("eval rows differ")
    elif full != ref["full"]:
        diff = [(a.get("type"), a.get("step"), sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))
                for a, b in zip(full, ref["full"]) if a != b]
        diffs.append(f"other rows differ ({len(full)} vs {len(ref['full'])} rows; {diff[:2]})")
    scalars = tensorboard_scalars(out)
    if scalars is not None:
        steps = {tag: [s for s, _ in points] for tag, points in scalars.items()}
        want = {tag: [s for s, _ in points] for tag, points in ref["tensorboard"].items()}
        if steps != want:
            bad = sorted(t for t in set(steps) | set(want) if steps.get(t) != want.get(t))
            fails.append(f"TensorBoard steps differ ({bad[:2]}: {[steps.get(t) for t in bad[:1]]} vs "
                         f"{[want.get(t) for t in bad[:1]]})")
        elif scalars != ref["tensorboard"]:
            diffs.append("TensorBoard values differ")
    if ref.get("wandb") is not None:
        try:
            points, _ = wandb_points(out)
            if points is None:
                fails.append("no wandb/ directory")
            elif {m: [len(c) for c in p] for m, p in points.items()} != {m: [len(c) for c in p] for m, p in ref["wandb"].items()}:
                fails.append(f"W&B curves differ: {[len(c) for c in points['val/pass_rate']]} curve(s) of "
                             f"{[len(c) for c in ref['wandb']['val/pass_rate']]} points; steps "
                             f"{[[x for x, _ in c] for c in points['val/pass_rate']]}")
            elif points != ref["wandb"]:
                diffs.append("W&B values differ")
        except Exception as exc:  # noqa: BLE001
            fails.append(f"scalerl fit RUN/wandb fails: {type(exc).__name__}: {str(exc)[:120]}")
    try:
        weights = final_weights(out)
        if weights.keys() != ref["weights"].keys() or any(not torch.equal(weights[k], ref["weights"][k])
                                                          for k in weights):
            diffs.append("final weights differ")
    except Exception as exc:  # noqa: BLE001
        fails.append(f"final/ does not load: {type(exc).__name__}: {str(exc)[:80]}")
    fails += report_fails(out, leftovers(out))
    return (fails, diffs) if loose else (fails + diffs, [])


def said(row: dict, name: str, sent: bool, rc: int, log: Path) -> None:
    """A SIGTERM/SIGINT stop exits 143/130 in one line, without a traceback (a failure else); one that
    landed after the command's work was done (its "report:" line printed) is a note
    (study_kill_fuzz.stop_problem, which says what each is)."""
    from study_kill_fuzz import stop_problem

    problem, note = stop_problem(name, sent, rc, log)
    row["fails"] += [problem] if problem else []
    row["notes"] += [note] if note else []


def said_complete(row: dict, name: str, sent: bool, rc: int, out: Path, log: Path) -> None:
    """A first attempt stopped by SIGTERM/SIGINT once its ``final/`` was in place -- the run complete
    but for its report -- says so, and gives no ``--resume`` advice (a failure else): a stop while the
    W&B sink waited for its run file's end said "interrupted before training went on; resume with"
    (found by tests/train/test_train_e2e.py). Not for a resume: its ``final/`` may be an earlier attempt's."""
    if not sent or name == "SIGKILL" or rc not in (130, 143) or not (out / "final").is_dir():
        return
    stop = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("scalerl train: ")]
    last = stop[-1] if stop else "(no stop line)"
    if "the run is complete" not in last or "--resume" in last:
        row["fails"].append(f"{name} after final/ was saved: {last[:120]}")


def left_behind(row: dict, tag: str, after: str) -> None:
    """Every process of the trial (its tag in the environment) gone within ``SETTLE`` s, else a
    failure; whatever is left is killed, so it cannot race the resume. After a ``kill -9``, W&B's
    service (``wandb-core`` and its ``wandb-symon``: ``WANDB_SERVICE``) may take up to ``WANDB_SETTLE``
    s: it watches its parent itself and exits ~4 s after it (W&B's behaviour: a note)."""
    from study_kill_fuzz import gone, tagged

    if "SIGKILL" in after:
        deadline = time.monotonic() + WANDB_SETTLE
        while (alive := tagged(tag)) and time.monotonic() < deadline:
            if not all(any(name in cmd for name in WANDB_SERVICE) for _, cmd in alive):
                break  # (one of ours: the SETTLE check below says so)
            time.sleep(0.1)
        if not alive and time.monotonic() > deadline - WANDB_SETTLE + SETTLE:
            row["notes"].append(f"W&B's service outlived the {after} by "
                                f"{time.monotonic() - deadline + WANDB_SETTLE:.1f} s")
    alive = gone(tag, SETTLE)
    if alive:
        row["fails"].append(f"left behind {SETTLE:g} s after {after}: {alive}")


def trial(work: Path, recipe: str, i: int, rng: random.Random, ref: dict, max_attempts: int,
          triggered: float, loose: bool = False) -> dict:
    from study_kill_fuzz import TAG

    out = work / f"{recipe}-{i:02d}"
    tag = str(out)
    env = {**os.environ, TAG: tag}
    name = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
    trigger = rng.choice(TRIGGERS) if rng.random() < triggered else None
    at = 0.0 if trigger else rng.uniform(0, ref["seconds"] * 1.05)
    t0 = time.perf_counter()
    rc, sent, children = run_killed(command(out, recipe), work / f"{recipe}-{i:02d}.0.log", at, SIGNALS[name],
                                    out, trigger, env)
    if trigger:
        at = time.perf_counter() - t0  # (when it ended, for a trigger)
    where = phase(out) if sent else "ended before the kill"
    if trigger:
        where = f"@{trigger.split('/')[-1]}: {where}"
    row = {"recipe": recipe, "trial": i, "signal": name, "t_kill": at, "phase": where, "first_rc": rc,
           "attempts": 1, "fails": [], "notes": [], "dir": str(out)}
    if any(isinstance(c, str) for c in children):
        row["fails"].append("hung after the signal")
    said(row, name, sent, rc, work / f"{recipe}-{i:02d}.0.log")
    said_complete(row, name, sent, rc, out, work / f"{recipe}-{i:02d}.0.log")
    left_behind(row, tag, name)
    later = []
    while rc != 0 and row["attempts"] < max_attempts:
        log = work / f"{recipe}-{i:02d}.{row['attempts']}.log"
        previous = (work / f"{recipe}-{i:02d}.{row['attempts'] - 1}.log").read_text()
        # A stop before the first checkpoint empties the directory and says to run the command again.
        again = "run the same command again" in previous or not (out / "config.yaml").exists()
        cmd = command(out, recipe) if again else command(out, recipe, "--resume")
        if rng.random() < 0.25 and row["attempts"] < max_attempts - 1:  # kill the resume too
            sig2 = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
            t2 = rng.uniform(0, ref["seconds"])
            rc, sent2, _ = run_killed(cmd, log, t2, SIGNALS[sig2], env=env)
            said(row, sig2, sent2, rc, log)
            later.append(f"{'again' if again else 'resume'}:{sig2}@{t2:.1f}s" + ("" if sent2 else "(done)")
                         + (f"[{phase(out)}]" if sent2 else ""))
            left_behind(row, tag, f"{sig2} of the {'run' if again else 'resume'}")
        else:
            rc, _ = run_timed(cmd, log, env)
            later.append(("again" if again else "resume") + f"->{rc}")
            left_behind(row, tag, "the end of the command")
        row["attempts"] += 1
    row["later"] = later
    if rc != 0:
        log = work / f"{recipe}-{i:02d}.{row['attempts'] - 1}.log"
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        row["fails"].append(f"did not complete (exit {rc}): {tail}")
    else:
        fails, notes = check(out, ref, rc, loose)
        row["fails"] += fails
        row["notes"] += notes
    return row


def describe(row: dict) -> str:
    """A trial's outcome: ``ok`` (with its notes), or ``FAIL:`` and every check that failed."""
    if row["fails"]:
        return "FAIL: " + "; ".join(row["fails"])
    return "ok" + (f" (note: {'; '.join(row['notes'])})" if row.get("notes") else "")


def show_trial(row: dict, group: str, *, phase_width: int, later_width: int, keep: bool) -> None:
    """A trial's line as the campaign goes; a passing trial's directory removed unless ``keep``."""
    print(f"{row[group]:8} {row['trial']:3d} {row['signal']:8} {row['t_kill']:6.2f}s  {row['phase']:{phase_width}} "
          f"rc={row['first_rc']:<4} {' '.join(row['later']):{later_width}} {describe(row)}", flush=True)
    if not row["fails"] and not keep:
        shutil.rmtree(row["dir"], ignore_errors=True)


def print_summary(results: list[dict], group: str, *, phase_width: int) -> int:
    """The table of every trial, a count per ``group`` (the recipe, the study's mode), signal and
    outcome, and the line of failed directories; the exit status (1 if any trial failed)."""
    print()
    print(f"{group:8} {'trial':>5} {'signal':8} {'t_kill':>7}  {'phase':{phase_width}} {'attempts':>8}  outcome")
    for r in results:
        print(f"{r[group]:8} {r['trial']:5d} {r['signal']:8} {r['t_kill']:6.2f}s  {r['phase']:{phase_width}} "
              f"{r['attempts']:8d}  {describe(r)}")
    print()
    tally = Counter((r[group], r["signal"], "ok" if not r["fails"] else "FAIL") for r in results)
    for (name, sig, outcome), n in sorted(tally.items()):
        print(f"{name:8} {sig:8} {outcome:5} {n}")
    failed = [r for r in results if r["fails"]]
    print(f"\n{len(results) - len(failed)}/{len(results)} trials ok" + (
        "; failed directories: " + ", ".join(r["dir"] for r in failed) if failed else ""))
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=25)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default="/tmp/kill_fuzz")
    p.add_argument("--sync", action="store_true", help="also fuzz --set pipeline=sync")
    p.add_argument("--only-sync", action="store_true", help="fuzz --set pipeline=sync alone")
    p.add_argument("--max-attempts", type=int, default=5)
    p.add_argument("--triggered", type=float, default=0.3,
                   help="the share of trials killed when a file appears (TRIGGERS), not at a random time")
    p.add_argument("--keep", action="store_true", help="keep every trial's directory (else the passing ones go)")
    p.add_argument("--extra", help="fuzz this configuration alone: arguments added to the run's command "
                   "(split as a shell would: \"--nproc 2\", \"--set model.lora.rank=8\")")
    p.add_argument("--label", default="extra", help="the --extra recipe's name in the table (and its directories)")
    p.add_argument("--loose", action="store_true",
                   help="steps once each and in order, not row for row (where the docs promise no more)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="ray: --backend ray runs, checked as benchmarks/ray_kill_fuzz.py says (not row for row)")
    args = p.parse_args()
    # A shell's background job ignores SIGINT, and a child inherits that (Python then installs no
    # KeyboardInterrupt handler): SIGINT trials would test nothing. Children start with the default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = random.Random(args.seed)
    run_trial, extra = trial, []
    if args.backend == "ray":
        from ray_kill_fuzz import RAY, trial as run_trial

        extra = list(RAY)
    recipes = ["sync"] if args.only_sync else ["default", "sync"] if args.sync else ["default"]
    if args.extra is not None:
        RECIPES[args.label] = shlex.split(args.extra)
        recipes = [args.label]
    results = []
    for recipe in recipes:
        ref_dir = work / f"{recipe}-ref"
        rc, seconds = run_timed(command(ref_dir, recipe, *extra), work / f"{recipe}-ref.log")
        if rc != 0:
            print(f"{recipe}: the reference run failed (exit {rc}); see {work / f'{recipe}-ref.log'}")
            return 2
        evals, full, _ = comparable(ref_dir)
        ref = {"seconds": seconds, "evals": evals, "full": full, "weights": final_weights(ref_dir),
               "tensorboard": tensorboard_scalars(ref_dir), "wandb": wandb_points(ref_dir)[0]}
        print(f"{recipe}: reference {seconds:.1f} s, {len(evals)} evaluations: "
              f"{[round(e['val/pass_rate'], 4) for e in evals if 'val/pass_rate' in e]}", flush=True)
        for i in range(args.trials):
            loose = {"loose": True} if args.loose else {}  # (ray_kill_fuzz's trial has its own checks)
            row = run_trial(work, recipe, i, rng, ref, args.max_attempts, args.triggered, **loose)
            results.append(row)
            show_trial(row, "recipe", phase_width=28, later_width=40, keep=args.keep)
    return print_summary(results, "recipe", phase_width=28)


if __name__ == "__main__":
    sys.exit(main())
