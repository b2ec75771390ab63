"""Write the prime-rl console fixtures of tests/curves/test_primerl_log.py with prime-rl's own logger:
``setup_logger`` and ``format_time`` of ``src/prime_rl/utils/logger.py``, taken from a prime-rl
checkout's source (the package itself needs GPU libraries; checked at PrimeIntellect-ai/prime-rl
559b44772e471d1538537b8805cc77f3824a5e64), writing to stdout as the orchestrator does (colours on:
``uv run rl`` sets ``LOGURU_FORCE_COLORS`` and loguru is set up with ``colorize=True``). The
messages are the f-strings of ``src/prime_rl/orchestrator/orchestrator.py`` at that commit
(``log_train_batch``'s ``Step ...`` line, with a ``╰─`` line per environment when there are
several; ``finalize_eval_batch``'s ``Evaluated ...`` line), with the lines around them a run
prints (``Starting orchestrator loop``, the periodic pipeline view, ``Starting evals in ...``,
``Resuming orchestrator from checkpoint step N``).

It is fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538), in prime-rl's step numbering: the
evaluation before training at step 1 (prime-rl's first step: ``EvalSource.trigger``'s first
trigger), verl's evaluation after step 9 at step 10, ... (an evaluation at every step
``% interval == 0``), and per-step seconds spread evenly between two evaluations. An evaluation
finishes while training goes on: its line comes after the next two steps' lines.

    pip install loguru
    python make_primerl_console.py PRIME_RL_CHECKOUT OUT_DIR

* ``primerl_console.log.gz`` -- the whole run (steps 1-430);
* ``primerl_console_resumed.log.gz`` -- a console appended to (``tee -a``) by two launches: the
  first killed after step 105, the second resumed from the step-100 checkpoint, training steps
  101-200 (no evaluation on resume: ``retrigger_on_resume`` is off by default);
* ``primerl_console_json.log.gz`` -- ``log.json_logging`` and two training environments
  (``gsm8k``, ``math``): steps 1-100.
"""

import csv
import gzip
import subprocess
import sys
from pathlib import Path

RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
ROOT = Path(__file__).resolve().parents[3]


def points() -> list[tuple[int, float, float]]:
    """(prime-rl step, hours, score) of the shipped verl run."""
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return [(max(int(r["step"]) + 1, 1), float(r["cum_wall_hours"]), float(r["val_score"])) for r in rows]


# Runs in a process of its own (stdout: the console): prime-rl's logger module, then the
# orchestrator's logging calls.
LAUNCH = '''
import sys, types
logger_src, json_logging, points, first, last, resume, envs, killed = sys.argv[1], sys.argv[2] == "1", eval(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], eval(sys.argv[7]), sys.argv[8] == "1"
module = types.ModuleType("prime_rl_logger")
exec(logger_src, module.__dict__)
module.setup_logger("info", json_logging=json_logging)
get_logger, format_time = module.get_logger, module.format_time
score = {s: v for s, _, v in points}
per_step = {}
for (s0, h0, _), (s1, h1, _) in zip(points, points[1:]):
    for step in range(s0 + 1, s1 + 1):
        per_step[step] = 3600.0 * (h1 - h0) / (s1 - s0)
per_step[1] = per_step[2]

if resume != "-":
    get_logger().info(f"Resuming orchestrator from checkpoint step {resume}")
else:
    get_logger().info("Training from scratch")
get_logger().info(f"Starting orchestrator loop (max_steps={last})")
pending = []  # (step, lines left before it is logged)

def trigger(step):
    if step in score and (step % 10 == 0 or (step == 1 and resume == "-")):
        get_logger().info(f"Starting evals in gsm8k ({500 * 4} total rollouts)")
        pending.append([step, 2])

def finish(force=False):
    for item in list(pending):
        item[1] -= 1
        if item[1] < 0 or force:
            pending.remove(item)
            step = item[0]
            policy_version = max(step - 2, 0)
            elapsed = 2 * per_step[step]
            get_logger().success(
                f"Evaluated gsm8k (Step {step}) | "
                f"Policy v{policy_version} | {format_time(elapsed):>7} | Reward {score[step]:.4f} | "
                f"Turns {1.0:.1f} | Branches {1.0:.1f} | "
                f"Error {0.002:.1%} | Truncation {0.013:.1%}"
            )

trigger(first)
for step in range(first, last + 1):
    if step % 3 == 0:
        get_logger().info(f"Train batch 200/512 (39.1%) | gsm8k 1200/2000 (60.0%); 96 inflight episodes (train=64, eval=32)")
    step_time = per_step[step]
    reward = 0.2 + 0.5 * step / 430
    n_trainable, n_effective = 480 + step % 32, 512
    trainable_rate = n_trainable / n_effective
    head = (
        f"Step {step} | {format_time(step_time):>7} | Reward {reward:.4f} | "
        f"Trainable {n_trainable}/{n_effective} ({trainable_rate:.1%}) | "
        f"Turns {1.0:.1f} | Branches {1.0:.1f} | "
        f"Max Off-Policy {1} | "
        f"Error {0.0:.1%} | Cancelled {0.004:.1%} | "
        f"Truncation {0.021:.1%}"
    )
    if len(envs) <= 1:
        get_logger().success(head)
    else:
        name_width = max((len(name) for name in envs), default=0)
        lines = [head]
        for env_name in envs:
            lines.append(
                f"╰─ {env_name:<{name_width}} | Ratio {1 / len(envs):.1%} | Reward {reward:.4f} | "
                f"Turns {1.0:.1f} | Branches {1.0:.1f} | "
                f"Max Off-Policy {1} | "
                f"Error {0.0:.1%} | Cancelled {0.004:.1%} | "
                f"Truncation {0.021:.1%}"
            )
        get_logger().success("\\n\\t\\t ".join(lines))
    finish()
    trigger(step + 1)
if not killed:  # (a launch killed mid-run logs nothing more)
    finish(force=True)
    get_logger().success("Orchestrator finished.")
get_logger().complete()
'''


def launch(logger_src: str, out, *, json_logging=False, first=1, last=430, resume="-", envs=("gsm8k",), killed=False) -> None:
    subprocess.run([sys.executable, "-c", LAUNCH, logger_src, "1" if json_logging else "0", repr(points()),
                    str(first), str(last), resume, repr(list(envs)), "1" if killed else "0"], stdout=out, check=True,
                   env={"PYTHONPATH": ":".join(sys.path)})


def main(checkout: str, out_dir: str) -> None:
    logger_src = (Path(checkout) / "src" / "prime_rl" / "utils" / "logger.py").read_text()
    out = Path(out_dir)
    plain = out / "primerl_console.log"
    with open(plain, "w") as f:
        launch(logger_src, f)
    resumed = out / "primerl_console_resumed.log"
    with open(resumed, "w") as f:
        launch(logger_src, f, last=105, killed=True)
    with open(resumed, "a") as f:
        launch(logger_src, f, first=101, last=200, resume="100")
    json_log = out / "primerl_console_json.log"
    with open(json_log, "w") as f:
        launch(logger_src, f, json_logging=True, last=100, envs=("gsm8k", "math"))
    for path in (plain, resumed, json_log):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        path.unlink()


if __name__ == "__main__":
    main(*sys.argv[1:])
