"""The update's activations, measured on the model: the probe's fit predicts larger passes, and a
run on a (pretended) small GPU cuts its passes to what fits."""

import pytest
import torch
import transformers

from scalerl.cli import main
from scalerl.generate.base import Completion
from scalerl.generate.logprobs import shared_prompt_logprobs
from scalerl.rl.fp32_head import enable_fp32_lm_head
from scalerl.train import memory
from scalerl.train.activation_probe import ActivationCost, fit_cost, probe_activations, probe_lengths, saved_bytes
from scalerl.train.precision import Precision

from .conftest import small_args

CPU = torch.device("cpu")
SMALL = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=500)
MODELS = {
    "llama": lambda: transformers.LlamaConfig(**SMALL, intermediate_size=344, num_key_value_heads=2),
    "gpt2": lambda: transformers.GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=500),
}


def _pass_bytes(model, precision, rows, length, budget=1):
    g = torch.Generator().manual_seed(1)
    comps = []
    for _ in range(rows):
        tokens = torch.randint(1, 500, (length,), generator=g).tolist()
        n = length - 16
        comps.append(Completion(tokens[:16], tokens[16:], [0.0] * n, [1] * n, [0] * n, "length"))

    def run():
        with torch.enable_grad(), precision.autocast():
            return shared_prompt_logprobs(model, comps, 1.0, 0, CPU, budget)[0]

    return saved_bytes(run)


@pytest.mark.parametrize("compute", ["fp32", "bf16"])
@pytest.mark.parametrize("arch", sorted(MODELS))
def test_the_probe_predicts_a_larger_pass(arch, compute):
    torch.manual_seed(0)
    model = enable_fp32_lm_head(transformers.AutoModelForCausalLM.from_config(MODELS[arch]()))
    precision = Precision.create(compute, CPU)
    model.eval()
    budget = 2**20  # 1 MiB of fp32 logits: 524 positions of this 500-token vocabulary
    cost = probe_activations(model, precision, temperature=1.0, pad_token_id=0, device=CPU, logits_budget=budget)
    assert not model.training and all(p.grad is None for p in model.parameters())  # left as it was
    if arch == "gpt2":  # eager attention keeps the [heads, T, T] scores (and, training, their dropout)
        assert cost.per_token_sq * 700 > 0.5 * cost.per_token
    assert cost.logits_per_token >= 3 * 500  # about one fp32 row of logits a token, kept whole
    model.train()  # as the update runs it (dropout keeps its masks)
    # 6 rows of 700 tokens (the probe saw one or two rows, at most 512 tokens), the head in chunks;
    # 250 tokens, the head whole.
    assert cost.pass_bytes(6, 700) == pytest.approx(_pass_bytes(model, precision, 6, 700), rel=0.05)
    assert cost.pass_bytes(1, 250) == pytest.approx(_pass_bytes(model, precision, 1, 250, budget), rel=0.05)


def test_gradient_checkpointing_is_measured_too():
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(MODELS["llama"]())
    precision = Precision.create("fp32", CPU)
    plain = probe_activations(model, precision, temperature=1.0, pad_token_id=0, device=CPU, logits_budget=0)
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    kept = probe_activations(model, precision, temperature=1.0, pad_token_id=0, device=CPU, logits_budget=0)
    assert kept.per_token < plain.per_token / 4


def test_the_fit_and_what_fits():
    fixed, per, sq = fit_cost((64, 128, 256), [1000 + 10 * n + 0.5 * n * n for n in (64, 128, 256)])
    assert (fixed, per, sq) == pytest.approx((1000, 10, 0.5))
    assert min(fit_cost((64, 128, 256), [900, 1000, 2500])) >= 0  # never a negative term
    cost = ActivationCost(fixed=1000, per_row=100, per_token=10, per_token_sq=0.5, logits_per_token=4, logits_cap=400)
    assert cost.pass_bytes(2, 100) == 1000 + 400 + 2 * (100 + 1000 + 5000)  # 800 bytes of logits capped at 400
    assert cost.pass_bytes(1, 20) == 1000 + 80 + 100 + 20 * 20
    assert cost.tokens_that_fit(1000 + 65 * 50, 100) == 50  # whole logits: 1 + 60 + 4 bytes a token
    assert cost.tokens_that_fit(1000 + 400 + 61 * 200, 100) == 200  # beyond the cap: in chunks
    assert cost.tokens_that_fit(500, 100) == 0
    assert probe_lengths(None) == ((128, 256, 512), 16) and probe_lengths(64) == ((16, 32, 64), 8)
    with pytest.raises(ValueError, match="8 are needed"):
        probe_lengths(4)


def test_a_run_on_a_small_gpu_cuts_its_passes_to_what_fits(monkeypatch, tmp_path, capsys):
    from scalerl.train import update

    capacity = 40 * 2**20  # the tiny model's state (16.4 MiB) and ~12 MiB for activations
    monkeypatch.setattr(memory, "device_capacity", lambda device: capacity)
    passes = []  # padded tokens of every pass the update ran
    real = update.micro_batches

    def recorded(order, lengths, max_rows, max_tokens=0):
        out = real(order, lengths, max_rows, max_tokens)
        passes.extend(len(m) * max(sum(lengths[i]) for i in m) for m in out)
        passes.append(("budget", max_tokens))
        return out

    monkeypatch.setattr(update, "micro_batches", recorded)
    assert main(small_args(tmp_path / "run", "--steps", "2", "--set", "pipeline=sync", "--set", "k=1",
                           "--no-report")) == 0
    err = capsys.readouterr().err
    note = next(line for line in err.splitlines() if "the update's activations" in line)
    assert "measured on the model" in note and "(run.micro_batch_tokens: 16,384)" in note
    budget = int(note.split("passes of at most ")[1].split(" padded")[0].replace(",", ""))
    assert 56 <= budget < 16_384
    assert {b for kind, b in (p for p in passes if isinstance(p, tuple))} == {budget}
    sizes = [p for p in passes if not isinstance(p, tuple)]
    assert len(sizes) > 2 and max(sizes) <= budget  # 16 rows of ~50 tokens: cut into several passes
