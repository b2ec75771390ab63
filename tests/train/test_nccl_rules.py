"""What a trainer group does under NCCL that gloo lets pass: checked on CPU ranks.

Every two-rank test (``run_ranks``) runs under :class:`~tests.train.collective_rules.CollectiveRules`;
the test here drives one trainer group through every order that crosses ranks and checks the rules
saw each kind of collective (they are not vacuous), and the process-group set-up a GPU rank gets.
"""

import pytest
import torch

from .collective_rules import CollectiveRules
from .test_distributed_update import _setup, run_ranks

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]


def _orders_rank(rank, world, path, box):
    """Rank 0 drives a sharded group (generation on the shards) through an update, a generation, a
    sharded save and load, the old gathered load and the initial broadcast; then a barrier."""
    from functools import partial

    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.presets import get_recipe
    from scalerl.train.collectives import barrier
    from scalerl.train.distributed import Rank, TrainerGroup, broadcast_initial_weights, follow, shard
    from scalerl.train.precision import FULL
    from scalerl.train.shard_generation import ShardedGenerator, any_rank
    from scalerl.train.update import build_optimizer

    from .collective_rules import installed

    cpu = torch.device("cpu")
    model, groups = _setup()
    full = {k: v.detach().clone() for k, v in model.state_dict().items()} if rank == 0 else None
    shard(model, FULL, fp32_root=True, world=world, device=cpu)
    me = Rank(rank, world, cpu)
    broadcast_initial_weights(model, dict(full) if full else None, me)  # (torch fills the dict it is given)
    recipe = get_recipe("scalerl")
    opt, sched = build_optimizer(model, recipe)
    gen = HFGenerator(model, build_char_tokenizer(), seed=rank, lockstep=partial(any_rank, device=cpu))
    args = dict(temperature=1.0, pad_token_id=0, micro_batch_size=4, device=cpu, share_prompt=True)
    group = TrainerGroup(model, opt, sched, resolve_recipe(recipe), FULL, me, args, gen, None)
    if rank != 0:
        follow(group)
    else:
        ShardedGenerator(group).generate([[1, 2, 3], [4, 5]], SamplingParams(max_new_tokens=4, seed=1))
        group.update(groups, 0)
        group.save_shards(path)
        saved = group.state()
        group.load_shards(path, saved["optimizer_saved"], saved["scheduler"])
        group.load({"model": dict(full), "scheduler": saved["scheduler"]})
        group.stop()
    barrier()
    if rank == 0:
        box.put(dict(installed().seen))


@pytest.mark.slow
def test_every_collective_a_trainer_group_makes_follows_nccls_rules(tmp_path):
    """Object collectives and barriers through the gloo object group, tensors on the rank's device.
    (A rank that broke a rule raised in its collective: run_ranks re-raises its traceback here.)"""
    seen = run_ranks(_orders_rank, tmp_path / "shards")
    # Every kind scalerl makes was checked: orders and loads (broadcast_object_list), the step's
    # metrics (all_gather_object), the completions (gather_object), the lockstep flag (all_reduce),
    # the buffers (broadcast), and a barrier.
    for name in ("broadcast_object_list", "all_gather_object", "gather_object", "all_reduce", "broadcast", "barrier"):
        assert seen.get(name, 0) > 0, (name, seen)


def test_the_rules_catch_what_nccl_refuses():
    """The checks themselves, without a group: an object collective through the default group, a
    tensor collective through the object group, a tensor off the rank's device."""
    import torch.distributed as dist

    from scalerl.train import collectives

    rules = CollectiveRules(torch.device("cpu"))
    objects = object()
    old = collectives._objects
    collectives._objects = objects
    try:
        with pytest.raises(AssertionError, match="not the gloo object group"):
            rules._check_group("broadcast_object_list", "scalerl.x", None)
        with pytest.raises(AssertionError, match="through the gloo object group"):
            rules._check_group("all_reduce", "scalerl.x", objects)
        rules._check_group("barrier", "scalerl.x", objects)
        rules._check_group("all_reduce", "scalerl.x", dist.group.WORLD)
    finally:
        collectives._objects = old
    with pytest.raises(AssertionError, match="not the rank's device"):
        rules._check_devices("broadcast", "scalerl.x", {"tensor": torch.zeros(1, device="meta")})
    rules._check_devices("broadcast", "scalerl.x", {"tensor": torch.zeros(1)})


def test_a_gpu_rank_binds_its_gpu_to_the_group_and_a_cpu_rank_gets_gloo():
    """``init_process_group(device_id=cuda:<LOCAL_RANK>)`` on a GPU: NCCL's communicator on that GPU
    from the start, and a barrier there, not on GPU ``RANK % count`` (wrong on a machine with more
    GPUs than ranks)."""
    from scalerl.train.launch import group_options

    assert group_options(torch.device("cpu")) == {"backend": "gloo"}
    assert group_options(torch.device("cuda", 3)) == {"backend": "nccl", "device_id": torch.device("cuda", 3)}


def test_join_opens_the_object_group_after_the_default_one(monkeypatch):
    """``_join_group``: the default group with ``group_options``, then the gloo group (every rank,
    in the same order)."""
    import torch.distributed as dist

    from scalerl.train import collectives, launch

    calls = []
    monkeypatch.setattr(dist, "init_process_group", lambda **kw: calls.append(("init", kw)))
    monkeypatch.setattr(dist, "new_group", lambda **kw: calls.append(("new_group", kw)) or "gloo group")
    monkeypatch.setattr(collectives, "_objects", None)
    launch._join_group(torch.device("cuda", 1), "tcp://127.0.0.1:1", 1, 2)
    assert calls == [("init", dict(init_method="tcp://127.0.0.1:1", rank=1, world_size=2, backend="nccl",
                                   device_id=torch.device("cuda", 1))),
                     ("new_group", dict(backend="gloo", timeout=collectives.WAIT_TIMEOUT))]
    assert collectives.object_group() == "gloo group"


def test_one_gpu_named_for_every_rank_is_refused_before_the_group():
    """``run.device=cuda:N`` under several ranks put every rank on GPU N, which NCCL refuses (two ranks
    on one GPU); gloo on CPU never minded. Refused as a config problem, before any process group."""
    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig, group_problems
    from scalerl.train.launch import run_rank

    cfg = TrainConfig()
    cfg.run.device = "cuda:1"
    assert any("names one GPU for every trainer rank" in p for p in group_problems(cfg, 2))
    assert group_problems(cfg, 1) == []
    cfg.run.device = "cuda"
    assert group_problems(cfg, 2) == []
    cfg.run.device = "cuda:0"
    with pytest.raises(ConfigError, match="names one GPU for every trainer rank"):  # (torchrun: before joining)
        run_rank(cfg, resume=False, rank=1, world=2, local_rank=1, init_method="tcp://127.0.0.1:1")
