"""Names of precision modes and storage dtypes, with the aliases people type. No torch here.

Two different things have a dtype in a run, and they are kept apart:

* ``precision.compute`` -- what the forward and backward passes (and the generators) compute
  in: ``fp32``, ``bf16``, ``fp16`` or ``auto``. The trained weights and the optimizer state
  are fp32 in every mode (master weights), as in torch AMP, accelerate, TRL and FSDP2's
  ``MixedPrecisionPolicy``; stepping bf16 weights directly loses updates smaller than a bf16
  ulp (an lr of 5e-7 on weights near 0.02 moves almost none of them).
* ``model.dtype`` -- the *storage* dtype: what the weights are stored in on disk, i.e. what
  ``final/`` is written in. Null means the dtype the starting checkpoint was stored in.

    compute_mode("bfloat16") == "bf16";  storage_dtype("bf16") == "bfloat16"
"""

from __future__ import annotations

from scalerl.errors import ConfigError

#: precision.compute values.
COMPUTE_MODES = ("auto", "fp32", "bf16", "fp16")
_COMPUTE_ALIASES = {
    "auto": "auto",
    "fp32": "fp32", "float32": "fp32", "float": "fp32", "full": "fp32", "32": "fp32",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16", "16": "fp16",
}

#: model.dtype values (torch's names).
STORAGE_DTYPES = ("float32", "bfloat16", "float16")
_STORAGE_ALIASES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float16": "float16", "fp16": "float16", "half": "float16",
}

#: compute mode -> torch dtype name.
COMPUTE_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _normalise(value: object) -> str:
    return str(value).strip().lower().removeprefix("torch.")


def compute_mode(value: object) -> str:
    """The canonical precision mode of ``value`` (aliases accepted); ConfigError listing the valid ones."""
    mode = _COMPUTE_ALIASES.get(_normalise(value))
    if mode is None:
        raise ConfigError(f"precision.compute: unknown value {value!r}; valid: {', '.join(COMPUTE_MODES)} "
                          "(aliases float32, bfloat16, float16, half)")
    return mode


def storage_dtype(value: object) -> str | None:
    """The torch dtype name of ``value`` (aliases accepted; None stays None); ConfigError listing the valid ones."""
    if value is None:
        return None
    name = _STORAGE_ALIASES.get(_normalise(value))
    if name is None:
        raise ConfigError(f"model.dtype: unknown value {value!r}; valid: {', '.join(STORAGE_DTYPES)} "
                          "(aliases fp32, bf16, fp16, half) or null (the checkpoint's own)")
    return name


def dtype_problems(compute: object, storage: object) -> list[str]:
    """One message per invalid value (for TrainConfig.validate)."""
    problems = []
    for check, value in ((compute_mode, compute), (storage_dtype, storage)):
        try:
            check(value)
        except ConfigError as exc:
            problems.append(str(exc))
    return problems
