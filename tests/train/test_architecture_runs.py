"""``scalerl train`` on the architectures of tests/architectures.py, not only the tiny Qwen2 and the
Llama / Qwen2 / GPT-2 of examples/user_model.py: two steps of the real trainer on each, then what
final/ holds and which layer the FP32 LM head made fp32.

Each model is saved like a hub checkpoint (bf16, the byte-level BPE tokenizer and chat template of
examples/user_model.py) with every dropout field of its config at 0.3, so that an on-policy step-1
importance ratio of 1 also says the training forward ran without dropout. The reward passes a
completion of an even number of characters: a random model's groups vary on it, so every step
updates. Recurrent and hybrid models (whose generator cache differs) run the default PipelineRL-k,
the others ``pipeline=sync``.
"""

import json

import pytest
import torch
import transformers

from scalerl.cli import main
from scalerl.config import apply_overrides
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.logprobs import completion_logprobs, pack_completions
from scalerl.rl.fp32_head import FP32Linear
from scalerl.runlog import read_runlog
from scalerl.tasks.encoding import encode_prompts
from scalerl.train.config import TrainConfig
from scalerl.train.policy import load_policy

from architectures import ARCHITECTURES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: Architectures whose cache rows cannot be selected (the generator prefills per row): PipelineRL-k.
RECURRENT = {"mamba", "lfm2", "qwen3_next", "falcon_h1"}
#: Architectures whose transformers code fails under bf16 autocast (refused: test_dbrx_refuses_bf16).
NO_AUTOCAST = {"dbrx"}
#: Step-1 ratio tolerance where the generator and the trainer compute a layer in two float orders:
#: MiniMax's lightning attention decodes recurrently, a token at a time, and is scored in blocks
#: (ratio_max 1.0000148 in fp32 on the random model of tests/architectures.py).
RATIO_ABS = {"minimax": 1e-4}
DROPOUT = 0.3
#: A Mixtral saved after training with the router's load-balancing loss (output_router_logits: its
#: forwards raised in the first decode step) and with the router's training-mode jitter (step-1
#: ratios up to 1.0072).
VARIANTS = {"mixtral-router-settings": ("mixtral", dict(output_router_logits=True, router_jitter_noise=0.1))}
REWARD = '''def parity(completion):
    return len(completion) % 2 == 0
'''


def _save(arch: str, tokenizer, directory):
    """A random ``arch`` saved in bf16 with ``tokenizer``; every dropout field of its config at DROPOUT."""
    base, settings = VARIANTS.get(arch, (arch, {}))
    config = ARCHITECTURES[base]()
    for k, v in settings.items():
        setattr(config, k, v)
    config.vocab_size, config.pad_token_id, config.eos_token_id = len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id
    config.bos_token_id = None
    dropout = {k: DROPOUT for k, v in config.to_dict().items()
               if ("dropout" in k or "pdrop" in k) and isinstance(v, float) and hasattr(config, k)}
    for k, v in dropout.items():
        setattr(config, k, v)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return dropout


@pytest.fixture(scope="module")
def bpe_tokenizer(user_model):
    """examples/user_model.py's tokenizer (byte-level BPE, chat template), read from its saved model."""
    return transformers.AutoTokenizer.from_pretrained(user_model("llama"))


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES) + sorted(VARIANTS))
def test_two_steps_of_scalerl_train_and_final(arch, bpe_tokenizer, math_jsonl, tmp_path, capsys):
    model_dir, out = tmp_path / "model", tmp_path / "run"
    dropout = _save(arch, bpe_tokenizer, model_dir)
    (tmp_path / "reward.py").write_text(REWARD)
    pipeline = [] if arch in RECURRENT else ["--set", "pipeline=sync"]
    code = main(["train", "--model", str(model_dir), "--task", "math", "--data", str(math_jsonl), "--output", str(out),
                 "--reward", f"{tmp_path / 'reward.py'}:parity", "--steps", "2", "--eval-every", "2", "--no-progress",
                 "--no-report", "--set", "prompts_per_step=2", "--set", "generations_per_prompt=4",
                 "--set", "eval.problems=1", "--set", "eval.samples_per_problem=1", "--set", "length.mode=truncate",
                 "--set", "length.max_new_tokens=12", "--set", "length.overlong_max_len=12",
                 "--set", "length.overlong_cache=2", "--set", "forecast.enabled=false", *pipeline])
    err = capsys.readouterr().err
    assert code == 0, err
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    train = [r for r in rows if r["type"] == "train"]
    # (a step whose every group the zero-variance filter left out trains nothing: the prompts drawn decide it)
    trained = [r for r in train if not r.get("skipped")]
    assert [r["step"] for r in train] == [1, 2] and train[0] in trained, train
    assert all(r["grad_norm"] > 0 for r in trained), train
    # Step 1 is on-policy (fp32 compute on the CPU): the trainer scores what the generator sampled.
    assert train[0]["loss/ratio_max"] == pytest.approx(1.0, abs=RATIO_ABS.get(arch, 1e-5))
    assert train[0]["loss/ratio_mean"] == pytest.approx(1.0, abs=RATIO_ABS.get(arch, 1e-6))

    final = out / "final"
    saved = json.loads((final / "config.json").read_text())
    assert saved["dtype"] == "bfloat16" and {k: saved[k] for k in dropout} == dropout  # the checkpoint's own
    plain = transformers.AutoModelForCausalLM.from_pretrained(final, dtype=torch.float32).eval()
    ids = encode_prompts(bpe_tokenizer, ["Compute 2 + 3.", "Compute 41 * 7. Put it in \\boxed{}."])
    generated = HFGenerator(plain, bpe_tokenizer, seed=0).generate(ids, SamplingParams(max_new_tokens=6, seed=1))
    assert all(len(c.token_ids) > 0 for c in generated)

    # The FP32 head is the model's real output layer: with it the model computes what it computes
    # without (Gemma 2's soft-capping, Falcon-H1's multiplier after it), and under bf16 autocast
    # the logits it returns come from that layer in fp32.
    cfg = apply_overrides(TrainConfig(), [f"model.name_or_path={final}", "precision.compute=fp32"]).validate()
    model = load_policy(cfg, torch.device("cpu")).model.eval()
    head = model.get_output_embeddings()
    assert isinstance(head, FP32Linear)
    batch = pack_completions(generated, bpe_tokenizer.pad_token_id)
    with torch.no_grad():
        torch.testing.assert_close(model(batch["input_ids"]).logits, plain(batch["input_ids"]).logits, rtol=0, atol=1e-5)
        if arch in NO_AUTOCAST:
            return
        outputs = []
        hook = head.register_forward_hook(lambda *args: outputs.append(args[-1]))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(batch["input_ids"]).logits
        hook.remove()
        assert logits.dtype == torch.float32 and outputs[0].dtype == torch.float32
        assert outputs[0].shape == logits.shape
        # The head in chunks (a position at a time) scores as the whole head does, or is refused.
        whole = completion_logprobs(model, batch, 1.0)
        chunked = completion_logprobs(model, batch, 1.0, logits_budget=4 * head.out_features)
        torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-5)


def test_dbrx_refuses_bf16_in_one_line(bpe_tokenizer, tmp_path):
    """transformers' DBRX experts add bf16 outputs into an fp32 buffer under autocast without a cast:
    the first forward of a bf16 run raised ``index_add_(): self (Float) and source (BFloat16) must
    have the same scalar type``. Refused when the policy loads, with what to set instead."""
    from scalerl.errors import ConfigError

    _save("dbrx", bpe_tokenizer, tmp_path / "model")
    cfg = apply_overrides(TrainConfig(), [f"model.name_or_path={tmp_path / 'model'}", "precision.compute=bf16"]).validate()
    with pytest.raises(ConfigError, match="DbrxForCausalLM cannot compute in bf16.*set precision.compute=fp32"):
        load_policy(cfg, torch.device("cpu"))



def test_dbrx_in_bf16_is_not_refused_where_it_is_sharded(bpe_tokenizer, tmp_path):
    """(review q) Sharded over several trainer processes (the policy loaded to the host, or as the meta
    architecture on ranks > 0), FSDP computes in bf16 throughout with autocast off: DBRX's experts see one
    dtype and work, so the refusal above is for one process only (it refused a run that trained before)."""
    _save("dbrx", bpe_tokenizer, tmp_path / "model")
    cfg = apply_overrides(TrainConfig(), [f"model.name_or_path={tmp_path / 'model'}", "precision.compute=bf16"]).validate()
    for placement in ("host", "meta"):
        assert load_policy(cfg, torch.device("cpu"), placement=placement, world=2).model is not None


@pytest.mark.extended  # (12-19 s; bf16 DBRX is let through where it is sharded: the test above, in the default run)
def test_dbrx_trains_in_bf16_over_two_processes(bpe_tokenizer, math_jsonl, tmp_path, capsys):
    from scalerl.runlog import read_runlog

    model_dir, out = tmp_path / "model", tmp_path / "run"
    _save("dbrx", bpe_tokenizer, model_dir)
    (tmp_path / "reward.py").write_text(REWARD)
    code = main(["train", "--model", str(model_dir), "--task", "math", "--data", str(math_jsonl), "--output", str(out),
                 "--reward", f"{tmp_path / 'reward.py'}:parity", "--steps", "2", "--eval-every", "2", "--no-progress",
                 "--no-report", "--nproc", "2", "--set", "precision.compute=bf16", "--set", "pipeline=sync",
                 "--set", "prompts_per_step=2", "--set", "generations_per_prompt=4", "--set", "eval.problems=1",
                 "--set", "eval.samples_per_problem=1", "--set", "length.mode=truncate",
                 "--set", "length.max_new_tokens=12", "--set", "length.overlong_max_len=12",
                 "--set", "length.overlong_cache=2", "--set", "forecast.enabled=false"])
    assert code == 0, capsys.readouterr().err
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    assert [r["step"] for r in rows if r["type"] == "train"] == [1, 2]
