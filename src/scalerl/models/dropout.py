"""Dropout off in the policy: generation samples without it, so the update must score without it.

With dropout active in training forwards the trainer's log-probs of a completion differ from the
generator's on unchanged weights, so the importance ratio is noise from the first, on-policy step
(OPT's default 0.1 gave ratios up to 1.27 where they must be 1). TRL's ``disable_dropout_in_model``
zeroes the ``nn.Dropout`` modules; attention implementations also keep the probability as a float
attribute (``self.attention_dropout``, DBRX's ``self.resid_pdrop``) and some layers read the config at every forward (Falcon's
``config.hidden_dropout``), so those go to 0 too. The config's values are returned so that a saved
model gets the checkpoint's own back.

A mixture-of-experts router's training-mode jitter is the same kind of noise: Mixtral, MiniMax and
DBRX multiply the router's input by ``uniform(1 - eps, 1 + eps)`` when ``self.training``, from an
attribute set once from the config (``router_jitter_noise`` 0.1 gave step-1 ratios up to 1.0072).
Those attributes go to 0 as well; their config fields are left as they are (nothing reads them after
the model is built), so ``final/`` keeps them. PhiMoE's ``router_jitter_noise`` is not among them: it is
a routing threshold in eval mode too.

PhiMoE's router goes further: in training mode its SparseMixer *samples* the experts (Gumbel noise)
and scales a gate by 1/3 at random, where eval mode takes the top two -- step-1 ratio_mean 0.999949
on a random model, not 1. No config field turns that off, so the router alone routes as in eval mode
whatever ``model.train()`` says: the generator's routing, and the gradient of the chosen experts'
softmax gates (as Mixtral's top-k router gets) instead of SparseMixer's estimate. What the model
computes in eval mode does not change.
"""

from __future__ import annotations

from typing import Any

from torch import nn

#: Config fields that hold a dropout probability (``attention_dropout``, GPT-2's ``resid_pdrop``, ...).
_CONFIG_MARKERS = ("dropout", "pdrop")
#: Module attributes of a router's training-only input jitter (Mixtral / MiniMax, DBRX, PhiMoE's input).
_JITTER_ATTRS = ("jitter_noise", "moe_jitter_eps", "input_jitter_noise")
#: Router classes whose training mode samples the experts instead of taking the top k (PhiMoE's SparseMixer).
_SAMPLING_ROUTERS = ("PhimoeTopKRouter",)


def _probability(value: Any) -> bool:
    return isinstance(value, float) and value > 0


def disable_dropout(model: nn.Module) -> dict[str, float]:
    """Set every dropout probability in ``model`` -- modules, float attributes, its config -- and every
    router's training-mode jitter to 0, in place. Returns the config fields that were non-zero with
    their values (what ``final/`` restores)."""
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            module.p = 0.0
        if type(module).__name__ in _SAMPLING_ROUTERS:
            _route_as_in_eval(module)
        for attr, value in list(vars(module).items()):
            # "pdrop" too: DBRX's blocks keep ``self.resid_pdrop`` and pass it to F.dropout each forward
            # (left at 0.3, two steps of a random DBRX gave step-1 ratios up to 1.083).
            if (any(m in attr for m in _CONFIG_MARKERS) or attr in _JITTER_ATTRS) and _probability(value):
                setattr(module, attr, 0.0)
    config = getattr(model, "config", None)
    original = {}
    for key, value in (config.to_dict().items() if config is not None else ()):
        if any(m in key for m in _CONFIG_MARKERS) and _probability(value) and hasattr(config, key):
            original[key] = value
            setattr(config, key, 0.0)
    return original


def _eval_mode(module: nn.Module, args: tuple) -> None:
    """A forward pre-hook: the module runs in eval mode whatever ``model.train()`` set."""
    module.training = False


def _route_as_in_eval(router: nn.Module) -> None:
    """Keep ``router`` in eval mode through every later ``model.train()`` (the trainer calls it before
    each update): a forward pre-hook sets it before each forward; its parameters still get gradients.
    (A module-level hook, not a replaced ``train`` method: a bound method on the instance made the model
    unpicklable -- ``torch.save(model)`` -- review q.)"""
    router.register_forward_pre_hook(_eval_mode)
    router.eval()
