"""The policy update over N processes: ``torch.distributed`` and FSDP2 (``fully_shard``).

One trainer code path. Rank 0 runs the :class:`~scalerl.train.trainer.Trainer` as in a
single-process run -- run directory, generators, evaluation, run log, progress bar,
checkpoints -- and every rank holds an FSDP shard of the parameters, gradients and AdamW
state. Whenever rank 0 needs the other ranks (a policy update, a checkpoint, a resume, the
end) it broadcasts an *order* -- a method name and its arguments -- and ranks > 0, which run
:func:`follow`, call the same method of their own :class:`TrainerGroup`. Orders, like every
Python object and wait that crosses ranks, go through a gloo group beside the default (NCCL on
GPUs) one; tensors through the default group, on each rank's own device
(:mod:`scalerl.train.collectives` says why).

    group = TrainerGroup(model, optimizer, scheduler, components, precision, rank=0, world=2, ...)
    result = group.update(batch.groups, version)    # every rank: its share of the micro-batches
    group.gather_into(generator_model)              # the full weights, once per update
    group.save_shards(checkpoint / "shards")        # every rank its shard (a checkpoint)

**The gradient equals the single-process one.** Every rank builds the step's advantages,
filters and aggregation weights from the *whole* batch (the batch-level std, the prompt-level
and token normalisers are global), cuts the sequences into the same micro-batches a single
process would, and runs every ``world``-th of them (:class:`Share`). FSDP averages gradients
over ranks, so each rank's loss is multiplied by ``world``: the reduced gradient is the sum
of the micro-batches' gradients, as one process accumulates it. Ranks with one micro-batch
fewer run a zero-weighted pass (FSDP's all-gathers need every rank in every forward and
backward). Clipping uses the full norm (``clip_grad_norm_`` on DTensors).

**Precision.** The shards are the fp32 master weights and AdamW's state; FSDP's
``MixedPrecisionPolicy`` (:meth:`Precision.fsdp_policy`) gathers them in the compute dtype
for each decoder layer and reduces gradients in fp32, so autocast is off under FSDP. The root
(embeddings, final norm, LM head) computes in fp32 when ``recipe.fp32_lm_head`` is on: the
head keeps fp32 weights, tied or not.

**Loading never puts the whole model on a device.** Rank 0 reads the checkpoint into host
memory, the other ranks build the architecture on the meta device (no weights read);
``fully_shard`` moves each rank's shard to its device one layer at a time, and every shard and
buffer is then broadcast from rank 0's copy (:func:`make_group`).

**Checkpoints are sharded**: every rank writes its shard of the weights and AdamW state
(``torch.distributed.checkpoint``) into the checkpoint's ``shards/``, inside the same
temporary directory and atomic rename as a one-process checkpoint; ``state.pt`` (rank 0) holds
the rest. No rank gathers the full state, and a resume may use another number of ranks (the
checkpoint's metadata maps the pieces). Checkpoints from before (the full state gathered into
``state.pt``) still resume (:meth:`TrainerGroup.load`). ``final/`` is the one place the full
weights are gathered, on rank 0's CPU, one tensor at a time and cast to the dtype ``final/`` is
stored in as they come (2 bytes a parameter for a bf16 model), to write an ordinary model.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import torch
import torch.distributed as dist

from scalerl.errors import ConfigError, InputError
from scalerl.generate.base import Completion, LengthController, SamplingParams
from scalerl.models.stored_dtypes import kept_in_fp32, stored_dtype_of
from scalerl.rl.components import RecipeComponents
from scalerl.rollout.groups import Group
from scalerl.train.checkpoint import shard_files, shard_sums, verify_shards, write_shard_sums
from scalerl.train.collectives import object_group
from scalerl.train.config import TrainConfig, group_problems
from scalerl.train.precision import MASTER_DTYPE, Precision
from scalerl.train.share import Share, full_value

if TYPE_CHECKING:  # the hf module only where a rank generates (run.generate_on_shards)
    from scalerl.generate.hf import HFGenerator
    from scalerl.train.activation_probe import ActivationCost
    from scalerl.train.policy import Policy


@dataclass(frozen=True)
class Rank:
    """Where this process stands in the trainer group."""

    rank: int
    world: int
    device: torch.device

    @property
    def leader(self) -> bool:
        return self.rank == 0


def device_for(name: str, local_rank: int) -> torch.device:
    """The device of trainer rank ``local_rank`` on its machine: its own GPU, or the CPU.
    :class:`~scalerl.errors.ConfigError` (one line, not a traceback from every rank) for a device
    this machine lacks: ``run.device=cuda`` without CUDA, or fewer GPUs than ranks on it."""
    from scalerl.models.devices import run_device

    device = run_device(name)
    if device.type == "cuda" and device.index is None:
        if local_rank >= torch.cuda.device_count():
            raise ConfigError(f"run.device={name}: trainer rank {local_rank} of this machine has no GPU of its own "
                              f"({torch.cuda.device_count()} visible); lower --nproc / --nproc-per-node")
        device = torch.device("cuda", local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def backend_for(device: torch.device) -> str:
    """NCCL between GPUs, gloo on the CPU."""
    return "nccl" if device.type == "cuda" else "gloo"


def shard(model: torch.nn.Module, precision: Precision, *, fp32_root: bool, world: int, device: torch.device) -> None:
    """FSDP2 over ``world`` ranks: each decoder layer (:func:`shard_units`) its own unit in the
    compute dtype, then the root (embeddings, norm, head) -- in fp32 when ``fp32_root`` (the FP32
    LM head), else in the compute dtype."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(device.type, (world,))
    layer_policy = precision.fsdp_policy()
    for layer in shard_units(model):
        fully_shard(layer, mesh=mesh, mp_policy=layer_policy)
    root_policy = MixedPrecisionPolicy(param_dtype=MASTER_DTYPE, reduce_dtype=MASTER_DTYPE) if fp32_root else layer_policy
    fully_shard(model, mesh=mesh, mp_policy=root_policy)


def shard_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules that become FSDP units of their own: the model's ``_no_split_modules`` (its
    decoder layers), the outermost of them only -- a class listed inside another (Mamba lists its
    block and the block's mixer) would be sharded twice, and ``fully_shard`` refuses parameters
    that are shards already -- and none that shares its parameters with another."""
    names = set(getattr(model, "_no_split_modules", None) or ())
    units = [m for m in model.modules() if type(m).__name__ in names]
    nested = {id(inner) for m in units for inner in m.modules() if inner is not m}
    units = [m for m in units if id(m) not in nested]
    # A unit whose parameters are reachable by another path too -- Zamba2's hybrid layers each hold the one
    # shared transformer block, a layer may keep the root's token embedding -- would put them in two FSDP groups,
    # which fully_shard refuses at the first forward (reviews cv, cz: a traceback from every rank): its children
    # that share nothing (the layer's own Mamba layer) are units instead, the shared part stays with the root.
    param_paths: dict[int, list[str]] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        param_paths.setdefault(id(p), []).append(name)
    module_paths: dict[int, list[str]] = {}
    for name, m in model.named_modules(remove_duplicate=False):
        module_paths.setdefault(id(m), []).append(name)

    def own(m: torch.nn.Module) -> bool:
        if len(module_paths[id(m)]) != 1:
            return False
        prefix = module_paths[id(m)][0] + "."
        return all(name.startswith(prefix) for p in m.parameters() for name in param_paths[id(p)])

    return [u for m in units for u in ([m] if own(m) else
                                       [c for c in m.children() if any(True for _ in c.parameters()) and own(c)])]


class TrainerGroup:
    """The sharded policy, its optimizer, and the orders rank 0 gives the other ranks."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
                 components: RecipeComponents, precision: Precision, rank: Rank, update_args: dict[str, Any],
                 generator: HFGenerator | None = None, length_control: LengthController | None = None) -> None:
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.components, self.precision, self.rank = components, precision, rank
        self.update_args = update_args
        """``policy_update``'s keyword arguments that do not change during a run."""
        self.generator, self.length_control = generator, length_control
        """``run.generate_on_shards``: this rank's generator on the sharded model (an HFGenerator
        in lockstep with the other ranks) and the recipe's length controller; else None."""

    # ---- orders ------------------------------------------------------------------------------
    def _order(self, name: str, *args: Any) -> None:
        """Rank 0: tell the other ranks to call ``name(*args)`` (they are waiting in :func:`follow`)."""
        if self.rank.leader and self.rank.world > 1:
            dist.broadcast_object_list([(name, args)], src=0, group=object_group())

    def receive(self) -> tuple[str, tuple]:
        """Ranks > 0: the next order. On the gloo group (:mod:`scalerl.train.collectives`): the wait
        lasts as long as rank 0 works alone, which under NCCL's watchdog could not pass 10 minutes."""
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0, group=object_group())
        return box[0]

    # ---- what every rank does ----------------------------------------------------------------
    def update(self, groups: Sequence[Group], version: int) -> Any:
        """One policy update on this rank's share of ``groups`` (all ranks; the result is global)."""
        from scalerl.train.update import policy_update

        self._order("update", groups, version)
        return policy_update(self.model, self.optimizer, self.scheduler, groups, self.components,
                             version=version, precision=self.precision,
                             share=Share(self.rank.rank, self.rank.world), **self.update_args)

    def generate(self, prompts: list[list[int]], params: SamplingParams, length_control: bool,
                 version: int) -> list[Completion] | None:
        """Every rank samples its share of ``prompts`` on the shards (``run.generate_on_shards``);
        rank 0 gets every completion, in order (:mod:`scalerl.train.shard_generation`)."""
        from scalerl.train.shard_generation import generate_share

        self._order("generate", prompts, params, length_control, version)
        self.generator.version = version  # the policy version each token is recorded with
        return generate_share(self.generator, prompts, params, self.length_control if length_control else None,
                              self.rank.rank, self.rank.world)

    def gather_into(self, target: torch.nn.Module | None) -> None:
        """Copy the full weights into ``target`` (rank 0's plain generator model), one parameter
        at a time (each an all-gather: no rank ever holds a second full copy)."""
        self._order("gather_into", None)
        params = dict(target.named_parameters()) if target is not None else {}
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                full = full_value(p.detach())
                if target is not None:
                    params[name].copy_(full)

    def state(self) -> dict[str, Any]:
        """What a checkpoint's ``state.pt`` holds of the trainer group (rank 0): the schedule, and
        whether :meth:`save_shards` wrote an optimizer state. The weights and AdamW's state are
        in the shards."""
        return {"scheduler": self.scheduler.state_dict(), "weights": "shards",
                "optimizer_saved": bool(self.optimizer.state)}

    def save_shards(self, path: Path) -> None:
        """Every rank writes its own shard of the fp32 weights and AdamW state into ``path``
        (``torch.distributed.checkpoint``): no rank ever holds the full state (16 bytes a
        parameter). ``path`` must be on a file system every rank sees (one machine, or a shared
        one across machines); rank 0 checks that every rank's file arrived."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.api import CheckpointException
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

        from scalerl.train.shard_writer import disk_error, shard_writer

        self._order("save_shards", path)
        state: dict[str, Any] = {"model": get_model_state_dict(self.model)}
        # Before the first step AdamW has no state, and get_optimizer_state_dict would create it
        # with a zero-gradient step -- one that counts in AdamW's bias correction (measured: the
        # first real update came out 0.745x the single-process one). Nothing to save then.
        if self.optimizer.state:
            state["optimizer"] = get_optimizer_state_dict(self.model, self.optimizer)
        # The planning (which rank writes what, the metadata) is objects: on the gloo group.
        try:
            dcp.save(state, checkpoint_id=path, storage_writer=shard_writer(path), process_group=object_group())
        except CheckpointException as exc:  # raised on every rank alike
            error = disk_error(exc)
            if error is None:
                raise
            if self.rank.leader:  # where a disk's error is said in one line; the other ranks wait for its orders
                raise error from None
            return
        self._write_shard_sums(path)

    def _write_shard_sums(self, path: Path) -> None:
        """Every rank, after :meth:`save_shards` wrote ``path``: the shards' checksums, written by rank 0."""
        # Rank 0 checks every rank's file arrived, then every rank checksums every world-th file: a re-read of the
        # whole checkpoint, split (one reader alone took up to 0.8x the write's time: checkpoint_checksums.py).
        # What fails on any rank travels to rank 0 as text and is raised there: a rank that raised alone left rank 0
        # a peer gone, and the run ended in tracebacks (review br).
        files: list[Any] = [None]
        if self.rank.leader:
            try:
                verify_shards(path)
                files = [[f.name for f in shard_files(path)]]
            except OSError as exc:  # a file missing or short (no errno), or the disk's own error (EIO, EACCES ...)
                files = [(exc.errno, str(exc) if exc.errno is None else exc.strerror, exc.filename)]
        if self.rank.world > 1:
            dist.broadcast_object_list(files, src=0, group=object_group())
        if isinstance(files[0], tuple):  # (every rank returns: none is left waiting in the gather below)
            number, text, filename = files[0]
            if self.rank.leader and number is None:
                raise InputError(f"a checkpoint's shards, written by every trainer rank, are not all in {path} as rank 0 "
                                 f"sees it ({text}): under a multi-machine trainer group the run directory (--output) "
                                 "must be on a file system every machine shares")
            if self.rank.leader:  # (a disk's error is no missing file system: said as the checksums' errors are)
                raise OSError(number, f"{text} (rank 0, checking the shards every rank wrote)", filename)
            return
        try:
            mine: dict[str, int] | tuple = shard_sums([path / name for name in files[0][self.rank.rank::self.rank.world]])
        except OSError as exc:  # a read error (a disk's EIO): raised on rank 0 as it came, its errno kept -- the
            # trainer says a disk's error in one line (review bt: a bare OSError was a traceback)
            mine = (exc.errno, f"{exc.strerror or exc} (rank {self.rank.rank}, reading the shards back to checksum "
                               "them)", exc.filename)
        parts: list[Any] | None = [mine] + [None] * (self.rank.world - 1) if self.rank.leader else None
        if self.rank.world > 1:
            dist.gather_object(mine, parts, dst=0, group=object_group())
        if parts is not None:
            failed = [part for part in parts if isinstance(part, tuple)]
            if failed:
                number, text, filename = failed[0]
                raise OSError(number, text, filename) if number is not None else OSError(text)
            write_shard_sums(path, {name: crc for part in parts for name, crc in part.items()})

    def load_shards(self, path: Path, has_optimizer: bool, scheduler: dict[str, Any]) -> None:
        """Every rank reads its shard of what :meth:`save_shards` wrote (any number of ranks: the
        checkpoint's metadata maps the saved pieces onto this group's sharding)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import (get_model_state_dict, get_optimizer_state_dict,
                                                             set_model_state_dict, set_optimizer_state_dict)

        self._order("load_shards", path, has_optimizer, scheduler)
        # Templates of this group's sharding for dcp.load to fill. The optimizer's is made by a
        # zero-gradient step (see save_shards), whose state and weight decay the load then overwrites.
        state: dict[str, Any] = {"model": get_model_state_dict(self.model)}
        if has_optimizer:
            state["optimizer"] = get_optimizer_state_dict(self.model, self.optimizer)
        dcp.load(state, checkpoint_id=path, process_group=object_group())
        set_model_state_dict(self.model, state["model"])
        if has_optimizer:
            set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"])
        self.scheduler.load_state_dict(scheduler)

    def load(self, state: dict[str, Any] | None) -> None:
        """Put a gathered state (``{"model", "optimizer", "scheduler"}``: what checkpoints held
        before they were sharded) back on every rank (rank 0 passes it; it is broadcast from there)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict, set_optimizer_state_dict

        self._order("load", None)
        options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        state = state if self.rank.leader and state is not None else {}
        set_model_state_dict(self.model, state.get("model", {}), options=options)
        shared = [state.get("scheduler"), state.get("optimizer") is not None]
        if self.rank.world > 1:
            dist.broadcast_object_list(shared, src=0, group=object_group())
        scheduler, has_optimizer = shared
        if has_optimizer:
            set_optimizer_state_dict(self.model, self.optimizer, state.get("optimizer") or {}, options=options)
        self.scheduler.load_state_dict(scheduler)

    def full_weights(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """The full model weights in ``dtype`` on rank 0's CPU (for ``final/``; other ranks: {}).
        Gathered one tensor at a time and cast as each arrives: rank 0 holds the stored dtype's
        2 bytes a parameter (bf16), not the fp32 state's 4 plus a cast copy's 2."""
        self._order("full_weights", dtype)
        weights: dict[str, torch.Tensor] = {}
        for name, full in self._gathered(dtype, torch.device("cpu"), kept=kept_in_fp32(self.model, dtype)):
            if self.rank.leader:
                weights[name] = full
        return weights

    def stream_weights(self, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
        """Rank 0: the full weights one tensor at a time, in ``dtype``, on this rank's device (the
        generators' weights under ``run.generate_on_shards``: :mod:`scalerl.train.shard_weights`).
        Every rank all-gathers each tensor in turn (:meth:`gather_each`); consume it to the end."""
        self._order("gather_each", dtype)
        yield from self._gathered(dtype)

    def gather_each(self, dtype: torch.dtype) -> None:
        """Ranks > 0: take part in rank 0's :meth:`stream_weights`."""
        for _ in self._gathered(dtype):
            pass

    def _gathered(self, dtype: torch.dtype, device: torch.device | None = None,
                  kept: Sequence[re.Pattern] = ()) -> Iterator[tuple[str, torch.Tensor]]:
        """Every state-dict entry, whole (an all-gather on every rank), one at a time, so no rank
        holds a second full copy; on rank 0 moved to ``device`` (default: where it is) and cast,
        floating point ones, to ``dtype`` -- those ``kept`` to fp32 (:mod:`scalerl.models.stored_dtypes`)
        -- in one copy. The other ranks' are as gathered (unused)."""
        for name, value in self.model.state_dict().items():  # detached: no autograd
            full = full_value(value)  # buffers are as they are
            if self.rank.leader:
                full = full.to(device=device or full.device, dtype=stored_dtype_of(name, full, dtype, kept))
            yield name, full
            del full

    def probe(self, max_length: int | None) -> "ActivationCost":
        """Every rank: the update's activations on its shards (:mod:`scalerl.train.activation_probe`;
        a forward is a collective, so all ranks probe); each rank's own measurement."""
        from scalerl.train.activation_probe import probe_activations

        self._order("probe", max_length)
        a = self.update_args
        return probe_activations(self.model, self.precision, temperature=a["temperature"],
                                 pad_token_id=a["pad_token_id"], device=self.rank.device,
                                 logits_budget=a["logits_budget"], max_length=max_length)

    def cut_passes(self, tokens: int) -> None:
        """Every rank: the update's passes hold at most ``tokens`` padded tokens from now on
        (``run.micro_batch_tokens`` as rank 0 fitted it to the measured activations)."""
        self._order("cut_passes", tokens)
        self.update_args["micro_batch_tokens"] = tokens

    def stop(self) -> None:
        """Rank 0: release the other ranks (the run is over)."""
        self._order("stop")


def follow(group: TrainerGroup) -> None:
    """Ranks > 0: carry out rank 0's orders until it says stop."""
    while True:
        name, args = group.receive()
        if name == "stop":
            return
        getattr(group, name)(*args)


def make_group(cfg: TrainConfig, policy: Policy, rank: Rank) -> TrainerGroup:
    """Shard ``policy.model`` over the process group (every rank, in the same order), start every
    shard from rank 0's weights, and build the optimizer on the shards."""
    from scalerl.errors import ConfigError
    from scalerl.generate.layout import pad_id_of
    from scalerl.rl.components import resolve_recipe
    from scalerl.train.update import build_optimizer

    problems = group_problems(cfg, rank.world)
    if problems:
        raise ConfigError("; ".join(problems))
    model = policy.model
    # Rank 0 loaded the weights into host memory; sharding leaves those tensors as they are (it
    # copies each rank's shard out), so they are the full state to broadcast, with no copy.
    full = {k: v.detach() for k, v in model.state_dict().items()} if rank.leader else None
    shard(model, policy.precision, fp32_root=cfg.recipe.fp32_lm_head, world=rank.world, device=rank.device)
    if any(t.is_meta for t in itertools.chain(model.parameters(), model.buffers())):
        model.to_empty(device=rank.device)  # ranks > 0 built the architecture on the meta device
    broadcast_initial_weights(model, full, rank)
    del full
    optimizer, scheduler = build_optimizer(model, cfg.recipe)
    update_args = dict(temperature=cfg.sampling.temperature, pad_token_id=pad_id_of(model, policy.tokenizer),
                       micro_batch_size=cfg.run.micro_batch_size, micro_batch_tokens=cfg.run.micro_batch_tokens,
                       device=rank.device,
                       share_prompt=cfg.run.share_prompt_forward, logits_budget=cfg.run.logits_budget_mb * 2**20)
    components = resolve_recipe(cfg.recipe)
    generator = length_control = None
    if cfg.run.generate_on_shards:
        from functools import partial

        from scalerl.generate.hf import HFGenerator
        from scalerl.train.shard_generation import RANK_SEED_STRIDE, any_rank

        # No autocast: under FSDP the mixed-precision policy computes in the compute dtype.
        generator = HFGenerator(model, policy.tokenizer, seed=cfg.run.seed + RANK_SEED_STRIDE * rank.rank,
                                lockstep=partial(any_rank, device=rank.device), max_rows=cfg.run.decode_rows or None)
        length_control = components.length_controller(policy.tokenizer)
    return TrainerGroup(model, optimizer, scheduler, components, policy.precision.under_fsdp(),
                        rank, update_args, generator, length_control)


def broadcast_initial_weights(model: torch.nn.Module, full: dict[str, torch.Tensor] | None, rank: Rank) -> None:
    """Start every shard from rank 0's weights (whatever each rank loaded or initialised), and
    every buffer from rank 0's: the non-persistent ones (rotary ``inv_freq``, ...) are in no state
    dict, and a rank that built its model on the meta device has only uninitialised memory there."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(model, full if rank.leader and full is not None else {}, options=options)
    if rank.world > 1:
        for buffer in model.buffers():
            # Through the group's device (NCCL moves GPU tensors only), wherever the buffer lives.
            sent = buffer.detach().to(rank.device)
            dist.broadcast(sent, src=0)
            if sent is not buffer:
                with torch.no_grad():
                    buffer.copy_(sent)


def rank_threads(threads: int | None, rank: Rank) -> int | None:
    """torch CPU threads of one trainer rank: on the CPU the ranks share the cores the trainer
    would have had (``threads``, or all of them), at least one each; on a GPU, unchanged."""
    if rank.device.type != "cpu":
        return threads
    from scalerl.pipeline.registry import cpu_cores

    return max(1, (threads or cpu_cores()) // rank.world)

