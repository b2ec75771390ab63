"""``scalerl eval``: mean@k pass rate of a model on a task's evaluation sets.

    scalerl eval --model runs/demo/final --sets val hard --k 8
"""

from __future__ import annotations

import json


def add_arguments(p) -> None:
    p.add_argument("--model", default="tiny", metavar="PATH|HUB_ID|tiny", help="model to evaluate (default: tiny)")
    p.add_argument("--task", default="arithmetic", help="task (default: arithmetic)")
    p.add_argument("--data", metavar="FILE", help="math task: data file")
    p.add_argument("--reward", metavar="MODULE:FUNCTION", help="your own reward function")
    p.add_argument("--sets", nargs="+", metavar="NAME", help="evaluation sets (default: all of the task's)")
    p.add_argument("--k", type=int, default=4, help="samples per problem (mean@k)")
    p.add_argument("--problems", type=int, default=200, help="problems per set")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    from scalerl.errors import InputError
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model
    from scalerl.tasks.registry import get_task
    from scalerl.train.evaluate import evaluate

    if args.k < 1 or args.problems < 1:
        raise InputError("--k and --problems must be >= 1")
    model, tokenizer = load_model(args.model)
    task = get_task(args.task, reward=args.reward, **({"data": args.data} if args.data else {}))
    sets = task.eval_sets()
    names = args.sets or list(sets)
    unknown = [s for s in names if s not in sets]
    if unknown:
        raise InputError(f"task {args.task!r} has no evaluation set {unknown[0]!r}; it has: {', '.join(sets)}")
    gen = HFGenerator(model, tokenizer, seed=args.seed)
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    results = {s: evaluate(gen, tokenizer, task, list(sets[s])[: args.problems], args.k, params, batch_size=512) for s in names}
    if args.json:
        print(json.dumps({"model": args.model, "task": args.task, "k": args.k, "sets": results}))
        return 0
    print(f"model {args.model}, task {args.task}, mean@{args.k} at temperature {args.temperature}")
    for s, m in results.items():
        print(f"  {s:<8} pass rate {m['pass_rate']:.3f}  pass@{args.k} {m['pass_at_k']:.3f}  "
              f"mean length {m['mean_len']:.1f}  ({int(m['problems'])} problems)")
    return 0
