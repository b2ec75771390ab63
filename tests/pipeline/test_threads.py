"""Generator threads (the local backend's default workers): close() stops a generation in progress
at its next decode step instead of waiting for the batch to end."""

from __future__ import annotations

import time

import pytest
import torch

from scalerl.generate.base import GenerationCancelled, SamplingParams
from scalerl.pipeline.threads import ThreadPool
from scalerl.pipeline.work import RoundRequest, WorkerSpec, build_worker
from scalerl.rl.recipe import RecipeConfig
from scalerl.tasks.arithmetic import ArithmeticTask

pytestmark = pytest.mark.slow

STEP_S = 0.02  # each forward pass sleeps this long: a model big enough for a batch to take a while
TOKENS = 400  # so a whole batch takes >= 8 s


@pytest.fixture()
def slow_worker(char_tokenizer):
    """A thread worker whose generator decodes TOKENS tokens a row (EOS made unlikely, the length
    controller cuts at TOKENS) at STEP_S a decode step; ``calls`` counts the forward passes."""
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model

    arch = TinyArchitecture(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                            num_key_value_heads=2)
    model = build_tiny_model(char_tokenizer, arch, seed=0)
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)  # peaked: a few tokens take almost all the mass ...
        model.lm_head.weight[char_tokenizer.eos_token_id].zero_()  # ... and EOS none of it
    recipe = RecipeConfig()
    recipe.length.mode = "truncate"
    recipe.length.max_new_tokens = TOKENS
    spec = WorkerSpec(model_config=model.config, tokenizer=char_tokenizer, dtype="float32", fp32_lm_head=False,
                      recipe=recipe, task_name="arithmetic", task_settings={}, task_reward=None, task_reward_timeout=5,
                      seed=0)
    worker = build_worker(spec, model.state_dict(), 0, 0)
    calls = []

    def slow(module, args, output):
        calls.append(1)
        time.sleep(STEP_S)

    worker.generator.model.register_forward_hook(slow)
    return worker, calls


def test_close_stops_a_generation_in_progress_at_its_next_decode_step(slow_worker):
    """On the old code close() joined the thread until its batch ended (here >= 8 s; with a real model
    and long completions, minutes -- 60 s per thread, one thread after the other)."""
    worker, calls = slow_worker
    pool = ThreadPool([worker])
    delivered, failed = [], []
    pool.start(delivered.append, failed.append)
    request = RoundRequest(0, 0, ArithmeticTask().train_problems()[:2],
                           SamplingParams(max_new_tokens=TOKENS, temperature=1.0, seed=1), 0)
    pool.submit(request)
    deadline = time.monotonic() + 60
    while len(calls) < 10 and time.monotonic() < deadline:  # well into the decode loop
        time.sleep(0.01)
    assert len(calls) >= 10, "the generator never started decoding"
    t = time.perf_counter()
    pool.close()
    seconds = time.perf_counter() - t
    assert seconds < 2.0, f"close() took {seconds:.1f} s: it waited for the batch to end"
    assert not any(th.is_alive() for th in pool._threads)
    assert len(calls) < TOKENS  # stopped part-way, not run to the end
    # A closing pool is not a failing one, and a cut batch is not delivered.
    assert delivered == [] and failed == []
    with pytest.raises(GenerationCancelled):  # a cancelled generator stays closed
        worker.generator.generate([[1, 2, 3]], SamplingParams(max_new_tokens=2))
