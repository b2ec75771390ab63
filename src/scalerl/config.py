"""Configuration as nested dataclasses: YAML in and out, dotted overrides, strict checks.

Every section of a scalerl configuration is a plain ``@dataclass`` whose fields each carry a
docstring (a string literal right under the field, cleanrl style). This module is generic
over such dataclasses; it knows nothing about recipes or trainers:

* :func:`to_dict` / :func:`from_dict` -- plain dicts <-> dataclasses. ``from_dict`` is strict
  (an unknown key is an error that lists the section's known keys) and coerces values to the
  field annotations (``Optional``, ``Literal``, tuples, lists, dicts, nested sections).
* :func:`load_yaml` / :func:`save_yaml` / :func:`dump_yaml` -- YAML files; ``dump_yaml`` writes
  every field's docstring as a comment above it, so a dumped config is its own manual.
* :func:`apply_overrides` -- ``["loss.name=dapo", "k=4"]``: a dotted path, or any unique
  suffix of one (a bare leaf name when it is unique across sections).
* :func:`field_docs` / :func:`leaf_fields` / :func:`undocumented_fields` /
  :func:`markdown_reference` -- introspection for ``recipes show``, docs and tests.

It imports no torch: the forecaster and the CLI read configs without the training stack.

    cfg = apply_overrides(load_yaml(RecipeConfig, "configs/scalerl.yaml"), ["off_policy.k=4"])
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import difflib
import functools
import inspect
import math
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, TypeVar

import yaml

from scalerl.atomic_files import write_text_atomically
from scalerl.errors import ConfigError

T = TypeVar("T")

__all__ = [
    "apply_overrides",
    "coerce",
    "deep_merge",
    "dotted_keys",
    "dump_yaml",
    "field_docs",
    "from_dict",
    "leaf_fields",
    "leaf_values",
    "load_yaml",
    "markdown_reference",
    "read_yaml_mapping",
    "resolve_key",
    "save_yaml",
    "to_dict",
    "undocumented_fields",
]


# ----------------------------------------------------------------------------- dicts


def to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass (nested) as plain dicts, lists and scalars, ready for YAML or JSON."""
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise TypeError(f"to_dict expects a dataclass instance, got {type(cfg).__name__}")
    return {f.name: _plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def from_dict(cls: type[T], data: Mapping[str, Any], *, path: str = "") -> T:
    """Build ``cls`` from a mapping; missing keys take their defaults, unknown keys are errors.

    Values are coerced to the field annotations (e.g. ``"1e-15"`` -- which YAML 1.1 reads as a
    string -- to a float, a list to a tuple). ``path`` names the section in error messages.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{_where(path)}: expected a mapping of keys to values, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [k for k in data if k not in fields]
    hints = _type_hints(cls)
    if unknown:
        sections = [n for n in fields if dataclasses.is_dataclass(hints[n])]
        raise UnknownKey(_unknown_key_message(unknown[0], path, list(fields), sections), unknown[0], path)
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        if dataclasses.is_dataclass(hints[name]) and isinstance(value, Mapping):
            # A partial section fills its gaps from this field's own default (e.g. the dapo
            # clips of LossConfig.dapo), not from the section class's generic defaults.
            default = _field_default(fields[name])
            if default is not None:
                value = _deep_merge(to_dict(default), value)
        kwargs[name] = _coerce(value, hints[name], _join(path, name))
    missing = [
        n
        for n, f in fields.items()
        if n not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{_where(path)}: missing required key(s) {', '.join(missing)}")
    return cls(**kwargs)


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _where(path: str) -> str:
    return f"section '{path}'" if path else "top level"


class UnknownKey(ConfigError):
    """A key no field of its section has (``key`` as the file wrote it -- maybe no text: YAML reads ``1:`` and
    ``yes:`` as a number and a bool --, in the section at ``path``)."""

    def __init__(self, message: str, key: Any, path: str) -> None:
        super().__init__(message)
        self.key, self.path = key, path


def _belongs(cls: type, key: Any, path: str) -> str:
    """Where else in ``cls`` a key of that name is (``steps`` -> ``run.steps``, ``loss`` -> ``recipe.loss``): the
    sentence an unknown key's message ends with, or ''."""
    leaves = leaf_fields(cls)
    paths = set(leaves) | {p.rsplit(".", i)[0] for p in leaves for i in range(1, p.count(".") + 1)}
    places = sorted(p if "." in p else "the top level" for p in paths  # (was "'recipe' is a key of recipe")
                    if p.rsplit(".", 1)[-1] == key and p != _join(path, str(key)))
    return f" -- '{key}' belongs at {' or '.join(places)}" if places else ""


def _unknown_key_message(key: Any, path: str, known: list[str], sections: Iterable[str] = ()) -> str:
    head = key.split(".", 1)[0] if isinstance(key, str) and "." in key else None
    if head in sections:  # `run.steps: 7` in a file: a dotted path is --set's syntax, not YAML's
        rest = key.split(".", 1)[1]
        return (f"unknown key '{key}' in {_where(path)}: a file nests the sections; write it as "
                f"'{head}:' with '{rest}:' indented under it, or pass --set {_join(path, key)}=VALUE")
    # (a key YAML reads as no text -- 1:, yes: -- is unknown too: difflib needs text, and raised a TypeError)
    hint = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    did_you_mean = f"; did you mean '{hint[0]}'?" if hint else "."  # a sentence either way
    return f"unknown key '{key}' in {_where(path)}{did_you_mean} Known keys: {', '.join(known)}"


@functools.lru_cache(maxsize=None)
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


_NONE = type(None)


def _coerce(value: Any, tp: Any, path: str) -> Any:
    """Convert a YAML-ish value to the annotated type ``tp``, or raise a ConfigError."""
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        if dataclasses.is_dataclass(value) and isinstance(value, tp):
            return value
        return from_dict(tp, value, path=path)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and _NONE in args:
            return None
        for arg in (a for a in args if a is not _NONE):
            try:
                return _coerce(value, arg, path)
            except ConfigError:
                continue
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value in args:
            return value
        choices = ", ".join(repr(a) for a in args)
        raise ConfigError(f"{path}: {value!r} is not one of {choices}")
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list like [1, 2], got {value!r}")
        if origin is list:
            item = args[0] if args else Any
            return [_coerce(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{path}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise ConfigError(f"{path}: expected {len(args)} values, got {len(value)} ({value!r})")
        items = args or (Any,) * len(value)
        return tuple(_coerce(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, items)))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping like {{key: value}}, got {value!r}")
        key_t, val_t = args or (Any, Any)
        return {_coerce(k, key_t, path): _coerce(v, val_t, f"{path}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{path}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if tp is float:
        out = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                out = float(value)
            except OverflowError:  # an integer past a float's range (~1.8e308): a traceback (review cx)
                raise ConfigError(f"{path}: expected a number, got an integer of {len(str(abs(value)))} digits, "
                                  "beyond a float's range") from None
        elif isinstance(value, str):  # YAML 1.1 reads '1e-15' (no dot) as a string
            try:
                out = float(value)
            except ValueError:
                pass
        # NaN is no setting's value; every range check (x > 0, 0 < x <= 1) let it through, so
        # sampling.temperature=nan sampled at temperature 1 while the config said nan.
        if out is None or math.isnan(out):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        return out
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{path}: expected a string, got {value!r} (quote it in YAML)")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise ConfigError(f"{path}: expected {_type_name(tp)}, got {value!r}")


def coerce(value: Any, tp: Any, path: str) -> Any:
    """``value`` (as YAML reads it) converted to the annotated type ``tp``, or a ConfigError naming
    ``path``: the check :func:`from_dict` makes of each field, for values held outside a config
    dataclass (a task's ``task.settings``, checked against the task's own fields)."""
    return _coerce(value, tp, path)


def _type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is _NONE else _type_name(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]"
    return getattr(tp, "__name__", str(tp))


# ----------------------------------------------------------------------------- field docs


@functools.lru_cache(maxsize=None)
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of dataclass ``cls`` (and its bases), by field name.

    Read from the source with ``ast``: a string literal statement right after an annotated
    assignment documents that field. Fields without one are absent from the result.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):  # no source (frozen app, REPL): docs are optional extras
            continue
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        for stmt, nxt in zip(body, body[1:]):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


def _section_type(tp: Any) -> type | None:
    """The dataclass a field holds (also through ``Optional``), or None for a leaf."""
    if dataclasses.is_dataclass(tp):
        return tp
    return None


def leaf_fields(cls: type, prefix: str = "") -> dict[str, Any]:
    """Every leaf field of a nested dataclass, by dotted path, with its annotated type."""
    out: dict[str, Any] = {}
    hints = _type_hints(cls)
    for f in dataclasses.fields(cls):
        path = _join(prefix, f.name)
        sub = _section_type(hints[f.name])
        if sub is not None:
            out.update(leaf_fields(sub, path))
        else:
            out[path] = hints[f.name]
    return out


def leaf_values(cfg: Any) -> dict[str, Any]:
    """Every leaf value of a config dataclass, by dotted path (:func:`leaf_fields`' paths; a mapping-valued
    field such as ``loss.extra`` is one leaf)."""
    out: dict[str, Any] = {}
    for path in leaf_fields(type(cfg)):
        node = cfg
        for part in path.split("."):
            node = getattr(node, part)
        out[path] = node
    return out


def undocumented_fields(cls: type, prefix: str = "") -> list[str]:
    """Dotted paths of the fields (sections included) that have no docstring."""
    missing = []
    docs = field_docs(cls)
    hints = _type_hints(cls)
    for f in dataclasses.fields(cls):
        path = _join(prefix, f.name)
        if not docs.get(f.name):
            missing.append(path)
        sub = _section_type(hints[f.name])
        if sub is not None:
            missing.extend(undocumented_fields(sub, path))
    return missing


# ----------------------------------------------------------------------------- YAML


def load_yaml(cls: type[T], path: str | Path) -> T:
    """Read a YAML file into ``cls`` (strict: see :func:`from_dict`). A class whose file holds more than
    its fields say (a training config's ``recipe_name`` picks the preset its recipe starts from) gives
    a classmethod ``from_file_mapping(data, path)`` turning the file's mapping into its fields' one."""
    data = read_yaml_mapping(path)
    prepare = getattr(cls, "from_file_mapping", None)
    return from_file_dict(cls, prepare(data, Path(path)) if callable(prepare) else data)


def from_file_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """:func:`from_dict` for a file's whole mapping: an unknown key's message also says where a key of that
    name goes (``steps: 100`` at the top: ``run.steps``; review cx -- it listed the top level's keys alone)."""
    try:
        return from_dict(cls, data)
    except UnknownKey as exc:
        raise ConfigError(f"{exc}{_belongs(cls, exc.key, exc.path)}") from None


def dotted_keys(data: Mapping[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths of the leaves a (file's) mapping sets (``recipe.off_policy.pipeline``):
    what the user wrote, told from the defaults. An empty mapping is a leaf of its own."""
    if not isinstance(data, Mapping) or not data:
        return {prefix} if prefix else set()
    return set().union(*(dotted_keys(v, _join(prefix, str(k))) for k, v in data.items()))


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` laid over it, mapping by mapping (a key ``update`` leaves out keeps
    ``base``'s value; any other value replaces it whole)."""
    return _deep_merge(dict(base), update)


class _DuplicateKey(yaml.YAMLError):
    """A key given twice in one YAML mapping (see :class:`_UniqueKeyLoader`)."""

    def __init__(self, key: Any, first_line: int, second_line: int):
        where = f"line {first_line}" if first_line == second_line else f"lines {first_line} and {second_line}"
        super().__init__(f"key {key!r} is given twice ({where}); keep one of them")


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping: PyYAML keeps the last
    silently, so ``family: loo`` followed further down by ``family: recipes`` ran the recipes study."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKey(key, seen[key], line)
                seen[key] = line
            except TypeError:  # an unhashable key: the base class reports it
                continue
        return super().construct_mapping(node, deep=deep)


#: YAML 1.2's integers, where PyYAML reads YAML 1.1's: ``010`` was octal 8 and ``1:30`` base-60 90 (review at:
#: ``--set seed=010`` trained seed 8, ``steps=1:30`` 90 steps). Decimal, ``0x`` hex and ``0o`` octal only; a
#: ``1:30`` is text, which a number field refuses naming its key. Floats as PyYAML reads them less YAML 1.1's
#: base 60 (review au: ``lr=1:30.5`` was 90.5); a ``=`` is text, not YAML 1.1's value key, which PyYAML cannot
#: construct (review ax: ``output: =`` refused the file as "could not determine a constructor for the tag").
_INT_TAG, _FLOAT_TAG, _VALUE_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:value"
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT_TAG, _FLOAT_TAG, _VALUE_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_UniqueKeyLoader.add_implicit_resolver(_INT_TAG, re.compile(r"^(?:[-+]?[0-9][0-9_]*|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                       list("-+0123456789"))
_UniqueKeyLoader.add_implicit_resolver(
    _FLOAT_TAG, re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))


class _QuotingDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that quotes every text the loader (:class:`_UniqueKeyLoader`) would read as another
    type, as well as what YAML 1.1 would: a model directory named ``08`` was written unquoted (no YAML 1.1 int)
    and read back as the integer 8 -- the run's own config.yaml refused (review au)."""


_BOTH_RESOLVERS = (yaml.SafeDumper.yaml_implicit_resolvers, _UniqueKeyLoader.yaml_implicit_resolvers)
_QuotingDumper.yaml_implicit_resolvers = {
    first: [resolver for resolvers in _BOTH_RESOLVERS for resolver in resolvers.get(first, [])]
    for first in {first for resolvers in _BOTH_RESOLVERS for first in resolvers}}


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("+-")) > limit:  # (int() raised a ValueError traceback: review cx)
        raise yaml.constructor.ConstructorError(None, None, f"an integer of {len(text.lstrip('+-'))} digits, more "
                                                f"than any setting takes", node.start_mark)
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


_UniqueKeyLoader.add_constructor(_INT_TAG, _construct_int)
# A ``<<`` that is a value, not a merge key (which the mapping's flattening reads before any constructor): text, as
# ``=`` is (review ba: "could not determine a constructor for the tag 'tag:yaml.org,2002:merge'").
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:merge", lambda loader, node: loader.construct_scalar(node))


def load_yaml_text(text: str) -> Any:
    """``text`` read as YAML by the one loader every config file and ``--set`` value is read with (a key given
    twice refused; integers as YAML 1.2 reads them)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 -- a SafeLoader


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """PyYAML's error as one line a user can act on: what, where, the line itself, and for a tab
    the rule it breaks (its own wording said "found character '\\t' that cannot start any token
    in "<unicode string>"")."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem or mark is None:
        return " ".join(str(exc).split())
    lines = text.splitlines()
    line = lines[mark.line].strip() if mark.line < len(lines) else ""
    out = f"{problem} at line {mark.line + 1}, column {mark.column + 1}" + (f": {line!r}" if line else "")
    context, opened = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and opened is not None and opened.line != mark.line:  # an unclosed bracket or quote: where it opened
        out += f" ({context} that starts at line {opened.line + 1}, column {opened.column + 1})"
    if mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
        out += " -- YAML indents and separates with spaces, not tabs"
    return out


def read_yaml_mapping(path: str | Path) -> dict:
    """The mapping a YAML file holds (``{}`` for an empty file), or a ConfigError saying what is
    wrong with the file (missing, unreadable, not YAML, a key given twice, not a mapping)."""
    path = Path(path)
    text = ""
    try:
        text = path.read_text()
        data = load_yaml_text(text)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:  # a directory, no permission, a binary file
        raise ConfigError(f"config file {str(path)!r} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    except _DuplicateKey as exc:
        raise ConfigError(f"config file {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {_yaml_problem(exc, text)}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of sections (model:, recipe:, ...), "
                          f"not a {type(data).__name__}")
    return data or {}


def save_yaml(cfg: Any, path: str | Path, *, header: str = "") -> None:
    """Write ``cfg`` as commented YAML (see :func:`dump_yaml`), atomically: a kill mid-write leaves
    the previous file or none, never an empty or cut one (an empty run config read back as every
    default)."""
    write_text_atomically(path, dump_yaml(cfg, header=header))


def dump_yaml(cfg: Any, *, header: str = "", comments: bool = True, width: int = 92) -> str:
    """``cfg`` as YAML; with ``comments`` every field's docstring is a ``#`` comment above it.

    ``header`` (may be several lines) is written as a comment at the top. The output loads
    back with ``yaml.safe_load`` to exactly :func:`to_dict` of ``cfg``.
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    _emit(cfg, 0, lines, comments, width)
    return "\n".join(lines).rstrip("\n").lstrip("\n") + "\n"


def _emit(cfg: Any, indent: int, lines: list[str], comments: bool, width: int) -> None:
    docs = field_docs(type(cfg)) if comments else {}
    pad = " " * indent
    after_section = False
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        is_section = dataclasses.is_dataclass(value) and not isinstance(value, type)
        if comments and lines and (is_section or after_section):
            lines.append("")  # blank lines around sections keep long files readable
        after_section = is_section
        doc = docs.get(f.name, "")
        # Single newlines in a docstring are source wrapping; blank lines separate paragraphs.
        for paragraph in doc.split("\n\n") if doc else []:
            text = " ".join(paragraph.split())
            wrapped = textwrap.wrap(
                text, width=max(20, width - indent - 2), break_on_hyphens=False, break_long_words=False
            )
            lines.extend(f"{pad}# {w}" for w in wrapped)
        if is_section:
            lines.append(f"{pad}{f.name}:")
            _emit(value, indent + 2, lines, comments, width)
        else:
            lines.append(f"{pad}{f.name}: {_scalar(_plain(value))}")


def _scalar(value: Any) -> str:
    text = yaml.dump(value, Dumper=_QuotingDumper, default_flow_style=True, width=math.inf, sort_keys=False).strip()
    if text.endswith("\n..."):
        text = text[: -len("\n...")]
    elif text.endswith("..."):  # e.g. safe_dump(None) == 'null\n...\n'
        text = text[:-3].strip()
    return text


# ----------------------------------------------------------------------------- overrides


def resolve_key(cls: type, key: str) -> str:
    """The full dotted path an override key names in ``cls``.

    A full path wins; otherwise the key must be the suffix of exactly one leaf path (so
    ``k`` means ``off_policy.k`` when no other section has a field ``k``).
    """
    leaves = leaf_fields(cls)
    if key in leaves:
        return key
    matches = [p for p in leaves if p.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ConfigError(f"ambiguous key '{key}': it matches {', '.join(matches)}; write the full path")
    inside = mapping_item(cls, key)
    if inside is not None:  # (review dw: the message never gave the syntax that works)
        raise ConfigError(f"'{inside.partition('=')[0]}' is a mapping, set as one value: {inside}")
    raise ConfigError(_unknown_path_message(cls, key, list(leaves)))


def mapping_item(cls: type, key: str, value: str = "VALUE") -> str | None:
    """The override that sets what ``key`` names inside a mapping field (``loss.extra.beta``, by the field's full
    path or a unique suffix of it, as :func:`resolve_key` takes keys; ``task.settings.eval_data.val``, nested):
    ``recipe.loss.extra={beta: VALUE}``; None where ``key`` names nothing inside one (reviews dw, dy)."""
    found = set()
    for path, tp in leaf_fields(cls).items():
        if typing.get_origin(tp) not in (dict, collections.abc.Mapping):
            continue
        parts = path.split(".")
        for i in range(len(parts)):
            suffix = ".".join(parts[i:])
            if key.startswith(suffix + "."):
                found.add((path, key[len(suffix) + 1:]))
                break
    if len(found) != 1:
        return None
    (path, inner), = found
    nested = value
    for part in reversed(inner.split(".")):
        nested = f"{{{part}: {nested}}}"
    return f"{path}={nested}"


def _unknown_path_message(cls: type, key: str, leaves: list[str]) -> str:
    # List the known keys of the deepest section the key does name, so the user sees the menu.
    parts = key.split(".")
    section, prefix = cls, ""
    for part in parts:
        hints = _type_hints(section)
        sub = _section_type(hints[part]) if part in hints else None
        if sub is None:
            break
        section, prefix = sub, _join(prefix, part)
    if prefix == key:
        known = ", ".join(f"{key}.{f.name}" for f in dataclasses.fields(section))
        return f"'{key}' is a section, not a value; set one of its keys: {known}"
    known = [f.name for f in dataclasses.fields(section)]
    close = difflib.get_close_matches(key, leaves, n=3, cutoff=0.6)
    # A leaf name mistyped (``lrr`` for ``lr``) is close to no full path: match the last part too -- the same name
    # only, where the key's sections are not this config's (``train.lr`` is recipe.optimizer.lr, but ``run.steps``
    # against a recipe was "did you mean optimizer.eps?": review dw).
    names = {p.rsplit(".", 1)[-1] for p in leaves}
    sections_known = len(parts) == 1 or prefix == ".".join(parts[:-1])
    for name in (difflib.get_close_matches(parts[-1], sorted(names), n=3, cutoff=0.6) if sections_known
                 else [parts[-1]] if parts[-1] in names else []):
        close += [p for p in leaves if p.rsplit(".", 1)[-1] == name and p not in close]
    close = close[:3]
    hint = f"; did you mean {' or '.join(close)}?" if close else "."  # a sentence either way
    return f"unknown key '{key}'{hint} Known keys in {_where(prefix)}: {', '.join(known)}"


def override_value(raw: str, *, text: bool = False) -> Any:
    """The value of a ``key=value`` override's ``raw`` text, read as YAML (``"a b"`` is the text ``a b``; text YAML
    cannot read is itself; an empty value is None); ``text``: for a field that takes text, a value YAML reads as
    another type is the text as given (``name=1.0`` is ``'1.0'``)."""
    try:
        value = load_yaml_text(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    if text and value is not None and not isinstance(value, str):
        value = raw.strip()
    return value


def apply_overrides(cfg: T, overrides: Iterable[str]) -> T:
    """A copy of ``cfg`` with ``key=value`` overrides applied in order.

    ``key`` is a dotted path or a unique suffix of one (see :func:`resolve_key`); ``value`` is
    read as a YAML scalar or flow collection (``4``, ``5e-7``, ``true``, ``null``, ``[8, 16]``,
    ``{beta: 0.1}``) and then coerced to the field's type. For a string field the raw text is
    kept (``name=on`` stays ``'on'``, not YAML's ``True``).

    A mapping-valued field (``task.settings``) given a mapping replaces ``cfg``'s whole mapping;
    given again in the same ``overrides``, the later mapping is merged into the earlier one (its
    keys win), as ``scalerl eval`` merges its repeated ``--set task.settings={...}``: the second
    of ``task.settings={eval_data: ...}`` and ``task.settings={verify_timeout: 30}`` dropped the
    first's eval_data without a word. An empty mapping (``task.settings={}``) clears it, given
    first or later: there is nothing to merge, so clearing is what it can mean.
    """
    cls = type(cfg)
    data = to_dict(cfg)
    leaves = leaf_fields(cls)
    given: set[str] = set()  # the paths an earlier item of these overrides set
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like key=value, e.g. loss.name=dapo or k=4")
        path = resolve_key(cls, key)
        value = override_value(raw, text=_wants_text(leaves[path]))
        if not raw.strip() and not _takes_null(leaves[path]):  # `--set lr=`: read as null, which it does not take
            raise ConfigError(f"override {item!r} gives {path} no value; write {key}=VALUE "
                              f"(now {_scalar(_plain(_get(data, path)))})")
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        _coerce(value, leaves[path], path)  # fail here, naming the override, not later
        if path in given and isinstance(value, Mapping) and value and isinstance(node[leaf], Mapping):
            value = {**node[leaf], **value}
        node[leaf] = value
        given.add(path)
    return from_dict(cls, data)


def _takes_null(tp: Any) -> bool:
    return tp is Any or (typing.get_origin(tp) in (typing.Union, types.UnionType) and _NONE in typing.get_args(tp))


def _get(data: dict, path: str) -> Any:
    for part in path.split("."):
        data = data[part]
    return data


def _wants_text(tp: Any) -> bool:
    if tp is str:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return all(_wants_text(a) for a in args if a is not _NONE)
    if origin is Literal:
        return all(isinstance(a, str) for a in args)
    return False


# ----------------------------------------------------------------------------- docs


def markdown_reference(cls: type, instance: Any | None = None) -> str:
    """A Markdown table of every leaf field: dotted path, type, value, docstring.

    ``instance`` supplies the values shown (defaults of ``cls`` when None).
    """
    cfg = instance if instance is not None else cls()
    rows = ["| key | type | value | meaning |", "|---|---|---|---|"]

    def walk(section_cls: type, obj: Any, prefix: str) -> None:
        docs = field_docs(section_cls)
        hints = _type_hints(section_cls)
        for f in dataclasses.fields(section_cls):
            path = _join(prefix, f.name)
            sub = _section_type(hints[f.name])
            if sub is not None:
                walk(sub, getattr(obj, f.name), path)
                continue
            # '<' escaped: a doc mentioning </think> must not read as an HTML tag.
            doc = " ".join(docs.get(f.name, "").split()).replace("|", "\\|").replace("<", "&lt;")
            value = _scalar(_plain(getattr(obj, f.name))).replace("|", "\\|")
            type_name = _type_name(hints[f.name]).replace("|", "\\|")
            rows.append(f"| `{path}` | {type_name} | `{value}` | {doc} |")

    walk(cls, cfg, "")
    return "\n".join(rows) + "\n"
