"""Kill-fuzz campaign for studies: kill a small study at random moments, resume it, check the result.

    PYTHONPATH=src python benchmarks/study_kill_fuzz.py                        # 6 trials each, --parallel 1 and 2
    PYTHONPATH=src python benchmarks/study_kill_fuzz.py --trials 8 --only p2   # worker processes only
    PYTHONPATH=src python benchmarks/study_kill_fuzz.py --trials 5 --seed 3 --work /tmp/skf --keep
    PYTHONPATH=src python benchmarks/study_kill_fuzz.py --trials 8 --only ray  # --backend ray (not by default)

A tool, not a CI test (minutes of CPU; the regression tests it led to are in tests/study/). It is
benchmarks/kill_fuzz.py (``scalerl train``) for ``scalerl study``, and reuses its helpers.

What it does, for each way of running the study (``p1``: the local backend, one run after
another in the driver; ``p2``: ``--parallel 2 --threads 1``, each run in a spawned worker; and,
only when asked with ``--only ray`` -- it needs Ray and takes ~1 min a study --, ``ray``:
``--backend ray``, a local cluster started by the command, both runs at once as Ray tasks):

1. one uninterrupted reference micro-study -- the tiny model, two variants (``scalerl`` and
   ``loo-fp32-head-off``) x one seed, ``--steps 4 --eval-every 1``, small batches and
   evaluations (tests/study/conftest.py's ``micro_args``; ~10-20 s on a CPU), timed;
2. ``--trials`` times: the same command in a fresh directory, stopped at a moment drawn uniformly
   over the reference's wall time with SIGKILL (most trials: ``kill -9`` of the driver; its
   workers die with it), SIGTERM (``kill PID`` of the driver) or SIGINT (Ctrl-C: the whole process
   group, as a terminal sends it) -- or, in a share of the trials (``--triggered``), the moment a
   file appears (``TRIGGERS``: the spec, a run's config, its first checkpoint, ``final/`` and its
   temporary, a run's first report figure's temporary and its report, ``progress.jsonl``, the
   study's ``analysis.json``, its temporary and the report pages), which a uniform draw rarely hits; then ``scalerl study --output DIR --resume``
   (or, where the stop left no study to resume, the same command again), itself stopped in some
   trials, until it exits 0 (at most ``--max-attempts``);
3. after each trial: the study completed; every run's evaluation rows (step and every pass rate)
   equal the reference's; each run has its own report (``curve.png``, ``sets.png``, ``report.md``,
   ``report.html``, written after its run log); ``analysis.json`` equals the reference's (but for its directory) and
   ``report.md``/``report.html`` exist; ``scalerl report DIR`` exits 0; no temporary file is left
   (``*.tmp-*``, hidden ``.*.tmp-*``, ``*.old-*``) nor a checkpoint beyond ``run.keep_checkpoints``;
   a stop by SIGTERM/SIGINT exits 143/130 without a traceback (one that lands after the command's
   work was done -- its last "report:" line printed -- is a note beside "ok", not a failure); no
   process of the study is left, neither after a stop (before the resume starts: it would race it)
   nor at the end (every process the trial started carries a tag in its environment, and
   ``/proc`` is searched for it).

The ``ray`` mode checks the processes as benchmarks/ray_kill_fuzz.py does (its ``after_stop``): after
every stop and every resume, ours (the driver, the Ray workers that ran the study's tasks) gone
within its ``SETTLE`` seconds; Ray's own daemons may outlive a ``kill -9``'d driver (Ray's
behaviour: a note), not a SIGTERM/SIGINT stop nor a finished command, which shut the cluster down.
A Ray task runs its run on the local backend, seeded as in a worker process, so the rows are
still compared with the reference's row for row.

It prints one line per trial as it goes, then a table and a summary per mode and signal::

    mode  trial  signal   t_kill  phase                                         attempts  outcome
    p1        3  SIGKILL   7.41s  scalerl done; loo-fp32-head-off step 2 ...    2         ok

``phase``: what the stop hit, read from the study directory right after it (each run's phase as
kill_fuzz.py reads it, then the study's report files). Exit status 1 if any trial failed.
``--keep`` keeps every trial's directory (the failed ones are always kept, and printed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kill_fuzz import (SIGNALS, leftovers, phase as run_phase, print_summary, report_fails,  # noqa: E402
                       run_timed, show_trial, wait_for_moment)

from scalerl.runlog import read_runlog  # noqa: E402

STEPS, EVAL_EVERY = 4, 1
VARIANTS = ("scalerl", "loo-fp32-head-off")
SMALL = ["--family", "loo", "--only", "loo-fp32-head-off", "--steps", str(STEPS), "--eval-every", str(EVAL_EVERY),
         "--no-progress", "--bootstrap", "50", "--threads", "1",
         "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
         "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false"]
MODES = {"p1": [], "p2": ["--parallel", "2"], "ray": ["--backend", "ray"]}
#: The modes run when no ``--only`` names one (``ray`` needs Ray, and is slow: asked for by name).
DEFAULT_MODES = ("p1", "p2")
REPORT = ("analysis.json", "report.md", "report.html")
RUN_REPORT = ("curve.png", "sets.png", "report.md", "report.html")
#: The environment variable every process of a trial inherits (its value names the trial).
TAG = "SCALERL_STUDY_KILL_FUZZ"

#: Trigger trials: the stop comes as soon as one of these matches in the study directory (polled
#: every millisecond), to hit the short windows a uniform draw rarely does.
TRIGGERS = ("study.yaml", "runs/scalerl/seed0/config.yaml", "runs/*/seed0/checkpoints/step_*",
            "runs/*/seed0/final.tmp-*", "runs/scalerl/seed0/final", "runs/loo-fp32-head-off/seed0/final",
            "runs/*/seed0/.curve.png.tmp-*", "runs/*/seed0/report.md", "progress.jsonl", ".analysis.json.tmp-*", "analysis.json", "report.md",
            "report.html")


def command(out: Path, mode: str) -> list[str]:
    return [sys.executable, "-m", "scalerl", "study", *SMALL, *MODES[mode], "--output", str(out)]


def resume_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "scalerl", "study", "--output", str(out), "--resume"]


def tagged(tag: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose environment carries ``TAG=tag``."""
    found, needle = [], f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append((int(entry.name), cmd[:100]))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def gone(tag: str, wait: float) -> list[tuple[int, str]]:
    """The trial's processes still alive after up to ``wait`` seconds (killed, then, to go on)."""
    deadline = time.monotonic() + wait
    while (alive := tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, _ in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return alive


def run_stopped(cmd: list[str], log: Path, at: float, name: str, env: dict, out: Path | None = None,
                trigger: str | None = None) -> tuple[int, bool]:
    """Start ``cmd`` (a session of its own), stop it ``at`` seconds later -- or, with ``trigger``, as
    soon as that glob matches under ``out`` -- unless it ended first: SIGINT to its process group
    (Ctrl-C), SIGTERM and SIGKILL to the driver alone. (exit status, whether the signal was sent)."""
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if not wait_for_moment(proc, at, out, trigger):
            return proc.returncode, False
        if name == "SIGINT":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(SIGNALS[name])
        try:
            rc = proc.wait(timeout=180)
        except subprocess.TimeoutExpired:  # a stop that hangs is a failure of its own
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            with log.open("a") as f:
                f.write("\n[study_kill_fuzz] hung for 180 s after the signal; killed\n")
    return rc, True


def phase(out: Path) -> str:
    """What a stop hit, from the study directory it left."""
    if not out.exists():
        return "start-up (no dir)"
    if not (out / "study.yaml").exists():
        return "start-up (no study.yaml)"
    parts = []
    for label in VARIANTS:
        run = out / "runs" / label / "seed0"
        where = run_phase(run)
        parts.append(f"{label[:7]}: {'done' if where == 'report done / exit' else where}")
    report = [n for n in REPORT if (out / n).exists()]
    tmp = [p.name for p in out.glob(".*.tmp-*")]
    parts.append(f"report {len(report)}/3" + (f" +{len(tmp)} tmp" if tmp else ""))
    return "; ".join(parts)


def evals(run: Path) -> list[dict]:
    _, rows, _ = read_runlog(run / "runlog.jsonl")
    return [{k: v for k, v in r.items() if k == "step" or k.endswith(("/pass_rate", "/pass_at_k"))}
            for r in rows if r.get("type") == "eval"]


def analysis(out: Path) -> dict:
    a = json.loads((out / "analysis.json").read_text())
    a.pop("directory", None)
    return a


def study_leftovers(out: Path) -> list[str]:
    bad = [str(p.relative_to(out)) for p in out.rglob("*")
           if ".tmp-" in p.name or ".old-" in p.name or p.name.endswith((".tmp", ".partial"))]
    for label in VARIANTS:
        run = out / "runs" / label / "seed0"
        bad += [f"{label}: {b}" for b in leftovers(run) if "checkpoints" in b]  # (the names: above)
    return bad


def check(out: Path, ref: dict) -> list[str]:
    fails = []
    for label in VARIANTS:
        try:
            if evals(out / "runs" / label / "seed0") != ref["evals"][label]:
                fails.append(f"{label}: eval rows differ")
        except Exception as exc:  # noqa: BLE001
            fails.append(f"{label}: run log unreadable: {type(exc).__name__}: {str(exc)[:80]}")
    for label in VARIANTS:  # each run's own report, as scalerl train writes it, and written after its log
        run = out / "runs" / label / "seed0"
        lacking = [n for n in RUN_REPORT if not (run / n).exists()]
        if lacking:
            fails.append(f"{label}: no {', '.join(lacking)}")
        elif (run / "report.html").stat().st_mtime < (run / "runlog.jsonl").stat().st_mtime:
            fails.append(f"{label}: report.html older than its run log")
    missing = [n for n in REPORT if not (out / n).exists()]
    if missing:
        fails.append(f"missing {', '.join(missing)}")
    else:
        try:
            if analysis(out) != ref["analysis"]:
                fails.append("analysis.json differs")
        except Exception as exc:  # noqa: BLE001
            fails.append(f"analysis.json unreadable: {exc}")
    return fails + report_fails(out, study_leftovers(out))


def stop_problem(name: str, sent: bool, rc: int, log: Path) -> tuple[str | None, str | None]:
    """(problem, note) of a stop: a problem is a SIGTERM/SIGINT stop that did not exit 143/130 in one
    clean message; a note, what comes after the command's work was done and does not change it (the
    signal landed while the interpreter exited: its default action, or a traceback of an exit hook)."""
    text = log.read_text(errors="replace")
    lines = text.rstrip().splitlines()
    done = next((i for i, line in enumerate(lines) if line.startswith("report: ")), None)
    if done is not None and sent and (rc == -SIGNALS[name] or rc == 0):
        after = lines[done + 1:]
        if not after:
            return None, None if rc == 0 else f"{name} as the finished command exited: exit {rc}"
        if after[0].startswith("Exception ignored in atexit callback"):
            return None, f"{name} in an exit hook after the work was done (exit {rc}): {after[-1][:60]}"
    if "Traceback" in text:
        return f"traceback after {name}: {lines[-1][:120]}", None
    if sent and name in ("SIGTERM", "SIGINT") and rc not in (0, 130, 143):
        return f"exit {rc} after {name}: {lines[-1][:120] if lines else ''}", None
    return None, None


def _check_stop(row: dict, sig: str, sent: bool, rc: int, log: Path, env: dict) -> None:
    """After a stop: what its exit said (a failure, or a note), and no process of the study left
    (on Ray: ray_kill_fuzz.py's check, which lets Ray's daemons outlive a kill -9, as a note)."""
    if row["mode"] == "ray":
        from ray_kill_fuzz import after_stop

        after_stop(row, sig, sent, rc, log, env[TAG])
        return
    problem, note = stop_problem(sig, sent, rc, log)
    row["fails"] += [problem] if problem else []
    row["notes"] += [note] if note else []
    alive = gone(env[TAG], 10)
    if alive:
        row["fails"].append(f"left behind after {sig}: {alive}")


def trial(work: Path, mode: str, i: int, rng: random.Random, ref: dict, max_attempts: int, triggered: float) -> dict:
    name_ = f"{mode}-{i:02d}"
    out = work / name_
    env = {**os.environ, TAG: f"{work}/{name_}"}
    sig = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
    trigger = rng.choice(TRIGGERS) if rng.random() < triggered else None
    at = 0.0 if trigger else rng.uniform(0, ref["seconds"] * 1.05)
    t0 = time.perf_counter()
    log0 = work / f"{name_}.0.log"
    rc, sent = run_stopped(command(out, mode), log0, at, sig, env, out, trigger)
    if trigger:
        at = time.perf_counter() - t0
    where = phase(out) if sent else "ended before the stop"
    if trigger:
        where = f"@{trigger.split('/')[-1]}: {where}"
    row = {"mode": mode, "trial": i, "signal": sig, "t_kill": at, "phase": where, "first_rc": rc, "attempts": 1,
           "fails": [], "notes": [], "dir": str(out)}
    _check_stop(row, sig, sent, rc, log0, env)
    later = []
    while rc != 0 and row["attempts"] < max_attempts:
        log = work / f"{name_}.{row['attempts']}.log"
        again = not (out / "study.yaml").exists()
        cmd = command(out, mode) if again else resume_command(out)
        what = "again" if again else "resume"
        if rng.random() < 0.3 and row["attempts"] < max_attempts - 1:  # stop the resume too
            sig2 = rng.choices(list(SIGNALS), weights=[6, 2, 2])[0]
            t2 = rng.uniform(0, ref["seconds"])
            rc, sent2 = run_stopped(cmd, log, t2, sig2, env)
            later.append(f"{what}:{sig2}@{t2:.1f}s" + (f"[{phase(out)}]" if sent2 else "(done)"))
            _check_stop(row, sig2, sent2, rc, log, env)
        else:
            rc, _ = _run_env(cmd, log, env)
            later.append(f"{what}->{rc}")
            if mode == "ray":  # a finished (or failed) command shuts its cluster down too
                _check_stop(row, "no signal", False, rc, log, env)
        row["attempts"] += 1
    row["later"] = later
    if rc != 0:
        log = work / f"{name_}.{row['attempts'] - 1}.log"
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        row["fails"].append(f"did not complete (exit {rc}): {tail}")
    else:
        row["fails"] += check(out, ref)
    alive = gone(env[TAG], 5)
    if alive:
        row["fails"].append(f"left behind at the end: {alive}")
    return row


def _run_env(cmd: list[str], log: Path, env: dict) -> tuple[int, float]:
    t0 = time.perf_counter()
    with log.open("w") as err:
        rc = subprocess.run(cmd, stdout=err, stderr=subprocess.STDOUT, env=env).returncode
    return rc, time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=6, help="trials per mode")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default="/tmp/study_kill_fuzz")
    p.add_argument("--only", choices=list(MODES),
                   help="one mode only (p1: --parallel 1, p2: --parallel 2, ray: --backend ray)")
    p.add_argument("--max-attempts", type=int, default=5)
    p.add_argument("--triggered", type=float, default=0.35,
                   help="the share of trials stopped when a file appears (TRIGGERS), not at a random time")
    p.add_argument("--keep", action="store_true", help="keep every trial's directory (else the passing ones go)")
    args = p.parse_args()
    # A shell's background job ignores SIGINT, and a child inherits that (Python then installs no
    # KeyboardInterrupt handler): SIGINT trials would test nothing. Children start with the default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = random.Random(args.seed)
    results = []
    for mode in [args.only] if args.only else DEFAULT_MODES:
        ref_dir = work / f"{mode}-ref"
        rc, seconds = run_timed(command(ref_dir, mode), work / f"{mode}-ref.log")
        if rc != 0:
            print(f"{mode}: the reference study failed (exit {rc}); see {work / f'{mode}-ref.log'}")
            return 2
        ref = {"seconds": seconds, "evals": {label: evals(ref_dir / "runs" / label / "seed0") for label in VARIANTS},
               "analysis": analysis(ref_dir)}
        print(f"{mode}: reference {seconds:.1f} s, " + ", ".join(
            f"{label} {[round(e['val/pass_rate'], 4) for e in ref['evals'][label]]}" for label in VARIANTS), flush=True)
        for i in range(args.trials):
            row = trial(work, mode, i, rng, ref, args.max_attempts, args.triggered)
            results.append(row)
            show_trial(row, "mode", phase_width=60, later_width=30, keep=args.keep)
    return print_summary(results, "mode", phase_width=60)


if __name__ == "__main__":
    sys.exit(main())
