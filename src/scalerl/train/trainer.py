"""The training loop, top to bottom: setup, train, evaluate, checkpoint, save, report.

    from scalerl.train.config import TrainConfig, resolve
    from scalerl.train.trainer import Trainer
    summary = Trainer(resolve(TrainConfig())).run()

One optimizer step:

    batch   = source.next_batch(step)          # rollouts (sync / PPO-off-policy-k / PipelineRL-k)
    result  = policy_update(model, ..., batch)  # advantages, filters, loss, AdamW (train/update.py)
    source.weights_updated(model, version, step=step + 1)   # generators get the new weights
    every eval.every steps: evaluate (mean@k on each eval set), append a run-log row with the
    compute columns and the live forecast, checkpoint.

The same loop trains the tiny CPU model and a Hugging Face model on GPUs; what changes is
the config (model, profile, backend), not the code.
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import torch

from scalerl.atomic_files import lasting_path
from scalerl.config import to_dict
from scalerl.errors import ConfigError, InputError, NonFiniteError, RunInterrupted, ScaleRLError
from scalerl.generate.attention import cudnn_attention
from scalerl.generate.base import Generator, SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.layout import pad_id_of
from scalerl.pipeline.context import PipelineContext, TaskSpec
from scalerl.pipeline.registry import make_source, trainer_threads
from scalerl.pipeline.sources import FinishedSource
from scalerl.pipeline.weights import Weights
from scalerl.rl.components import resolve_recipe, validate_recipe
from scalerl.rl.sampler import PromptSampler
from scalerl.rollout.context import RolloutContext, RoundContext
from scalerl.rollout.groups import RolloutBatch
from scalerl.runlog import FINAL, FINAL_STEP_FILE, HEADER, RESUME, RUNLOG, RunLogWriter, read_runlog
from scalerl.seeds import EVAL_SAMPLING, derive_seed
from scalerl.stop_signals import stop_under_way, stops_deferred, stops_delivered
from scalerl.tasks.base import Problem, load_reward_state, problems_digest, reference_notes, reward_state
from scalerl.tasks.failure_tally import KINDS, add_counts, counting_failures
from scalerl.tasks.registry import get_task
from scalerl.tasks.rewards import check_reward_works
from scalerl.train.activation_probe import probe_activations
from scalerl.train.checkpoint import (SHARDS, checkpoint_step, damaged, latest_checkpoint, load_checkpoint,
                                     prune_checkpoints, refuse_damaged_newer, refuse_other_nproc, rng_state,
                                     save_checkpoint, set_rng_state, verify_shards)
from scalerl.train.closing import close_each
from scalerl.train.collapse import COLLAPSE_STEPS, collapse_note
from scalerl.train.compute import ComputeMeter
from scalerl.train.config import CALIBRATION_COPY, TrainConfig, eval_engine, not_reproducible
from scalerl.train.collectives import barrier
from scalerl.train.distributed import Rank, TrainerGroup, make_group, rank_threads
from scalerl.models.devices import run_device
from scalerl.models.lora import base_changed, base_digest, generator_copy, has_lora
from scalerl.models.onednn_linear import use_onednn_linear
from scalerl.train.evaluate import eval_bar, evaluate
from scalerl.train.loggers import make_sinks
from scalerl.train.policy import load_policy, load_policy_weights, policy_weights, save_policy
from scalerl.train.preflight import (check_generation_budget, check_generator_device, discard_unstarted_run,
                                     decode_rows, update_tokens)
from scalerl.train.run_directory import (CHECKPOINTS, CONFIG, SAMPLES, HeldByLauncher, RunDirectoryLock, check_output,
                                        config_changes, make_run_directory, record_steps, refuse_lost_history,
                                        resumed_config, save_run_config)
from scalerl.train.shard_generation import ShardedGenerator
from scalerl.train.shard_weights import ShardWeights
from scalerl.train.update import UpdateResult, build_optimizer, policy_update



class TrainingError(ScaleRLError):
    """The run cannot go on (e.g. repeated non-finite losses); the message says why and what to try."""


@dataclass
class RunSummary:
    output: Path
    steps: int
    evals: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    skipped_steps: int = 0
    nan_streak: int = 0
    """Consecutive steps skipped for a non-finite loss or gradient that the run ended with."""
    held: Any = field(default=None, repr=False, compare=False)
    """The run directory's lock, still held (``Trainer.run(hold_directory=True)``) for the caller to write
    the run's report before it lets the directory go (:meth:`release_directory`); None otherwise."""

    def release_directory(self) -> None:
        """Let the run directory go, once what the caller writes into it is written (a no-op when not held)."""
        held, self.held = self.held, None
        if held is not None:
            held.release()


def eval_seed(run_seed: int, set_index: int) -> int:
    """The sampling seed of evaluation set ``set_index``: the same at every evaluation of a run
    (common random numbers: consecutive rows differ by the policy, not by the draw)."""
    return derive_seed(run_seed, EVAL_SAMPLING, set_index)


#: Write failures that are the machine's state, not a bug: they stop the run with one line.
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}


def check_lora_base(saved: dict[str, float], current: dict[str, float], model: str, ckpt: Path) -> None:
    """Refuse to resume a LoRA run whose base changed since ``ckpt`` was written: the checkpoint
    holds the adapters only, and adapters trained on one base mean nothing on another."""
    changed = base_changed(saved, current)
    if changed:
        raise InputError(
            f"--resume: the base model {model} has changed since {ckpt} was written ({len(changed)} of its frozen "
            f"tensors differ, the first {changed[0]}); a LoRA checkpoint holds only the adapters, trained on the old "
            "base. Restore that base (the same directory, or the hub revision it was) or start a new run")


class Trainer:
    """Owns the model, optimizer, data and logs of one run."""

    def __init__(self, cfg: TrainConfig, *, resume: bool = False, rank: Rank | None = None,
                 directory_held: bool = False) -> None:
        """Start the run ``cfg`` describes, or (``resume=True``) continue the one in ``cfg.run.output``
        -- use :meth:`resumed` to resume from the run directory alone.

        ``rank``: rank 0 of a multi-process trainer group (``run.nproc``; :mod:`scalerl.train.launch`
        starts it): the policy update is sharded with FSDP over the group, and generation and
        evaluation use a plain copy of the weights, gathered after every update.
        ``directory_held``: the process that spawned this one holds the run directory's lock
        (:class:`HeldByLauncher`), so this one takes none."""
        self.output = Path(cfg.run.output)
        self._directory_held = directory_held
        if rank is None or rank.leader:
            check_output(self.output, resume)
        self.cfg = cfg
        self.resume = resume
        self.rank = rank
        try:
            self._setup()
        except BaseException:
            self._abandon_setup()
            raise

    @classmethod
    def resumed(cls, output: str | Path, *, steps: int | None = None, progress: bool | None = None,
                rank: Rank | None = None, threads: int | None = None) -> "Trainer":
        """Continue the run in ``output`` from its latest checkpoint. Its saved config is the
        truth; only the number of steps (to extend a run), the CPU threads and the progress bar
        may change."""
        return cls(resumed_config(output, steps=steps, progress=progress, threads=threads), resume=True, rank=rank)

    # ------------------------------------------------------------------ setup
    def _abandon_setup(self) -> None:
        """A set-up that failed part-way (W&B not logged in, a damaged checkpoint, a stop) closes
        what it had started -- generator and reward processes, files, tracker runs -- and, for a new
        run, removes the files it wrote: left behind, they made the same command, rerun once the
        cause was fixed, refuse the directory as one that "already holds a run"."""
        parts = self.__dict__
        steps: list = []
        if "task" in parts:  # before the source, as in _train (no generator has started yet here)
            steps.append(self._close_task)
        if "source" in parts:
            steps.append(self.source.close)
        steps += [parts[name].close for name in ("runlog", "samples") if name in parts]
        steps.append(self._restore_process_settings)
        # (Only with the directory held: one another process trains in is that run's, not this one's to clear.)
        if not self.resume and (self.rank is None or self.rank.leader) and "_dir_lock" in parts:
            steps.append(self._discard_unstarted)
        # After the discard, which decides whether the sinks are closed or discarded (_end_sink).
        steps += [partial(self._end_sink, sink, False) for sink in parts.get("sinks", ())]
        close_each([*steps, self._release_output, self._remove_made_output], failing=True)

    def _remove_made_output(self) -> None:
        """A new run that made its directory and was refused or stopped before its first checkpoint leaves no
        empty directory where there was none (review at: the README says the directory is left as it was)."""
        if self.__dict__.get("_discarded") and self.__dict__.get("_made_output"):
            try:
                self.output.rmdir()  # (only if empty: whatever else is in it stays)
            except OSError:
                pass

    def _discard_unstarted(self, runlog: RunLogWriter | None = None) -> None:
        """A run stopped before its first checkpoint leaves its directory as it found it (the files
        it wrote at its start removed; ``runlog``: closed first), so the same command starts it again.
        What its trackers wrote goes as they close (:meth:`_end_sink`)."""
        if self.output.is_dir():
            self._discarded = discard_unstarted_run(self.output, checkpoints=CHECKPOINTS,
                                                    files=(RUNLOG, CONFIG, SAMPLES, CALIBRATION_COPY), runlog=runlog)

    def _end_sink(self, sink: Any, ok: bool) -> None:
        """Close ``sink`` -- or, for a run :meth:`_discard_unstarted` discarded, discard it: closed,
        then what this attempt's tracker wrote removed (W&B's run directory and id, TensorBoard's
        event file). Left, the same command run again wrote its own beside them: an empty W&B run
        per stopped start, and TensorBoard's step 0 twice."""
        if self.__dict__.get("_discarded"):
            sink.discard()
        else:
            sink.close(ok)

    def _restore_process_settings(self) -> None:
        """torch's process-wide settings this run changed -- its thread count, cuDNN attention --
        back as they were (those it got to change: a set-up can fail before either)."""
        parts = self.__dict__
        if "_torch_threads" in parts:
            torch.set_num_threads(self._torch_threads)
        if parts.get("_cudnn_attention") is not None:
            cudnn_attention(self.device, self._cudnn_attention)

    def _setup(self) -> None:
        """Set the run up, one phase after another. The order is deliberate: what can refuse the run
        (a budget the model cannot hold, an unknown evaluation set, a tracker that cannot start)
        comes before anything is written to the run directory; _abandon_setup closes what a failure
        part-way had started."""
        self.components = resolve_recipe(self.cfg.recipe)  # every component name looked up once, here
        self._set_process()
        self._make_output()
        self._copy_calibration()
        self._load_policy()
        problems, settings = self._load_task()
        self._size_passes(list(problems.values()))
        self._make_generator_and_optimizer()
        self._start_counters()
        self._make_pipeline(problems, settings)
        self._open_logs()
        self.source.weights_updated(self.weights, self.version, step=self.step)  # the weights it starts from

    def _set_process(self) -> None:
        """torch's threads, the seed, the device and cuDNN attention for this run."""
        cfg = self.cfg
        threads = cfg.run.threads or trainer_threads(cfg.recipe.off_policy.pipeline, cfg.backend)
        # Restored when the run ends: a later run in this process (a study's next variant, a test)
        # must start from torch's default, not from this run's choice.
        self._torch_threads = torch.get_num_threads()
        if self.rank is not None:
            threads = rank_threads(threads, self.rank)
        if threads:
            torch.set_num_threads(threads)
        torch.manual_seed(cfg.run.seed)
        self.device = self.rank.device if self.rank is not None else run_device(cfg.run.device)
        check_generator_device(cfg)
        # Process-wide, like the threads: restored when the run ends (generate/attention.py says why).
        self._cudnn_attention = cudnn_attention(self.device, cfg.run.cudnn_attention)

    def _make_output(self) -> None:
        self._made_output = not self.output.exists()  # (a failed start removes a directory it made, left empty)
        make_run_directory(self.output)
        if self.rank is None or self.rank.leader:  # (one writer per run directory: the leader of --nproc's ranks)
            self._dir_lock = HeldByLauncher(self.output) if self._directory_held else RunDirectoryLock(self.output)

    def _copy_calibration(self) -> None:
        """The live forecast's calibration, copied into the run directory at its start (a resume
        says when the original has changed since)."""
        cfg = self.cfg
        self.calibration = None
        if cfg.forecast.enabled and cfg.forecast.calibration and (self.rank is None or self.rank.leader):
            from scalerl.train.live_forecast import changed_calibration_note, run_calibration  # (scipy: as in evaluate)

            note = changed_calibration_note(cfg.forecast.calibration, self.output) if self.resume else None
            if note:
                print(f"note: {note}", file=sys.stderr)
            self.calibration = run_calibration(cfg.forecast.calibration, self.output)

    def _load_policy(self) -> None:
        """The trained model (fp32 master weights, FP32 head, LoRA, gradient checkpointing, the
        compute dtype: train/policy.py), its FSDP group under ``run.nproc``, and what generates."""
        cfg = self.cfg
        # Under FSDP the weights stay in host memory until sharding moves this rank's shard to the device.
        self.policy = load_policy(cfg, self.device, placement="device" if self.rank is None else "host",
                                  world=self.rank.world if self.rank is not None else 1)
        self.model, self.tokenizer, self.precision = self.policy.model, self.policy.tokenizer, self.policy.precision
        validate_recipe(cfg.recipe, self.tokenizer)  # the length budgets, now that the phrase's length is known
        self.pad_id = pad_id_of(self.model, self.tokenizer)
        # What generates and what the generators' weights are read from: the trained model itself
        # in one process; under FSDP a plain copy on rank 0, refreshed after every update -- or,
        # with run.generate_on_shards, the shards themselves (train/shard_generation.py).
        self.group: TrainerGroup | None = None
        if self.rank is None:
            # AMD CPUs with AVX-512: the fp32 linear layers on oneDNN, forward and backward (~2x MKL's
            # rate there: models/onednn_linear.py); FSDP shards keep torch's path.
            use_onednn_linear(self.model)
        self.gen_model = self.model
        if self.rank is not None:
            barrier()  # the other ranks load the model now (any cache it built is complete)
            if not cfg.run.generate_on_shards:
                self.gen_model = generator_copy(self.model, self.precision.generator_dtype).to(self.device)
            self.group = make_group(cfg, self.policy, self.rank)
        # What the generators' weights are read from after an update: the generator model, or
        # (generation on the shards, no whole copy anywhere) a stream off the shards.
        self.shard_weights = (ShardWeights(self.group, self.precision.generator_dtype)
                              if self.group is not None and cfg.run.generate_on_shards else None)
        self.weights: Weights = self.shard_weights or self.gen_model

    def _load_task(self) -> tuple[dict[str, Problem], dict[str, Any]]:
        """The task, its training problems (returned by id, with the task's settings) and
        evaluation sets, the prompt sampler and the length controller."""
        cfg = self.cfg
        settings = dict(cfg.task.settings)
        if cfg.task.data is not None:
            settings["data"] = cfg.task.data
        self.task = get_task(cfg.task.name, reward=cfg.task.reward, reward_timeout=cfg.task.reward_timeout,
                             reward_workers=cfg.task.reward_workers, reward_load_timeout=cfg.task.reward_load_timeout,
                             settings=settings)
        train = list(self.task.train_problems())
        if not train:
            raise InputError(f"task {cfg.task.name!r} has no training problems")
        problems = {p.id: p for p in train}
        available = self.task.eval_sets()
        missing = [s for s in cfg.eval.sets if s not in available]
        if missing:
            raise ConfigError(f"eval.sets: task {cfg.task.name!r} has no set {missing[0]!r}; it has: {', '.join(available)}")
        self.eval_sets = {s: list(available[s])[: cfg.eval.problems] for s in cfg.eval.sets}
        short = {s: len(v) for s, v in self.eval_sets.items() if len(v) < cfg.eval.problems}
        if short and not self.resume and (self.rank is None or self.rank.leader):  # (said once, at the start)
            print(f"note: eval.problems is {cfg.eval.problems} but the evaluation set(s) hold fewer problems "
                  f"({', '.join(f'{s}: {n}' for s, n in short.items())}): all of them are evaluated, and each "
                  "evaluation's pass rate is the noisier for it", file=sys.stderr)
        if not self.resume and (self.rank is None or self.rank.leader):  # (answers the reward cannot read)
            for note in reference_notes(self.task):
                print(f"warning: {note}", file=sys.stderr)
        self.sampler = PromptSampler.from_config(list(problems), cfg.recipe.sampler, seed=cfg.run.seed)
        # Kept in every checkpoint: a resume on edited data is refused (_check_same_data).
        self.data_digest = {"training problems": problems_digest(train),
                            **{f"evaluation set {s!r}": problems_digest(v) for s, v in self.eval_sets.items()}}
        self.length_control = self.components.length_controller(self.tokenizer)
        return problems, settings

    def _size_passes(self, train: list[Problem]) -> None:
        """How many rows a decode loop holds and how many padded tokens an update's pass holds --
        before anything is written to the run directory: a budget the model cannot hold fails here."""
        cfg = self.cfg
        world = self.rank.world if self.rank is not None else 1
        note = check_generation_budget(cfg, self.model, self.tokenizer, train, self.eval_sets)
        if note is not None and not self.resume and (self.rank is None or self.rank.leader):  # (said once, at the start)
            print(f"warning: {note}", file=sys.stderr)
        # The decode loops on this device hold at most this many rows' KV cache at once.
        self.decode_rows, note = decode_rows(cfg, self.model, self.tokenizer, train, self.eval_sets,
                                             self.precision.generator_dtype.itemsize, self.device, world)
        if note is not None:
            print(f"note: {note}", file=sys.stderr)
        # The update's passes hold at most this many padded tokens: on a GPU, what its measured
        # activations fit beside the training state (under FSDP every rank probes its shards).
        probe = self.group.probe if self.group is not None else partial(
            probe_activations, self.model, self.precision, temperature=cfg.sampling.temperature,
            pad_token_id=self.pad_id, device=self.device, logits_budget=cfg.run.logits_budget_mb * 2**20)
        self.micro_batch_tokens, note = update_tokens(
            cfg, self.model, self.tokenizer, train, self.eval_sets,
            probe, self.precision.generator_dtype.itemsize, self.device, world)
        if note is not None:
            print(f"note: {note}", file=sys.stderr)
        if self.group is not None and self.micro_batch_tokens != cfg.run.micro_batch_tokens:
            self.group.cut_passes(self.micro_batch_tokens)

    def _make_generator_and_optimizer(self) -> None:
        cfg = self.cfg
        # A generator copy is already in the compute dtype; the trained model needs autocast.
        mixed = self.precision.mixed and self.gen_model is self.model
        self.generator: Generator = (
            ShardedGenerator(self.group) if self.group is not None and self.group.generator is not None
            else HFGenerator(self.gen_model, self.tokenizer, seed=cfg.run.seed,
                             autocast_dtype=self.precision.compute_dtype if mixed else None, max_rows=self.decode_rows))
        if self.group is not None:
            self.optimizer, self.scheduler = self.group.optimizer, self.group.scheduler
        else:
            self.optimizer, self.scheduler = build_optimizer(self.model, cfg.recipe)

    def _start_counters(self) -> None:
        """The run's counters at step 0 (a resume restores them from the checkpoint)."""
        self.meter = ComputeMeter(params=sum(p.numel() for p in self.model.parameters()))
        self.version = 0
        self.step = 0
        self.skipped_steps = 0
        # Failed reward calls of the batches trained on and of the evaluations (each batch's own,
        # counted once when it is trained on: tasks/failure_tally.py), the checkpoint's included.
        self.reward_counts = dict.fromkeys(KINDS, 0)
        self.nan_streak = 0
        self._nan_reason = ""  # the last step's skip reason, for the max_nan_steps stop's line
        self._final_saved = False  # final/ written by this process (_save_final): the run complete
        self.fail_streak = 0  # consecutive steps in which every completion failed (see COLLAPSE_STEPS)
        self.lag_hist: dict[int, int] = {}  # trained tokens per lag since the last evaluation row
        self.evals: list[dict[str, Any]] = []
        self.resumed_from: int | None = None  # the checkpoint's step, when resumed from one
        self.checkpoint_step: int | None = None  # the newest checkpoint's (where a resume goes on from)

    def _make_pipeline(self, problems: dict[str, Problem], settings: dict[str, Any]) -> None:
        """What the rollout sources see of the run (built once; the pipeline never reads the
        trainer) and the source itself: sync, PPO-off-policy-k or PipelineRL-k, on threads,
        processes or Ray."""
        cfg = self.cfg
        self.rollout = RolloutContext(
            RoundContext(self.tokenizer, self.task, self.components, self.length_control),
            problems, self.sampler, temperature=cfg.sampling.temperature, top_p=cfg.sampling.top_p,
            seed=cfg.run.seed, deterministic=cfg.run.deterministic,
        )
        self.pipeline = PipelineContext(
            self.rollout, cfg.backend, self.gen_model, self.generator,
            TaskSpec(cfg.task.name, settings, cfg.task.reward, cfg.task.reward_timeout, cfg.task.reward_workers,
                     cfg.task.reward_load_timeout),
            model_path=cfg.model.name_or_path, generator_dtype=self.precision.generator_dtype, version=self.version,
            weights=self.shard_weights, decode_rows=self.decode_rows, engine_rows=cfg.run.decode_rows or None,
            cudnn_attention=cfg.run.cudnn_attention,
        )
        # A resume with nothing left to train generates nothing: no generator threads, processes or
        # Ray cluster (which took ~16 s to start, only to be shut down) -- run() says the run is done.
        self.source = FinishedSource() if self._nothing_to_train() else make_source(self.pipeline)
        # Devices the clock counts (accelerator-hours): Ray's generator actors hold their own.
        self.meter.devices = getattr(self.source, "devices", 1) + (self.rank.world - 1 if self.rank else 0)

    def _open_logs(self) -> None:
        """The trackers, then the run's files: a new run's config, run log and samples, or a resume's
        checkpoint restored and its logs reopened where the checkpoint left them."""
        cfg = self.cfg
        if self._nothing_to_train():
            # A run already at its steps (its files there): restored first, so that a tracker starts only
            # to log again what it lacks of the rows (W&B, after a kill -9 at the end). A W&B attempt with
            # nothing to log added an empty offline-run directory and a note of rows to come.
            self._restore()
            if self.rank is None or self.rank.leader:  # shortened to its checkpoint (or past it): where it ends
                record_steps(self.output, max(self.step, cfg.run.steps))
            self.sinks = make_sinks(cfg.log, self.output, self.output.name, to_dict(cfg), True,
                                    done_rows=self._kept_rows())
            self._resume_sinks()
            return
        # Trackers first: one that cannot start (W&B not logged in) fails before the run has files.
        self.sinks = make_sinks(cfg.log, self.output, self.output.name, to_dict(cfg), self.resume)
        if self.resume:
            self._restore()
            self._resume_sinks()
            if self.rank is None or self.rank.leader:
                record_steps(self.output, self.cfg.run.steps)
        else:
            save_run_config(self.output, cfg)
            self.runlog = RunLogWriter(self.output / RUNLOG, self._header())
            self.samples = RunLogWriter(self.output / SAMPLES, resume_offset=0)

    def _nothing_to_train(self) -> bool:
        """A resume whose latest checkpoint is at ``run.steps`` or past it (read from its name, before
        it is loaded: the rollout source is built first)."""
        if not self.resume:
            return False
        ckpt = latest_checkpoint(self.output / CHECKPOINTS)
        return ckpt is not None and checkpoint_step(ckpt) >= self.cfg.run.steps

    def _header(self) -> dict[str, Any]:
        cfg = self.cfg
        return {
            "run": self.output.name,
            "recipe": cfg.recipe_name,
            "model": cfg.model.name_or_path,
            "task": cfg.task.name,
            "params": self.meter.params,
            "device": str(self.device),
            # When this training started, as a resume row says when it went on: a study tells a failure it recorded
            # from a later attempt by them (study.run_state.failed_runs).
            "utc": _utc_now(),
            "config": to_dict(cfg),
        }

    # ------------------------------------------------------------------ checkpoints
    def _state(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "version": self.version,
            "skipped_steps": self.skipped_steps,
            # The streaks a stop or a note counts (review ci: not kept, a run killed inside a streak of non-finite
            # steps trained past run.max_nan_steps after --resume, and a collapse spanning the checkpoint went unsaid).
            "nan_streak": self.nan_streak,
            "fail_streak": self.fail_streak,
            "lag_hist": dict(self.lag_hist),
            "reward_counts": dict(self.reward_counts),
            # fp32 master weights (LoRA: the adapters), AdamW, the schedule; under FSDP the schedule
            # only: every rank writes its shard of the rest (_checkpoint, TrainerGroup.save_shards).
            **(self.group.state() if self.group is not None else {
                "model": policy_weights(self.model),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                **({"lora_base": self._base_digest()} if has_lora(self.model) else {}),
            }),
            "precision": self.precision.state_dict(),  # the fp16 loss scale
            "nproc": self.rank.world if self.rank is not None else 1,  # the layout of "optimizer"
            "sampler": self.sampler.state_dict(),
            "data_digest": self.data_digest,
            "meter": self.meter.state_dict(),
            "source": self.source.state_dict(),
            "rng": rng_state(),
            "runlog_offset": self.runlog.offset(),
            "samples_offset": self.samples.offset(),
            "evals": self.evals,
            # What a resume must not change unsaid (review eb: an edited config.yaml trained another recipe under
            # the log's header), and what the reward function's calls taught (its failure floor, whether it answers).
            "config": to_dict(self.cfg),
            "reward_state": reward_state(self.task),
        }

    def _check_same_data(self, ckpt: Path, state: dict[str, Any]) -> None:
        """Restore the prompt sampler -- refused where the task's problems are not the ones the run started with
        (review cb: rows appended were a ValueError's traceback; answers changed in place went on without a word,
        the curve joining two evaluation sets). A checkpoint of an older scalerl holds no digest: the sampler's own
        check (the same prompt ids) is all there is."""
        saved = state.get("data_digest") or {}
        changed = [part for part in self.data_digest if part in saved and saved[part] != self.data_digest[part]]
        if changed:
            raise InputError(self._data_changed(ckpt, ", ".join(changed)))
        try:
            self.sampler.load_state_dict(state["sampler"])
        except ValueError as exc:  # (a checkpoint without a digest: another number of prompts, other ids)
            raise InputError(self._data_changed(ckpt, "training problems", f" ({exc})")) from None

    def _data_changed(self, ckpt: Path, what: str, detail: str = "") -> str:
        data = self.cfg.task.data or self.cfg.task.settings.get("data")
        return (f"{ckpt}: the task's {what} changed since the run started" + (f" (data {data})" if data else "")
                + ": a resume would train on other problems and join two evaluation sets in one curve -- restore the "
                f"data the run started with, or start a new run (another --output){detail}")

    def _base_digest(self) -> dict[str, float]:
        """The frozen LoRA base's fingerprint, computed once (the base never changes in a run)."""
        if getattr(self, "_lora_base", None) is None:
            self._lora_base = base_digest(self.model)
        return self._lora_base

    def _checkpoint(self) -> None:
        with stops_deferred():  # a stop waits for the checkpoint: cut, torch.save's error hid the stop
            save_checkpoint(self.output / CHECKPOINTS, self.step, self._state(), keep=self.cfg.run.keep_checkpoints,
                            write_shards=self.group.save_shards if self.group is not None else None)
            # Inside the block: a stop held during the write is raised as the block ends, and the
            # stop's line must name this checkpoint (noted after it, a stop in the first one said
            # "nothing kept; run the same command again", which the kept checkpoint then refused).
            self.checkpoint_step = self.step

    def _restore(self) -> None:
        ckpt = latest_checkpoint(self.output / CHECKPOINTS)
        if ckpt is None:
            refuse_lost_history(self.output / RUNLOG)
            # Killed before the first checkpoint: nothing a checkpoint covers exists; start over.
            (self.output / RUNLOG).unlink(missing_ok=True)
            self.runlog = RunLogWriter(self.output / RUNLOG, self._header())
            self.samples = RunLogWriter(self.output / SAMPLES, resume_offset=0)
            return
        refuse_damaged_newer(ckpt)
        state = load_checkpoint(ckpt)
        refuse_other_nproc(ckpt, state.get("nproc", 1), grouped=self.group is not None,
                           now=self.rank.world if self.rank is not None else 1, exact=self.cfg.run.generate_on_shards)
        changed = config_changes(state.get("config"), to_dict(self.cfg))
        if changed:
            raise InputError(f"{ckpt}: the run's {CONFIG} changed since this checkpoint was written -- "
                             f"{'; '.join(changed)}: the steps from here would train another run under this one's "
                             f"log. Restore {CONFIG}, or start a new run from it (scalerl train --config "
                             f"{self.output / CONFIG} --output NEW_DIR)")
        if self.group is not None:
            if state.get("weights") == "shards":  # every rank reads its own shard
                try:  # here, before the ranks set out to read: a lost or cut shard is one line, not N tracebacks
                    verify_shards(ckpt / SHARDS, sums_written=bool(state.get("shard_sums")))
                except Exception as exc:  # noqa: BLE001 -- OSError, or unreadable metadata
                    raise damaged(ckpt, exc) from None
                self.group.load_shards(ckpt / SHARDS, state["optimizer_saved"], state["scheduler"])
            else:  # a checkpoint gathered into state.pt (written before checkpoints were sharded)
                self.group.load(state)  # broadcast from here to every rank's shard
            if self.gen_model is not self.model:  # a plain copy to refresh (not generation on the shards)
                self.group.gather_into(self.gen_model)
        else:
            if "lora_base" in state:
                check_lora_base(state["lora_base"], self._base_digest(), self.cfg.model.name_or_path, ckpt)
            load_policy_weights(self.model, state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
        self.precision.load_state_dict(state.get("precision", {}))
        self._check_same_data(ckpt, state)
        self.meter.load_state_dict(state["meter"])
        self.source.load_state_dict(state["source"])
        set_rng_state(state["rng"])
        self.step, self.version = state["step"], state["version"]
        self.skipped_steps = state["skipped_steps"]
        self.nan_streak, self.fail_streak = state.get("nan_streak", 0), state.get("fail_streak", 0)
        self.lag_hist = dict(state.get("lag_hist", {}))
        self.reward_counts.update(state.get("reward_counts", {}))
        load_reward_state(self.task, state.get("reward_state", {}))
        self.evals = state["evals"]
        self.generator.version = self.version
        self.runlog = RunLogWriter(self.output / RUNLOG, resume_offset=state["runlog_offset"])
        self.resumed_from = self.checkpoint_step = self.step
        # What a kill left beside the checkpoints (one too many, a half-written copy): only once this
        # one has loaded -- a damaged one's error names an earlier one to resume from instead. By one
        # process (the leader of --nproc's ranks), as the checkpoints are written.
        if self.rank is None or self.rank.leader:
            prune_checkpoints(self.output / CHECKPOINTS, self.cfg.run.keep_checkpoints, current=ckpt.name)
        # A checkpoint from before samples.jsonl existed has no offset: keep what is there.
        samples = self.output / SAMPLES
        offset = state.get("samples_offset", samples.stat().st_size if samples.exists() else 0)
        if offset and not (samples.exists() and samples.stat().st_size):
            # The completions logged so far are gone, and refusing the resume would not bring them
            # back; the run log and the checkpoint, which the run goes on from, are whole.
            print(f"warning: {samples} is missing: the completions logged up to step {self.step} are lost; "
                  "those of the resumed steps are written to a new one", file=sys.stderr)
            offset = 0
        self.samples = RunLogWriter(samples, resume_offset=offset)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, Any]:
        """mean@k on every evaluation set, with the compute columns and the live forecast."""
        cfg = self.cfg
        row: dict[str, Any] = {"type": "eval", **self.meter.row(), "version": self.version}
        # eval.engine=generators: Ray's actors (validated), on the weights pushed after the last step.
        generator = (self.source.eval_generator(self.step) if eval_engine(cfg) == "generators" else None) or self.generator
        for i, (name, problems) in enumerate(self.eval_sets.items()):
            params = SamplingParams(max_new_tokens=cfg.recipe.length.max_new_tokens, temperature=cfg.eval.temperature,
                                    seed=eval_seed(cfg.run.seed, i))
            examples: list[dict[str, Any]] = []
            with eval_bar(cfg.log.progress, name, len(problems) * cfg.eval.samples_per_problem) as bar, \
                    counting_failures() as failures:
                m = evaluate(generator, self.tokenizer, self.task, problems, cfg.eval.samples_per_problem, params,
                             self.length_control, batch_size=cfg.eval.batch_size, progress=bar.update,
                             examples=examples, n_examples=cfg.eval.log_samples)
            add_counts(self.reward_counts, failures.as_dict())
            for example in examples:
                self.samples.append({"step": self.step, "version": self.version, "set": name, **example})
            self.meter.eval_tokens += int(m["tokens"])
            for key in ("pass_rate", "pass_at_k", "mean_len", "frac_interrupted", "frac_truncated"):
                row[f"{name}/{key}"] = m[key]
        row["eval_tokens"] = self.meter.eval_tokens
        row["lag_max_since_eval"] = float(max(self.lag_hist, default=0))
        # The staleness actually seen: trained tokens per lag (updates between the weights that
        # sampled a token and the weights trained on it), since the previous row.
        for lag in range(max(self.lag_hist, default=-1) + 1):
            row[f"lag_hist/{lag}"] = self.lag_hist.get(lag, 0)
        row["skipped_steps"] = self.skipped_steps
        row["retired_prompts"] = len(self.sampler.retired)
        stats = getattr(self.source, "stats", None)
        if stats is not None:
            row.update(stats())
        if hasattr(self.task, "reward_stats"):
            row.update({f"reward_{key}": n for key, n in self.reward_counts.items()})
            if not self.evals:
                check_reward_works(cfg.task.reward or f"of the {cfg.task.name} task", self.task.reward_stats(),
                                   "of the first evaluation")
        self.lag_hist = {}
        self.evals.append(row)
        if cfg.forecast.enabled:
            # Imported here: the forecast needs scipy, and a run with forecast.enabled=false does not.
            from scalerl.train.live_forecast import live_forecast

            row.update(live_forecast(self.evals, x=cfg.forecast.x, y=f"{cfg.eval.sets[0]}/pass_rate",
                                     total_steps=cfg.run.steps, min_points=cfg.forecast.min_points,
                                     n_boot=cfg.forecast.bootstrap, seed=cfg.run.seed, calibration=self.calibration,
                                     refit_growth=cfg.forecast.refit_growth, last=self.step >= cfg.run.steps))
        return row

    def _log(self, row: dict[str, Any]) -> None:
        self.runlog.append(row)
        for sink in self.sinks:
            sink.log(row, self.step)

    # ------------------------------------------------------------------ the loop
    def run(self, *, hold_directory: bool = False) -> RunSummary:
        """Train to ``run.steps``, save ``final/`` and close the run's files and sinks.

        ``hold_directory``: a run that ends well keeps its directory locked (:class:`RunDirectoryLock`),
        handed over in the summary (``RunSummary.held``) for the caller to write the report into it first
        and then let it go (``summary.release_directory()``): let go here, an ``--overwrite`` or
        ``--resume`` started as the report was written deleted the directory under it, or trained beside
        it. However else the run ends, the directory is let go here."""
        cfg = self.cfg
        t_start = time.perf_counter()
        if self.step > cfg.run.steps:  # resumed with a smaller --steps: nothing is trained or undone
            print(f"note: {self.output} is already at step {self.step}, past run.steps = {cfg.run.steps}: nothing to "
                  f"train (its final model is step {self.step}'s); a larger --steps extends it", file=sys.stderr)
        elif self.resumed_from is not None and self.step == cfg.run.steps:  # (a finished run, or one killed after it)
            print(f"note: {self.output} is already at step {self.step} of run.steps = {cfg.run.steps}: the run is done, "
                  "nothing to train (no generator is started); its final model is saved again from its last "
                  "checkpoint. A larger --steps extends it", file=sys.stderr)
        stop: KeyboardInterrupt | None = None  # a stop that waited for the final save, which it let finish
        try:
            why = not_reproducible(cfg, resumed=self.resumed_from is not None)
            if self.resumed_from is not None and self.step < cfg.run.steps:
                # (Said at the start: only the report at the end said which checkpoint, and not with --no-report.)
                print(f"note: resuming {self.output} from its checkpoint at step {self.step}, to step {cfg.run.steps}"
                      + (f"; its rows from here need not repeat an uninterrupted run's: {why}" if why else ""),
                      file=sys.stderr)
                self._log_resume()
            elif why and self.step < cfg.run.steps:
                print(f"note: this run is not reproducible (the same seed can give another run log): {why}",
                      file=sys.stderr)
            # (In the try: a failure here closes the run's files and lets its directory go, as any other.)
            bar = _progress(cfg, self.step)
            self._train(bar)
            try:
                self._save_final()
            except OSError as exc:  # (review ci: a full disk here was a traceback)
                if exc.errno not in _DISK_ERRNOS:
                    raise
                raise TrainingError(
                    f"every step is trained and checkpointed, but final/ could not be written: cannot write "
                    f"{self.output / FINAL}: {exc.strerror}; free space, then resume with: scalerl train "
                    f"--output {shlex.quote(str(self.output))} --resume (it saves final/ again)") from None
            except KeyboardInterrupt as exc:  # a stop during the save, which waited for it
                stop_under_way()
                if not getattr(self, "_final_saved", False):  # (it came before the save began: no final/ of this run)
                    raise RunInterrupted(self._interrupted_message(), cause=exc) from None
                stop = exc
        except BaseException:
            # However the run ended: an interrupted or failed run left its W&B run open, and the
            # next wandb.init in the process (a study's next run, in-process or in a reused Ray
            # worker) was handed that run back -- the next run's metrics logged into it.
            self._close(False)
            raise
        try:
            # The run is complete -- every step trained and its rows logged, final/ saved -- even where
            # a stop landed in the save: W&B records it finished (exit 0), as the stop's line says; it
            # recorded a failure (exit 1). The stop's line is the one to see: a close's error is a note.
            self._close(True, failing=stop is not None, release=not hold_directory or stop is not None)
        except KeyboardInterrupt as exc:
            # A stop while the complete run closes: W&B's sink waits (up to 60 s) for its service to
            # write the run file's end. It came out as a bare KeyboardInterrupt, which the command
            # took for a stop before training ("resume with: ... --resume", on a finished run) and
            # the report was never written, nor said to be missing. close_each closed the rest.
            stop_under_way()
            self._release_output()  # (no report follows: the line says `scalerl report` writes it)
            raise RunInterrupted(self._final_interrupted_message(), cause=exc) from None
        except BaseException:  # a close that failed: no report follows either
            self._release_output()
            raise
        if stop is not None:
            raise RunInterrupted(self._final_interrupted_message(), cause=stop) from None
        held = self.__dict__.pop("_dir_lock", None) if hold_directory else None
        return RunSummary(self.output, self.step, list(self.evals), time.perf_counter() - t_start, self.skipped_steps,
                          self.nan_streak, held=held)

    def _train(self, bar: Any) -> None:
        """The loop, its errors said as what to do, and the generators closed however it ended."""
        cfg = self.cfg
        failing = True
        try:
            try:
                self._loop(bar)
            except NonFiniteError as exc:
                raise TrainingError(
                    f"stopped with {self.step} step{'' if self.step == 1 else 's'} done: {exc}. "
                    f"The learning rate (recipe.optimizer.lr = "
                    f"{cfg.recipe.optimizer.lr:g}) is likely too high for this model: lower it and start again"
                ) from None
            except OSError as exc:
                if exc.errno not in _DISK_ERRNOS:
                    raise
                # Before the first checkpoint a new run's directory is emptied (below) and --resume refused there:
                # the line names the command that works, as a stop's does (review cj).
                then = (f"the last complete checkpoint (step {self.checkpoint_step}) is intact: free space, then resume "
                        f"with: scalerl train --output {shlex.quote(str(self.output))} --resume"
                        if self.checkpoint_step is not None
                        else f"before its first checkpoint: free space, then resume with: scalerl train --output "
                        f"{shlex.quote(str(self.output))} --resume" if self.resume
                        else "before its first checkpoint (nothing kept): free space, then run the same command again "
                        "to start it")
                where = lasting_path(exc.filename) if exc.filename else self.output  # (not the temporary: removed)
                raise TrainingError(f"stopped at step {self.step}: cannot write {where}: "
                                    f"{exc.strerror}; {then}") from None
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (errors.Terminated)
                stop_under_way()  # a study's repeated cancels wait for the clean-up below
                raise RunInterrupted(self._interrupted_message(), cause=exc) from None
            except ScaleRLError as exc:  # a generator process or every Ray actor lost: "resume with" this run
                from scalerl.pipeline.pool import with_run_dir

                named = with_run_dir(exc, self.output)
                if named is exc:
                    raise
                raise named from None
            failing = False
        except BaseException:
            if not self.resume:  # failed before its first checkpoint: leave the directory reusable
                self._discard_unstarted(runlog=self.runlog)
            raise
        finally:
            # The reward workers before the generators: a generator thread waiting on a hung
            # reward call returns only when its worker dies, and closing the generators first
            # waited for each such thread up to its join timeout (60 s) before a stop could end.
            close_each([bar.close, self._close_task, self.source.close, self._restore_process_settings],
                       failing=failing)

    def _interrupted_message(self) -> str:
        """Where the run stopped and how to go on: a resume goes on from the last checkpoint (the
        steps after it are trained again), so the line says which; before the first one the run
        directory is left empty (discard_unstarted_run) and the same command starts it again."""
        resume = f"resume with: scalerl train --output {shlex.quote(str(self.output))} --resume"
        if self.checkpoint_step is not None:
            return f"interrupted at step {self.step}, last checkpoint at step {self.checkpoint_step}; {resume}"
        if self.resume:  # (a resume that found no checkpoint started over: it does again)
            return f"interrupted at step {self.step}, before its first checkpoint; {resume}"
        return (f"interrupted at step {self.step}, before its first checkpoint (nothing kept in {self.output}); "
                "run the same command again to start it")

    def _resume_sinks(self) -> None:
        """Tell the metric sinks where this attempt goes on: the steps after the checkpoint (all of
        them, from step 0, where there was none) are logged again, and an earlier attempt's rows for
        them are stale (TensorBoard hides them; W&B cannot, which its note says)."""
        first = self.step + 1 if self.resumed_from is not None else 0
        kept = self._kept_rows() if first and self.sinks else []
        for sink in self.sinks:
            note = sink.resume(first, kept)
            if note:
                print(f"note: {note}", file=sys.stderr)

    def _kept_rows(self) -> list[dict[str, Any]]:
        """The rows the run log keeps from before this attempt (cut back to the checkpoint), as
        :meth:`_log` gave them to the sinks: a sink that lost some logs them again (W&B, killed)."""
        _, rows, _ = read_runlog(self.output / RUNLOG)
        return [r for r in rows if r.get("type") not in (HEADER, RESUME) and isinstance(r.get("step"), int)]

    def _log_resume(self) -> None:
        """A row that says where the run went on, for the report: the rows alone read the same as a
        run trained in one go. Not for a resume with nothing to train (a finished run's report
        regenerated). A resume stopped before its next checkpoint keeps it: the next resume's truncation
        of the run log spares resume rows (runlog.RunLogWriter)."""
        self.runlog.append({"type": RESUME, "from_step": self.step, "utc": _utc_now()})

    def _loop(self, bar: Any) -> None:
        cfg = self.cfg
        stops = stops_delivered()
        if (self.step == 0 and not self.evals) or self._evaluation_missing():
            # R0, the pass rate before RL; or the evaluation of a checkpoint an older scalerl wrote at a max_nan_steps
            # stop, before that step's evaluation (review cj: --resume went on without it, and a study failed the run)
            self._log(self.evaluate())
            self._checkpoint()
        while self.step < cfg.run.steps:
            if stops_delivered() != stops:  # a stop CPython swallowed (raised inside a __del__): taken here
                raise KeyboardInterrupt
            self._train_step()
            bar.update(1)
            done = self.step == cfg.run.steps
            diverged = self.nan_streak >= cfg.run.max_nan_steps
            if self.step % cfg.eval.every == 0 or done:
                row = self.evaluate()
                self._log(row)
                bar.set_postfix_str(_postfix(row, self.evals, cfg.eval.sets[0], self.meter), refresh=False)
                self._checkpoint()
            elif diverged or (cfg.run.checkpoint_every and self.step % cfg.run.checkpoint_every == 0):
                self._checkpoint()
            if diverged:
                # After the step's evaluation and checkpoint, as any step's: checkpointed before its evaluation, the
                # stop left a step whose evaluation row --resume never wrote (review ci: rows 0, 2, 6, 8), and a study
                # resumed a run stopped so at its last step over and over.
                raise TrainingError(
                    f"{self.nan_streak} consecutive steps had a non-finite loss or gradient ({self._nan_reason}); "
                    f"stopped at step {self.step}. Lower recipe.optimizer.lr, check the reward, or raise "
                    "run.max_nan_steps; the run can be resumed with --resume")

    def _evaluation_missing(self) -> bool:
        """Whether the step resumed from is an evaluation step whose evaluation row the run does not have."""
        cfg = self.cfg
        due = self.step % cfg.eval.every == 0 or self.step == cfg.run.steps
        return self.step > 0 and due and not any(e.get("step") == self.step for e in self.evals)

    def _train_step(self) -> None:
        """One step: a batch from the source, the policy update, the weights to the generators, the step's row."""
        cfg = self.cfg
        self.source.wait_ready()  # (outside the clock: generator start-up is no training)
        self.meter.start()
        batch = self.source.next_batch(self.step)
        self.meter.generated(batch.samples, batch.tokens, batch.prompt_tokens)
        # (A batch pickled in a checkpoint written before batches carried their failures has none.)
        add_counts(self.reward_counts, getattr(batch, "reward_failures", {}))
        result = self._update(batch)
        self.meter.trained(result.trained_tokens)
        for lag, n in result.lag_counts.items():
            self.lag_hist[lag] = self.lag_hist.get(lag, 0) + n
        self.step += 1
        self.meter.step = self.step
        if not result.skipped:
            self.version += 1
        self.source.weights_updated(self.weights, self.version, step=self.step)
        self.meter.pause()

        nonfinite = result.skipped and result.reason.startswith("non-finite")
        if result.skipped:
            self.skipped_steps += 1
        self.nan_streak = self.nan_streak + 1 if nonfinite else 0
        self._nan_reason = result.reason
        self._note_collapse([x for g in batch.groups for x in g.rewards])
        if self.step % cfg.log.train_every == 0 or result.skipped:
            self._log(train_row(self.step, batch, result))

    def _update(self, batch: RolloutBatch) -> UpdateResult:
        """The policy update on ``batch``: sharded over the trainer group (the weights then gathered into the
        generator's copy), or in this process."""
        cfg = self.cfg
        if self.group is not None:  # every rank its share
            result = self.group.update(batch.groups, self.version)
            if not result.skipped and self.gen_model is not self.model:
                self.group.gather_into(self.gen_model)
            return result
        return policy_update(
            self.model, self.optimizer, self.scheduler, batch.groups, self.components,
            temperature=cfg.sampling.temperature, pad_token_id=self.pad_id,
            micro_batch_size=cfg.run.micro_batch_size, micro_batch_tokens=self.micro_batch_tokens,
            device=self.device, version=self.version,
            share_prompt=cfg.run.share_prompt_forward, precision=self.precision,
            logits_budget=cfg.run.logits_budget_mb * 2**20,
        )

    def _note_collapse(self, rewards: list[float]) -> None:
        """A note, once a streak, when every completion of COLLAPSE_STEPS steps in a row failed after
        the run had trained (:mod:`scalerl.train.collapse`): the run would go on without a word."""
        self.fail_streak = self.fail_streak + 1 if rewards and not any(x > 0 for x in rewards) else 0
        if self.fail_streak == COLLAPSE_STEPS and self.version > 0:
            note = collapse_note(self.step - COLLAPSE_STEPS + 1, self.step, self.cfg.recipe.optimizer.lr)
            print(f"note: {note} The run goes on; stop it and start again with a lower one, or let it run if the "
                  "problems are this hard", file=sys.stderr)

    # ------------------------------------------------------------------ the end
    def _save_final(self) -> None:
        """Write ``final/``: into a temporary directory, renamed into place (an earlier one -- an
        extended run's -- renamed away first, then deleted), so that no kill leaves a half-written or
        half-deleted ``final/``; a stop (Ctrl-C, SIGTERM) waits for the save, as for a checkpoint."""
        final = self.output / FINAL
        tmp = self.output / f"{FINAL}.tmp-{os.getpid()}"
        old = self.output / f"{FINAL}.old-{os.getpid()}"
        import shutil

        with stops_deferred():
            try:
                if self.group is not None:  # the full weights, gathered in the stored dtype, written through the plain copy
                    weights = self.group.full_weights(getattr(torch, self.policy.storage_dtype))
                    self.group.stop()
                    save_policy(dataclasses.replace(self.policy, model=self.gen_model), tmp, weights=weights)
                else:
                    save_policy(self.policy, tmp, lora_save=self.cfg.model.lora.save)  # in model.dtype; LoRA merged or not
                (tmp / FINAL_STEP_FILE).write_text(json.dumps({"step": self.step}) + "\n")  # renamed in with the model
            except BaseException:  # a full disk: the half-written copy goes at once, not at the next save (its space)
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if final.exists():
                os.rename(final, old)
            os.rename(tmp, final)
            # A kill while an earlier final/ was written or replaced left its copy (a whole model's
            # size): one writer per run directory, as for the checkpoints' leftovers (checkpoint.prune_checkpoints).
            for stale in (*self.output.glob(f"{FINAL}.tmp-*"), *self.output.glob(f"{FINAL}.old-*")):
                shutil.rmtree(stale, ignore_errors=True)
            # Inside the block: a stop held during the save is raised as the block ends, and run()
            # must know final/ is in place (the run complete) to close it as a run that ended well.
            self._final_saved = True

    def _final_interrupted_message(self) -> str:
        """A stop during the final save, which took effect after it, or while the complete run closed
        its files and metric sinks: the run is complete but for its report."""
        return (f"interrupted after the last step ({self.step}) and the final model's save "
                f"({self.output / FINAL}): the run is complete; `scalerl report "
                f"{shlex.quote(str(self.output))}` writes its report")

    def _close(self, ok: bool, *, failing: bool | None = None, release: bool = True) -> None:
        """Files and metric sinks (``ok``: whether the run ended well, as W&B records it; ``failing``:
        the run is on its way out with an error of its own, a close's error only a note -- by default
        where it did not end well), then the directory let go (``release``; else :meth:`run` hands its
        lock over); the reward workers are closed with the generators (:meth:`_train`). A new run discarded
        before its first checkpoint leaves no directory it made (review au: only a refused set-up removed it)."""
        close_each([self.runlog.close, self.samples.close, *(partial(self._end_sink, sink, ok) for sink in self.sinks),
                    *([self._release_output, self._remove_made_output] if release else [])],
                   failing=not ok if failing is None else failing)

    def _release_output(self) -> None:
        """Let the run directory go (:class:`RunDirectoryLock`): the run's files are closed."""
        lock = self.__dict__.pop("_dir_lock", None)
        if lock is not None:
            lock.release()

    def _close_task(self) -> None:
        """Stop the task's reward worker processes (a user function's, math-verify's), if it has any."""
        close = getattr(self.task, "close", None)
        if close is not None:
            close()


def train_row(step: int, batch: RolloutBatch, result: UpdateResult) -> dict[str, Any]:
    """The run log's ``train`` row of a step: the batch's rewards, lengths and interruptions, the update's metrics
    and the batch source's statistics (a skipped update says why)."""
    rewards = [x for g in batch.groups for x in g.rewards]
    comps = batch.completions
    row = {
        "type": "train",
        "step": step,
        "reward_mean": sum(rewards) / max(len(rewards), 1),
        "train_pass_rate": sum(x > 0 for x in rewards) / max(len(rewards), 1),
        "mean_len": sum(len(c.token_ids) for c in comps) / max(len(comps), 1),
        "frac_interrupted": sum(c.interrupted for c in comps) / max(len(comps), 1),
        "skipped": result.skipped,
        **result.metrics,
        **batch.stats,
    }
    if result.skipped:
        row["skip_reason"] = result.reason
    return row


def _utc_now() -> str:
    """The time as the run log's rows give it: UTC, to the second (``2026-12-06T04:30:00Z``)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _progress(cfg: TrainConfig, initial: int):
    from tqdm.auto import tqdm

    return tqdm(total=cfg.run.steps, initial=initial, desc="train", unit="step", disable=not cfg.log.progress,
                dynamic_ncols=True, file=sys.stderr)


def _postfix(row: dict[str, Any], evals: Sequence[dict[str, Any]], main_set: str, meter: ComputeMeter) -> str:
    rate = meter.samples / max(meter.seconds, 1e-9)
    parts = [f"{main_set} {row[f'{main_set}/pass_rate']:.3f}", f"{rate:.0f} samples/s"]
    # Between refits (forecast.refit_growth) the bar keeps showing the last refit's forecast.
    fitted = next((r for r in reversed(evals) if not str(r.get("forecast/status", "")).startswith("not refitted")), row)
    status = fitted.get("forecast/status", "")
    if status == "ok":
        # A pass rate's ceiling at its bound of 1 is none measured yet (the fit's own warning): "A 1.000" read as one.
        A = fitted["forecast/A"]
        ceiling = f"A {A:.3f}" if A < 1 - 1e-6 else "no ceiling yet (A at its bound 1)"
        from scalerl.curves.stability import UNTESTED  # (here: the trainer imports without scipy -- a GPU box's)

        untested = " (not yet tested for a fall)" if fitted.get("forecast/stability") == UNTESTED else ""
        parts.append(f"forecast {ceiling} -> {fitted['forecast/R_budget']:.3f} at budget{untested}")
    elif status.startswith(("unstable", "no fit")):  # (the bar went silent where the run log says why: review bc)
        parts.append(f"forecast: {status.partition(':')[0]} (forecast/status in the run log)")
    return ", ".join(parts)

