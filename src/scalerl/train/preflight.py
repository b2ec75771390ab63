"""Checks that run before a run writes anything, and the clean-up of a run that never started.

A user model can be too short for the recipe's budgets: GPT-2 has 1,024 learned positions (a
small one 64), the paper's budget is 14,336 completion tokens. Past the last position a
learned-position model raises an IndexError deep inside the first evaluation; a RoPE model
runs on, into positions it was never trained on. :func:`check_generation_budget` compares the
longest sequence a run can produce -- the longest prompt (chat template included) plus the
token budget (thinking + forced phrase + answer, capped by ``max_new_tokens``) -- with the
model's maximum positions, and refuses the run with one line naming the numbers and the
``--set`` flags that fit (checked against the config's own validation). Prompts with characters the
tokenizer has no token for are warned of (:func:`unknown_characters_note`).

:func:`discard_unstarted_run` removes what a run wrote before its first checkpoint when it
fails there (a crash, an interrupt in the first evaluation), so the corrected command can be
run again in the same directory instead of being refused as "already holds a run".

:func:`run_device` and :func:`check_writable` refuse a device this machine does not have and an
``--output`` that cannot be written, before the model is loaded.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from scalerl.config import apply_overrides
from scalerl.errors import ConfigError, InputError
from scalerl.models.devices import run_device
from scalerl.rl.length import phrase_ids, phrase_tokens
from scalerl.rl.recipe import LengthConfig
from scalerl.tasks.encoding import encode_problem

if TYPE_CHECKING:  # train.config is imported by the trainer that calls these checks
    from scalerl.train.config import TrainConfig

#: How :func:`check_token_ids` names the interruption phrase the generator forces.
PHRASE = "the forced interruption phrase, length.interruption_phrase"

#: Config attributes that bound the positions a model can attend over, in the order they are tried.
POSITION_ATTRIBUTES = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx",
                       "max_seq_len")


def max_positions(config: Any) -> tuple[int, str] | None:
    """``(positions, attribute name)`` of a Hugging Face config, or None when it names no bound."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in POSITION_ATTRIBUTES:
        value = getattr(text, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, name
    return None


def completion_budget(length: LengthConfig, tokenizer: Any) -> tuple[int, str]:
    """The most completion tokens a sequence can get, and how that number is made up."""
    cap = length.max_new_tokens
    if length.mode != "interrupt":
        return cap, f"length.max_new_tokens {cap}"
    phrase = phrase_tokens(length, tokenizer)
    hi, answer = length.think_budget[1], length.answer_budget
    parts = f"thinking {hi} + forced phrase {phrase} + answer {answer}"
    if hi + phrase + answer <= cap:
        return hi + phrase + answer, parts
    return cap, f"{parts}, capped by length.max_new_tokens {cap}"


def longest_prompt(tokenizer: Any, problems: Iterable[Any]) -> int:
    """Token count of the longest prompt as the generator sees it (chat template applied)."""
    return max((len(encode_problem(tokenizer, p)) for p in problems), default=0)


def fitting_overrides(length: LengthConfig, tokenizer: Any, room: int) -> list[str]:
    """``--set`` overrides that bring the completion budget within ``room`` tokens."""
    sets = [f"length.max_new_tokens={room}"]
    if length.mode == "interrupt":
        phrase = phrase_tokens(length, tokenizer)
        answer = max(1, min(length.answer_budget, room // 4))
        think = room - phrase - answer
        if think < 1:  # not even room for the forced phrase: plain truncation
            sets = ["length.mode=truncate", *sets]
        else:
            sets += [f"length.think_budget=[{min(length.think_budget[0], think)},{think}]",
                     f"length.answer_budget={answer}"]
    if length.mode == "overlong_penalty" and length.overlong_max_len > room:  # (no other mode reads them)
        sets += [f"length.overlong_max_len={room}", f"length.overlong_cache={max(1, min(length.overlong_cache, room // 4))}"]
    return sets


def check_generation_budget(cfg: TrainConfig, model: Any, tokenizer: Any, train: Sequence[Any],
                            eval_sets: Mapping[str, Sequence[Any]]) -> str | None:
    """Raise :class:`InputError` (one line) when prompt + budget exceeds the model's positions; else
    :func:`check_positions`' warning, or None."""
    return check_positions(model, tokenizer, [*train, *(p for s in eval_sets.values() for p in s)], cfg.recipe.length,
                           lambda room: _train_fix(cfg, tokenizer, room))


def check_positions(model: Any, tokenizer: Any, problems: Sequence[Any], length: LengthConfig,
                    fix: Callable[[int], str]) -> str | None:
    """Raise :class:`InputError` (one line) when the longest of ``problems``' prompts + the budget of
    ``length`` exceeds the model's positions; ``fix(room)`` says how to bring the budget within
    ``room`` tokens. ``scalerl train`` (:func:`check_generation_budget`) and ``scalerl eval`` share it.
    First, :func:`check_token_ids` (the prompts are encoded once, for both). Returns
    :func:`unknown_characters_note`'s warning, or None, for the caller to print (a resume does not say it again)."""
    encoded = [(p.id, encode_problem(tokenizer, p)) for p in problems]
    # The forced phrase goes through the embedding too (a '</think>' added to the tokenizer without
    # resize_token_embeddings is in it, in no prompt): checked with the prompts, first.
    forced = [(PHRASE, phrase_ids(length, tokenizer))] if length.mode == "interrupt" else []
    check_token_ids(model, [*forced, *encoded])
    note = unknown_characters_note(tokenizer, problems, [ids for _, ids in encoded])
    bound = max_positions(model.config)
    if bound is None:
        return note
    positions, attribute = bound
    prompt = max((len(ids) for _, ids in encoded), default=0)
    budget, parts = completion_budget(length, tokenizer)
    if prompt + budget <= positions:
        return note
    head = (f"the model has {positions} positions ({attribute} in its config), but a sequence can need "
            f"{prompt} + {budget} = {prompt + budget}: the longest prompt ({prompt} tokens) + the token budget ({parts})")
    room = positions - prompt
    # The warning goes with the refusal: the run stops here, before its caller could print it (review FQ's note).
    also = f" (also: {note})" if note else ""
    if room < 1:
        # Named by id (a data file's is file:row) so the user can find them.
        too_long = [pid for pid, ids in encoded if len(ids) >= positions]
        raise InputError(f"{head}; the prompts alone do not fit ({len(too_long)} of {len(problems)} have {positions} "
                         f"tokens or more, the first {too_long[0]}): shorten or drop them, or use a model with more "
                         f"positions{also}")
    raise InputError(f"{head}; {fix(room)} or use a model with more positions{also}")


def check_token_ids(model: Any, encoded: Sequence[tuple[str, Sequence[int]]]) -> None:
    """Raise :class:`InputError` (one line) when the tokenizer turned a prompt (``encoded``: each
    problem's id and its prompt's token ids) into an id the model's
    input embedding has no row for -- a tokenizer that is not the model's own, or tokens added
    without ``resize_token_embeddings``. Uncaught, the first forward pass raised torch's
    ``IndexError: index out of range in self``. (An embedding larger than the tokenizer, as
    Qwen's padded vocabularies are, is fine.)"""
    from scalerl.generate.layout import embedding_rows  # (torch: not imported with this module)

    rows = embedding_rows(model)
    if rows is None:
        return
    top = next(((max(ids), pid) for pid, ids in encoded if len(ids) and max(ids) >= rows), None)
    if top is None:
        return
    where = top[1] if top[1] == PHRASE else f"prompt {top[1]}"
    raise InputError(f"the tokenizer gives token id {top[0]} ({where}) but the model's input embedding has "
                     f"{rows} rows (ids 0-{rows - 1}): the tokenizer saved with the weights is not this model's, or "
                     "tokens were added to it without model.resize_token_embeddings(len(tokenizer)); save the model's "
                     "own tokenizer beside its weights")


def unknown_characters_note(tokenizer: Any, problems: Sequence[Any], encoded: Sequence[Sequence[int]]) -> str | None:
    """What to say where the tokenizer turned characters of the prompts into its unknown token (a character
    tokenizer's ``×`` or ``−``, a tokenizer without byte fallback given another script): the model sees ``<unk>``
    there, and ``3×4`` and ``3−4`` are one prompt to it (review fk: trained on in silence). A prompt counts where
    one of its characters, encoded alone, is the unknown token: a tokenizer whose unknown token is also its end of
    text (GPT-NeoX's) has it in every prompt a chat template ends. None where no prompt has such a character."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return None
    unknown: dict[str, bool] = {}  # a character -> whether it encodes to the unknown token (few distinct ones)

    def is_unknown(c: str) -> bool:
        if c not in unknown:
            unknown[c] = unk in tokenizer.encode(c, add_special_tokens=False)
        return unknown[c]

    chars: Counter[str] = Counter()
    texts = {}  # each distinct prompt once: one held by the training data and an evaluation set counted once (FM)
    for problem, ids in zip(problems, encoded):
        key = tuple(problem.messages) or problem.prompt  # (a conversation is its turns, roles and all: FW)
        if key in texts:
            continue
        text = "".join(content for _, content in problem.messages) or problem.prompt
        bad = [c for c in set(text) if is_unknown(c)] if unk in ids else []
        chars.update(bad)
        texts[key] = bool(bad)
    hit = sum(texts.values())
    if not hit:
        return None
    named = ", ".join(f"{c!r} in {n}" for c, n in chars.most_common(5))
    return (f"{hit} of {len(texts)} prompts hold characters the tokenizer has no token for ({named}): the model "
            f"sees its unknown token {getattr(tokenizer, 'unk_token', None)!r} there, and prompts that differ only in "
            "them look the same to it -- replace them in the data, or use a model whose tokenizer covers them")


def _train_fix(cfg: TrainConfig, tokenizer: Any, room: int) -> str:
    """How a training run's budget comes within ``room`` tokens: the ``--set`` flags, where the
    config accepts them (only what it accepts is suggested)."""
    fix = fitting_overrides(cfg.recipe.length, tokenizer, room)
    try:
        recipe = apply_overrides(cfg.recipe, fix)
        dataclasses.replace(cfg, recipe=recipe).validate()
    except ConfigError:
        return f"lower length.max_new_tokens to at most {room} (and the budgets within it)"
    return f"fit it with {' '.join('--set ' + f for f in fix)}"


def longest_sequence(cfg: TrainConfig, tokenizer: Any, problems: Sequence[Any], eval_sets: Mapping[str, Sequence[Any]]) -> int:
    """Tokens of the longest sequence a run can decode or score: its longest prompt (training or
    evaluation, chat template applied) + ``length.max_new_tokens``."""
    return longest_prompt(tokenizer, [*problems, *(p for s in eval_sets.values() for p in s)]) \
        + cfg.recipe.length.max_new_tokens


def held_bytes(cfg: TrainConfig, model: Any, compute_bytes: int, world: int) -> int:
    """Bytes of a device that rank 0 holds before any activation or KV cache: its share of the
    training state and the policy's copies beside it (``compute_bytes`` a parameter)."""
    from scalerl.train import memory
    from scalerl.train.policy import device_copies

    parameters = sum(p.numel() for p in model.parameters())
    copies = device_copies(cfg, parameters * compute_bytes, world=world)
    return memory.training_state_bytes(model, world) + sum(copies.values())


def decode_rows(cfg: TrainConfig, model: Any, tokenizer: Any, problems: Sequence[Any],
                eval_sets: Mapping[str, Sequence[Any]], compute_bytes: int, device: Any,
                world: int = 1) -> tuple[int | None, str | None]:
    """The most rows the Hugging Face decode loops on the trainer's device hold at once (None: every
    row of a call), and a one-line note when they cannot hold them all
    (:func:`scalerl.train.memory.decode_fit`). ``run.decode_rows`` when set; else what fits
    beside the training state and the policy's copies on a GPU: the rows a loop decodes at once
    are a training batch where the trainer's device generates it (sync and ppo-off-policy-k
    locally; every generator thread's under pipeline-rl-k, the threads sharing the room) or an
    evaluation chunk unless the generator actors evaluate, each up to the longest prompt +
    max_new_tokens. Under ``run.generate_on_shards`` every rank must cut alike, and the others
    do not see the prompts: a note only (the number is the setting's)."""
    from scalerl.pipeline.registry import trainer_device_generators
    from scalerl.train import memory
    from scalerl.train.config import eval_engine

    if cfg.run.decode_rows:
        return cfg.run.decode_rows, None
    capacity = memory.device_capacity(device)
    if capacity is None:
        return None, None
    generators = trainer_device_generators(cfg.recipe.off_policy.pipeline, cfg.backend)
    train_rows = cfg.recipe.batch.prompts_per_step * cfg.recipe.batch.generations_per_prompt if generators else 0
    eval_rows = 0
    if eval_engine(cfg) == "trainer":
        largest = max((len(s) for s in eval_sets.values()), default=0) * cfg.eval.samples_per_problem
        eval_rows = min(cfg.eval.batch_size or largest, largest)
    rows = max(train_rows, eval_rows)
    shards = cfg.run.generate_on_shards and world > 1
    if shards:
        rows = -(-rows // world)  # each rank decodes its share
    if rows == 0:
        return None, None
    tokens = longest_sequence(cfg, tokenizer, problems, eval_sets)
    per_token = memory.kv_bytes_per_token(model.config, compute_bytes)
    held = held_bytes(cfg, model, compute_bytes, world)
    fit = memory.decode_fit(rows, tokens, per_token, capacity, held, max(1, generators))
    if fit is None:
        return None, None
    assert per_token is not None
    note = memory.decode_note(rows, tokens, per_token, capacity, held, str(device), fit, cut=not shards)
    return (None if shards else max(fit, 1)), note


def update_tokens(cfg: TrainConfig, model: Any, tokenizer: Any, problems: Sequence[Any],
                  eval_sets: Mapping[str, Sequence[Any]], probe: Callable[..., Any], compute_bytes: int,
                  device: Any, world: int = 1) -> tuple[int, str | None]:
    """``run.micro_batch_tokens`` as the update uses it on ``device``, and a one-line note when that
    differs: on a GPU the update's activations are measured on the model (``probe(max_length=...)``:
    :func:`scalerl.train.activation_probe.probe_activations`, or every rank's under FSDP) and the
    passes hold at most the padded tokens whose activations fit in
    :data:`~scalerl.train.memory.ACTIVATION_SHARE` of what the training state (this rank's
    shard of it) and the policy's copies (``compute_bytes`` a parameter) leave free. As
    configured where that is more than a pass can hold anyway, and on the CPU (no probe)."""
    from scalerl.generate.logprobs import checkpointing_enabled
    from scalerl.train import memory

    configured = cfg.run.micro_batch_tokens
    capacity = memory.device_capacity(device)
    if capacity is None:
        return configured, None
    bound = max_positions(model.config)
    cost = probe(max_length=bound[0] if bound else None)
    held = held_bytes(cfg, model, compute_bytes, world)
    longest = longest_sequence(cfg, tokenizer, problems, eval_sets)
    fit = cost.tokens_that_fit(memory.ACTIVATION_SHARE * (capacity - held), longest)
    if fit >= (configured or cfg.run.micro_batch_size * longest):  # no pass is cut by it
        return configured, None
    per_token = cost.per_token + cost.per_token_sq * longest + cost.per_row / longest
    note = memory.update_tokens_note(capacity, held, str(device), longest, configured, fit, per_token, cost.fixed,
                                     checkpointing_enabled(model))
    return max(fit, 1), note


def discard_unstarted_run(output: Path, *, checkpoints: str, files: Sequence[str], runlog: Any = None) -> bool:
    """Remove ``files`` from ``output`` when no checkpoint exists yet; True if it did.

    Only the files a run writes at its start (the resolved config, the run log) go: without a
    checkpoint nothing in them can be resumed, and while they exist a new run is refused.
    """
    from scalerl.train.checkpoint import latest_checkpoint

    if latest_checkpoint(Path(output) / checkpoints) is not None:
        return False
    if runlog is not None:
        runlog.close()
    for name in files:
        (Path(output) / name).unlink(missing_ok=True)
    try:  # an empty checkpoints/ (a first checkpoint that failed to write: review cj) made the directory "a run"
        (Path(output) / checkpoints).rmdir()
    except OSError:  # absent, or not empty: left as it is
        pass
    return True


def check_generator_device(cfg: TrainConfig) -> None:
    """``backend.generator_device``, before the run starts: of the generator processes a local pipeline-rl-k
    starts on this machine, checked as ``run.device`` is (a name torch does not know, or CUDA on a machine without
    it, failed in the generator process after the first checkpoint: review cx); of Ray's actors, which may run on
    other machines, the name alone (a typo started the cluster and its actors, then ended in a traceback: review
    dd -- each actor checks the device it lands on). The synchronous modes start no generator process locally."""
    backend = cfg.backend
    if backend.generator_device == "cpu":
        return
    if backend.name != "local":
        run_device(backend.generator_device, "backend.generator_device", auto=False, here=False)
    elif backend.workers == "processes" and cfg.recipe.off_policy.pipeline == "pipeline-rl-k":
        run_device(backend.generator_device, "backend.generator_device", auto=False)


def check_writable(output: Path) -> None:
    """:class:`InputError` when ``output`` cannot be created or written (checked without creating it)."""
    existing = output
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"--output {output}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--output {output}: {existing} is not writable; choose another --output")
