"""The tiny model: a ~1M-parameter Qwen2 causal LM with a character tokenizer, warm-started on arithmetic.

It is a real Hugging Face model directory (``config.json``, ``model.safetensors``,
``generation_config.json``, ``tokenizer.json``), so every code path that trains it trains a
real model, and the result loads with ``AutoModelForCausalLM.from_pretrained``.

Building it takes seconds (supervised warm start, see :mod:`scalerl.models.warmstart`), so
the directory is cached under ``$SCALERL_CACHE`` (default ``~/.cache/scalerl``) in
``tiny/<key>``, the key a hash of everything that determines the weights. The directory is
written under a temporary name and renamed into place, so a crash or a concurrent builder
never leaves a half-written model behind.

    python -c "from scalerl.models.tiny import tiny_model_dir; print(tiny_model_dir())"
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock

#: Bump when the build procedure changes in a way the settings below do not capture.
BUILD_VERSION = 3


@dataclass(frozen=True)
class TinyArchitecture:
    """Qwen2 shape of the tiny model (defaults: 1.08M parameters with the 103-token vocabulary)."""

    hidden_size: int = 128
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    max_position_embeddings: int = 512
    """Room for prompt + scratchpad + the 74-token interruption phrase + answer."""


@dataclass(frozen=True)
class TinySpec:
    """Everything that determines the tiny model's weights (and so its cache key)."""

    architecture: TinyArchitecture = field(default_factory=TinyArchitecture)
    task: str = "arithmetic"
    """Registered task whose training problems' reference completions the warm start imitates
    (the task the model is then trained on with RL)."""
    task_settings: dict[str, Any] = field(default_factory=lambda: {"digits": 2})
    """The task's settings (``get_task(task, **task_settings)``)."""
    warm_start_steps: int = 200
    """Chosen for a low, non-zero sampled pass rate that RL can lift within minutes. Measured
    (``benchmarks/tiny_warm_start.py``, mean@8 on ``val`` at temperature 1 / greedy): 150 steps
    0.056 / 0.335, 175 steps 0.096 / 0.395, 200 steps 0.308 / 0.775 -- a steep stretch, so other
    hardware may land a little apart. From 175 steps RL took off several times slower (measured
    with the cpu-tiny profile: 0.15 -> 0.27 in 150 steps at 190, 0.32 -> 0.69 at 200)."""
    warm_start_batch_size: int = 32
    warm_start_lr: float = 3e-3
    warm_start_noise: float = 0.0
    """Share of the demonstrations' digits replaced at random (:func:`~scalerl.models.warmstart.corrupt_digits`)."""
    seed: int = 0

    def key(self) -> str:
        payload = json.dumps({"build": BUILD_VERSION, **dataclasses.asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _ladder(hidden: int, layers: int, heads: int) -> TinySpec:
    """A size of the ``arithmetic-mix`` ladder: same task, data, steps and noise for every size;
    the warm-start learning rate scales as 1/width (Adam's rule for hidden weights: the same
    per-step change of every layer's output), 3e-3 at width 128."""
    arch = TinyArchitecture(hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                            num_attention_heads=heads, num_key_value_heads=heads)
    return TinySpec(architecture=arch, task="arithmetic-mix",
                    # Spelled out, not left to the task's defaults, so that the cache key sees them
                    # (a change of the task's other defaults needs a BUILD_VERSION bump).
                    task_settings={"min_digits": 2, "max_digits": 4}, warm_start_steps=700,
                    warm_start_lr=round(3e-3 * 128 / hidden, 8), warm_start_noise=0.03)


#: Tiny models by name (``--model NAME``). ``tiny`` is the original 1.08M-parameter model
#: warm-started on 2-digit ``arithmetic`` (every fit on it ends at A = 1). ``tiny-s``,
#: ``tiny-m``, ``tiny-l`` are the model-size ladder of the ``arithmetic-mix`` workload, each
#: warm-started the same way (:func:`_ladder`); tiny-m has tiny's architecture. What each reaches
#: is measured in ``benchmarks/workload_movers.py``.
TINY_MODELS: dict[str, TinySpec] = {
    "tiny": TinySpec(),
    "tiny-s": _ladder(64, 2, 4),
    "tiny-m": _ladder(128, 4, 4),
    "tiny-l": _ladder(192, 4, 6),
}


#: The model-size ladder of the arithmetic-mix workload, smallest first.
LADDER = ("tiny-s", "tiny-m", "tiny-l")


def tiny_spec(name: str) -> TinySpec | None:
    """The spec of tiny model ``name`` (a key of :data:`TINY_MODELS`), None for anything else."""
    return TINY_MODELS.get(name)


def cache_root() -> Path:
    """``$SCALERL_CACHE`` if set, else ``~/.cache/scalerl``."""
    return Path(os.environ.get("SCALERL_CACHE") or Path.home() / ".cache" / "scalerl")


def build_tiny_model(tokenizer: Any, architecture: TinyArchitecture = TinyArchitecture(), seed: int = 0) -> Any:
    """A freshly initialised Qwen2ForCausalLM sized for ``tokenizer`` (fp32, eval mode)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        **dataclasses.asdict(architecture),
        tie_word_embeddings=False,  # a separate head keeps an FP32-head swap simple
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


def make_tiny_model(spec: TinySpec = TinySpec(),
                    progress: Callable[[int], Any] | None = None) -> tuple[Any, Any, dict]:
    """Build and warm-start the tiny model in memory: ``(model, tokenizer, info)``. ``progress``:
    called with 1 after every warm-start step."""
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.models.warmstart import WarmStartConfig, supervised_warm_start
    from scalerl.tasks.registry import get_task

    tokenizer = build_char_tokenizer()
    model = build_tiny_model(tokenizer, spec.architecture, spec.seed)
    task = get_task(spec.task, **spec.task_settings)
    pairs = [(p.prompt, task.reference_completion(p)) for p in task.train_problems()]
    warm = WarmStartConfig(
        steps=spec.warm_start_steps, batch_size=spec.warm_start_batch_size, lr=spec.warm_start_lr, seed=spec.seed,
        digit_noise=spec.warm_start_noise,
    )
    stats = supervised_warm_start(model, tokenizer, pairs, warm, progress)
    info = {
        "spec": dataclasses.asdict(spec),
        "key": spec.key(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "warm_start": stats,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return model, tokenizer, info


def tiny_model_dir(spec: TinySpec = TinySpec(), cache_dir: str | os.PathLike | None = None, *,
                   progress: bool = False) -> Path:
    """Path of the cached tiny model directory for ``spec``, building it first if needed.

    ``progress``: a progress bar (stderr) over the warm start when it is built here -- minutes on
    two cores (tiny-m's 700 steps: ~95 s on a 2-core AMD EPYC), once per machine."""
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    target = root / "tiny" / spec.key()
    if (target / "scalerl_tiny.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # One build per spec: processes that start together (a study's parallel runs, test workers)
    # wait for the first builder instead of each spending the warm start on the same directory.
    locks = root / ".locks"  # beside, not inside, the model directories
    locks.mkdir(parents=True, exist_ok=True)
    with FileLock(locks / f"tiny-{spec.key()}.lock"):
        if not (target / "scalerl_tiny.json").exists():
            _build(spec, target, progress)
    return target


def _build(spec: TinySpec, target: Path, progress: bool) -> None:
    """Warm-start ``spec`` (a progress bar over it where ``progress``) and move the saved directory
    into place atomically."""
    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # save_pretrained's "Writing model shards": ours is the bar to show
    if progress:  # the path on a line of its own: in the bar's description it pushed the counter off narrow lines
        print(f"building the tiny model (once; cached in {target.parent})", file=sys.stderr, flush=True)
    with tqdm(total=spec.warm_start_steps, desc="tiny model warm start", unit="step", leave=False,
              disable=not progress, dynamic_ncols=True, file=sys.stderr) as bar:
        model, tokenizer, info = make_tiny_model(spec, bar.update)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.key()}.", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # Written last: its presence marks a complete directory.
        (tmp / "scalerl_tiny.json").write_text(json.dumps(info, indent=2) + "\n")
        try:
            os.rename(tmp, target)
        except OSError:
            # Another process finished the same build first; its copy is as good as ours.
            if not (target / "scalerl_tiny.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
