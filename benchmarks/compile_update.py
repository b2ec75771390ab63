"""Does ``torch.compile`` pay for the tiny model's training pass on a CPU? Compile time against
the steady-state saving of one forward + backward (64 sequences x 30 tokens, the update's
micro-batch), eager vs compiled (``dynamic=True``: the update's shapes change every step).

    .venv/bin/python benchmarks/compile_update.py            # a few minutes: the compile is most of it

Prints CPU seconds of this process (the inductor's compile workers are other processes: their
CPU is in the wall-clock figure) and the number of optimizer steps (2 micro-batches each) after
which the compile would have paid for itself.
"""

from __future__ import annotations

import statistics
import time

import torch


def main() -> None:
    from scalerl.models.loading import load_model
    from scalerl.models.tiny import tiny_model_dir

    torch.set_num_threads(1)
    model, _ = load_model(str(tiny_model_dir()), dtype="float32")
    model.train()
    b, t = 64, 30
    ids = torch.randint(0, model.config.vocab_size, (b, t))
    mask = torch.ones(b, t, dtype=torch.long)
    mask[:8, :3] = 0  # some left padding, as in the update
    pos = (mask.cumsum(-1) - 1).clamp(min=0)

    def step(m) -> None:
        out = m(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
        torch.log_softmax(out.logits.float(), -1).gather(-1, ids[..., None]).sum().backward()

    def timed(m, n: int = 8) -> float:
        runs = []
        for _ in range(n):
            start = time.process_time()
            step(m)
            runs.append(time.process_time() - start)
        return statistics.median(runs)

    eager = timed(model)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    compiled = torch.compile(model, dynamic=True)
    step(compiled)
    compile_cpu, compile_wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
    fast = timed(compiled)
    eager_again = timed(model)
    base = min(eager, eager_again)
    saving = 2 * (base - fast)  # two micro-batches per optimizer step
    print(f"forward + backward, {b} x {t} tokens: eager {base:.3f} CPU-s, compiled {fast:.3f} "
          f"({fast / base:.2f}x); first compiled call {compile_cpu:.1f} CPU-s ({compile_wall:.0f} s wall)")
    if saving > 0:
        print(f"pays for itself after ~{compile_cpu / saving:.0f} optimizer steps (CPU-s of this process only)")
    else:
        print("no steady-state saving: never pays")


if __name__ == "__main__":
    main()
