"""Rollouts: prompts -> groups of scored completions, ready for a policy update.

The layer between the pieces (generators, the recipe's functions, tasks) and the two things that
drive them (the trainer and the pipeline, which both import this and neither of which this
imports):

* :mod:`~scalerl.rollout.groups`  -- ``Group`` (a prompt and its G scored completions) and
  ``RolloutBatch`` (the groups of one optimizer step and what they cost);
* :mod:`~scalerl.rollout.context` -- ``RolloutContext``: everything that turns a batch index into
  a batch (tokenizer, task, sampler, problems, the resolved recipe, seeds), built once per run;
* :mod:`~scalerl.rollout.produce` -- generate and score one round, and a whole batch (with DAPO's
  dynamic-sampling refills).
"""
