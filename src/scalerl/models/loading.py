"""Load the policy the trainer starts from: ``tiny``, a local model directory, or a hub id.

    model, tokenizer = load_model("tiny")                  # cached, warm-started tiny model
    model, tokenizer = load_model("runs/demo/final")        # any saved Hugging Face model directory
    model, tokenizer = load_model("Qwen/Qwen3-0.6B", dtype="bfloat16")
    stored_dtype("runs/demo/final")                          # "float32": what its weights are stored in
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
from pathlib import Path
from typing import Any, Iterator

from scalerl.errors import InputError
from scalerl.hub import hub_unreachable
from scalerl.models.attention_request import drop_missing_flash_attention, refuse_missing_flash_attention
from scalerl.models.tiny import TinySpec
from scalerl.models.unloaded_weights import unloaded_weights

#: What a hub id looks like: 'name' or 'owner/name' (letters, digits, '-', '_', '.').
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def resolve_model(name_or_path: str, cache_dir: str | None = None, tiny_spec: TinySpec | None = None, *,
                  progress: bool = False) -> str:
    """A path or hub id ``from_pretrained`` can load; a tiny model name (``tiny``, ``tiny-s``, ...)
    becomes its cached directory (built if needed, from ``tiny_spec`` -- a
    :class:`~scalerl.models.tiny.TinySpec` -- or the name's own spec; ``progress``: with a progress
    bar over the build, minutes on a machine's first run)."""
    from scalerl.models.tiny import tiny_model_dir, tiny_spec as named_tiny_spec

    if named_tiny_spec(name_or_path) is not None:  # tiny, tiny-s, tiny-m, tiny-l (models/tiny.py)
        return str(tiny_model_dir(tiny_spec or named_tiny_spec(name_or_path), cache_dir=cache_dir, progress=progress))
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file() and adapter_base(str(path)) is None:
            _refuse_run_part(path, name_or_path)
            raise InputError(f"model directory {name_or_path!r} has no config.json; is it a Hugging Face model directory?")
        return str(path)
    if path.exists():
        raise InputError(f"model path {name_or_path!r} is a file; give the model's directory")
    looks_local = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1
    if looks_local or not _HUB_ID.fullmatch(name_or_path):
        raise InputError(f"model path {name_or_path!r} does not exist (and is not a Hugging Face hub id)")
    why = hub_unreachable(name_or_path)
    if why is not None:
        raise InputError(f"model {name_or_path!r} is not a local directory and not in the Hugging Face cache, and "
                         f"{why}; check the name (a local path?) or download it first")
    return name_or_path


def _refuse_run_part(path: Path, given: str) -> None:
    """A scalerl run directory, its ``checkpoints`` folder or one checkpoint (``step_N``: training
    state for ``--resume``, sharded under ``--nproc``) given as a model: say where the run's model is."""
    if (path / "config.yaml").is_file() and (path / "runlog.jsonl").is_file():
        raise InputError(f"{given!r} is a scalerl run directory, not a model directory; its model is "
                         f"{str(path / 'final')!r} (scalerl eval --run {shlex.quote(str(path))} evaluates it as "
                         f"the run did)")
    if (path / "state.pt").is_file() and path.parent.name == "checkpoints":
        run, what = path.parent.parent, "is a training checkpoint"
    elif path.name == "checkpoints" and (path / "latest").is_file():
        run, what = path.parent, "holds the training checkpoints"
    else:
        return
    raise InputError(f"{given!r} {what} of the run {str(run)!r} (its state for --resume), not a model directory; "
                     f"the run's model is {str(run / 'final')!r} (scalerl eval --run {shlex.quote(str(run))}), "
                     f"written at its end "
                     f"(a stopped run: scalerl train --output {shlex.quote(str(run))} --resume)")


def adapter_base(source: str) -> str | None:
    """The base model of a LoRA adapter directory (peft's ``adapter_config.json`` beside no
    ``config.json``: what ``final/`` holds with ``model.lora.save=adapter``), or None for anything
    else. Such a directory is loaded as its base with the adapter merged in (:func:`load_model`)."""
    import json

    path = Path(source)
    if not path.is_dir() or (path / "config.json").is_file() or not (path / "adapter_config.json").is_file():
        return None
    try:
        base = json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        base = None
    if not base:
        raise InputError(f"{source!r} holds a LoRA adapter whose adapter_config.json names no base model "
                         "(base_model_name_or_path); set it to the base model's directory or hub id")
    return str(base)


#: How peft's ``PeftModel.from_pretrained`` words adapter weights absent from the files: it warns, does not
#: raise, and filters the keys so that the warning has no false positives -- peft 0.21 "Found missing adapter
#: keys while loading the checkpoint: [...]", 0.22 "Found missing adapter keys: [...] while loading the
#: checkpoint" (its "careful: if the wording of the warning is changed, adjust the unit tests accordingly").
_MISSING_ADAPTER_KEYS = re.compile(r"Found missing adapter keys(?: while loading the checkpoint)?: (\[[^\]]*\])")


def _merged_adapter(model: Any, source: str) -> Any:
    """``model`` (the adapter's base) with the adapter in ``source`` merged into its weights: an
    ordinary model of the base's class, as ``model.lora.save=merged`` would have saved it."""
    try:
        from peft import PeftModel
    except ImportError:
        raise InputError(f"{source!r} holds a LoRA adapter; loading it needs the peft library: "
                         "pip install 'scalerl[lora]'") from None
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        merged = PeftModel.from_pretrained(model, source).merge_and_unload()
    for w in caught:
        text = str(w.message)
        if "is_gradient_checkpointing" in text and issubclass(w.category, FutureWarning):
            continue  # peft reads a property transformers 5 deprecates: noise, not the user's doing
        if found := _MISSING_ADAPTER_KEYS.search(text):
            # peft leaves those adapter weights as initialised (A random, B zero) and only warns: a merged
            # model part trained, part not -- or, with A missing and B loaded, part random.
            missing = found.group(1)
            raise InputError(f"{source!r}: the LoRA adapter's files do not hold every adapter weight its "
                             f"adapter_config.json asks for (missing: {missing[:300]}); the merged model would be "
                             "partly untrained. Was it saved for another base model, or are its files incomplete? "
                             "Save it again (model.save_pretrained / scalerl's model.lora.save=adapter)")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return merged


def load_config(name_or_path: str, cache_dir: str | None = None, tiny_spec: TinySpec | None = None, **kwargs: Any) -> Any:
    """The model's ``transformers`` config, refused with a one-line :class:`InputError` unless it is
    a causal LM that ``AutoModelForCausalLM`` loads (an encoder-decoder such as T5, an encoder such
    as BERT without a causal head, or a config this transformers does not know)."""
    return causal_config(resolve_model(name_or_path, cache_dir, tiny_spec), name_or_path, **kwargs)


def causal_config(source: str, name_or_path: str, **kwargs: Any) -> Any:
    """:func:`load_config` of an already resolved ``source`` (``name_or_path`` names it in errors)."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    base = adapter_base(source)
    if base is not None:  # a LoRA adapter: the merged model has its base's architecture
        return load_config(base, **kwargs)
    try:
        config = AutoConfig.from_pretrained(source, **no_remote_code(kwargs))
    except OSError as exc:
        raise InputError(f"cannot load model {name_or_path!r}: {exc}") from None
    except ValueError as exc:  # an unknown model_type, or code the checkpoint would have us run
        if "trust_remote_code" in str(exc):
            raise InputError(_REMOTE_CODE.format(name=name_or_path, what="config.json")) from None
        raise InputError(f"cannot load model {name_or_path!r}: {str(exc).splitlines()[0]}") from None
    kind = ", ".join(getattr(config, "architectures", None) or []) or config.model_type
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise InputError(f"cannot use {name_or_path!r}: a {config.model_type} model ({kind}) is not a causal "
                         f"language model that AutoModelForCausalLM loads; {_DECODER_ONLY}")
    # The next two kinds have a causal-LM class too, which AutoModelForCausalLM would load silently.
    if getattr(config, "is_encoder_decoder", False):  # BART, mBART, Whisper, ...: the decoder alone, encoder dropped
        raise InputError(f"cannot use {name_or_path!r}: a {config.model_type} model ({kind}) is an encoder-decoder; "
                         "AutoModelForCausalLM would load its decoder alone, without the encoder it reads (and a "
                         f"saved final model would hold the decoder only); {_DECODER_ONLY}")
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not (
            getattr(config, "is_decoder", False) or getattr(config, "causal", False)):  # (XLM names it causal)
        raise InputError(f"cannot use {name_or_path!r}: a {config.model_type} model ({kind}) saved as an encoder "
                         "(is_decoder false in its config.json): every token attends to the tokens after it too, so "
                         f"it does not generate text left to right; {_DECODER_ONLY}")
    drop_missing_flash_attention(config)  # (saved by a GPU run: the kernel is not here)
    return config


_DECODER_ONLY = "scalerl trains and evaluates decoder-only models (Llama, Qwen, Mistral, Gemma, Phi, ...)"

#: The refusal of a checkpoint that needs its own Python code (``auto_map`` in its config.json or tokenizer_config.json).
_REMOTE_CODE = ("cannot load model {name!r}: its {what} needs Python code shipped with the checkpoint (auto_map: a class "
                "this transformers does not have), and scalerl does not run a checkpoint's own code "
                "(trust_remote_code); use a model whose architecture transformers ships (a newer transformers may "
                "have it)")


def no_remote_code(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``trust_remote_code=False`` unless the caller set it: transformers otherwise
    asks on the terminal whether to run a checkpoint's own code (and waits 15 s for an answer),
    once per ``from_pretrained`` call; a caller of :func:`load_model` may still pass True."""
    return {"trust_remote_code": False, **kwargs}


def load_model(
    name_or_path: str, dtype: Any = None, cache_dir: str | None = None, tiny_spec: TinySpec | None = None, *,
    weights: bool = True, progress: bool = False, **kwargs: Any
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``tiny``, a local directory or a hub id.

    ``dtype``: a torch dtype or its name ("bfloat16"); None keeps the checkpoint's.
    ``cache_dir`` / ``tiny_spec``: where and which tiny model to build (``tiny`` only). Extra
    keyword arguments go to both ``from_pretrained`` calls (e.g. ``local_files_only=True``).
    ``weights=False``: the architecture only, built from the config on the meta device -- no
    weight file is read and no memory is taken (a trainer rank whose shard of the weights comes
    from rank 0: :func:`scalerl.train.distributed.make_group`).
    ``progress``: a progress bar over a tiny model's warm start, where it is built here.
    A missing path or an unreachable hub id raises :class:`InputError` naming it; so do weights
    that do not all reach the model (:func:`~scalerl.models.unloaded_weights.unloaded_weights`).
    """
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress bar is the one that matters
    refuse_missing_flash_attention(kwargs.get("attn_implementation"))  # (asked for here, not in config.json)
    source = resolve_model(name_or_path, cache_dir, tiny_spec, progress=progress)
    config = causal_config(source, name_or_path, **kwargs)  # a model of another kind is refused here, in one line
    base = adapter_base(source)
    if base is not None:  # a LoRA adapter: its base with the adapter merged in, and the tokenizer saved beside it
        base_model, tokenizer = load_model(base, dtype, weights=weights, **kwargs)
        if any((Path(source) / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
            # (checked as a model directory's is: read bare, one missing tokenizer.json was a traceback -- review ce)
            tokenizer = _checked_tokenizer(source, name_or_path, no_remote_code(kwargs))
        return (_merged_adapter(base_model, source) if weights else base_model).eval(), tokenizer
    kwargs = no_remote_code(kwargs)
    model_kwargs = dict(kwargs)
    if dtype is not None:
        model_kwargs["dtype"] = dtype
    tokenizer = _checked_tokenizer(source, name_or_path, kwargs)
    if not weights:
        import torch

        config_kwargs = {k: v for k, v in model_kwargs.items() if k in ("dtype", "trust_remote_code")}
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, **config_kwargs).eval(), tokenizer
    model_kwargs.pop("output_loading_info", None)  # asked for below: the model alone is what load_model returns
    with _held_load_report() as report:
        try:
            # The attention the config asks for as causal_config read it (a missing flash kernel's request
            # dropped there); from_pretrained would read the request from config.json again.
            model_kwargs.setdefault("attn_implementation", getattr(config, "_attn_implementation", None))
            model, info = AutoModelForCausalLM.from_pretrained(source, output_loading_info=True, **model_kwargs)
        except OSError as exc:  # not found locally, not on the hub, or no network
            report.show()
            raise InputError(missing_weights(source, name_or_path) or f"cannot load model {name_or_path!r}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 -- damaged weights: safetensors' SafetensorError, torch's RuntimeError, ...
            report.show()  # (transformers' error can say "look at the above report": a size mismatch)
            reason = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise InputError(f"cannot load the weights of {name_or_path!r} ({type(exc).__name__}: {reason}); "
                             f"{_weights_hint(str(exc))}") from None
        # transformers initialises what the checkpoint does not name at random and goes on (its load
        # report aside): a torch.compile'd or DDP model's state dict, keys all prefixed, trained from scratch.
        refusal = unloaded_weights(model, info, name_or_path)
        if refusal is not None:
            raise InputError(refusal)  # (the report dropped: the refusal names the keys, and says what to do)
        report.show()  # loaded: extra keys the model has no place for (TRL's value head), as transformers says them
    return model.eval(), tokenizer


class _HeldRecords(logging.Filter):
    """The records of a logger held back (:func:`_held_load_report`), to be shown or dropped."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.logger, self.records = logger, []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False

    def show(self) -> None:
        """Hand the held records to the logger's handlers, as they would have gone, and stop holding."""
        self.logger.removeFilter(self)
        records, self.records = self.records, []
        for record in records:
            self.logger.handle(record)


@contextlib.contextmanager
def _held_load_report() -> Iterator[_HeldRecords]:
    """Hold back what ``from_pretrained`` logs while it loads -- its load report, a table of every missing and
    unexpected key ("MISSING: those params were newly initialized ...", a warning of
    ``transformers.modeling_utils``; transformers 4's "Some weights of ... were not initialized" likewise) --
    until the caller knows whether it refuses the model. Printed as it came, the table (30 lines for a
    torch.compile'd state dict) stood above our one-line refusal, and said the keys "can be ignored". What is
    not shown by the end is dropped."""
    logger = logging.getLogger("transformers.modeling_utils")
    held = _HeldRecords(logger)
    logger.addFilter(held)
    try:
        yield held
    finally:
        logger.removeFilter(held)


def missing_weights(source: str, name_or_path: str) -> str | None:
    """One line on a local directory whose weights are not all there, or None. transformers said
    'No such file or directory: .../model-00002-of-00006.safetensors' for a shard a cut copy
    left out, and 'Error no file named model.safetensors, or pytorch_model.bin, found' for a
    directory with a tokenizer and a config alone -- neither what to do about it."""
    import json

    path = Path(source)
    if not path.is_dir():
        return None
    for index in sorted(path.glob("*.index.json")):  # a sharded checkpoint: the shards its index names
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        missing = [s for s in shards if not (path / s).is_file()]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            return (f"cannot load model {name_or_path!r}: its weights are in {len(shards)} shards ({index.name}) and "
                    f"{len(missing)} of them are not in the directory ({missing[0]}{more}): copy or download the "
                    "missing shards again")
    if not any(next(path.glob(pattern), None) for pattern in ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.index.json")):
        return (f"cannot load model {name_or_path!r}: the directory holds no weights (model.safetensors, "
                "pytorch_model.bin, ...), only a config and the tokenizer: save the model's weights into it "
                "(model.save_pretrained(DIR))")
    return None


#: A SentencePiece model file, which transformers converts to a fast tokenizer with the sentencepiece library.
_SENTENCEPIECE_FILES = ("tokenizer.model", "spiece.model", "sentencepiece.bpe.model")


def _tokenizer_refusal(source: str, name_or_path: str, exc: Exception) -> str:
    """One line on a tokenizer ``AutoTokenizer`` could not load. A SentencePiece model without a
    tokenizer.json needs the sentencepiece library to be read: transformers then falls back to
    tiktoken and says that ``tiktoken`` is required (or, from a directory with no tokenizer at
    all, cuts its advice to a first line that ends 'from one of')."""
    import importlib.util

    path = Path(source)
    if (path.is_dir() and not (path / "tokenizer.json").is_file()
            and any((path / f).is_file() for f in _SENTENCEPIECE_FILES)
            and importlib.util.find_spec("sentencepiece") is None):
        spm = next(f for f in _SENTENCEPIECE_FILES if (path / f).is_file())
        return (f"cannot load the tokenizer of {name_or_path!r}: it is a SentencePiece model ({spm}) with no "
                "tokenizer.json, and reading it needs the sentencepiece library: pip install sentencepiece")
    if path.is_dir() and not any(_is_tokenizer_file(f.name) for f in path.iterdir()):
        reason = "the directory holds no tokenizer files: tokenizer.json, tokenizer_config.json, ..."
    else:
        reason = str(exc).splitlines()[0].rstrip(": ")
    return (f"cannot load the tokenizer of {name_or_path!r} ({reason}): a model directory needs its tokenizer files "
            "beside the weights (tokenizer.save_pretrained(DIR))")


#: Texts whose token ids the tokenizer transformers picks must share with the tokenizer files' own pipeline
#: (:func:`read_tokenizer`): spaces and a newline, numbers, a LaTeX command, a combining accent, full-width digits.
PROBES = ("What is 12 + 30?\nAnswer: 42.", "Compute 41 * 17. Put the final answer in \\boxed{}.", "cafe\u0301 = 3",
          "x\u00b2 + \u00bd = \uff08\uff11\uff12\uff09")


def read_tokenizer(source: str, **kwargs: Any):
    """``AutoTokenizer.from_pretrained(source)`` -- unless it tokenizes otherwise than the tokenizer's own file.

    transformers 5 picks the tokenizer class of the directory's ``config.json`` model type over the class
    ``tokenizer_config.json`` names (or none), and that class rebuilds the pipeline from the vocabulary: the tiny
    model's character tokenizer, saved beside a Qwen2 config, came back as a ``Qwen2Tokenizer`` that dropped every
    space and newline (review cb); a user's byte-level BPE came back splitting digits one by one and NFC-normalising
    the data's text, and a Gemma class could not encode at all (review ce). The model was trained on what
    ``tokenizer.json`` does -- with ``tokenizer_config.json``'s ``add_prefix_space``, which the classes apply to it
    (review cg: comparing pipelines part by part switched away from a class that honoured it, and over differences
    that change no id). Where the picked class gives other ids than that for the :data:`PROBES` (plain text, a
    combining accent, full-width digits: a normaliser of its own shows there) or cannot encode, the tokenizer is read
    as the file says (``PreTrainedTokenizerFast`` on that pipeline). No ``tokenizer.json`` (a SentencePiece or
    tiktoken model alone): the picked class is all there is."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    picked = AutoTokenizer.from_pretrained(source, **kwargs)
    own = _own_pipeline(source, kwargs)
    if own is None or _encodes_as(picked, own):
        return picked
    generic = PreTrainedTokenizerFast.from_pretrained(source, **kwargs)
    generic._tokenizer = own  # (the file's pipeline as the config sets it: the generic class ignores add_prefix_space)
    return generic if _encodes_as(generic, own) else picked


def model_tokenizer(name_or_path: str):
    """The tokenizer a run of model ``name_or_path`` will use, without its weights (a tiny model's character
    tokenizer, not its warm start), for checks made before a run starts; None where the model is not on this
    machine or its tokenizer cannot be read (the run itself says why)."""
    from scalerl.models.tiny import tiny_spec

    if tiny_spec(name_or_path) is not None:
        from scalerl.models.char_tokenizer import build_char_tokenizer

        return build_char_tokenizer()
    path = Path(name_or_path).expanduser()
    try:
        # Never a checkpoint's own code (review eh: transformers asked on the terminal whether to run it, and ran it on
        # a "y", where the run itself refuses it in one line -- load_model's no_remote_code).
        if not path.is_dir():  # a hub id only from the local cache: nothing is fetched for a check
            return read_tokenizer(name_or_path, **no_remote_code({"local_files_only": True}))
        base = adapter_base(str(path))
        if base is not None and not any(_is_tokenizer_file(f.name) for f in path.iterdir()):
            return model_tokenizer(base)  # a LoRA adapter saved without one runs with its base's (load_model)
        return _checked_tokenizer(str(path), name_or_path, no_remote_code({}))
    except Exception:  # noqa: BLE001 -- any reading error is the run's to report, in its own words
        return None


def _own_pipeline(source: str, kwargs: dict[str, Any]):
    """The ``tokenizers`` pipeline of ``source``'s ``tokenizer.json`` (a directory's, or a hub id's in the cache or
    fetched) with ``tokenizer_config.json``'s ``add_prefix_space`` applied to its pre-tokenizer, or None where it has
    none or it cannot be read (the class transformers picks is then judged alone)."""
    import json

    from tokenizers import Tokenizer

    try:
        path = _tokenizer_file(source, "tokenizer.json", kwargs)
        if path is None:
            return None
        pipeline = json.loads(path.read_text(encoding="utf-8"))
        config = _tokenizer_file(source, "tokenizer_config.json", kwargs)
        prefix = json.loads(config.read_text(encoding="utf-8")).get("add_prefix_space") if config else None
        if isinstance(prefix, bool):
            _set_prefix_space(pipeline.get("pre_tokenizer"), prefix)
        return Tokenizer.from_str(json.dumps(pipeline))
    except Exception:  # noqa: BLE001 -- no file, a damaged one: nothing to compare with
        return None


def _tokenizer_file(source: str, name: str, kwargs: dict[str, Any]) -> Path | None:
    """``source``'s file ``name``: in its directory, or a hub id's (cached or fetched); None where it has none."""
    path = Path(source) / name
    if path.is_file():
        return path
    from transformers.utils import cached_file

    found = cached_file(source, name, _raise_exceptions_for_missing_entries=False,
                        _raise_exceptions_for_connection_errors=False,
                        **{k: v for k, v in kwargs.items() if k in ("cache_dir", "revision", "token", "local_files_only",
                                                                     "subfolder")})
    return Path(found) if found else None


def _set_prefix_space(node: Any, prefix: bool) -> None:
    """Set ``add_prefix_space`` on a pre-tokenizer's JSON (a byte-level one's flag, a Metaspace's prepend scheme),
    nested ones included, as the tokenizer classes apply the setting of ``tokenizer_config.json``."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "ByteLevel":
        node["add_prefix_space"] = prefix
    elif node.get("type") == "Metaspace":
        node["prepend_scheme"] = "first" if prefix else "never"
    for child in node.get("pretokenizers") or []:
        _set_prefix_space(child, prefix)


def _encodes_as(tokenizer, own) -> bool:
    """Whether ``tokenizer`` gives the :data:`PROBES` the ids ``own`` (a ``tokenizers`` pipeline) gives them."""
    try:
        return all(tokenizer(text, add_special_tokens=False).input_ids == own.encode(text, add_special_tokens=False).ids
                   for text in PROBES)
    except Exception:  # noqa: BLE001 -- a class that cannot encode (a vocabulary without its unk token)
        return False


def _checked_tokenizer(source: str, name_or_path: str, kwargs: dict[str, Any]):
    """:func:`read_tokenizer`, refused in one line where it cannot be read or reads as nothing."""
    try:
        tokenizer = read_tokenizer(source, **kwargs)
    # No tokenizer files saved with the weights, or an unusable one -- the tokenizers library's own parse error of a
    # tokenizer.json it cannot read is a bare Exception ("data did not match any variant ...": review cf).
    except Exception as exc:  # noqa: BLE001
        if "trust_remote_code" in str(exc):
            raise InputError(_REMOTE_CODE.format(name=name_or_path, what="tokenizer")) from None
        raise InputError(_tokenizer_refusal(source, name_or_path, exc)) from None
    _check_tokenizer_read(tokenizer, source, name_or_path)
    return tokenizer


def _check_tokenizer_read(tokenizer, source: str, name_or_path: str) -> None:
    """Refuse a tokenizer that loaded without being read from anything: transformers 5 builds an empty
    Qwen2 or GPT-2 tokenizer (a vocabulary of 1, every text no token) from a directory without tokenizer
    files, where it raises for Llama -- the run then failed deep in generation with a traceback."""
    path = Path(source)
    if path.is_dir() and not any(_is_tokenizer_file(f.name) for f in path.iterdir()):
        raise InputError(_tokenizer_refusal(source, name_or_path, ValueError("no tokenizer files")))
    if len(tokenizer) < 2:
        raise InputError(f"the tokenizer of {name_or_path!r} has a vocabulary of {len(tokenizer)} token(s): it was not "
                         "read from a tokenizer (a model directory needs its tokenizer files beside the weights: "
                         "tokenizer.save_pretrained(DIR))")
    # A Qwen2 directory whose tokenizer.json is missing (tokenizer_config.json kept: a partial copy) loads as a
    # vocabulary of its special tokens alone, and every text encodes to none of its own (review ce: eval said 0.000).
    try:
        ids = tokenizer(PROBES[0], add_special_tokens=False).input_ids
    except Exception:  # noqa: BLE001 -- a tokenizer that cannot encode: refused below, by what it does
        ids = []
    if not set(ids) - set(tokenizer.all_special_ids):
        raise InputError(f"the tokenizer of {name_or_path!r} turns text into none of its own tokens (a vocabulary of "
                         f"{len(tokenizer)}, special tokens only?): a tokenizer file is missing or damaged -- "
                         "tokenizer.json holds the vocabulary; save the tokenizer again beside the weights "
                         "(tokenizer.save_pretrained(DIR))")


def _is_tokenizer_file(name: str) -> bool:
    """Whether a file of this name can hold (part of) a tokenizer: fast, slow, tiktoken or Mistral's tekken.json."""
    return (name.startswith(("tokenizer", "vocab", "merges", "spiece", "special_tokens_map", "tekken"))
            or name.endswith((".model", ".tiktoken")))


def _weights_hint(message: str) -> str:
    """What to check when the weights do not load: shapes that differ from config.json (transformers
    5 says ``ignore_mismatched_sizes``, 4.x ``size mismatch``) are a config that is not the
    weights' own -- the files are whole; anything else, most often, files cut short."""
    if "ignore_mismatched_sizes" in message or "size mismatch" in message:
        return ("the weights' shapes do not match the model's config.json (see the report above): the config was "
                "edited or belongs to another model; restore the one saved with the weights")
    return "are the weight files complete (a cut download or copy)?"


def stored_dtype(name_or_path: str, cache_dir: str | None = None, tiny_spec: TinySpec | None = None, **kwargs: Any) -> str:
    """The dtype a checkpoint's weights are stored in (its config's ``dtype``, ``torch_dtype`` before
    transformers 5), as a torch dtype name. Where the config names none (an older or hand-written
    config.json), the dtype of a local directory's weights (safetensors, else ``pytorch_model*.bin``)
    -- what transformers' ``dtype="auto"`` loads then --, else ``float32``."""
    config = load_config(name_or_path, cache_dir, tiny_spec, **kwargs)
    # Read as stored, not through the attributes: transformers 5's ``torch_dtype`` property warns that it
    # is deprecated (printed on every run of a model whose config names no dtype).
    stored = vars(config)
    value = stored.get("dtype") or stored.get("torch_dtype")
    if value is None or str(value) == "auto":
        source = resolve_model(name_or_path, cache_dir, tiny_spec)
        return _weights_dtype(source) or "float32"
    return str(value).removeprefix("torch.")


def _weights_dtype(source: str) -> str | None:
    """The dtype of the first floating-point tensor of a local directory's weights (its base's, for a
    LoRA adapter directory): ``model*.safetensors`` read from the file headers, else
    ``pytorch_model*.bin`` (the format before safetensors) loaded onto the meta device (no tensor
    data is read); None where there are none or they cannot be read (loading the model then says
    what is wrong with them)."""
    base = adapter_base(source)
    if base is not None:
        return _weights_dtype(base)
    if not Path(source).is_dir():
        return None
    try:
        return _safetensors_dtype(sorted(Path(source).glob("model*.safetensors"))) or \
            _pickled_dtype(sorted(Path(source).glob("pytorch_model*.bin")))
    except Exception:  # noqa: BLE001 -- a damaged file: safetensors' SafetensorError, torch's UnpicklingError, ...
        return None


#: safetensors' names of the floating dtypes, as torch names them.
_SAFETENSORS_FLOATS = {"F64": "float64", "F32": "float32", "BF16": "bfloat16", "F16": "float16"}


def _safetensors_dtype(files: list[Path]) -> str | None:
    from safetensors import safe_open

    for file in files:
        with safe_open(str(file), "pt") as f:
            for key in f.keys():
                name = _SAFETENSORS_FLOATS.get(str(f.get_slice(key).get_dtype()))
                if name is not None:
                    return name
    return None


def _pickled_dtype(files: list[Path]) -> str | None:
    if not files:
        return None
    import torch

    try:
        state = torch.load(files[0], map_location="meta", weights_only=True, mmap=True)
    except RuntimeError:  # the legacy (non-zip) format cannot be memory-mapped
        state = torch.load(files[0], map_location="meta", weights_only=True)
    for tensor in state.values() if isinstance(state, dict) else ():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            return str(tensor.dtype).removeprefix("torch.")
    return None
