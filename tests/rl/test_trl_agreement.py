"""Our losses agree with TRL's ``GRPOTrainer`` where the definitions coincide.

TRL's loss is evaluated by its own code: ``GRPOTrainer._compute_loss`` is called unbound on
a minimal stand-in object that carries just the attributes the method reads (loss type,
clips, no KL, no entropy mask, no vLLM correction, one process, eval mode) and whose
``_get_per_token_logps_and_entropies`` returns our trainer log-probs instead of running a
model. ``old_per_token_logps`` plays the generator's log-probs. If a TRL release renames
those attributes this test fails loudly rather than comparing against a re-typed formula.

Correspondence (TRL loss_type -> ours):

* ``grpo``  (eps 0.2/0.2)          = ``ppo``   + ``sample`` aggregation
* ``dapo``  (eps 0.2/0.28)         = ``dapo``  + ``token`` aggregation (TRL: sum / num_items_in_batch)
* ``bnpo``  (eps 0.2/0.28)         = ``dapo``  + ``token`` aggregation (per micro-batch)
* ``cispo`` (epsilon_high = 5)     = ``cispo`` + ``token`` aggregation
* ``grpo`` with importance_sampling_level="sequence" (eps 3e-3/4e-3) = ``gspo`` + ``sample``

Deliberate differences:

* CISPO's cap: TRL clamps the ratio at ``epsilon_high`` itself (an absolute cap, which TRL
  documents as ScaleRL's eps_max), ours at ``loss.cispo.eps_max`` -- the same number, so the
  losses agree when TRL's epsilon_high is set to our eps_max (5). With TRL's *default*
  epsilon_high (= epsilon = 0.2, meant for PPO-style clips) TRL would cap every ratio at 0.2;
  the test shows that this differs.
* CISPO's clip metric: TRL counts capped tokens only where A > 0; our ``truncated_frac``
  counts every token whose weight was capped (the cap changes the weight whatever the sign).
* Sample-level aggregation: TRL averages over all rows; ours skips rows with no unmasked
  token (so a filtered group does not dilute the mean). With no empty row they agree.
* Prompt-level aggregation has no TRL counterpart.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("trl")
GRPOTrainer = pytest.importorskip("trl.trainer.grpo_trainer").GRPOTrainer

from scalerl.rl.aggregate import aggregate_loss  # noqa: E402
from scalerl.rl.losses import LossInputs, compute_policy_loss  # noqa: E402
from scalerl.rl.recipe import LossConfig  # noqa: E402


def trl_loss(loss_type, logp, gen_logp, adv, mask, eps_low, eps_high, level="token"):
    """TRL's loss, its gradient w.r.t. the trainer log-probs, and its metrics."""
    logp = logp.detach().clone().requires_grad_(True)
    stub = SimpleNamespace(
        loss_type=loss_type,
        importance_sampling_level=level,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        beta=0.0,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        aux_loss_enabled=False,
        _entropy_bonus_enabled=False,
        model=SimpleNamespace(training=False),
        current_gradient_accumulation_steps=1,
        max_completion_length=logp.shape[1],
        args=SimpleNamespace(delta=None, steps_per_generation=1),
        accelerator=SimpleNamespace(num_processes=1, reduce=lambda t, reduction: t, gather=lambda t: t),
        _metrics=defaultdict(lambda: defaultdict(list)),
        _get_per_token_logps_and_entropies=lambda *args, **kwargs: (logp, torch.zeros_like(logp), None),
    )
    b, t = logp.shape
    inputs = {
        "prompt_ids": torch.zeros(b, 1, dtype=torch.long),
        "prompt_mask": torch.ones(b, 1, dtype=torch.long),
        "completion_ids": torch.zeros(b, t, dtype=torch.long),
        "completion_mask": mask.long(),
        "advantages": adv,
        "old_per_token_logps": gen_logp,
        "num_items_in_batch": mask.sum(),
    }
    loss = GRPOTrainer._compute_loss(stub, None, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, dict(stub._metrics["eval"])


def ours(name, aggregation, logp, gen_logp, adv, mask, cfg=None):
    logp = logp.detach().clone().requires_grad_(True)
    group = torch.arange(logp.shape[0]) // 2
    out = compute_policy_loss(LossInputs(logp, gen_logp, adv, mask, group), cfg or LossConfig(name=name))
    loss = aggregate_loss(out.per_token, mask, group, aggregation)
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, out.metrics


def batch(seed, spread=0.3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    b, t = 6, 7
    logp = -torch.rand(b, t, generator=g, dtype=dtype) * 3
    gen_logp = logp + spread * torch.randn(b, t, generator=g, dtype=dtype)
    adv = torch.randn(b, generator=g, dtype=dtype)
    lengths = torch.randint(2, t + 1, (b,), generator=g)
    mask = (torch.arange(t)[None, :] < lengths[:, None]).to(dtype)
    return logp, gen_logp, adv, mask


CASES = [
    # (TRL loss_type, TRL level, eps_low, eps_high, our loss, our aggregation)
    ("grpo", "token", 0.2, 0.2, "ppo", "sample"),
    ("dapo", "token", 0.2, 0.28, "dapo", "token"),
    ("bnpo", "token", 0.2, 0.28, "dapo", "token"),
    ("cispo", "token", 0.2, 5.0, "cispo", "token"),
    ("grpo", "sequence", 3e-3, 4e-3, "gspo", "sample"),
]


@pytest.mark.parametrize("trl_type, level, eps_low, eps_high, name, aggregation", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_and_gradient_agree_with_trl(trl_type, level, eps_low, eps_high, name, aggregation, seed):
    # GSPO's clips are tiny: use a small spread so that some sequences fall inside them.
    logp, gen_logp, adv, mask = batch(seed, spread=0.004 if name == "gspo" else 0.3)
    t_loss, t_grad, _ = trl_loss(trl_type, logp, gen_logp, adv, mask, eps_low, eps_high, level)
    o_loss, o_grad, _ = ours(name, aggregation, logp, gen_logp, adv, mask)
    torch.testing.assert_close(o_loss, t_loss)
    torch.testing.assert_close(o_grad, t_grad)
    assert o_grad.abs().sum() > 0  # a meaningful comparison, not 0 == 0


@pytest.mark.parametrize("trl_type, name", [("grpo", "ppo"), ("dapo", "dapo")])
def test_clip_fraction_agrees_with_trls_region_clip_ratio(trl_type, name):
    logp, gen_logp, adv, mask = batch(3, spread=0.4)
    eps_high = 0.2 if name == "ppo" else 0.28
    _, _, t_metrics = trl_loss(trl_type, logp, gen_logp, adv, mask, 0.2, eps_high)
    _, _, o_metrics = ours(name, "token", logp, gen_logp, adv, mask)
    assert 0 < o_metrics["clip_frac"] < 1
    assert o_metrics["clip_frac"].item() == pytest.approx(t_metrics["clip_ratio/region_mean"][0])


def test_cispo_cap_differs_from_trls_default_epsilon_high():
    # TRL caps CISPO's ratio at epsilon_high; left at its PPO-style default (0.2) that caps every
    # ratio near 1 down to 0.2, which is not ScaleRL's eps_max. Ours agrees only with eps_high=5.
    logp, gen_logp, adv, mask = batch(4)
    t_loss_default, _, _ = trl_loss("cispo", logp, gen_logp, adv, mask, 0.2, 0.2)
    t_loss_5, _, t_metrics = trl_loss("cispo", logp, gen_logp, adv, mask, 0.2, 5.0)
    o_loss, _, o_metrics = ours("cispo", "token", logp, gen_logp, adv, mask)
    torch.testing.assert_close(o_loss, t_loss_5)
    assert not torch.isclose(o_loss, t_loss_default)
    # Where nothing exceeds the cap both clip metrics are 0; a cap of 1.1 shows the difference:
    # TRL counts capped tokens with A > 0 only, ours counts all capped tokens.
    cfg = LossConfig(name="cispo")
    cfg.cispo.eps_max = 1.1
    _, _, o_metrics = ours("cispo", "token", logp, gen_logp, adv, mask, cfg)
    _, _, t_metrics = trl_loss("cispo", logp, gen_logp, adv, mask, 0.2, 1.1)
    ratio = torch.exp(logp - gen_logp)
    capped = (ratio > 1.1) & mask.bool()
    positive = capped & (adv[:, None] > 0)
    n = mask.sum()
    assert o_metrics["truncated_frac"].item() == pytest.approx((capped.sum() / n).item())
    assert t_metrics["cispo_clip_ratio"][0] == pytest.approx((positive.sum() / n).item())
    assert capped.sum() > positive.sum()


def test_sample_aggregation_differs_from_trl_only_on_empty_rows():
    logp, gen_logp, adv, mask = batch(5)
    mask[0] = 0  # a filtered sequence: TRL still counts it in the mean over rows, we do not
    t_loss, _, _ = trl_loss("grpo", logp, gen_logp, adv, mask, 0.2, 0.2)
    o_loss, _, _ = ours("ppo", "sample", logp, gen_logp, adv, mask)
    b = mask.shape[0]
    torch.testing.assert_close(o_loss * (b - 1) / b, t_loss)
