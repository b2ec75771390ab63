"""Next-token sampling and the log-prob convention shared by the generator and the trainer.

**Convention.** The log-prob recorded for a token is ``log_softmax(logits.float() / T)[token]``:
computed in fp32, *after* temperature ``T``, over the full vocabulary -- top-p truncation is
*not* folded in. The trainer must compute ``pi_train`` the same way (:func:`token_logprobs`)
so that the importance ratio ``pi_train / pi_gen`` is exactly 1 on-policy. With ``top_p = 1``
(the RL default) this is exactly the distribution sampled from; with ``top_p < 1`` the sampled
token was drawn from the renormalised nucleus, and a ratio against the untruncated
distribution stays defined for every token (a truncated ``pi_train`` would be 0 or undefined
outside the nucleus, and would not be differentiable). Greedy decoding (``T = 0``) records
``log_softmax(logits)`` (temperature 1).
"""

from __future__ import annotations

import torch

from scalerl.errors import NonFiniteError


def effective_temperature(temperature: float) -> float:
    """The temperature log-probs are computed at: ``T`` when sampling, 1 for greedy (``T <= 0``)."""
    return temperature if temperature > 0 else 1.0


def scaled_logprobs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``log_softmax(logits / T)`` in fp32 over the last dimension (see the module's convention)."""
    return torch.log_softmax(logits.float() / effective_temperature(temperature), dim=-1)


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """Log-prob of ``tokens`` under ``logits`` (``[..., V]`` and ``[...]``), in the shared convention."""
    return scaled_logprobs(logits, temperature).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def nucleus_filter(logprobs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Probabilities restricted to the smallest top set whose mass reaches ``top_p`` (unnormalised)."""
    probs = logprobs.exp()
    if top_p >= 1.0:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)  # the top token always stays
    return torch.zeros_like(probs).scatter(-1, order, sorted_probs)


def sample_categorical(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One index per row of ``probs [B, V]`` (non-negative, unnormalised), drawn with probability
    proportional to its entry: inverse-CDF sampling, one uniform per row.

    Why not ``torch.multinomial(probs, 1)``: on the CPU it draws an exponential variate for every
    entry (B x V of them); at the tiny model's decode shape (128 x 103) it took 421 us a step
    against 47 us here (``benchmarks/cpu_decode.py``), ~4% of the generator's time. The
    distribution is the same; the draws for a given seed are not. The CDF is accumulated in
    float64 so that a zero-probability entry (outside the top-p nucleus) is never chosen: it does
    not raise the running sum, and the first entry whose sum exceeds the draw is returned.
    """
    cdf = probs.double().cumsum(dim=-1)
    total = cdf[:, -1:]
    if not bool(torch.isfinite(total).all()):  # as torch.multinomial does: never a silent wrong token
        raise ValueError("sample_categorical: the probabilities contain inf or nan")
    draw = torch.rand(total.shape, generator=generator, dtype=torch.float64, device=probs.device) * total
    draw = torch.minimum(draw, torch.nextafter(total, torch.zeros_like(total)))  # rounding never reaches the end
    return torch.searchsorted(cdf, draw, right=True).squeeze(-1)


def sample_next(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row of ``logits [B, V]``; returns ``(tokens [B], logprobs [B] fp32)``."""
    logprobs = scaled_logprobs(logits, temperature)
    if temperature <= 0:
        tokens = logprobs.argmax(dim=-1)
    else:
        probs = nucleus_filter(logprobs, top_p)
        # Diverged weights give NaN logits: stop with a clear error (sample_categorical checks the
        # row sums, one reduction per decode step) rather than draw from NaN probabilities.
        if bool(torch.isnan(probs).any()):
            raise NonFiniteError("the model's next-token logits are NaN (its weights have diverged)")
        tokens = sample_categorical(probs, generator)
    return tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
