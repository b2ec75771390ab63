"""Generation on the FSDP shards (``run.generate_on_shards``): two gloo ranks sample their shares of
the prompts in lockstep and rank 0 gets what one process with the whole model would sample."""

import pytest
import torch

from scalerl.cli import main
from scalerl.runlog import read_runlog
from scalerl.train.shard_generation import RANK_SEED_STRIDE, rank_params, share_rows

from .conftest import small_args
from .test_distributed_update import _setup, run_ranks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

PROMPTS = ["12+34=", "5+6=", "7+1=", "99+1=", "3+3="]


def _rank(rank, world, max_rows, box):
    import copy
    from functools import partial

    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.presets import get_recipe
    from scalerl.train.distributed import Rank, TrainerGroup, follow, shard
    from scalerl.train.precision import FULL
    from scalerl.train.shard_generation import ShardedGenerator, any_rank
    from scalerl.train.update import build_optimizer

    cpu = torch.device("cpu")
    tok = build_char_tokenizer()
    model, groups = _setup()
    plain = copy.deepcopy(model)
    shard(model, FULL, fp32_root=True, world=world, device=cpu)
    recipe = get_recipe("scalerl")
    opt, sched = build_optimizer(model, recipe)
    gen = HFGenerator(model, tok, seed=rank, lockstep=partial(any_rank, device=cpu), max_rows=max_rows)
    args = dict(temperature=1.0, pad_token_id=0, micro_batch_size=4, device=cpu, share_prompt=True)
    group = TrainerGroup(model, opt, sched, resolve_recipe(recipe), FULL, Rank(rank, world, cpu), args, gen, None)
    if rank != 0:
        follow(group)
        return
    sharded = ShardedGenerator(group)
    sharded.update_weights({}, 3)
    prompts = [tok(p).input_ids for p in PROMPTS]
    greedy = SamplingParams(max_new_tokens=10, temperature=0.0, seed=1)
    sampled = SamplingParams(max_new_tokens=10, temperature=1.0, seed=5)
    got = {"greedy": sharded.generate(prompts, greedy), "sampled": sharded.generate(prompts, sampled),
           "one": sharded.generate(prompts[:1], sampled)}  # fewer prompts than ranks
    result = group.update(groups, 3)  # the training passes still run after no-grad forwards
    group.stop()
    one = HFGenerator(plain, tok, seed=0, max_rows=max_rows)
    want = {"greedy": one.generate(prompts, greedy), "one": one.generate(prompts[:1], sampled),
            # each rank samples its share with its own seed
            "sampled": [one.generate([prompts[i] for i in share_rows(5, r, world)], rank_params(sampled, r))
                        for r in range(world)]}
    box.put((got, want, result.skipped))


@pytest.mark.parametrize("max_rows", [None, pytest.param(2, marks=pytest.mark.extended)],
                         ids=["all-rows", "two-rows-at-a-time"])
def test_two_ranks_sample_on_their_shards_what_one_process_samples(max_rows):
    """Also a few rows at a time (run.decode_rows): rank 0's share of 3 rows is two pieces, rank
    1's of 2 one, and rank 1 runs rank 0's second piece's forwards on a stand-in."""
    got, want, skipped = run_ranks(_rank, max_rows)
    assert not skipped

    def same(a, b):
        assert [c.token_ids for c in a] == [c.token_ids for c in b]
        assert [c.finish_reason for c in a] == [c.finish_reason for c in b]
        for x, y in zip(a, b):
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-5)

    same(got["greedy"], want["greedy"])  # greedy: the one-process tokens, in prompt order
    same(got["one"], want["one"])
    in_order = [None] * len(PROMPTS)
    for r, share in enumerate(want["sampled"]):
        for i, c in zip(share_rows(len(PROMPTS), r, 2), share):
            in_order[i] = c
    same(got["sampled"], in_order)
    assert all(c.versions == [3] * len(c.token_ids) for c in got["sampled"])


def test_the_ranks_seeds_and_shares():
    from scalerl.generate.base import SamplingParams

    assert share_rows(5, 0, 2) == [0, 2, 4] and share_rows(5, 1, 2) == [1, 3] and share_rows(1, 1, 2) == []
    p = SamplingParams(max_new_tokens=4, seed=7)
    assert rank_params(p, 0) is p and rank_params(p, 2).seed == 7 + 2 * RANK_SEED_STRIDE
    assert rank_params(SamplingParams(max_new_tokens=4), 1).seed is None


SYNC = ["--set", "pipeline=sync", "--set", "k=1", "--set", "run.micro_batch_size=4", "--set", "forecast.enabled=false"]


def test_a_run_generates_on_its_shards_and_refuses_a_pipeline_beside_the_trainer(tmp_path, capsys):
    out = tmp_path / "shards"
    assert main(small_args(out, *SYNC, "--nproc", "2", "--set", "run.generate_on_shards=true", "--no-report")) == 0
    _, rows, notes = read_runlog(out / "runlog.jsonl")
    assert not notes
    assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 2, 4]
    assert all(0 <= r["val/pass_rate"] <= 1 for r in rows if r["type"] == "eval")
    # final/ is written through the sharded model (no plain copy exists) and loads as usual.
    from transformers import AutoModelForCausalLM

    final = AutoModelForCausalLM.from_pretrained(out / "final")
    assert sum(p.numel() for p in final.parameters()) > 0 and not any(p.is_meta for p in final.parameters())
    capsys.readouterr()
    assert main(small_args(tmp_path / "x", "--nproc", "2", "--set", "run.generate_on_shards=true")) == 2
    err = capsys.readouterr().err
    assert "run.generate_on_shards" in err and "pipeline=sync" in err and "Traceback" not in err


# `extended` (make test-all, ~40 s): resume under run.generate_on_shards -- the restore path skips
# the generator copy's refresh; the shards themselves are what test_nproc.py's resume checks.
@pytest.mark.extended
def test_a_run_on_its_shards_extended_by_resume_repeats_the_uninterrupted_run(tmp_path):
    on = [*SYNC, "--nproc", "2", "--set", "run.generate_on_shards=true", "--no-report"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert main(small_args(whole, *on)) == 0
    two = small_args(parts, *on)
    two[two.index("--steps") + 1] = "2"
    assert main(two) == 0
    assert main(["train", "--output", str(parts), "--resume", "--steps", "4", "--no-progress", "--no-report"]) == 0

    def rows(out):
        _, got, _ = read_runlog(out / "runlog.jsonl")
        return [{k: v for k, v in r.items() if k != "gpu_hours" and not k.startswith(("pipeline/", "memory/"))}
                for r in got if r["type"] != "resume"]  # (the row that says the run was resumed)

    assert rows(parts) == rows(whole)
