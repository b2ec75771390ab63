"""The generators' weights streamed off the FSDP shards (``run.generate_on_shards`` with generators
beside the trainer): every tensor the generator copy would have held, gathered one at a time."""

import pytest
import torch

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args
from .test_distributed_update import _setup, run_ranks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


def _rank(rank, world, box):
    import copy

    from scalerl.models.lora import generator_copy
    from scalerl.pipeline.weights import ModelWeights
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.presets import get_recipe
    from scalerl.train.distributed import Rank, TrainerGroup, follow, shard
    from scalerl.train.precision import FULL
    from scalerl.train.shard_weights import ShardWeights
    from scalerl.train.update import build_optimizer

    cpu = torch.device("cpu")
    model, groups = _setup()
    plain = copy.deepcopy(model)
    shard(model, FULL, fp32_root=True, world=world, device=cpu)
    recipe = get_recipe("scalerl")
    opt, sched = build_optimizer(model, recipe)
    args = dict(temperature=1.0, pad_token_id=0, micro_batch_size=4, device=cpu, share_prompt=True)
    group = TrainerGroup(model, opt, sched, resolve_recipe(recipe), FULL, Rank(rank, world, cpu), args)
    if rank != 0:
        follow(group)
        return
    stream = ShardWeights(group, torch.bfloat16)
    got = [(name, t.clone()) for name, t in stream.tensors()]
    meta = stream.meta()
    result = group.update(groups, 0)  # the ranks' orders still line up after a stream
    after = dict(stream.tensors())
    final = group.full_weights(torch.float32)
    group.stop()
    want = ModelWeights(generator_copy(plain, torch.bfloat16))
    # Compared here: tensors through a queue outlive their sender only as long as it lives.
    box.put({
        "names": ([n for n, _ in got], [n for n, _ in want.tensors()]),
        "meta": (meta, want.meta()),
        "unequal": [n for (n, a), (_, b) in zip(got, want.tensors()) if a.dtype != b.dtype or not torch.equal(a, b)],
        "dtypes": {a.dtype for _, a in got},
        "skipped": result.skipped,
        "moved": sum(not torch.equal(after[n], a) for n, a in got),
        "unlike_final": [n for n, t in after.items() if not torch.equal(t, final[n].to(torch.bfloat16))],
    })


def test_the_stream_off_the_shards_is_the_generator_copy_one_tensor_at_a_time():
    out = run_ranks(_rank)
    got, want = out["names"]
    assert got == want and len(got) > 10
    assert out["meta"][0] == out["meta"][1]
    assert out["dtypes"] == {torch.bfloat16} and out["unequal"] == []
    # After an update the stream carries the new weights: those final/ gathers, in the generators' dtype.
    assert not out["skipped"] and out["moved"] > 0 and out["unlike_final"] == []


RAY_SYNC = ["--nproc", "2", "--backend", "ray", "--set", "pipeline=sync", "--set", "k=1", "--steps", "3",
            "--set", "run.micro_batch_size=4", "--set", "forecast.enabled=false", "--no-report"]


# `extended` (make test-all, ~50 s of two ranks and a Ray cluster): the default run keeps the unit
# test of the stream above and test_shard_generation.py's run on the shards.
@pytest.mark.extended
@pytest.mark.ray_cluster
def test_ray_actors_generate_on_weights_streamed_off_the_shards(tmp_path):
    out = tmp_path / "stream"
    assert main(small_args(out, *RAY_SYNC, "--set", "run.generate_on_shards=true")) == 0
    _, rows, notes = read_runlog(out / "runlog.jsonl")
    assert not notes
    train = [r for r in rows if r["type"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3] and all(r["mean_len"] > 0 for r in train)
    # Synchronous: the actors sampled with the weights the trainer scores with, so the importance
    # ratio is 1 (fp32) at every step -- the streamed weights are the updated ones.
    assert all(r["loss/ratio_max"] == pytest.approx(1.0, abs=1e-3) for r in train)
    assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 2, 3]  # evaluated on the shards


# `extended`: the same run with rank 0's generator copy trains on the very same batches -- the
# actors got the same weights after every update (the evaluations differ: on the shards each rank
# samples its share with its own seed).
@pytest.mark.extended
@pytest.mark.ray_cluster
def test_weights_streamed_off_the_shards_train_as_the_generator_copy_does(tmp_path):
    rows = {}
    for name, extra in (("stream", ["--set", "run.generate_on_shards=true"]), ("copy", [])):
        assert main(small_args(tmp_path / name, *RAY_SYNC, *extra)) == 0
        rows[name] = [r for r in read_runlog(tmp_path / name / "runlog.jsonl")[1] if r["type"] == "train"]
    keys = ("grad_norm", "reward_mean", "mean_len", "loss")
    assert [[r.get(k) for k in keys] for r in rows["stream"]] == [[r.get(k) for k in keys] for r in rows["copy"]]
