"""The ScaleRL recipe as small, pure, tested pieces; the trainer composes them.

* ``recipe``     -- ``RecipeConfig``: every component as a switch (torch-free)
* ``presets``    -- scalerl, deepseek-grpo, qwen-dapo, magistral, minimax-m1, leave-one-out variants
* ``losses``     -- policy losses by name: cispo, ppo, dapo, gspo (``register_policy_loss``)
* ``aggregate``  -- per-token loss weights: token, sample, prompt
* ``advantages`` -- group-centred advantages; batch / prompt / none normalisation
* ``filters``    -- zero-variance mask, DAPO dynamic-sampling buffer
* ``sampler``    -- epochs with no-positive-resampling, checkpointable
* ``length``     -- forced interruptions, truncation, overlong penalty (torch-free)
* ``fp32_head``  -- fp32 logits on a bf16 Hugging Face model
* ``components`` -- the recipe's names resolved into functions, once per run (and validated)

One training step, in order::

    parts = resolve_recipe(cfg)                       # once per run: names -> functions
    keep = zero_variance_mask(basis_rewards, group) if cfg.filtering.zero_variance else all-true
    adv  = compute_advantages(rewards, group, parts.normalization, keep=keep)
    mask = completion_mask * keep[:, None]            # (* keep_in_loss for mask_truncated)
    w    = aggregation_weights(parts.aggregation, mask, group)   # once, on the whole step
    for each micro-batch mb:
        out = parts.loss(LossInputs(logp[mb], gen_logp[mb], adv[mb], mask[mb], group[mb]))
        (w[mb] * out.per_token).sum().backward()

Nothing is imported here, so ``import scalerl.rl.recipe`` stays free of torch.
"""
