"""Worker process that runs a user reward function (see :mod:`scalerl.tasks.rewards`).

    python -m scalerl.tasks.reward_worker 'my_rewards:score'

Protocol, one JSON object per line: the worker first writes ``{"ready": true}`` or
``{"load_error": "..."}``; then for each request ``{"prompt", "completion", "answer"}`` read
from stdin it writes ``{"value": float}``, ``{"timeout": "..."}`` (the function raised ``TimeoutError``: a
limit of its own ran out) or ``{"error": "..."}``. The function's own prints
go to stderr so they cannot corrupt the protocol on stdout.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from scalerl.parent_death import die_with_parent
from scalerl.stop_signals import ignore_stops
from scalerl.tasks.base import is_bool

ARGUMENTS = ("prompt", "completion", "answer")

#: The largest finite float32 (``torch.finfo(torch.float32).max``; not imported, the worker starts
#: without torch). Rewards are held in float32, where a larger one is inf and every loss NaN.
FLOAT32_MAX = 3.4028234663852886e38


def load_function(spec: str) -> Callable[..., Any]:
    """Import ``module.path:function`` or ``path/to/file.py:function`` (raises ValueError with the reason)."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"reward function {spec!r} must look like 'module:function' or 'path/to/file.py:function'")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ValueError(f"reward function file {target!r} does not exist")
        sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
        package = _in_package(path)
        module, package_error = _import_package_module(*package, path) if package is not None else (None, None)
        if module is not None:
            return _function(module, name)
        module_spec = importlib.util.spec_from_file_location(_module_name(path), path)
        module = importlib.util.module_from_spec(module_spec)
        # Registered as importing would: dataclasses resolve a class's string annotations (``from
        # __future__ import annotations``) and pickle finds a function through sys.modules[__module__]
        # -- without it such a file was refused at load, and a process pool's calls all scored -1.
        sys.modules[module_spec.name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException as exc:
            del sys.modules[module_spec.name]
            if package_error is None or not isinstance(exc, Exception):
                raise
            # Both routes failed: the package's error is the file's own where it uses relative imports.
            raise ValueError(f"cannot import {path} as {package[1]} ({type(package_error).__name__}: "
                             f"{package_error}) nor on its own ({type(exc).__name__}: {exc})") from exc
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ValueError(f"cannot import module {target!r} for reward function {spec!r}: {exc}") from exc
    return _function(module, name)


def _function(module: Any, name: str) -> Callable[..., Any]:
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{module.__name__!r} has no function {name!r}")
    return fn


def _in_package(path: Path) -> tuple[Path, str] | None:
    """``(root, dotted name)`` of a file that lies in a package (its folder holds ``__init__.py``), else None.

    Such a file is imported as a member of its package where that works (:func:`_import_package_module`):
    its relative imports (``from .util import x``) work, and a ``mypkg.rewards:score`` given as a module from the working directory is stored as the
    file's absolute path (train/config.py) and still imported as ``mypkg.rewards`` from anywhere."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    in_package = len(parts) > (0 if path.name == "__init__.py" else 1)
    if not in_package or not all(part.isidentifier() for part in parts):
        return None
    return folder, ".".join(parts)


def _import_package_module(root: Path, dotted: str, path: Path) -> tuple[Any, Exception | None]:
    """``(module, None)``: the file at ``path`` imported as ``dotted``, a member of its package under
    ``root``; ``(None, why)``, every import undone, where that does not give this very file: a folder named
    like a module already imported (``math/``), a package ``__init__`` that fails (a project root's, never
    meant to be imported with the file), a package of the same name found first. The file is then imported
    on its own, as any file given by path always was."""
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(dotted)
        found = Path(getattr(module, "__file__", "") or "")
        if found.resolve() == path.resolve():
            return module, None
        error: Exception = ImportError(f"{dotted} is {found}, another file")
    except Exception as exc:  # noqa: BLE001 -- any failure of the package route: the file's own route decides
        error = exc
    sys.path[:] = saved_path
    # Undone: the package's own modules, and any other the attempt found under ``root`` (a project's
    # ``config.py`` that its __init__ imported would shadow the file's own sibling of that name). A module it
    # imported from elsewhere (numpy) stays -- deleted, its next import failed ("cannot load module more than
    # once per process"), and the file's own import with it.
    top = dotted.split(".", 1)[0]
    for name in set(sys.modules) - saved_modules:
        if name == top or name.startswith(top + ".") or _lies_under(sys.modules[name], root):
            del sys.modules[name]
    return None, error


def _lies_under(module: Any, folder: Path) -> bool:
    """Whether ``module`` was loaded from a file inside ``folder``."""
    origin = getattr(module, "__file__", None)
    try:
        return bool(origin) and Path(origin).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _module_name(path: Path) -> str:
    """The name a reward file is imported under: its own stem where ``import <stem>`` finds this very file
    (its folder is first on sys.path), so that a process pool started with spawn or forkserver -- macOS's
    default, and Linux's from Python 3.14 -- imports it by that name in its children and runs its functions
    there; a prefixed name where the stem is taken (``math.py``, an imported module, a name that is not an
    identifier), which fork-started pools still take."""
    stem = path.stem
    if stem.isidentifier() and stem not in sys.modules:
        importlib.invalidate_caches()  # a folder listed before the file was written
        try:
            found = importlib.util.find_spec(stem)
        except (ImportError, ValueError):
            found = None
        if found is not None and found.origin and Path(found.origin).resolve() == path.resolve():
            return stem
    return f"scalerl_user_reward_{stem}"


def accepted_arguments(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Which of prompt/completion/answer ``fn`` takes (by name); ValueError if it needs anything else."""
    params = inspect.signature(fn).parameters.values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    # Arguments are passed by name: a positional-only one (``def f(completion, /)``) cannot get its value.
    names = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
    # A required parameter of another name is refused with or without **kwargs: TRL's batch contract,
    # ``def reward(completions, **kwargs)``, loaded, then failed on every call of the first evaluation.
    unknown = [
        p.name
        for p in params
        if (p.name not in names or p.name not in ARGUMENTS) and p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if unknown or not (takes_any or names & set(ARGUMENTS)):
        batch = (" -- it is called once per completion, with strings, not with lists as TRL's reward functions "
                 "(completions, prompts) are") if {"completions", "prompts"} & set(unknown) else ""
        name = getattr(fn, "__name__", type(fn).__name__)  # a callable object has no __name__
        raise ValueError(
            f"reward function {name}{inspect.signature(fn)} must take parameters named from "
            f"{', '.join(ARGUMENTS)} (any of them, by name) and return a number (> 0 is a pass) or a bool "
            f"(True +1, False -1), e.g. def reward(completion, answer): return completion.strip() == answer{batch}"
        )
    return ARGUMENTS if takes_any else tuple(a for a in ARGUMENTS if a in names)


def to_reward(value: Any) -> float:
    """bool -> +1 / -1 (pass / fail); a real number finite in float32 as is; anything else is an error.

    Text is an error even where it reads as a number: a function that returns the answer it
    extracted (``'42'``) instead of comparing it would otherwise score 42, a pass."""
    value = _one_value(value)
    if is_bool(value):  # (numpy's too: a comparison of numpy values; it scored 1.0 / 0.0)
        return 1.0 if value else -1.0
    if isinstance(value, (str, bytes)):
        raise TypeError(f"returned {type(value).__name__} {value!r}, not a number (return a number or a bool, "
                        "e.g. the comparison of the extracted answer with `answer`)")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"returned {type(value).__name__} {value!r}, not a number") from None
    if not math.isfinite(out):
        raise ValueError(f"returned {out}, not a finite number")
    if abs(out) > FLOAT32_MAX:
        raise ValueError(f"returned {out:g}, outside the float32 range the trainer holds rewards in "
                         "(rewards should be on the order of +-1)")
    return out


def _one_value(value: Any) -> Any:
    """A 0-d array or tensor (numpy, torch, jax, ...) as the Python value it holds, through its own
    ``item()``: a comparison of torch tensors -- a classifier judge's ``logits.argmax() == label`` --
    is a 0-d bool tensor, which ``float()`` read as 1.0 / 0.0 where a bool scores +1 / -1.

    An array of any other shape is refused, (1,) included. numpy refuses to read one as a number
    (deprecated since 1.25, an error in 2.x) and torch did not; we side with numpy: a reward is one
    number per completion, and a (1,) array is most often a batch or a row that happens to hold one
    element (a judge's ``logits.softmax(-1)[:, 1]`` over a batch of one) -- its shape is the
    function's bug, which the next batch size would show as a refusal anyway."""
    shape = getattr(value, "shape", None)
    if shape is None or isinstance(value, (str, bytes)) or not callable(getattr(value, "item", None)):
        return value
    try:
        shape = tuple(shape)
    except TypeError:  # a `shape` attribute that is no shape: not an array; float() decides
        return value
    if shape:
        raise TypeError(f"returned {type(value).__name__} of shape {shape}, not one number (return one value per "
                        "completion, e.g. value.item() of a one-element tensor)")
    return value.item()


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, even one whose ``str()`` raises itself (which crashed the
    worker on every call: a traceback on stderr and a restart, scored as a died worker)."""
    try:
        text = str(exc)
    except Exception as inner:  # noqa: BLE001 -- the user's __str__ may raise anything
        text = f"<its message could not be made: {type(inner).__name__} in its __str__>"
    return f"{type(exc).__name__}: {text}"


def _exit_with_parent(interval: float = 0.5) -> None:
    """Exit when the process that started this worker is gone. At the end of its requests the
    worker exits by itself, but a call hung for good -- the case ``task.reward_timeout`` exists for --
    never reads that end: after a ``kill -9`` of the trainer (or of the generator process or Ray actor
    that scores with it) the worker stayed behind for good. On Linux the kernel kills the worker
    (:func:`~scalerl.parent_death.die_with_parent`), even in a call stuck in C code that holds the
    GIL; elsewhere a thread watches the parent (which such a call stops too: then only the timeout's
    kill, from a living parent, ends the worker)."""
    if die_with_parent():
        return
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    threading.Thread(target=watch, name="scalerl-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _exit_with_parent()
    ignore_stops()  # the trainer kills this worker when it closes (kill -9 of it: _exit_with_parent)
    # Keep the protocol channels private: move them to fresh descriptors, then point fds 0 / 1
    # at /dev/null / stderr, so even a C extension writing to fd 1 cannot corrupt a reply.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    requests = os.fdopen(os.dup(0), "r")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    try:
        fn = load_function(argv[0])
        names = accepted_arguments(fn)
    except BaseException as exc:  # noqa: BLE001 -- any import-time failure is reported, not raised
        out.write(json.dumps({"load_error": describe(exc)}) + "\n")
        return 2
    out.write(json.dumps({"ready": True}) + "\n")
    # An `async def` function (an LLM judge, a remote verifier; TRL takes them too) is awaited,
    # every call on the same event loop, so clients it keeps between calls stay usable.
    loop = asyncio.new_event_loop()
    for line in requests:
        request = json.loads(line)
        try:
            value = fn(**{k: request[k] for k in names})
            if inspect.isawaitable(value):
                value = loop.run_until_complete(value)
            reply = {"value": to_reward(value)}
        except TimeoutError as exc:  # a limit of the function's own ran out (math-verify's, a judge's request)
            reply = {"timeout": describe(exc)}
        except BaseException as exc:  # noqa: BLE001 -- a failing reward is data, not a crash
            reply = {"error": describe(exc)}
        out.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
