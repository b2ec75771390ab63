"""Dropout off in the policy: generation samples without it, so the update must score without it.

With dropout active in training forwards the trainer's log-probs of a completion differ from the
generator's on unchanged weights, so the importance ratio is noise from the first, on-policy step
(OPT's default 0.1 gave ratios up to 1.27 where they must be 1). TRL's ``disable_dropout_in_model``
zeroes the ``nn.Dropout`` modules; attention implementations also keep the probability as a float
attribute (``self.attention_dropout``) and some layers read the config at every forward (Falcon's
``config.hidden_dropout``), so those go to 0 too. The config's values are returned so that a saved
model gets the checkpoint's own back.

A mixture-of-experts router's training-mode jitter is the same kind of noise: Mixtral, MiniMax and
DBRX multiply the router's input by ``uniform(1 - eps, 1 + eps)`` when ``self.training``, from an
attribute set once from the config (``router_jitter_noise`` 0.1 gave step-1 ratios up to 1.0072).
Those attributes go to 0 as well; their config fields are left as they are (nothing reads them after
the model is built), so ``final/`` keeps them. PhiMoE's ``router_jitter_noise`` is not among them: it is
a routing threshold in eval mode too.
"""

from __future__ import annotations

from typing import Any

from torch import nn

#: Config fields that hold a dropout probability (``attention_dropout``, GPT-2's ``resid_pdrop``, ...).
_CONFIG_MARKERS = ("dropout", "pdrop")
#: Module attributes of a router's training-only input jitter (Mixtral / MiniMax, DBRX, PhiMoE's input).
_JITTER_ATTRS = ("jitter_noise", "moe_jitter_eps", "input_jitter_noise")


def _probability(value: Any) -> bool:
    return isinstance(value, float) and value > 0


def disable_dropout(model: nn.Module) -> dict[str, float]:
    """Set every dropout probability in ``model`` -- modules, float attributes, its config -- and every
    router's training-mode jitter to 0, in place. Returns the config fields that were non-zero with
    their values (what ``final/`` restores)."""
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            module.p = 0.0
        for attr, value in list(vars(module).items()):
            if ("dropout" in attr or attr in _JITTER_ATTRS) and _probability(value):
                setattr(module, attr, 0.0)
    config = getattr(model, "config", None)
    original = {}
    for key, value in (config.to_dict().items() if config is not None else ()):
        if any(m in key for m in _CONFIG_MARKERS) and _probability(value) and hasattr(config, key):
            original[key] = value
            setattr(config, key, 0.0)
    return original
