"""Write the SkyRL console fixtures of tests/curves/test_skyrl_log.py with SkyRL's own console
logger: the ``ConsoleLogger`` class of ``skyrl/train/utils/tracking.py`` and the loguru set-up of
``configure_ray_worker_logging`` (``skyrl/train/utils/utils.py``), taken from a SkyRL checkout's
source (the package itself needs GPU libraries), run inside a Ray task named ``skyrl_entrypoint``
as SkyRL's ``main_base`` runs its trainer, so the console is what the driver prints: each line
behind Ray's ``(skyrl_entrypoint pid=N)`` prefix, loguru's colours kept (SkyRL forces them).

It is fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538), in SkyRL's step numbering: its
evaluation before training at step 0, verl's evaluation after step 9 at step 10, ... (SkyRL
evaluates after ``global_step % eval_interval == 0``), and per-step seconds spread evenly between
two evaluations as ``timing/step``. Around each step's tracker line, what SkyRL's trainer also
logs: the decoded example (several lines), and the trainer's status dict on one line.

    pip install loguru          # ray is in scalerl's dev set
    python make_skyrl_console.py SKYRL_CHECKOUT OUT_DIR

* ``skyrl_console.log.gz`` -- the whole run (steps 0-430);
* ``skyrl_console_resumed.log.gz`` -- a console appended to (``tee -a``) by two processes: the
  first killed after step 105, the second resumed from the step-100 checkpoint, which evaluates
  that checkpoint first (``eval_before_train``) at step 100, then trains steps 101-200.
"""

import ast
import csv
import gzip
import subprocess
import sys
from pathlib import Path

RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
ROOT = Path(__file__).resolve().parents[3]
EVAL_INTERVAL = 10


def source_of(path: Path, name: str) -> str:
    """The source of the top-level class or function ``name`` in ``path``."""
    text = path.read_text()
    node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
    return ast.get_source_segment(text, node)


def points() -> list[tuple[int, float, float]]:
    """(SkyRL step, hours, score) of the shipped verl run."""
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return [(int(r["step"]) + 1, float(r["cum_wall_hours"]), float(r["val_score"])) for r in rows]


# Runs in the Ray task: SkyRL's own code (passed in as source), then a trainer's logging calls.
TASK = '''
import logging, os, pprint, sys
from typing import Any, Dict
from loguru import logger
import ray

@ray.remote(num_cpus=1)
def skyrl_entrypoint(console_src, logging_src, points, first, last):
    scope = {"logging": logging, "os": os, "pprint": pprint, "sys": sys, "Any": Any, "Dict": Dict, "logger": logger}
    exec(console_src, scope)
    exec(logging_src, scope)
    scope["configure_ray_worker_logging"]()
    console = scope["ConsoleLogger"]()
    score = {s: v for s, _, v in points}

    def evaluation(step):
        v = score[step]
        logger.info("Eval output example: <think>6 * 7 = 42</think> #### 42")
        return {"eval/all/avg_score": v, "eval/all/pass_at_1": v,
                "eval/openai/gsm8k/avg_score": v, "eval/openai/gsm8k/pass_at_1": v}

    console.log(evaluation(first), step=first)  # eval_before_train (a resumed run: its checkpoint's)
    for (s0, h0, _), (s1, h1, _) in zip(points, points[1:]):
        per_step = 3600.0 * (h1 - h0) / (s1 - s0)
        for step in range(s0 + 1, s1 + 1):
            if step <= first or step > last:
                continue
            logger.info("Example:\\n  Input: Natalia sold clips to 48 of her friends...\\n  Output:\\n<think>48 / 2 = 24</think> #### 72")
            status = {"final_loss": 0.01 * ((step * 7919) % 13 - 6), "policy_loss": 0.01 * ((step * 7919) % 13 - 6),
                      "policy_entropy": 0.5, "response_length": 180.0 + step % 17, "policy_lr": 1e-06}
            logger.info(status)
            payload = {"policy/final_loss": status["final_loss"], "policy/policy_entropy": 0.5,
                       "generate/avg_num_tokens": 180.0 + step % 17, "loss/avg_final_rewards": 0.3 + 0.0005 * step,
                       "trainer/epoch": 0, "trainer/global_step": step}
            timing = {"generate": 0.6 * per_step, "train_critic_and_policy": 0.35 * per_step, "step": per_step}
            if step % EVAL_INTERVAL == 0:
                payload.update(evaluation(step))
                timing["eval"] = 20.0
            payload.update({f"timing/{k}": v for k, v in timing.items()})
            console.log(payload, step=step)
    logger.complete()

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=True)
ray.get(skyrl_entrypoint.remote(CONSOLE, LOGGING, POINTS, FIRST, LAST))
'''


def console(skyrl: Path, first: int, last: int) -> bytes:
    """What the driver prints for one training process (stdout and stderr, as ``2>&1`` keeps them)."""
    program = TASK.replace("EVAL_INTERVAL", str(EVAL_INTERVAL))
    program = (f"CONSOLE = {source_of(skyrl / 'skyrl/train/utils/tracking.py', 'ConsoleLogger')!r}\n"
               f"LOGGING = {source_of(skyrl / 'skyrl/train/utils/utils.py', 'configure_ray_worker_logging')!r}\n"
               f"POINTS = {points()!r}\nFIRST = {first}\nLAST = {last}\n" + program)
    done = subprocess.run([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    return done.stdout


if __name__ == "__main__":
    skyrl, out = Path(sys.argv[1]), Path(sys.argv[2])
    with gzip.open(out / "skyrl_console.log.gz", "wb") as f:
        f.write(console(skyrl, 0, 430))
    with gzip.open(out / "skyrl_console_resumed.log.gz", "wb") as f:
        f.write(console(skyrl, 0, 105) + console(skyrl, 100, 200))
