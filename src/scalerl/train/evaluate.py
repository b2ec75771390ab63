"""mean@k evaluation: the validation pass rate the forecast fits (``R(C)`` in docs/paper.md, "The curve").

For each problem draw ``k`` completions; a completion passes when its reward is > 0. The
pass rate is the mean over problems of the per-problem mean over the ``k`` samples (mean@k,
the paper's metric: 1,000 held-out prompts, mean@16). pass@k -- the share of problems solved
at least once -- is reported beside it. Pure: it only reads the generator, task and problems,
so the trainer's periodic evaluation and a stand-alone ``scalerl eval`` share it.
"""

from __future__ import annotations

import contextvars
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from scalerl.generate.base import Completion, Generator, LengthController, SamplingParams
from scalerl.tasks.base import Problem, Task, calls_at_once, score_all
from scalerl.tasks.encoding import encode_problems, graded_texts
from scalerl.tasks.failure_tally import scored_apart

TRUNCATED = ("length", "interrupted_length")


def summarize(rewards: Sequence[Sequence[float]], completions: Sequence[Completion]) -> dict[str, Any]:
    """Metrics from per-problem reward lists (``k`` each) and all their completions."""
    passes = [[r > 0 for r in row] for row in rewards]
    n = len(completions)
    per_problem = [sum(row) / len(row) for row in passes]
    return {
        "pass_rate": sum(per_problem) / len(per_problem),
        "pass_rate_se": pass_rate_se(per_problem),
        "pass_at_k": sum(any(row) for row in passes) / len(passes),
        "mean_reward": sum(sum(row) for row in rewards) / n,
        "mean_len": sum(len(c.token_ids) for c in completions) / n,
        "frac_interrupted": sum(c.interrupted for c in completions) / n,
        "frac_truncated": sum(c.finish_reason in TRUNCATED for c in completions) / n,
        "tokens": float(sum(len(c.token_ids) for c in completions)),
        "samples": float(n),
        "problems": float(len(rewards)),
        "k": float(len(rewards[0])),
    }


def pass_rate_se(per_problem: Sequence[float]) -> float | None:
    """Standard error of the mean@k pass rate: the sample standard deviation of the per-problem
    pass rates (each the mean of its ``k`` samples) over the square root of the number of problems.
    Problems are the unit: the ``k`` samples of one problem are not independent draws of the
    pass rate, so a standard error over samples would understate it. None for one problem."""
    n = len(per_problem)
    if n < 2:
        return None
    mean = sum(per_problem) / n
    return (sum((x - mean) ** 2 for x in per_problem) / (n - 1) / n) ** 0.5


def one_decode_is_all(params: SamplingParams, length_control: LengthController | None) -> bool:
    """Whether one decode of a problem is every one of its k draws: greedy decoding, unless the length control
    draws a thinking budget per sequence (review da: mean@k and the interrupted share were one draw's)."""
    return params.temperature <= 0 and not (length_control is not None and length_control.draws_budgets)


def evaluate(
    generator: Generator,
    tokenizer: Any,
    task: Task,
    problems: Sequence[Problem],
    k: int,
    params: SamplingParams,
    length_control: LengthController | None = None,
    batch_size: int | None = None,
    progress: Callable[[int], Any] | None = None,
    examples: list[dict[str, Any]] | None = None,
    n_examples: int = 3,
) -> dict[str, float]:
    """mean@k pass rate of ``generator`` on ``problems``, plus pass@k, lengths and finish reasons.

    Returns ``pass_rate`` (mean@k), ``pass_rate_se`` (its standard error over problems:
    :func:`pass_rate_se`), ``pass_at_k``, ``mean_reward``, ``mean_len`` (completion
    tokens), ``frac_interrupted``, ``frac_truncated`` (a token budget ran out), and the counts
    ``tokens`` (decoded), ``samples``, ``problems``, ``k`` (for compute accounting). Greedy ``params``
    (temperature <= 0) decode each problem once and count that completion ``k`` times (:func:`one_decode_is_all`). ``batch_size`` caps the
    completions per ``generate`` call (default: all at once); with a ``params.seed`` the i-th
    call uses ``seed + i``, so a seeded evaluation is reproducible for a given batch size.
    ``progress``: called with the number of completions each ``generate`` call produced (a progress
    bar's ``update``). ``examples``: a list that receives the first sample of each of the first
    ``n_examples`` problems as ``{problem_id, prompt, answer, completion, reward, passed, reward_failed}``
    (the same problems at every evaluation of a run: how one answer changes as training goes;
    ``reward_failed``: the reward function raised or timed out on it, and it was scored as a wrong answer).
    """
    if k < 1:
        raise ValueError(f"evaluate: k must be >= 1, got {k}")
    if not problems:
        raise ValueError("evaluate: no problems")
    prompts = encode_problems(tokenizer, problems)
    # Greedy decoding (T <= 0) gives a problem one completion however often it is drawn: decode and
    # score it once and count it k times (mean@k = pass@k = the greedy pass rate) -- drawing it k
    # times did k times the work for the same numbers.
    draws = 1 if one_decode_is_all(params, length_control) else k
    # Problem-major: the draws of problem i are rows i*draws .. i*draws + draws - 1.
    flat = [prompts[i] for i in range(len(problems)) for _ in range(draws)]
    size = batch_size or len(flat)
    generated: list[Completion] = []
    for chunk, start in enumerate(range(0, len(flat), size)):
        chunk_params = params if params.seed is None else dataclasses.replace(params, seed=params.seed + chunk)
        generated += generator.generate(flat[start : start + size], chunk_params, length_control)
        if progress is not None:
            progress(len(flat[start : start + size]) * (k // draws))
    texts = graded_texts(tokenizer, flat, [c.text for c in generated])  # (a prompt that opened <think>: with it)
    pairs = [(problem, texts[i * draws + j]) for i, problem in enumerate(problems) for j in range(draws)]
    shown = [i * draws for i in range(min(n_examples, len(problems)))] if examples is not None else []
    every, failed = _scored(task, pairs, shown)
    rewards = [every[i * draws : (i + 1) * draws] * (k // draws) for i in range(len(problems))]
    completions = [c for i in range(len(problems)) for c in generated[i * draws : (i + 1) * draws] * (k // draws)]
    if examples is not None:
        examples += [{"problem_id": p.id, "prompt": p.prompt, "answer": p.answer, "completion": completions[i * k].text,
                      "reward": rewards[i][0], "passed": rewards[i][0] > 0, "reward_failed": failed[i * draws]}
                     for i, p in enumerate(problems[:n_examples])]
    # tokens: the ones decoded (the compute meter's eval tokens), not the k counted copies of a greedy one
    return {**summarize(rewards, completions), "tokens": float(sum(len(c.token_ids) for c in generated))}


def _scored(task: Task, pairs: list[tuple[Problem, str]], shown: list[int]) -> tuple[list[float], dict[int, bool]]:
    """The rewards of ``pairs``, and whether each ``shown`` one's reward call failed.

    The completions shown in samples.jsonl are scored one by one, each under its own tally, so a reward
    call that failed (scored as a wrong answer: -1, or the function's lowest score) is said beside its completion -- the sample read as
    a plain wrong answer. The rest is scored as one batch. Where the task scores on several worker processes
    (a user's function, math-verify: :func:`~scalerl.tasks.base.calls_at_once`), the shown ones' calls run
    beside the batch's rather than one after another before it: with a slow judge they cost one call's time,
    not three.
    """
    every = [0.0] * len(pairs)
    apart_ones = set(shown)
    rest = [index for index in range(len(pairs)) if index not in apart_ones]

    def apart(index: int) -> tuple[float, bool]:
        (reward,), counts = scored_apart(score_all, task, [pairs[index]])
        return reward, any(counts.values())

    def batch() -> list[float]:
        return score_all(task, [pairs[index] for index in rest]) if rest else []

    if shown and calls_at_once(task) > 1:
        # Each call in a copy of this context: its failures reach this scoring's tally (scored_apart adds them).
        with ThreadPoolExecutor(len(shown), thread_name_prefix="shown-reward") as pool:
            futures = {index: pool.submit(contextvars.copy_context().run, apart, index) for index in shown}
            rest_rewards = batch()
            results = {index: future.result() for index, future in futures.items()}
    else:  # one call at a time anyway (and math-verify in this process needs the main thread for its timeouts)
        results = {index: apart(index) for index in shown}
        rest_rewards = batch()
    for index, reward in zip(rest, rest_rewards):
        every[index] = reward
    for index, (reward, _) in results.items():
        every[index] = reward
    return every, {index: failed for index, (_, failed) in results.items()}


def eval_bar(enabled: bool, name: str, total: int) -> Any:
    """A progress bar over the completions of evaluation set ``name`` (stderr; gone when done):
    the first evaluation of a large model can take minutes before any training step shows."""
    import sys

    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"eval {name}", unit="sample", leave=False, disable=not enabled, dynamic_ncols=True,
                file=sys.stderr)
