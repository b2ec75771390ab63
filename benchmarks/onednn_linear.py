"""The fp32 linear layers on oneDNN against torch's default (MKL), on this CPU, one torch thread.

    python benchmarks/onednn_linear.py              # 3 rounds
    python benchmarks/onednn_linear.py --rounds 5

Prints, per round, the CPU seconds of one training pass (forward and backward) of the tiny model on
128 sequences of 64 tokens with its linear layers on each library (the median of 8 passes), and the
backward's ``dW = g.T @ x`` at 8192 x 128 x 128 three ways: MKL, oneDNN's linear op with explicit
transposed copies, and the same op on transposed views (what ``scalerl.models.onednn_linear`` does).
Where :func:`~scalerl.models.onednn_linear.onednn_faster` is False (not an AMD CPU with AVX-512) the
trainer keeps MKL; the figures still run, for comparison.
"""

from __future__ import annotations

import argparse
import time

import torch


def _cpu_ms(f, n: int = 40) -> float:
    f()
    start = time.process_time()
    for _ in range(n):
        f()
    return (time.process_time() - start) / n * 1e3


def _pass_seconds(model, ids, n: int = 8) -> float:
    def step():
        model(input_ids=ids).logits.logsumexp(-1).mean().backward()
        model.zero_grad(set_to_none=True)

    step()
    times = []
    for _ in range(n):
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    return sorted(times)[n // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    import scalerl.models.onednn_linear as onednn
    from scalerl.models.tiny import make_tiny_model

    print(f"oneDNN chosen on this CPU: {onednn.onednn_faster()}")
    model = make_tiny_model()[0]
    head = model.get_output_embeddings()
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not head]
    ids = torch.randint(0, model.config.vocab_size, (128, 64), generator=torch.Generator().manual_seed(0))
    real_faster = onednn.onednn_faster
    onednn.onednn_faster = lambda: True  # (measured whatever this CPU; the trainer asks the real one)
    try:
        for r in range(args.rounds):
            row = {}
            for name, cls in (("MKL", torch.nn.Linear), ("oneDNN", onednn.OneDNNLinear)):
                for m in layers:
                    m.__class__ = cls
                row[name] = _pass_seconds(model, ids)
            print(f"round {r + 1}: training pass (128 x 64 tokens), CPU-s: MKL {row['MKL']:.3f}, "
                  f"oneDNN {row['oneDNN']:.3f} ({row['oneDNN'] / row['MKL']:.2f}x)", flush=True)
    finally:
        onednn.onednn_faster = real_faster
    g, x = torch.randn(8192, 128), torch.randn(8192, 128)
    op = onednn._onednn
    print(f"dW = g.T @ x at 8192 x 128 x 128, ms: MKL {_cpu_ms(lambda: g.t() @ x):.2f}, "
          f"oneDNN with transposed copies {_cpu_ms(lambda: op(g.t().contiguous(), x.t().contiguous(), None)):.2f}, "
          f"oneDNN on transposed views {_cpu_ms(lambda: op(g.t(), x.t(), None)):.2f}")


if __name__ == "__main__":
    main()
