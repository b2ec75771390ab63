"""Records from a data file, whatever its shape: JSON Lines, a JSON document (a list, pandas'
``to_json`` tables, rows under a key), CSV / TSV, parquet, Arrow, compressed (told by its bytes),
UTF-16, a dataset saved with ``save_to_disk``, a hub dataset's files as downloaded (a directory of
shards: ``data/train-00000-of-00003.parquet``), or a hub dataset.

    for number, record in records("train.jsonl", split="train"):   # (row number, a dict as the file has it)

Each record comes with its row number (JSONL: its line; CSV: the line it starts on, the header being
line 1), and a file that cannot be read is an :class:`InputError` naming it and the row. What a
record's fields mean (prompt, answer, conversation) is :mod:`scalerl.tasks.datasets`' business.
"""

from __future__ import annotations

import csv
import decimal
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from scalerl.curves.unpack import COMPRESSED as _LOG_COMPRESSED
from scalerl.curves.unpack import UTF16_BOMS
from scalerl.errors import InputError
from scalerl.hub import hub_unreachable


#: The compressions a data file may come in, by their first bytes (name, opener, suffix): the log
#: readers' -- gzip, bzip2, xz, zstd (``.zst``: what ``zstd`` and many dataset dumps write).
COMPRESSED = _LOG_COMPRESSED
_FILE_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet", ".csv", ".tsv", ".arrow", ".feather", *(s for _, _, s in COMPRESSED.values()))
#: 'name' or 'owner/name': what a hub dataset id looks like (a missing local path does not).
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def _utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8-sig")  # (a byte-order mark, as editors on Windows write one, is no text)
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
                         "is the file damaged, or in another encoding?") from None


class _DuplicateKey(ValueError):
    """A JSON object naming one key twice (``{"answer": "3", "answer": "4"}``): ``json`` keeps the last
    silently; a data row that says two things is refused, as a CSV's repeated header is."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _whole_number(digits: str) -> int | str:
    """A JSON integer: an ``int``, or its digits where it is longer than Python converts (4,300 digits by
    default: a big-number answer was a ValueError traceback -- review cw); an answer is read as text anyway."""
    limit = sys.get_int_max_str_digits()
    return digits if limit and len(digits.lstrip("-")) > limit else int(digits)


def _loads(text: str, where: str) -> Any:
    """``json.loads`` that refuses an object naming a key twice, naming ``where`` (:class:`InputError`;
    malformed JSON still raises ``json.JSONDecodeError`` for the caller to explain)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_int=_whole_number)
    except _DuplicateKey as exc:
        raise InputError(f"{where}: the key {exc.args[0]!r} appears twice in one object (JSON keeps the last, "
                         "silently); keep the one you mean") from None


def _jsonl(path: Path, prompt_field: str, split: str, document_first: bool) -> Iterator[tuple[int, Any]]:
    """JSON Lines, or one JSON document (a ``.json`` file; a ``.jsonl`` that holds an array, or an
    object written over several lines): its rows as :func:`_document_rows` finds them."""
    with path.open("rb") as f:
        first = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        f.seek(0)
        if first == b"[" or document_first:
            text = _utf8(f.read(), str(path))
            try:
                document = _loads(text, str(path))
            except json.JSONDecodeError as exc:
                if not text.strip():
                    return  # (load_rows: "no rows")
                if first == b"[":
                    raise InputError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from None
                f.seek(0)  # JSON Lines in a .json file (pandas' to_json(lines=True)): read line by line
            else:
                yield from _document_rows(document, path, prompt_field, split)
                return
        pending, count = None, 0  # (one object held back: a file of one is read as a document)
        for number, raw in enumerate(f, start=1):
            line = _utf8(raw, f"{path}: row {number}")
            if not line.strip():
                continue
            try:
                record = _loads(line, f"{path}: row {number}")
            except json.JSONDecodeError as exc:
                if not count:  # an object written over several lines: one document
                    f.seek(0)
                    try:
                        document = _loads(_utf8(f.read(), str(path)), str(path))
                    except json.JSONDecodeError:
                        pass
                    else:
                        yield from _document_rows(document, path, prompt_field, split)
                        return
                raise InputError(f"{path}: row {number}: not valid JSON ({exc.msg}){_jsonl_hint(line, exc)}") from None
            if pending is not None:
                yield pending
            pending, count = (number, record), count + 1
        if count == 1:  # one line: a row, or a wrapper of rows ({"data": [...]})
            rows = list(_document_rows(pending[1], path, prompt_field, split))
            yield from [pending] if len(rows) == 1 and rows[0][1] is pending[1] else rows
        elif pending is not None:
            yield pending


def _jsonl_hint(line: str, exc: json.JSONDecodeError) -> str:
    """What a JSON Lines line that is not JSON most likely holds, as the error's tail."""
    stripped = line.strip()
    if stripped.startswith(("#", "//")):
        return ": a comment? JSON Lines has none; drop the line"
    if exc.msg == "Extra data":
        if stripped[exc.pos:].strip() == ",":
            return ": a comma after the object; JSON Lines has one object a line and no commas between them"
        return ": text after the object (two objects on one line?)"
    return ""


def _document_rows(document: Any, path: Path, prompt_field: str, split: str) -> Iterator[tuple[int, Any]]:
    """The rows of one JSON document, numbered from 1: an array of objects; an object that is one
    row (it holds ``prompt_field``); or a table as pandas' ``to_json`` writes it -- ``orient``
    ``columns`` (its default: ``{"prompt": {"0": ...}, ...}``), ``list`` (``{"prompt": [...], ...}``),
    ``index``, ``split``, ``table`` -- or rows under a key (``{"version": ..., "data": [...]}``; with
    several such keys, ``split`` names the one)."""
    if isinstance(document, list):
        yield from enumerate(document, start=1)
        return
    if not isinstance(document, dict):
        yield 1, document
        return
    found, value = dotted_field(document, prompt_field)
    if found and not isinstance(value, dict) and not (isinstance(value, list) and value
                                                      and not all(isinstance(m, dict) for m in value)):
        yield 1, document  # one row (its prompt text or a conversation)
        return
    columns = list(document.values())
    if found and columns and all(isinstance(c, list) for c in columns):
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            raise InputError(f"{path}: a table of columns (fields holding lists) of different lengths "
                             f"({', '.join(f'{k!r}: {len(c)}' for k, c in document.items())}); each row needs one of each")
        yield from enumerate((dict(zip(document, cells)) for cells in zip(*columns)), start=1)
        return
    if found and columns and all(isinstance(c, dict) for c in columns):  # orient="columns": column -> index -> cell
        index = list(dict.fromkeys(key for c in columns for key in c))
        yield from enumerate(({name: c.get(key) for name, c in document.items()} for key in index), start=1)
        return
    if isinstance(document.get("data"), list) and isinstance(document.get("columns"), list) \
            and set(document) <= {"columns", "index", "data"}:  # orient="split"
        names = document["columns"]
        yield from enumerate((dict(zip(names, cells)) if isinstance(cells, list) and len(cells) == len(names)
                              else cells for cells in document["data"]), start=1)
        return
    lists = {key: v for key, v in document.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)
             and not {"role", "from"} & set(v[0])}  # (not a conversation under a key other than prompt_field)
    if lists and not found:  # rows under a key: {"data": [...]}, pandas' orient="table" ({"schema", "data"})
        if len(lists) == 1:
            yield from enumerate(next(iter(lists.values())), start=1)
            return
        if split in lists:
            yield from enumerate(lists[split], start=1)
            return
        # (a split not found: an evaluation set's reader gives its own split's advice -- review FV)
        raise SplitNotFound(f"{path}: rows under several keys ({', '.join(map(repr, lists))}), one per split")
    if columns and not found and all(isinstance(r, dict) and dotted_field(r, prompt_field)[0] for r in columns):
        yield from enumerate(columns, start=1)  # orient="index": index -> row
        return
    yield 1, document


def _csv(path: Path, delimiter: str) -> Iterator[tuple[int, Any]]:
    """Rows of a CSV (or, for ``.tsv``, tab-separated) file with a header line naming the fields.
    A name the header gives twice reads as :class:`RepeatedColumn` in every row (the reader kept the
    last column's cell: a wrong answer, silently, if that was the answer field)."""
    _refuse_another_separator(path, delimiter)
    # The csv module refuses a cell over 131,072 characters ("field larger than field limit"): a long prompt of a
    # valid file, which a JSON-lines file of the same rows takes (review cb). Raised for the process, never lowered.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    with path.open(encoding="utf-8-sig", newline="") as f:  # -sig: a spreadsheet's byte-order mark
        # strict: a quote left open would otherwise swallow every later line into one cell (the
        # rows after it lost, their text read as one answer), and a stray quote be dropped.
        reader = csv.DictReader(f, delimiter=delimiter, strict=True)
        start = 2  # the line the next row starts on (a quoted field may span lines)
        try:
            names = reader.fieldnames or []
            repeated = {name: RepeatedColumn(name, [i + 1 for i, n in enumerate(names) if n == name])
                        for name in names if names.count(name) > 1}
            for record in reader:
                if None in record:  # more cells than the header names
                    raise InputError(f"{path}: row {start}: {len(record) - 1 + len(record[None])} cells, but the "
                                     f"header names {len(reader.fieldnames or [])} fields")
                yield start, {**record, **repeated}
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


class SplitNotFound(InputError):
    """A data source without the chosen split. Its advice is the training data's setting; an
    evaluation set's reader (the math task's ``eval_data``) gives its own instead."""

    ADVICE = "; choose one: --set 'task.settings={split: NAME}'"

    def __init__(self, message: str) -> None:
        super().__init__(message + self.ADVICE)
        self.without_advice = message


@dataclass(frozen=True)
class RepeatedColumn:
    """A CSV field that the header names more than once (at these 1-based columns)."""

    name: str
    columns: list[int]

    def why(self) -> str:
        return (f"is named by {len(self.columns)} columns of the header (columns "
                f"{', '.join(map(str, self.columns))}); rename all but one")


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


def _float_cell(width: Any) -> Any:
    """A converter of one cell of a ``width`` (numpy's float32 or float16) column to the decimal its
    shortest text gives: pyarrow hands such a cell on as a Python float, widened -- float32's 0.1 as
    0.10000000149011612, 123456.789 as 123456.7890625, an answer no completion's ``123456.789`` matched."""
    def cell(value: Any) -> Any:
        if not isinstance(value, float) or not math.isfinite(value):
            return value  # (None; a NaN or infinity stays one, refused as a missing value)
        return decimal.Decimal(str(width(value)))  # str: the shortest digits that read back as the same value

    return cell


def _narrow_floats(arrow_type: Any) -> Any:
    """A converter that reads the float32 / float16 cells of a value of ``arrow_type`` (in a struct's
    fields and a list's items too: verl's ``reward_model.ground_truth``, ``[2.5]``) as :func:`_float_cell`
    does; None where the type holds none."""
    import numpy as np
    import pyarrow as pa

    t = pa.types
    if t.is_float32(arrow_type) or t.is_float16(arrow_type):
        return _float_cell(np.float32 if t.is_float32(arrow_type) else np.float16)
    if t.is_struct(arrow_type):
        fields = {f.name: _narrow_floats(f.type) for f in arrow_type}
        fields = {name: convert for name, convert in fields.items() if convert is not None}
        if not fields:
            return None
        return lambda value: value if not isinstance(value, dict) else {
            **value, **{name: convert(value.get(name)) for name, convert in fields.items()}}
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        item = _narrow_floats(arrow_type.value_type)
        if item is None:
            return None
        return lambda value: value if not isinstance(value, list) else [item(v) for v in value]
    return None


def _exact_rows(rows: Iterator[dict] | list[dict], schema: Any) -> Iterator[dict]:
    """``rows`` (as pyarrow's ``to_pylist`` or a ``datasets.Dataset`` gives them, by the Arrow ``schema``)
    with their float32 / float16 cells as the decimals their columns hold (:func:`_float_cell`)."""
    columns = {field.name: _narrow_floats(field.type) for field in schema}
    columns = {name: convert for name, convert in columns.items() if convert is not None}
    for row in rows:
        yield {**row, **{name: convert(row[name]) for name, convert in columns.items() if name in row}} if columns else row


def _parquet(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        records = list(_exact_rows(table.to_pylist(), table.schema))  # (a damaged string column fails only here, decoding)
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises several types for a bad file
        raise InputError(f"{path}: cannot read as parquet: {exc}") from None
    yield from enumerate(records, start=1)


def _hf_dataset(source: str, split: str) -> Iterator[tuple[int, Any]]:
    """A ``save_to_disk`` directory, or else a dataset name on the Hugging Face hub."""
    import datasets

    on_hub = not Path(source).is_dir()
    why = hub_unreachable(source, repo_type="dataset") if on_hub else None
    if why is not None:  # (else ~25 s of the hub client's retries, each printed, then the same failure)
        raise InputError(f"{source}: not a local file or directory and not in the Hugging Face cache, and "
                         f"{why}; check the path, or download the dataset on a machine with network "
                         "(datasets.load_dataset(NAME).save_to_disk(DIR)) and give DIR")
    try:
        data = datasets.load_dataset(source, split=split) if on_hub else datasets.load_from_disk(source)
    except Exception as exc:  # noqa: BLE001 -- report any loading failure as bad input
        raise InputError(f"{source}: cannot load as a Hugging Face dataset: {exc}") from None
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise SplitNotFound(f"{source}: no split {split!r}; splits: {', '.join(data)}")
        data = data[split]
    elif split != "train" and split != str(getattr(data, "split", None) or ""):
        # One saved Dataset has no splits to choose from: a chosen one (``split``/``eval_split``, not
        # the default) read the whole dataset -- for eval_split, the training rows themselves.
        saved = f" (it was saved from split {str(data.split)!r})" if getattr(data, "split", None) else ""
        raise InputError(f"{source}: one saved Dataset, not a DatasetDict: it has no split {split!r} to choose"
                         f"{saved}; drop split / eval_split to read all of it, or save a DatasetDict "
                         "(DatasetDict({'train': ..., 'test': ...}).save_to_disk(DIR))")
    number = 0
    try:
        for number, record in enumerate(_exact_rows(data, data.features.arrow_schema), start=1):
            yield number, record
    except Exception as exc:  # noqa: BLE001 -- a damaged Arrow file fails while rows are decoded
        raise InputError(f"{source}: row {number + 1}: cannot be read ({type(exc).__name__}: {exc})") from None


#: Compressed data files (``train.jsonl.gz``): the opener of each, by the suffix it adds (the
#: compressions the log readers unpack).
_COMPRESSED = {suffix: opener for _, opener, suffix in COMPRESSED.values()}
_FORMATS = (".jsonl", ".json", ".ndjson", ".parquet", ".csv", ".tsv", ".arrow", ".feather")
#: Files that make a directory a dataset saved with ``save_to_disk`` (a Dataset; a DatasetDict).
_SAVED_MARKERS = ("state.json", "dataset_dict.json", "dataset_info.json")


def _wrapping(path: Path) -> tuple[str, Any] | None:
    """``(what, opener)`` of a file told by its first bytes, whatever its name: a compressed stream
    (a ``.jsonl`` that is gzip inside, as ``curl`` saves a served file) or UTF-16 text (PowerShell's
    ``>`` writes UTF-16 with a byte-order mark); None for a file read as it is."""
    with path.open("rb") as f:
        head = f.read(8)
    for magic, (name, opener, suffix) in COMPRESSED.items():
        if head.startswith(magic) and (name != "bzip2" or head[3:4].isdigit()):
            return suffix[1:], opener
    if head.startswith(UTF16_BOMS):
        return "UTF-16", None
    return None


def _unwrapped(path: Path, what: str, opener: Any, read: Any) -> Iterator[tuple[int, Any]]:
    """The records of a compressed or UTF-16 data file, read (``read(inner)``) as the file it holds:
    ``train.jsonl.gz`` as ``train.jsonl``; errors name ``path``."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="scalerl-data-") as tmp:
        name = path.name[: -len(path.suffix)] if path.suffix.lower() in _COMPRESSED else path.name
        inner = Path(tmp) / name  # train.jsonl.gz -> train.jsonl
        try:
            if opener is None:  # UTF-16 text, as UTF-8
                with open(path, encoding="utf-16", newline="") as src, open(inner, "w", encoding="utf-8", newline="") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            else:
                with opener(path, "rb") as src, open(inner, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        except Exception as exc:  # noqa: BLE001 -- gzip: OSError, zlib.error; lzma: LZMAError; bz2: OSError; UnicodeError; zstd: OSError
            raise InputError(f"{path}: a damaged {what} file ({exc})") from None
        try:
            yield from read(inner)
        except InputError as exc:
            raise InputError(str(exc).replace(str(inner), str(path))) from None


def _arrow(path: Path) -> Iterator[tuple[int, Any]]:
    """An Arrow IPC file (``.arrow``, ``.feather``) or stream (what ``datasets`` writes its ``.arrow`` files as)."""
    import pyarrow as pa

    try:
        try:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
        except pa.ArrowInvalid:
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
        records = list(_exact_rows(table.to_pylist(), table.schema))
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises several types for a bad file
        raise InputError(f"{path}: cannot read as an Arrow file: {exc}") from None
    yield from enumerate(records, start=1)


def _read_file(path: Path, suffix: str, split: str, prompt_field: str) -> Iterator[tuple[int, Any]]:
    """The records of a data file read as ``suffix`` says (a compressed one's inner suffix)."""
    if suffix in (".jsonl", ".json", ".ndjson"):
        return _jsonl(path, prompt_field, split, document_first=suffix == ".json")
    if suffix == ".parquet":
        return _parquet(path)
    if suffix in (".csv", ".tsv"):
        return _csv(path, "\t" if suffix == ".tsv" else ",")
    if suffix in (".arrow", ".feather"):
        return _arrow(path)
    raise InputError(f"{path}: unknown data format {suffix!r}; use .jsonl, .json, .csv, .tsv, .parquet, .arrow (each "
                     "may be compressed: .gz, .bz2, .xz, .zst) or a dataset directory")


#: How a Git LFS pointer file begins: what ``git clone`` of a hub dataset leaves without git-lfs.
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _refuse_an_lfs_pointer(path: Path) -> None:
    """Refuse a Git LFS pointer in place of its data (a hub dataset cloned without git-lfs): read as
    the file it stands for, it was 'cannot read as parquet: Parquet magic bytes not found', or JSON
    Lines' 'not valid JSON'."""
    with path.open("rb") as f:
        if f.read(len(_LFS_POINTER)) == _LFS_POINTER:
            raise InputError(f"{path}: a Git LFS pointer, not the data it stands for (a clone without git-lfs); "
                             "fetch the data: git lfs pull in the clone, or huggingface-cli download REPO "
                             "--repo-type dataset --local-dir DIR")


def _read_unwrapped(path: Path, suffix: str, split: str, prompt_field: str) -> Iterator[tuple[int, Any]]:
    """The records of a data file, unwrapped first where its bytes tell it is compressed or UTF-16
    (a .jsonl that is gzip inside, PowerShell's UTF-16 inside a .gz), then read as ``suffix`` says."""
    _refuse_an_lfs_pointer(path)
    wrapping = _wrapping(path)
    if wrapping is not None:
        return _unwrapped(path, *wrapping, lambda p: _read_unwrapped(p, suffix, split, prompt_field))
    return _read_file(path, suffix, split, prompt_field)


def records(source: str, split: str, prompt_field: str = "prompt") -> Iterator[tuple[int, Any]]:
    """``(row number, record)`` of every row of ``source`` (a file, a saved dataset's directory, a hub id);
    ``split`` picks one of several, ``prompt_field`` tells a wrapper's rows from its other keys."""
    path = Path(source)
    suffix = path.suffix.lower()
    if path.is_file():
        inner = Path(path.stem).suffix.lower() if suffix in _COMPRESSED else suffix
        return _read_unwrapped(path, inner, split, prompt_field)  # (a .jsonl.gz that is plain text is read so)
    if path.is_dir() and not any((path / marker).is_file() for marker in _SAVED_MARKERS):
        return _shard_records(path, split, prompt_field)
    if path.is_dir() or (not path.exists() and suffix not in _FILE_SUFFIXES and _HUB_ID.fullmatch(source)
                         and not Path(source.split("/")[0]).is_dir()):
        return _hf_dataset(source, split)
    # (A hub-like 'data/nosuch' whose first part is a local directory is a mistyped path, not an
    # owner on the hub: asking the hub cost ~25 s of retries and a message about the hub.)
    raise InputError(f"{source}: no such file or directory")


#: The split a data file in a directory belongs to, told by a word in its path as the hub tells it
#: (``data/train-00000-of-00003.parquet``, ``test.jsonl``, ``validation/0000.parquet``): the split, by
#: each word that names it.
_SPLIT_WORDS = {word: split for split, words in (("train", ("train", "training")),
                                                 ("test", ("test", "testing", "eval", "evaluation")),
                                                 ("validation", ("validation", "valid", "val", "dev")))
                for word in words}
#: A split word in a file or folder name: the name's start or end, or bounded by -, _, ., a space or a digit.
_SPLIT_IN_NAME = re.compile(r"(?:^|(?<=[-_. 0-9]))(" + "|".join(sorted(_SPLIT_WORDS, key=len, reverse=True))
                            + r")(?=$|[-_. 0-9])", re.IGNORECASE)


def _is_data_file(path: Path) -> bool:
    return path.suffix.lower() in _FORMATS or (path.suffix.lower() in _COMPRESSED and Path(path.stem).suffix.lower() in _FORMATS)


def _split_of(relative: Path) -> str | None:
    """The split a data file's path (relative to the directory) names, else None."""
    for part in (*relative.parts[:-1], relative.name):
        found = _SPLIT_IN_NAME.search(part)
        if found:
            return _SPLIT_WORDS[found.group(1).lower()]
    return None


def _shards(path: Path, split: str) -> list[Path]:
    """The data files of ``split`` in a directory that is no ``save_to_disk`` dataset -- a hub dataset's
    files as ``snapshot_download`` or ``git clone`` leaves them (``data/train-00000-of-00003.parquet``,
    ``test.jsonl``) -- in name order; an :class:`InputError` saying what to give where none are, or the
    directory holds several configurations (gsm8k's ``main/`` and ``socratic/``)."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and _is_data_file(p)
                   and not any(part.startswith(".") for part in p.relative_to(path).parts))  # (.cache, .git)
    if not files:
        raise InputError(f"{path}: a directory that holds no data file and no dataset saved with save_to_disk; "
                         "give a data file (.jsonl, .json, .csv, .tsv, .parquet, .arrow)")
    relative = [p.relative_to(path) for p in files]
    configs = sorted({r.parts[0] for r in relative if len(r.parts) > 1 and r.parts[0] != "data"
                      and not _SPLIT_IN_NAME.search(r.parts[0])})
    if len(configs) > 1 or (configs and any(len(r.parts) == 1 for r in relative)):
        shown = ", ".join(configs[:5]) + (", ..." if len(configs) > 5 else "")
        raise InputError(f"{path}: a directory of several datasets (configurations: {shown}); give the folder of "
                         f"one: {path / configs[0]}")
    splits = {p: _split_of(r) for p, r in zip(files, relative)}
    if all(s is None for s in splits.values()):
        splits = dict.fromkeys(files, "train")  # (the hub's rule: files that name no split are the train split)
    chosen = [p for p in files if splits[p] == split]
    if not chosen:
        named = ", ".join(sorted({s for s in splits.values() if s is not None}))
        raise SplitNotFound(f"{path}: no data file of split {split!r} (files are told apart by a split word in "
                            f"their name: train-00000-of-00002.parquet, test.jsonl); splits: {named}")
    return chosen


def local_splits(source: str) -> list[str]:
    """The splits a local dataset directory holds, as :func:`records` tells them (a hub dataset's files
    by the split words in their names, a ``save_to_disk`` DatasetDict by its ``dataset_dict.json``); []
    for a file, a single saved Dataset, a hub id, or a directory that cannot be read so (its reading says
    why)."""
    path = Path(source)
    if not path.is_dir():
        return []
    saved = path / "dataset_dict.json"
    if saved.is_file():
        try:
            return [str(s) for s in json.loads(saved.read_text()).get("splits", [])]
        except (OSError, ValueError, AttributeError):
            return []
    if any((path / marker).is_file() for marker in _SAVED_MARKERS):
        return []
    files = [r for r in (p.relative_to(path) for p in path.rglob("*") if p.is_file() and _is_data_file(p))
             if not any(part.startswith(".") for part in r.parts)]  # (as _shards: .cache, .git)
    found = {_split_of(r) for r in files} - {None}
    return sorted(found) if found else (["train"] if files else [])  # (the hub's rule: no split named, train)


def _shard_records(path: Path, split: str, prompt_field: str) -> Iterator[tuple[int, Any]]:
    """The records of a directory's data files of ``split``, one after another in name order, numbered
    on across them (an error while a file is read names that file and its own row)."""
    number = 0
    for shard in _shards(path, split):
        for _, record in records(str(shard), split, prompt_field):
            number += 1
            yield number, record


def dotted_field(record: dict, name: str) -> tuple[bool, Any]:
    """``(found, value)`` of ``name`` in ``record``: a key, or a dotted path into nested objects
    (``reward_model.ground_truth``); a key that holds the dots itself wins, at any depth and before a shorter one
    (``meta.q.text`` of ``{"meta": {"q.text": ...}}``, the path the errors suggest -- review fq: the dots of a key
    split it; review fr: ``a.b.c`` of ``{"a.b": {"c": ...}, "a": ...}`` went through ``a``)."""
    record = map_as_dict(record)
    if not isinstance(record, dict):
        return False, None
    if name in record:
        return True, record[name]
    for i in sorted((i for i, c in enumerate(name) if c == "."), reverse=True):  # (the longest key first: review fr)
        if name[:i] in record:
            found, value = dotted_field(record[name[:i]], name[i + 1:])
            if found:
                return True, value
    return False, None


def map_as_dict(value: Any) -> Any:
    """A parquet / Arrow map column's value -- a list of (key, value) pairs, as pyarrow reads it -- as
    the dict it stands for; anything else as it is."""
    if (isinstance(value, list) and value
            and all(isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) for m in value)):
        return dict(value)
    return value
