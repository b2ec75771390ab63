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


def sample_next(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row of ``logits [B, V]``; returns ``(tokens [B], logprobs [B] fp32)``."""
    logprobs = scaled_logprobs(logits, temperature)
    if temperature <= 0:
        tokens = logprobs.argmax(dim=-1)
    else:
        probs = nucleus_filter(logprobs, top_p)
        # Diverged weights give NaN logits; torch.multinomial would fail with an opaque message
        # (a device-side assert on a GPU). One reduction per decode step, small next to the forward.
        if bool(torch.isnan(probs).any()):
            raise NonFiniteError("the model's next-token logits are NaN (its weights have diverged)")
        tokens = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
