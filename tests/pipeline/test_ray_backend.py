"""The Ray backend on a local CPU cluster: a generator actor killed mid-batch is restarted and the run
trains on exactly the batches it would have (none lost, none twice); PipelineRL-k on actors keeps
the lag bound. One Ray session for the module (starting Ray costs seconds)."""

from __future__ import annotations

import threading
import time

import pytest

from scalerl.train.config import TrainConfig, resolve
from scalerl.train.trainer import Trainer

pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster]
ray = pytest.importorskip("ray")

#: Columns that measure wall-clock time or the pipeline's own timing, which no two runs share.
TIMING = ("gpu_hours",)


@pytest.fixture(scope="module")
def ray_cluster(ray_cluster_lock):
    with ray_cluster_lock:  # the session lives as long as the module: no other worker's cluster beside it
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        yield
        ray.shutdown()


def _cfg(out, *overrides):
    return resolve(TrainConfig(), [
        f"run.output={out}", "log.progress=false", "run.threads=1", "run.steps=4", "eval.every=2",
        "batch.prompts_per_step=4", "batch.generations_per_prompt=4", "eval.problems=16",
        "eval.samples_per_problem=2", "forecast.enabled=false", *overrides,
    ])


def _record(trainer):
    """Wrap the source: what each step trained on (batch index, prompts, completions)."""
    seen = []
    inner = trainer.source.next_batch

    def next_batch(step):
        batch = inner(step)
        seen.append((batch.stats["batch_index"], [g.problem.id for g in batch.groups],
                     [c.token_ids for c in batch.completions]))
        return batch

    trainer.source.next_batch = next_batch
    return seen


def _rows(summary):
    return [{k: v for k, v in r.items() if k not in TIMING and not k.startswith(("pipeline/", "memory/"))} for r in summary.evals]


@pytest.mark.extended  # (one Ray cluster at a time: the default run's longest serial path)
def test_a_killed_actor_is_restarted_and_no_batch_is_lost_or_duplicated(tiny_dir, tmp_path, ray_cluster):
    sync = ["pipeline=sync", "k=1"]
    local = Trainer(_cfg(tmp_path / "local", *sync))
    local_seen = _record(local)
    local_summary = local.run()

    trainer = Trainer(_cfg(tmp_path / "ray", *sync, "backend.name=ray", "backend.generators=1"))
    seen = _record(trainer)
    pool = trainer.source.pool
    killed = []

    def kill_during_batch_2():
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            if pool.busy_workers().get(0) == 2:  # actor 0 is generating batch 2 right now
                pool.kill(0)
                killed.append(True)
            time.sleep(0.005)

    killer = threading.Thread(target=kill_during_batch_2, daemon=True)
    killer.start()
    summary = trainer.run()
    killer.join(5)

    assert killed, "batch 2 was never seen in flight"
    stats = summary.evals[-1]
    assert stats["pipeline/actor_restarts"] == 1 and stats["pipeline/requeued"] >= 1
    # Every batch once, in order, with exactly the prompts the uninterrupted local run drew.
    assert [s[0] for s in seen] == [0, 1, 2, 3]
    assert [s[:2] for s in seen] == [s[:2] for s in local_seen]
    # In sync mode with per-batch seeds even the completions match the local backend's: the
    # restarted actor regenerated batch 2 from the same request and weights. (Up to float noise:
    # the same forward pass in two processes can differ by ~1e-6 in a log-prob, which may very
    # rarely flip a sampled token -- hence "almost all", not "all".)
    same = [a == b for s, r in zip(seen, local_seen) for a, b in zip(s[2], r[2])]
    assert sum(same) >= 0.9 * len(same)
    for a, b in zip(_rows(summary), _rows(local_summary)):
        assert a["step"] == b["step"] and abs(a["val/pass_rate"] - b["val/pass_rate"]) <= 0.1


@pytest.mark.extended  # (one Ray cluster at a time: the default run's longest serial path)
def test_evaluations_on_the_actors_are_the_trainers_own_when_greedy(tiny_dir, tmp_path, ray_cluster):
    # Greedy, with a fixed thinking budget (a drawn one depends on the sampling seeds, which the
    # actors' shares have their own of): the actors must sample what the trainer's model samples.
    same = ["pipeline=sync", "k=1", "backend.name=ray", "backend.generators=2", "backend.generator_cpus=0.5",
            "eval.temperature=0", "recipe.length.think_budget=[22, 22]", "eval.problems=24",
            "run.steps=2"]  # one update between the two evaluations is enough to tell the weights apart
    rows = {}
    for engine in ("trainer", "generators"):
        summary = Trainer(_cfg(tmp_path / engine, *same, f"eval.engine={engine}")).run()
        rows[engine] = [(r["step"], r["val/pass_rate"], r["val/mean_len"], r["eval_tokens"]) for r in summary.evals]
    assert [r[0] for r in rows["generators"]] == [0, 2]
    assert rows["generators"] == rows["trainer"]


def test_pipeline_rl_on_actors_keeps_the_lag_bound(tiny_dir, tmp_path, ray_cluster):
    # Evaluated on the actors too: their shares go ahead of the training batches in the queue.
    trainer = Trainer(_cfg(tmp_path / "ray", "pipeline=pipeline-rl-k", "k=2", "backend.name=ray",
                           "backend.generators=2", "backend.generator_cpus=0.5", "run.steps=6",
                           "eval.engine=generators"))
    seen = _record(trainer)
    summary = trainer.run()
    assert [s[0] for s in seen] == list(range(6))
    assert [r["step"] for r in summary.evals] == [0, 2, 4, 6]
    assert all(0.0 <= r["val/pass_rate"] <= 1.0 and r["val/mean_len"] > 0 for r in summary.evals)
    last = summary.evals[-1]
    assert last["lag_max_since_eval"] <= 2
    assert all(int(k.split("/")[1]) <= 2 for r in summary.evals for k in r if k.startswith("lag_hist/"))
    assert sum(v for r in summary.evals for k, v in r.items() if k.startswith("lag_hist/")) > 0
    assert 0.0 <= last["pipeline/trainer_wait_frac"] <= 1.0 and last["pipeline/samples_per_s"] > 0
    assert last["pipeline/actor_restarts"] == 0 and last["pipeline/requeued"] == 0


def test_an_actor_that_cannot_start_says_why_in_one_error(tiny_dir, tmp_path, ray_cluster):
    """`--backend ray --set backend.generator=vllm` where the actors' machine has no vLLM: the
    actor's constructor raised the one-line ConfigError, Ray killed the actor, and the command
    ended with a page of ActorDiedError traceback (exit 1) plus the actor's own, streamed."""
    import importlib.util

    from scalerl.errors import ConfigError

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here: its actors would start")
    # object_store: nccl (vLLM's default sync) with this CPU trainer is refused before any actor starts.
    cfg = _cfg(tmp_path / "vllm", "pipeline=sync", "k=1", "backend.name=ray", "backend.generator=vllm",
               "backend.generator_cpus=0.5", "backend.weight_sync=object_store")
    with pytest.raises(ConfigError, match=r"backend.generator=vllm needs vLLM on the generator machines"):
        Trainer(cfg)


def test_an_evaluation_after_the_dispatcher_stopped_hears_why(tiny_dir, tmp_path, ray_cluster):
    """CI once failed with 'the generator pool was closed' in an evaluation: the dispatcher thread had
    stopped on an exception, which went to the scheduler only, and the evaluation's jobs heard a
    generic line instead. Both must hear the same error, naming the cause."""
    from scalerl.generate.base import SamplingParams
    from scalerl.pipeline.pool import PipelineError
    from scalerl.pipeline.pool_generator import GenerateJob

    trainer = Trainer(_cfg(tmp_path / "ray", "pipeline=sync", "k=1", "backend.name=ray", "backend.generators=1",
                           "backend.generator_cpus=0.5"))
    pool = trainer.source.pool
    try:
        def broken_assign():
            raise RuntimeError("boom in the dispatcher")

        pool._assign = broken_assign
        failures = []
        pool.start(lambda result: None, failures.append)
        pool._thread.join(timeout=30)
        assert not pool._thread.is_alive()
        with pytest.raises(PipelineError, match="stopped on RuntimeError: boom in the dispatcher") as caught:
            pool.submit_jobs([GenerateJob([[1, 2, 3]], SamplingParams(max_new_tokens=4), False)])
        assert failures == [caught.value]  # the trainer's next batch raises the same error
    finally:
        trainer.source.close()
