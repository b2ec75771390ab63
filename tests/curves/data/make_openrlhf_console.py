"""Write the OpenRLHF console fixtures of tests/curves/test_dict_lines_steps.py with OpenRLHF's own
logger: the module ``openrlhf/utils/logging_utils.py`` (its stdout handler and format,
``INFO 01-05 10:02:11 file.py:547] message``), taken from an OpenRLHF checkout's source (the package
needs GPU libraries), run inside Ray actors named as OpenRLHF's (``PPOTrainer``; asynchronous:
``GenerateSamplesActor`` and ``TrainingActor``), so the console is what the driver prints: each
line behind Ray's ``(PPOTrainer pid=N)`` prefix. The messages are the f-strings of
``openrlhf/trainer/ppo_trainer.py`` / ``ppo_trainer_async.py`` (read at OpenRLHF/OpenRLHF 3c3be623),
each checked against the checkout's source first; the metrics' names are those OpenRLHF logs
(``compute_eval_metrics``: ``eval_<datasource>_pass1``, ``eval_<datasource>_pass<n>``, ...).

It is fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538) in OpenRLHF's step numbering (the
evaluation after step 9 at ``global_step`` 10, ``eval.steps: 10``; OpenRLHF does not evaluate before
training), per-step seconds spread evenly between two evaluations as ``timing/*``.

    pip install ray          # in scalerl's dev set
    python make_openrlhf_console.py OPENRLHF_CHECKOUT OUT_DIR

* ``openrlhf_console.log.gz`` -- the whole run (steps 1-430), synchronous trainer;
* ``openrlhf_console_resumed.log.gz`` -- a console appended to (``tee -a``) by two processes: the
  first killed after step 105, the second resumed from the step-100 checkpoint (training steps
  101-200); the first process's step-110 evaluation does not exist (killed before it);
* ``openrlhf_console_async.log.gz`` -- the asynchronous trainer (steps 1-200): the generator actor
  prints each evaluation's metrics (``Async evaluation completed: {...}``) and the training actor
  the same metrics again with their step (``Eval at step N: {...}``).
"""

import gzip
import subprocess
import sys
from pathlib import Path

from shipped_run import check_literals, points  # (this directory: run as a script)
EVAL_STEPS = 10
#: The literal pieces of OpenRLHF's messages used below, each checked against its source.
SYNC_LITERALS = ['logger.info(f"✨ Global step {global_step}: {log_status}")',
                 "logger.info(f\"⏰ Evaluation start time: {time.strftime('%Y-%m-%d %H:%M:%S')}\")",
                 'logger.info(f"✨ Evaluation completed in {time_str}, global_step {global_step}, eval_metrics: {logs}")',
                 'status["timing/step_total"] = sum(v for k, v in status.items() if k.startswith("timing/"))',
                 'logs[f"eval_{ds}_pass1"]']
ASYNC_LITERALS = ['logger.info(f"Async evaluation completed: {logs}")', 'logger.info(f"Eval at step {eval_step}: {eval_metrics}")',
                  'logger.info(f"Global step {global_step}: {log_status}")']


def check_against(checkout: Path) -> None:
    check_literals(checkout, {"openrlhf/trainer/ppo_trainer.py": SYNC_LITERALS,
                              "openrlhf/trainer/ppo_trainer_async.py": ASYNC_LITERALS}, "OpenRLHF")


# Runs in the Ray actors: OpenRLHF's logging module (passed in as source), then the trainer's calls.
PROGRAM = '''
import time
import ray

LOGGER = None

def make_logger(src):
    # Once per process, as an import is: each run of the module adds its handler to the logger again.
    global LOGGER
    if LOGGER is None:
        scope = {"__name__": "openrlhf.utils.logging_utils"}
        exec(src, scope)
        LOGGER = scope["init_logger"]("openrlhf.trainer.ppo_trainer")
    return LOGGER

def per_step_seconds(points):
    out = {}
    for (s0, h0, _), (s1, h1, _) in zip(points, points[1:]):
        for step in range(s0 + 1, s1 + 1):
            out[step] = 3600.0 * (h1 - h0) / (s1 - s0)
    return out

def eval_logs(score):
    return {"eval_openai/gsm8k_pass4": min(1.0, score + 0.12), "eval_openai/gsm8k_pass1": score,
            "eval_openai/gsm8k_response_length_mean": 180.25, "eval_openai/gsm8k_truncated_rate": 0.0,
            "eval_response_length_mean": 180.25, "eval_truncated_rate": 0.0, "eval_num_samples": 5276.0}

def status(step, seconds, score):
    s = {"policy_loss": 0.01 * ((step * 7919) % 13 - 6), "actor_lr": 1e-06, "clip_ratio": 0.002,
         "reward": round(score + 0.03, 4), "return": round(score + 0.03, 4), "response_length": 180.0 + step % 17,
         "total_length": 420.0 + step % 17, "kl": 0.0, "timing/make_experience": 0.25 * seconds,
         "timing/ppo_train": 0.3 * seconds, "timing/generation": 0.45 * seconds}
    s["timing/step_total"] = sum(v for k, v in s.items() if k.startswith("timing/"))
    return s

def steps(points, first, last):
    """(global_step, its status, its evaluation's score or None) of the steps first+1 .. last."""
    seconds, score = per_step_seconds(points), {s: v for s, _, v in points}
    for global_step in range(first + 1, last + 1):
        yield (global_step, status(global_step, seconds[global_step], score[global_step - global_step % 10]),
               score[global_step] if global_step % 10 == 0 and global_step in score else None)

@ray.remote(num_cpus=0)
class PPOTrainer:
    def fit(self, src, points, first, last):
        logger = make_logger(src)
        for global_step, log_status, evaluated in steps(points, first, last):
            logger.info(f"✨ Global step {global_step}: {log_status}")
            if evaluated is not None:
                logger.info(f"⏰ Evaluation start time: {time.strftime('%Y-%m-%d %H:%M:%S')}")
                logs = eval_logs(evaluated)
                time_str = "0:01:23"
                logger.info(f"✨ Evaluation completed in {time_str}, global_step {global_step}, eval_metrics: {logs}")

@ray.remote(num_cpus=0)
class GenerateSamplesActor:
    def run_eval(self, src, score):
        logger = make_logger(src)
        logger.info("Starting async evaluation...")
        logs = eval_logs(score)
        logger.info(f"Async evaluation completed: {logs}")
        return logs

@ray.remote(num_cpus=0)
class TrainingActor:
    def fit(self, src, points, last, generator):
        logger = make_logger(src)
        for global_step, log_status, evaluated in steps(points, 0, last):
            # (async: timing/step_total is the iteration's wall clock, here the same seconds)
            logger.info(f"Global step {global_step}: {log_status}")
            if evaluated is not None:
                eval_metrics = ray.get(generator.run_eval.remote(src, evaluated))
                time.sleep(0.05)  # the generator's line reaches the driver first, as in a real run
                eval_step = global_step
                logger.info(f"Eval at step {eval_step}: {eval_metrics}")

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=True)
if MODE == "async":
    generator = GenerateSamplesActor.remote()
    ray.get(TrainingActor.remote().fit.remote(SRC, POINTS, LAST, generator))
else:
    ray.get(PPOTrainer.remote().fit.remote(SRC, POINTS, FIRST, LAST))
time.sleep(1.0)  # let the last lines reach the driver
'''


def console(openrlhf: Path, first: int, last: int, mode: str = "sync") -> bytes:
    """What the driver prints for one training process (stdout and stderr, as ``2>&1`` keeps them)."""
    src = (openrlhf / "openrlhf/utils/logging_utils.py").read_text()
    program = f"SRC = {src!r}\nPOINTS = {points()!r}\nFIRST = {first}\nLAST = {last}\nMODE = {mode!r}\n" + PROGRAM
    done = subprocess.run([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    return done.stdout


if __name__ == "__main__":
    openrlhf, out = Path(sys.argv[1]), Path(sys.argv[2])
    check_against(openrlhf)
    for name, text in (("openrlhf_console", console(openrlhf, 0, 430)),
                       ("openrlhf_console_resumed", console(openrlhf, 0, 105) + console(openrlhf, 100, 200)),
                       ("openrlhf_console_async", console(openrlhf, 0, 200, "async"))):
        (out / f"{name}.log.gz").write_bytes(gzip.compress(text, mtime=0))
