"""The Ray backend's trials of benchmarks/kill_fuzz.py (``kill_fuzz.py --backend ray``).

    PYTHONPATH=src python benchmarks/kill_fuzz.py --backend ray --trials 6 --sync

Each trial is kill_fuzz.py's, on ``--backend ray`` (a local cluster started by the command, one
generator actor): the same command in a fresh directory, stopped at a moment drawn uniformly over
the reference's wall time, or when a file appears (``TRIGGERS``), with SIGKILL (``kill -9`` of
the driver: its actors are Ray's to end), SIGTERM (``kill PID`` of the driver) or SIGINT (Ctrl-C:
the whole process group, Ray's daemons included); then ``--resume`` (or the same command again
where the stop left no run) until it exits 0, itself stopped in some trials.

What differs from the local backend's trials, and why:

* **Not compared row for row.** Ray's generator actors take weight updates when they arrive
  (docs/distributed.md: "generator processes and Ray actors always work that way"), so a
  pipeline-rl-k run is not reproducible by design. What is checked instead: the evaluation rows
  are the reference's steps (0, 4, 8, 12), once each and in order, and the training rows steps
  1..12 likewise (no step lost or repeated by a resume); ``final/`` loads; a resume from a
  checkpoint short of the last step left its ``resume`` row. Under ``--set pipeline=sync`` the
  actors generate each batch from its own seed on the newest weights, and two uninterrupted runs
  gave the same log here; there the evaluation rows and final weights are compared too, but a
  difference is a note (float noise between processes is allowed: docs/distributed.md), not a
  failure.
* **Processes.** Every process of a trial (the driver, Ray's daemons, the actors and idle
  workers) inherits a tag in its environment (study_kill_fuzz.py's ``TAG``). After a stop, our
  own (the driver, ``ray::GeneratorActor``, ``ray::IDLE`` and other workers) must be gone within
  ``SETTLE`` seconds; Ray's daemons (``gcs_server``, ``raylet``, the dashboard, log monitor and
  autoscaler monitor, run from Ray's package, and its ``ray::DashboardAgent`` and
  ``ray::RuntimeEnvAgent``) may outlive a ``kill -9``'d driver -- Ray's own
  behaviour, noted -- but not a SIGTERM/SIGINT stop, which shuts the cluster down. Whatever is
  left is killed before the resume, so it cannot race it.
* A SIGTERM stop exits 143, a SIGINT stop 130, with no traceback (study_kill_fuzz.py's
  ``stop_problem``, which takes either status for either signal; here each must be its own).
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kill_fuzz import (SIGNALS, STEPS, TRIGGERS, command, final_weights, leftovers,  # noqa: E402
                       phase as run_phase, report_fails)
from study_kill_fuzz import TAG, gone, run_stopped, stop_problem, tagged  # noqa: E402

from scalerl.runlog import read_runlog  # noqa: E402
from scalerl.train.checkpoint import latest_checkpoint  # noqa: E402

RAY = ("--backend", "ray")
#: kill_fuzz.py's triggers, and the middle of the training: a Ray run spends much of its wall time
#: starting the cluster, so a uniform draw rarely lands between two steps.
RAY_TRIGGERS = (*TRIGGERS, "checkpoints/step_000004", "checkpoints/step_000008")
#: Seconds our own processes get to end after a stop (a clean stop closes the actors and the cluster).
SETTLE = 20.0


#: Ray's agents, which rename themselves as workers do (``ray::GeneratorActor`` is ours).
RAY_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def ray_daemon(cmd: str) -> bool:
    """One of Ray's node daemons (run by path from Ray's package, or one of its agents), not a worker
    of ours: the worker script is in the package too, until it renames itself ``ray::...``."""
    if cmd.startswith(RAY_AGENTS):
        return True
    return "site-packages/ray/" in cmd and "workers/default_worker" not in cmd


def after_stop(row: dict, sig: str, sent: bool, rc: int, log: Path, tag: str) -> None:
    """What a stop's exit said (a failure or a note), then the trial's processes: ours gone within
    ``SETTLE`` s; Ray's daemons too, but after a SIGKILL (a note). All killed before going on."""
    problem, note = stop_problem(sig, sent, rc, log)
    if problem is None and sent and sig in ("SIGTERM", "SIGINT") and rc in (130, 143) \
            and rc != {"SIGTERM": 143, "SIGINT": 130}[sig]:  # (stop_problem takes either for either)
        problem = f"exit {rc} after {sig}: {log.read_text(errors='replace').strip().splitlines()[-1][:120]}"
    row["fails"] += [problem] if problem else []
    row["notes"] += [note] if note else []
    deadline = time.monotonic() + SETTLE
    while (alive := tagged(tag)) and time.monotonic() < deadline:
        if sig == "SIGKILL" and all(ray_daemon(cmd) for _, cmd in alive):
            break  # only Ray's daemons: they may stay a minute (Ray's behaviour); no need to wait longer
        time.sleep(0.2)
    ours = [(pid, cmd) for pid, cmd in alive if not ray_daemon(cmd)]
    daemons = [cmd.split("/")[-1][:40] for _, cmd in alive if ray_daemon(cmd)]
    if ours:
        row["fails"].append(f"left behind {SETTLE:g} s after {sig}: {ours}")
    if daemons:
        if sig == "SIGKILL":
            row["notes"].append(f"Ray's daemons outlived the kill -9'd driver: {len(daemons)}")
        else:
            row["fails"].append(f"Ray's daemons left {SETTLE:g} s after {sig}: {daemons}")
    gone(tag, 0)  # (kills what is left)


def checkpoint_step(out: Path) -> int | None:
    """The step of the checkpoint a resume goes on from (None: none)."""
    ckpt = latest_checkpoint(out / "checkpoints") if (out / "checkpoints").exists() else None
    return int(ckpt.name.split("_")[1]) if ckpt is not None else None


def check(out: Path, ref: dict, recipe: str, resumed_from: list[int]) -> tuple[list[str], list[str]]:
    """(failures, notes) of a completed trial: see the module's docstring."""
    import torch

    fails, notes = [], []
    try:
        _, rows, lognotes = read_runlog(out / "runlog.jsonl")
    except Exception as exc:  # noqa: BLE001
        return [f"run log unreadable: {exc}"], notes
    if lognotes:
        fails.append(f"run log notes: {lognotes}")
    for kind in ("eval", "train"):
        steps = [r["step"] for r in rows if r.get("type") == kind]
        want = [r["step"] for r in ref["full"] if r.get("type") == kind]
        if steps != want:
            fails.append(f"{kind} steps {steps} (the reference's: {want})")
    resumes = [r.get("from_step") for r in rows if r.get("type") == "resume"]
    expected = sorted({s for s in resumed_from if s < STEPS})
    if expected and not resumes:
        fails.append(f"no resume row (resumed from step(s) {expected})")
    evals = [{k: v for k, v in r.items() if k == "step" or k.endswith(("/pass_rate", "/pass_at_k"))}
             for r in rows if r.get("type") == "eval"]
    try:
        weights = final_weights(out)
        if recipe == "sync" and (weights.keys() != ref["weights"].keys()
                                 or any(not torch.equal(weights[k], ref["weights"][k]) for k in weights)):
            notes.append("final weights differ from the reference's")
    except Exception as exc:  # noqa: BLE001
        fails.append(f"final/ does not load: {type(exc).__name__}: {str(exc)[:80]}")
    if recipe == "sync" and evals != ref["evals"]:
        notes.append("eval rows differ from the reference's")
    return fails + report_fails(out, leftovers(out)), notes


def trial(work: Path, recipe: str, i: int, rng: random.Random, ref: dict, max_attempts: int,
          triggered: float) -> dict:
    """One trial (kill_fuzz.py's row: recipe, trial, signal, t_kill, phase, first_rc, attempts, later, fails, notes)."""
    name = f"{recipe}-{i:02d}"
    out = work / name
    tag = f"{work}/{name}"
    env = {**os.environ, TAG: tag}
    sig = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
    trigger = rng.choice(RAY_TRIGGERS) if rng.random() < triggered else None
    at = 0.0 if trigger else rng.uniform(0, ref["seconds"] * 1.05)
    t0 = time.perf_counter()
    log0 = work / f"{name}.0.log"
    rc, sent = run_stopped(command(out, recipe, *RAY), log0, at, sig, env, out, trigger)
    if trigger:
        at = time.perf_counter() - t0
    where = run_phase(out) if sent else "ended before the kill"
    if trigger:
        where = f"@{trigger.split('/')[-1]}: {where}"
    row = {"recipe": recipe, "trial": i, "signal": sig, "t_kill": at, "phase": where, "first_rc": rc,
           "attempts": 1, "fails": [], "notes": [], "dir": str(out)}
    after_stop(row, sig, sent, rc, log0, tag)
    later, resumed_from = [], []
    while rc != 0 and row["attempts"] < max_attempts:
        log = work / f"{name}.{row['attempts']}.log"
        previous = (work / f"{name}.{row['attempts'] - 1}.log").read_text(errors="replace")
        # A stop before the first checkpoint empties the directory and says to run the command again.
        again = "run the same command again" in previous or not (out / "config.yaml").exists()
        cmd = command(out, recipe, *RAY) if again else command(out, recipe, *RAY, "--resume")
        step = None if again else checkpoint_step(out)
        if step is not None:
            resumed_from.append(step)
        what = "again" if again else f"resume@{step}"
        if rng.random() < 0.25 and row["attempts"] < max_attempts - 1:  # stop the resume too
            sig2 = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
            t2 = rng.uniform(0, ref["seconds"])
            rc, sent2 = run_stopped(cmd, log, t2, sig2, env)
            later.append(f"{what}:{sig2}@{t2:.1f}s" + (f"[{run_phase(out)}]" if sent2 else "(done)"))
            after_stop(row, sig2, sent2, rc, log, tag)
        else:
            # Run to its end (a SIGKILL only if it hangs for 10 minutes), then its processes checked too.
            rc, hung = run_stopped(cmd, log, 600, "SIGKILL", env)
            later.append(f"{what}->{rc}" + (" (hung: killed)" if hung else ""))
            after_stop(row, "SIGKILL" if hung else "no signal", hung, rc, log, tag)
        row["attempts"] += 1
    row["later"] = later
    if rc != 0:
        log = work / f"{name}.{row['attempts'] - 1}.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        row["fails"].append(f"did not complete (exit {rc}): {tail}")
    else:
        fails, notes = check(out, ref, recipe, resumed_from)
        row["fails"] += fails
        row["notes"] += notes
    alive = gone(tag, 5)
    if alive:
        row["fails"].append(f"left behind at the end: {alive}")
    return row
