"""Write the NeMo-RL fixtures of tests/curves/test_nemo_rl_log.py: what a NeMo-RL GRPO run leaves
behind with its example configs (every tracker off): its console and its log directory's
validation dumps.

NeMo-RL itself needs GPU libraries (vLLM, Megatron / DTensor workers), so the run is not NeMo-RL's:
this script prints what NeMo-RL's ``grpo_train`` / ``validate`` (``nemo_rl/algorithms/grpo.py``) and
``examples/run_grpo.py`` print, with their format strings, and writes the dumps as NeMo-RL's
``Logger.log_batched_dict_as_jsonl`` does (a ``BatchedDataDict`` of ``content`` and ``rewards``
walked in micro-batches of one: each line's values are lists of one, plus ``idx``; what is no JSON
written with ``default=str``). Given a NeMo-RL checkout, it first checks that every literal piece
of those format strings is in that checkout's source (read at NVIDIA-NeMo/RL 7ea279abf).

It is fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538) in NeMo-RL's step numbering: the
validation before training (``val_at_start``) at step 0, verl's evaluation after step 9 at step 10,
... (``val_period: 10``; ``max_num_steps: 500``), per-step seconds spread evenly between two
evaluations, and each validation's 1,000 samples rewarded 1 / 0 so that their mean is the run's score.

    python make_nemo_rl_logs.py OUT_DIR [NEMO_RL_CHECKOUT]

* ``nemo_rl_console.log.gz`` -- the whole run (steps 0-430), one process;
* ``nemo_rl_console_resumed.log.gz`` -- a console appended to (``tee -a``) by two processes: the
  first killed while training step 117, the second resumed from the step-100 checkpoint, training
  steps 101-200 (it validates at 110 again: the first process's step-110 validation scored 0.05
  lower, so a reader that kept it would show);
* ``nemo_rl_logs.tar.gz`` -- the ``logs`` directory of three launches: ``exp_001`` (the first process
  above: validations 0-110), ``exp_002`` (its resumed launch: 110-200), ``exp_003`` (a new training
  from step 0, validations 0-50).
"""

import gzip
import io
import json
import pprint
import sys
import tarfile
from pathlib import Path

from shipped_run import check_literals, points  # (this directory: run as a script)

VAL_PERIOD = 10
MAX_STEPS = 500
SAMPLES = 1000
#: The literal pieces of the format strings used below, each checked against NeMo-RL's source.
GRPO_LITERALS = [
    "Step {current_step + 1}/{max_num_steps}", "▶ Preparing batch...", "▶ Generating responses for batch of size",
    "▶ Processing rewards...,", "▶ Computing logprobs...", "▶ Preparing for training...", "▶ Training policy...",
    "▶ Starting validation at step {step}...", "🔍 Running initial validation...", "📊 Validation Results:",
    "    • Accuracy: {accuracy:.4f}", "    • Average response length: {avg_length:.1f} tokens",
    "    • Samples processed: {len(total_rewards)}", "  ⏱️  Validation Timing:",
    "    • Total validation time: {validation_time:.2f}s", "📊 Training Results:", "  • Loss: {metrics['loss']:.4f}",
    "  • Generation KL Error: {metrics['gen_kl_error']:.4f}", "  • Avg Reward: {np.mean(rewards.numpy()):.4f}",
    "  • Mean Generation Length:", "⏱️  Timing:", "  • Total step time: {total_time:.2f}s",
    "  • {k}: {v:.2f}s ({percent:.1f}%)", "val_data_step{step}.jsonl",
]
RUN_GRPO_LITERALS = ["Final config:", "pprint.pprint(config)", "📊 Using log directory:"]


def check_against(checkout: Path) -> None:
    check_literals(checkout, {"nemo_rl/algorithms/grpo.py": GRPO_LITERALS, "examples/run_grpo.py": RUN_GRPO_LITERALS},
                   "NeMo-RL")


def step_seconds(pts) -> dict[int, float]:
    out = {}
    for (s0, h0, _), (s1, h1, _) in zip(pts, pts[1:]):
        for step in range(s0 + 1, s1 + 1):
            out[step] = 3600.0 * (h1 - h0) / (s1 - s0)
    return out


def rewards(score: float) -> list[float]:
    """1,000 samples rewarded 1 / 0 whose mean is ``score`` (the run's scores have 3 decimals)."""
    ones = round(score * SAMPLES)
    return [1.0 if (i * 7919) % SAMPLES < ones else 0.0 for i in range(SAMPLES)]


def validation(out: list[str], step: int, score: float) -> None:
    r = rewards(score)
    accuracy = sum(r) / len(r)
    out.append(f"▶ Starting validation at step {step}...")
    out.append("(VllmGenerationWorker pid=4411) INFO 01-05 10:02:11 [async_llm.py:270] Added request 0.")
    out.append("\n📊 Validation Results:")
    out.append(f"    • Accuracy: {accuracy:.4f}")
    out.append(f"    • Average response length: {200.0 + step % 37:.1f} tokens")
    out.append(f"    • Samples processed: {len(r)}")
    out.append("\n  ⏱️  Validation Timing:")
    out.append(f"    • Total validation time: {31.0 + step % 5:.2f}s")


def console(pts, first: int, last: int, *, cut_at: int | None = None, abandoned_drop: float = 0.0) -> str:
    """One process's stdout: steps ``first + 1`` .. ``last`` (the validation before training where
    ``first`` is 0); killed while training step ``cut_at``."""
    score = {s: v for s, _, v in pts}
    seconds = step_seconds(pts)
    out = ["🚀 Running synchronous GRPO training (legacy)", "Final config:"]
    out += pprint.pformat({"grpo": {"num_prompts_per_step": 32, "num_generations_per_prompt": 16,
                                    "max_num_steps": MAX_STEPS, "val_period": VAL_PERIOD, "val_at_start": True},
                           "logger": {"log_dir": "logs", "wandb_enabled": False, "tensorboard_enabled": False}}).splitlines()
    out.append(f"📊 Using log directory: logs/exp_00{1 if first == 0 else 2}")
    out += ["\n" + "=" * 60, " " * 18 + "SETUP COMPLETE", "  Total setup time: 94.2s", "=" * 60 + "\n"]
    if first == 0:
        out.append("\n🔍 Running initial validation...")
        validation(out, 0, score[0])
    for step in range(first + 1, last + 1):
        out.append(f"\n{'=' * 25} Step {step}/{MAX_STEPS} {'=' * 25}")
        out += ["▶ Preparing batch...", "▶ Generating responses for batch of size 512...",
                "(VllmGenerationWorker pid=4411) INFO 01-05 10:02:40 [metrics.py:481] Avg generation throughput: 8123.4 tokens/s",
                "▶ Processing rewards...,", "▶ Computing advantages...", "▶ Computing logprobs...",
                "▶ Preparing for training...", "▶ Training policy..."]
        if step == cut_at:
            out.append("(DTensorPolicyWorker pid=5120) Training: 40%|████      | 2/5 [00:11<00:17, 5.8s/it]")
            break
        if step % VAL_PERIOD == 0 and step in score:
            validation(out, step, max(score[step] - abandoned_drop, 0.0) if cut_at and step > 100 else score[step])
        total = seconds[step]
        timers = {"generation": 0.52 * total, "policy_training": 0.31 * total, "logprob_inference": 0.12 * total}
        out += ["\n📊 Training Results:", f"  • Loss: {0.01 * ((step * 7919) % 13 - 6):.4f}",
                f"  • Generation KL Error: {0.0004 + 0.0001 * (step % 3):.4f}",
                f"  • Avg Reward: {min(score.get(step - step % VAL_PERIOD, 0.0) + 0.03, 1.0):.4f}",
                f"  • Mean Generation Length: {180.0 + step % 17:.4f}", "\n⏱️  Timing:",
                f"  • Total step time: {total:.2f}s"]
        for k, v in sorted(timers.items(), key=lambda item: item[1], reverse=True):
            out.append(f"  • {k}: {v:.2f}s ({v / total * 100:.1f}%)")
        out += ["\n🔍 Performance Metrics:", f"  • Mean Total Tokens per Sample: {812.0 + step % 11:.2f}"]
    return "\n".join(out) + "\n"


def dumps(pts, steps, drop_after: int | None = None) -> dict[str, bytes]:
    """A launch's ``val_data_step<N>.jsonl`` files, as ``Logger.log_batched_dict_as_jsonl`` writes them."""
    score = {s: v for s, _, v in pts}
    files = {}
    for step in steps:
        value = score[step] - (0.05 if drop_after is not None and step > drop_after else 0.0)
        lines = []
        for i, r in enumerate(rewards(value)):
            message_log = [{"role": "user", "content": f"Question {i}: what is 6 * 7?", "token_ids": "tensor([151644, 872])"},
                           {"role": "assistant", "content": "<think>6 * 7 = 42</think> \\boxed{42}",
                            "token_ids": "tensor([151644, 77091])", "generation_logprobs": "tensor([-0.01, -0.20])"}]
            sample = {"content": [message_log], "rewards": [r]}
            lines.append(json.dumps({**sample, "idx": i}, default=str))
        files[f"val_data_step{step}.jsonl"] = ("\n".join(lines) + "\n").encode()
    return files


def main() -> None:
    out_dir = Path(sys.argv[1])
    if len(sys.argv) > 2:
        check_against(Path(sys.argv[2]))
    pts = points()
    out_dir.mkdir(parents=True, exist_ok=True)
    whole = console(pts, 0, pts[-1][0])
    resumed = console(pts, 0, 200, cut_at=117, abandoned_drop=0.05) + console(pts, 100, 200)
    for name, text in (("nemo_rl_console", whole), ("nemo_rl_console_resumed", resumed)):
        (out_dir / f"{name}.log.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    launches = {
        "exp_001": dumps(pts, range(0, 111, VAL_PERIOD), drop_after=100),
        "exp_002": dumps(pts, range(110, 201, VAL_PERIOD)),
        "exp_003": dumps(pts, range(0, 51, VAL_PERIOD)),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for exp, files in launches.items():
            for name, data in files.items():
                info = tarfile.TarInfo(f"logs/{exp}/{name}")
                info.size, info.mtime = len(data), 0
                tar.addfile(info, io.BytesIO(data))
    (out_dir / "nemo_rl_logs.tar.gz").write_bytes(buf.getvalue())


if __name__ == "__main__":
    main()
