"""Load ``{prompt, answer}`` rows from JSONL / JSON, CSV / TSV, parquet, a saved Hugging Face dataset, or a hub dataset.

A row that lacks a field, has an empty prompt, or is not parseable raises :class:`InputError`
naming the file and the row -- it is not skipped. A silently shrunk dataset changes the
experiment without telling anyone (and shifts every later row id); one bad row is usually a
sign of a wrong field name or a broken export that the user wants to fix, not to train around.
Rows are numbered from 1: for JSONL the row number is the line number in the file; for CSV
it is the line the row starts on (the header is line 1), so an editor finds it.

What verl's and TRL's data preparation write reads as it is: a field may be a path into nested
objects (``reward_model.ground_truth``: verl's parquet keeps the answer there), and the prompt may
be a conversation -- a list of ``{"role", "content"}`` messages ending with a user turn (verl's
``prompt`` column, TRL's conversational format), which the model then gets through its chat
template, system prompt included.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from scalerl.curves.unpack import COMPRESSED
from scalerl.errors import InputError
from scalerl.tasks.base import is_bool

_FILE_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet", ".csv", ".tsv", *(s for _, _, s in COMPRESSED.values()))
#: 'name' or 'owner/name': what a hub dataset id looks like (a missing local path does not).
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


@dataclass(frozen=True)
class Row:
    """One validated row: where it came from and its two fields as text."""

    row: int
    prompt: str
    answer: str
    messages: tuple[tuple[str, str], ...] = ()
    """The conversation, where the prompt field held one (``prompt`` is then its last user turn)."""


#: The roles a prompt conversation's messages may have.
ROLES = ("system", "user", "assistant")


def _utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8-sig")  # (a byte-order mark, as editors on Windows write one, is no text)
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
                         "is the file damaged, or in another encoding?") from None


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as f:
        first = f.read(4).lstrip(b"\xef\xbb\xbf")[:1]
        f.seek(0)
        if first == b"[":  # a JSON array of objects rather than JSON Lines
            try:
                data = json.loads(_utf8(f.read(), str(path)))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from None
            yield from enumerate(data, start=1)
            return
        for number, raw in enumerate(f, start=1):
            line = _utf8(raw, f"{path}: row {number}")
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: row {number}: not valid JSON ({exc.msg})") from None


def _csv(path: Path) -> Iterator[tuple[int, Any]]:
    """Rows of a CSV (or, for ``.tsv``, tab-separated) file with a header line naming the fields."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    _refuse_another_separator(path, delimiter)
    with path.open(encoding="utf-8-sig", newline="") as f:  # -sig: a spreadsheet's byte-order mark
        # strict: a quote left open would otherwise swallow every later line into one cell (the
        # rows after it lost, their text read as one answer), and a stray quote be dropped.
        reader = csv.DictReader(f, delimiter=delimiter, strict=True)
        start = 2  # the line the next row starts on (a quoted field may span lines)
        try:
            for record in reader:
                if None in record:  # more cells than the header names
                    raise InputError(f"{path}: row {start}: {len(record) - 1 + len(record[None])} cells, but the "
                                     f"header names {len(reader.fieldnames or [])} fields")
                yield start, record
                start = reader.line_num + 1
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                raise InputError(f"{path}: row {start}: a quoted cell opens on this row and is never closed (every "
                                 "later line would be read into it); close the quote, or write a quote inside "
                                 'a quoted cell as two ("")') from None
            hint = ""
            if "expected after" in str(exc):
                hint = ': text after a quoted cell\'s closing quote; a quote inside a quoted cell is written as two ("")'
            raise InputError(f"{path}: row {start}: not valid CSV ({exc}){hint}") from None
        except UnicodeDecodeError as exc:
            _check_utf8_lines(path)  # raises, naming the line
            raise InputError(f"{path}: after row {reader.line_num}: not UTF-8 text ({exc.reason}); is the file "
                             "damaged, or in another encoding?") from None


#: Separators a header may use instead of the file's own, by name.
_SEPARATORS = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _refuse_another_separator(path: Path, delimiter: str) -> None:
    """Refuse a file whose header separates its fields with something else than ``delimiter`` (and
    never with it): a spreadsheet set to a European locale saves "CSV" with semicolons (and decimal
    commas, "0,5", which no reading could tell from a list), and a tab-separated file may be named
    .csv. Read as it is, the header was one field ("missing field 'prompt' (fields present:
    'prompt;answer')") or a quoted cell "not valid CSV"."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            header = f.readline()
    except UnicodeDecodeError:
        return  # the reader names the line that is not UTF-8
    if delimiter in header:
        return
    other = next((s for s in _SEPARATORS if s != delimiter and s in header), None)
    if other is None:
        return
    fix = ("name it .tsv" if other == "\t" else
           f"save it with {_SEPARATORS[delimiter]} (and decimal points)" if delimiter == "," else
           f"save it with {_SEPARATORS[delimiter]}")
    raise InputError(f"{path}: its header {header.strip()!r} separates the fields with {_SEPARATORS[other]}, not "
                     f"{_SEPARATORS[delimiter]}; {fix}, or convert it to JSONL")


def _check_utf8_lines(path: Path) -> None:
    """Raise :func:`_utf8`'s error naming the first line of ``path`` that is not UTF-8: the CSV
    reader decodes ahead in blocks, so where it failed says nothing about the row."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            _utf8(raw, f"{path}: row {number}")  # (a line break is never part of a UTF-8 sequence)


def _parquet(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        records = pq.read_table(path).to_pylist()  # (a damaged string column fails only here, decoding)
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises several types for a bad file
        raise InputError(f"{path}: cannot read as parquet: {exc}") from None
    yield from enumerate(records, start=1)


def _hf_dataset(source: str, split: str) -> Iterator[tuple[int, Any]]:
    """A ``save_to_disk`` directory, or else a dataset name on the Hugging Face hub."""
    import datasets

    try:
        if Path(source).is_dir():
            data = datasets.load_from_disk(source)
        else:
            data = datasets.load_dataset(source, split=split)
    except Exception as exc:  # noqa: BLE001 -- report any loading failure as bad input
        raise InputError(f"{source}: cannot load as a Hugging Face dataset: {exc}") from None
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise InputError(f"{source}: no split {split!r}; splits: {', '.join(data)}")
        data = data[split]
    number = 0
    try:
        for number, record in enumerate(data, start=1):
            yield number, record
    except Exception as exc:  # noqa: BLE001 -- a damaged Arrow file fails while rows are decoded
        raise InputError(f"{source}: row {number + 1}: cannot be read ({type(exc).__name__}: {exc})") from None


#: Compressed data files (``train.jsonl.gz``): the opener of each, by the suffix it adds (the
#: compressions the log readers unpack).
_COMPRESSED = {suffix: opener for _, opener, suffix in COMPRESSED.values()}


def _decompressed(path: Path, split: str) -> Iterator[tuple[int, Any]]:
    """The records of a compressed data file (``train.jsonl.gz``), read as the file it holds."""
    import shutil
    import tempfile

    opener = _COMPRESSED[path.suffix.lower()]
    with tempfile.TemporaryDirectory(prefix="scalerl-data-") as tmp:
        inner = Path(tmp) / path.stem  # train.jsonl.gz -> train.jsonl
        try:
            with opener(path, "rb") as src, open(inner, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except Exception as exc:  # noqa: BLE001 -- gzip: OSError, zlib.error; lzma: LZMAError; bz2: OSError
            raise InputError(f"{path}: a damaged {path.suffix[1:]} file ({exc})") from None
        try:
            yield from _records(str(inner), split)
        except InputError as exc:
            raise InputError(str(exc).replace(str(inner), str(path))) from None


def _records(source: str, split: str) -> Iterator[tuple[int, Any]]:
    path = Path(source)
    suffix = path.suffix.lower()
    if path.is_file() and suffix in _COMPRESSED:
        return _decompressed(path, split)
    if path.is_file():
        if suffix in (".jsonl", ".json", ".ndjson"):
            return _jsonl(path)
        if suffix == ".parquet":
            return _parquet(path)
        if suffix in (".csv", ".tsv"):
            return _csv(path)
        raise InputError(f"{source}: unknown data format {suffix!r}; use .jsonl, .json, .csv, .tsv, .parquet (each "
                         "may be compressed: .gz, .bz2, .xz) or a dataset directory")
    if path.is_dir() or (not path.exists() and suffix not in _FILE_SUFFIXES and _HUB_ID.fullmatch(source)
                         and not Path(source.split("/")[0]).is_dir()):
        return _hf_dataset(source, split)
    # (A hub-like 'data/nosuch' whose first part is a local directory is a mistyped path, not an
    # owner on the hub: asking the hub cost ~25 s of retries and a message about the hub.)
    raise InputError(f"{source}: no such file or directory")


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _not_text(value: Any) -> str | None:
    """Why a field value that ``str()`` would turn into plausible text is not one, else None.

    A NaN is how pandas (and Python's json) writes a missing value in a numeric column; as the
    text "nan" it is an answer no completion can match. A JSON ``true`` is rarely the answer
    "True" that its text would be."""
    if is_bool(value):
        return f"is the boolean {str(value).lower()}, not text; quote it if that is the answer"
    if isinstance(value, numbers.Real) and not math.isfinite(value):
        return f"is {value} (a missing value?); fill it in or drop the row"
    return None


def _surrogate(texts: list[str]) -> str | None:
    """Why one of ``texts`` cannot be encoded (a lone surrogate), else None. JSON may escape one
    (``"\\ud800"``: UTF-16 cut in half by a scraper or a truncation); every later step that encodes
    the text -- tokenizing, hashing it for the val split -- would fail on it."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"holds text that is not valid Unicode (a lone surrogate {text[exc.start]!r} at character "
                    f"{exc.start}); fix or drop the row")
    return None


def _field(record: dict, name: str) -> tuple[bool, Any]:
    """``(found, value)`` of ``name`` in ``record``: a key, or a dotted path into nested objects
    (``reward_model.ground_truth``); a key that holds the dots itself wins."""
    if name in record:
        return True, record[name]
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _conversation(value: Any) -> tuple[tuple[str, str], ...] | None:
    """A prompt given as chat messages, as ``(role, content)`` pairs; None if ``value`` is none."""
    if hasattr(value, "tolist"):  # a numpy array of messages (pandas-written parquet)
        value = value.tolist()
    if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
        return None
    pairs = tuple((m.get("role"), m.get("content")) for m in value)
    if not all(role in ROLES and isinstance(content, str) for role, content in pairs):
        return None
    return pairs


def _nested_fields(record: dict, depth: int = 2) -> list[str]:
    """The fields of a record as dotted paths (to the given depth): what a message can suggest."""
    out = []
    for key, value in record.items():
        if isinstance(value, dict) and depth > 1:
            out += [f"{key}.{sub}" for sub in _nested_fields(value, depth - 1)]
        else:
            out.append(str(key))
    return out


def load_rows(source: str | Path, prompt_field: str = "prompt", answer_field: str = "answer", split: str = "train") -> list[Row]:
    """Every row of ``source`` as :class:`Row`; :class:`InputError` naming file and row on the first bad one."""
    source = str(source)
    rows = []
    for number, record in _records(source, split):
        if not isinstance(record, dict):
            raise InputError(f"{source}: row {number}: expected an object with fields {prompt_field!r} and {answer_field!r}")
        values = {}
        for setting, name in (("prompt_field", prompt_field), ("answer_field", answer_field)):
            found, values[setting] = _field(record, name)
            if not found:
                present = ", ".join(map(repr, _nested_fields(record))) or "none"
                raise InputError(f"{source}: row {number}: missing field {name!r} (fields present: {present}); "
                                 f"if another field holds it: --set 'task.settings={{{setting}: NAME}}' "
                                 "(a nested one as a dotted path: reward_model.ground_truth)")
            why = _not_text(values[setting])
            if why is not None:
                raise InputError(f"{source}: row {number}: field {name!r} {why}")
        messages = _conversation(values["prompt_field"]) or ()
        if messages:
            if messages[-1][0] != "user":
                raise InputError(f"{source}: row {number}: the conversation in {prompt_field!r} ends with a message "
                                 f"of role {messages[-1][0]!r}; a prompt ends with the user's turn")
            prompt = messages[-1][1]
        else:
            prompt = _text(values["prompt_field"])
        answer = _text(values["answer_field"])
        if not prompt or not prompt.strip():
            raise InputError(f"{source}: row {number}: field {prompt_field!r} is empty or not text (nor a "
                             "conversation: a list of {role, content} messages ending with a user turn)")
        if answer is None or not answer.strip():
            raise InputError(f"{source}: row {number}: field {answer_field!r} is empty or not text")
        for name, texts in ((prompt_field, [c for _, c in messages] or [prompt]), (answer_field, [answer])):
            why = _surrogate(texts)
            if why is not None:
                raise InputError(f"{source}: row {number}: field {name!r} {why}")
        rows.append(Row(row=number, prompt=prompt, answer=answer.strip(), messages=messages))
    if not rows:
        raise InputError(f"{source}: no rows")
    return rows


def answer_conflicts(rows: list[Row]) -> tuple[int, tuple[Row, Row] | None]:
    """How many prompts (conversations) appear in ``rows`` with more than one answer, and the first
    two rows that disagree. Each row is scored against its own answer, so a completion right by one
    is wrong by the other: a broken merge or export the user should hear of, not a row to drop
    (which of the two is right is the user's call)."""
    first_row: dict[Any, Row] = {}
    conflicting: dict[Any, tuple[Row, Row]] = {}
    for row in rows:
        key = row.messages or row.prompt
        seen = first_row.setdefault(key, row)
        if seen.answer != row.answer and key not in conflicting:
            conflicting[key] = (seen, row)
    return len(conflicting), min(conflicting.values(), key=lambda pair: pair[1].row, default=None)


def repeated_rows(rows: Sequence[Any]) -> tuple[int, tuple[Any, Any] | None]:
    """How many of ``rows`` (:class:`Row` s or problems: anything with ``prompt``, ``messages`` and
    ``answer``) repeat an earlier one's prompt (conversation) and answer, and the first such pair. In
    an evaluation set each copy counts in the pass rate (a repeated problem weighs twice); in
    training data a repeat is often meant (upsampling)."""
    first_row: dict[Any, Any] = {}
    count, first = 0, None
    for row in rows:
        seen = first_row.setdefault((row.messages or row.prompt, row.answer), row)
        if seen is not row:
            count += 1
            first = first or (seen, row)
    return count, first
