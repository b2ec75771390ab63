"""What the update's forward pass keeps for its backward pass, measured on the model itself.

The training state (weights, gradients, AdamW's moments) is known from the parameter count; the
activations are not: they depend on the architecture's implementation, the attention backend
(a math kernel keeps ``[heads, T, T]`` scores, a flash kernel does not), autocast (which keeps a
low-precision copy of every weight it casts, until the backward pass) and gradient
checkpointing. So they are measured rather than estimated: :func:`probe_activations` runs the
update's own scoring pass (:func:`scalerl.generate.logprobs.shared_prompt_logprobs`, under the
run's autocast) on made-up sequences, gradients on and no backward pass, and adds up the bytes
of every tensor autograd saves for the backward pass (a ``saved_tensors_hooks`` pack hook; the
parameters themselves excepted; under gradient checkpointing, what the checkpoints keep -- each
layer's input -- is seen the same way). Three lengths fit
``a + per_token x T + per_token_sq x T^2`` for one row, and two rows at the middle length split
``a`` into what the pass keeps once and what each row adds: a pass of ``rows`` rows padded to
``T`` keeps about ``fixed + rows x (per_row + per_token x T + per_token_sq x T^2)``.

The probe scores the completion with the LM head in chunks (where the model allows it), and the
longest sequence once more with the head whole: a pass whose logits fit in
``run.logits_budget_mb`` keeps them whole, at the difference a token, up to what the budget
allows (:meth:`ActivationCost.pass_bytes`). Not counted: the transient gradients of the
backward pass (and a checkpointed layer's recomputed activations while its backward runs), and
the allocator's fragmentation -- the reason :data:`scalerl.train.memory.ACTIVATION_SHARE` leaves
room.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch.autograd.graph import saved_tensors_hooks

from scalerl.train.precision import Precision

#: Lengths (tokens, prompt included) of the three probe sequences, at most. Past 256: scans that
#: work in chunks of 256 positions (Mamba-2's) keep a chunk's worth whatever the length.
PROBE_LENGTHS = (128, 256, 512)
#: Prompt tokens of each probe sequence, at most (the rest is completion, scored as the update
#: scores it).
PROBE_PROMPT = 16


def probe_lengths(max_length: int | None) -> tuple[tuple[int, int, int], int]:
    """The three probe lengths and the prompt length for a model of ``max_length`` positions
    (None: no bound): :data:`PROBE_LENGTHS`, scaled down to fit."""
    top = PROBE_LENGTHS[-1] if max_length is None else min(PROBE_LENGTHS[-1], max_length)
    if top < 8:
        raise ValueError(f"probe_activations: the model has {max_length} positions; at least 8 are needed")
    return (top // 4, top // 2, top), min(PROBE_PROMPT, top // 8)


@dataclass(frozen=True)
class ActivationCost:
    """Bytes a scoring pass keeps for its backward pass, as measured by :func:`probe_activations`."""

    fixed: float
    """Per pass, whatever its size (autocast's low-precision weight copies, ...)."""
    per_row: float
    """Per row, whatever its length (a state-space scan's chunk padding, ...)."""
    per_token: float
    """Per row and token of padded length, the LM head in chunks."""
    per_token_sq: float
    """Per row and squared padded length (attention kernels that keep the score matrix)."""
    logits_per_token: float = 0.0
    """What a token adds where the logits are kept whole (the head's output and its log-softmax)."""
    logits_cap: float = 0.0
    """The most the whole logits of a pass may add: above ``run.logits_budget_mb`` the head runs in
    chunks (0: always in chunks or never measured)."""

    def pass_bytes(self, rows: int, length: int) -> float:
        """Activations of a pass of ``rows`` rows padded to ``length`` tokens."""
        logits = min(self.logits_cap, rows * length * self.logits_per_token)
        return self.fixed + logits + rows * (self.per_row + self.per_token * length + self.per_token_sq * length ** 2)

    def tokens_that_fit(self, room: float, length: int) -> int:
        """The most padded tokens (rows x ``length``) a pass of sequences up to ``length`` long can
        hold in ``room`` bytes (0: not even the fixed part fits)."""
        spare = room - self.fixed
        per = self.per_token + self.per_token_sq * length + self.per_row / max(length, 1)
        whole = spare / (per + self.logits_per_token) if per + self.logits_per_token > 0 else float("inf")
        if whole * self.logits_per_token > self.logits_cap:  # that many tokens' logits go in chunks
            whole = (spare - self.logits_cap) / per if per > 0 else float("inf")
        return max(0, int(min(whole, 2**62)))


def _storage(t: torch.Tensor) -> torch.UntypedStorage:
    """The storage of ``t`` -- of its local shard where it is a DTensor (a saved tensor is one only
    under tensor parallelism; FSDP's sharded parameters are left out before this is asked)."""
    local = t.to_local() if hasattr(t, "to_local") else t
    return local.untyped_storage()


def saved_bytes(run: Callable[[], object]) -> int:
    """Bytes of the distinct storages autograd saves while ``run()`` runs, parameters (and views of
    them) left out. Parameters are told by their type when saved, not by address: FSDP swaps in
    gathered weights for each unit's forward and frees them after, and the allocator hands the
    same addresses to later activations."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if not isinstance(t, torch.nn.Parameter) and not isinstance(t._base, torch.nn.Parameter):
            storage = _storage(t)
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        out = run()
    del out
    return sum(seen.values())


def fit_cost(lengths: tuple[int, ...], measured: list[int]) -> tuple[float, float, float]:
    """``(intercept, per_token, per_token_sq)``, all >= 0, fitted to the measurements by
    non-negative least squares: with three terms, the best of the least-squares fits on every
    subset of them whose coefficients are all >= 0 (exact, and no scipy where the GPU check runs)."""
    x = np.asarray(lengths, dtype=float)
    y = np.asarray(measured, dtype=float)
    columns = np.stack([np.ones_like(x), x, x * x], axis=1)
    best, best_residual = np.zeros(3), float(y @ y)
    for subset in itertools.product((False, True), repeat=3):
        keep = np.array(subset)
        if not keep.any():
            continue
        coef, *_ = np.linalg.lstsq(columns[:, keep], y, rcond=None)
        if (coef < 0).any():
            continue
        full = np.zeros(3)
        full[keep] = coef
        residual = float(np.sum((columns @ full - y) ** 2))
        if residual < best_residual - 1e-9 * max(best_residual, 1.0):
            best, best_residual = full, residual
    return float(best[0]), float(best[1]), float(best[2])


def probe_activations(model: torch.nn.Module, precision: Precision, *, temperature: float, pad_token_id: int,
                      device: torch.device, logits_budget: int, max_length: int | None = None) -> ActivationCost:
    """Measure the update's scoring pass on ``model`` (see the module docstring), on sequences of
    at most ``max_length`` tokens (its positions); leaves no gradient and no state behind."""
    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import shared_prompt_logprobs

    vocab = model.get_input_embeddings().num_embeddings
    g = torch.Generator().manual_seed(0)  # the probe's made-up tokens
    was_training = model.training
    model.train()
    lengths, prompt = probe_lengths(max_length)

    def measure(length: int, budget: int, rows: int = 1, counted: bool = True) -> int:
        n = length - prompt
        batch = []
        for tokens in torch.randint(1, vocab, (rows, length), generator=g).tolist():
            batch.append(Completion(tokens[:prompt], tokens[prompt:], [0.0] * n, [1] * n, [0] * n, "length"))

        def run() -> torch.Tensor:
            with torch.enable_grad(), precision.autocast():
                return shared_prompt_logprobs(model, batch, temperature, pad_token_id, device, budget)[0]

        if not counted:
            run()
            return 0
        return saved_bytes(run)

    # fork_rng: the random state as it was (dropout draws from it), so that a run's draws do not
    # depend on whether it was probed.
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        try:
            # A budget of one byte: the head in chunks wherever the model allows it. The first call
            # of a model finds out whether it does (a model that cannot is scored again whole, and
            # the failed attempt's saved tensors would be counted): made once, uncounted.
            measure(lengths[0], 1, counted=False)
            chunked = [measure(length, 1) for length in lengths]
            two_rows = measure(lengths[1], 1, rows=2)  # what a row adds, apart from the pass's own
            whole = measure(lengths[-1], 0)  # the longest with the head in one piece
        finally:
            model.train(was_training)
            model.zero_grad(set_to_none=True)
    intercept, per_token, per_token_sq = fit_cost(lengths, chunked)
    row = two_rows - chunked[1]  # per_row + per_token x L + per_token_sq x L^2 at L = lengths[1]
    per_row = min(intercept, max(0.0, row - per_token * lengths[1] - per_token_sq * lengths[1] ** 2))
    logits_per_token = max(0.0, (whole - chunked[-1]) / lengths[-1])
    # The budget bounds the fp32 logits (4 bytes a vocabulary entry); what a kept token costs
    # beyond them (the log-softmax) scales with it.
    cap = logits_budget * logits_per_token / (4 * vocab) if logits_per_token else 0.0
    return ActivationCost(intercept - per_row, per_row, per_token, per_token_sq, logits_per_token, cap)
