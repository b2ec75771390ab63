"""CSV logs: one run, or one per value of a ``run`` column; W&B chart exports (``"<run> - <metric>"``
columns). ``#`` comment lines allowed; comma, ``;`` (with decimal commas), tab or ``|`` delimited
(a Markdown table: its ``---`` rule row and outer pipes are no data; a heading or other lines around
it are passed over, said in the notes).
"""

from __future__ import annotations

import csv
import io
import math
import re
from functools import partial
from pathlib import Path

from scalerl.curves.attempts import STEP_COLUMNS, is_clock, split_attempts, steps_count_again
from scalerl.curves.cells import MISSING_CELLS, logged
from scalerl.curves.console import text_head
from scalerl.curves.csv_cut_row import without_cut_row
from scalerl.curves.data import Curve
from scalerl.curves.rows import (DEFAULT_RUN_COLUMN, UnknownColumn, check_percent_scale,
                                 curves_from_rows, drop_repeated_evaluations, percent_note, readable_curves,
                                 unknown_column, unwrap_scalar, x_columns)
from scalerl.curves.untimed_steps import COUNTERS
from scalerl.errors import InputError


def _number(text: str, *, where: str) -> float:
    """Parse a cell; missing / NaN / inf become NaN (dropped and counted later); a numpy repr
    (``np.float64(0.5)``) is its number; a percentage (``45.3%``, as spreadsheets export a
    percent-formatted cell) its fraction."""
    s = unwrap_scalar(text.strip())
    if s in MISSING_CELLS:
        return math.nan
    try:
        return float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        raise InputError(f"{where}: {s[:40]!r} is not a number -- fix the cell or choose another column") from None



#: Delimiters a CSV may use: comma, and what spreadsheets in comma-decimal locales export (``;``),
#: tab and pipe. The header and first rows decide (``csv.Sniffer``); a ``.tsv`` file is tab.
_DELIMITERS = ",;\t|"


def _dialect(path: Path, sample: list[str]):
    if path.suffix.lower() == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff("".join(sample), delimiters=_DELIMITERS)
    except csv.Error:  # one column, or no consistent delimiter: the plain comma dialect
        return csv.excel


#: A UTF-8 sequence of two to four bytes: a file holding one is UTF-8 text (damaged where it does
#: not decode), not a legacy code page's (whose accented letters are single bytes).
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def _decoded(path: Path) -> tuple[str, str | None]:
    """The text of a CSV, and a note where it is not UTF-8. A spreadsheet on Windows exports in its
    code page (``accuracy (é)`` as byte 0xE9): read as Windows-1252, the names are the ones the user
    sees and types; read as UTF-8 with replacement they held U+FFFD, which no ``--y`` matches."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
    if _UTF8_SEQUENCE.search(raw):
        return (raw.decode("utf-8-sig", errors="replace"),
                f"not valid UTF-8 from line {line} on: the bytes that do not decode are read as U+FFFD")
    try:
        text, code = raw.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError:  # (five bytes cp1252 leaves undefined)
        text, code = raw.decode("latin-1"), "Latin-1"
    return text, f"not UTF-8 (line {line}): read as {code}, as a spreadsheet on Windows exports; save it as UTF-8 if its names look wrong"


def _read_csv_rows(path: Path, x: str = "", run_column: str | None = None) -> tuple[list[str], list[tuple[int, list[str]]], bool, tuple[str, ...]]:
    """Header, ``(line number, cells)`` rows, whether numbers may use a decimal comma (a
    ``;``-delimited export from a comma-decimal locale: ``0,53``), and the notes: on its encoding and
    on the lines around a Markdown table that were passed over ('; '-joined), and on a last row cut
    short by a kill (:func:`scalerl.curves.csv_cut_row.without_cut_row`; ``x``: the compute column read, which
    with the step columns cannot fall, within a run of ``run_column``, default ``run``)."""
    text, encoding_note = _decoded(path)
    # CRLF text written again in text mode on Windows ends its lines in \r\r\n: one line end, not a blank line after
    # every line (a table then read as spaced, and a note after it as a row: reviews bt, bx).
    text = text.replace("\r\r\n", "\r\n")
    lines = [(i, line) for i, line in enumerate(io.StringIO(text, newline=""), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"{path}: the file is empty (no header, no rows)")
    lines, outside, table = _markdown_block(lines)
    # (A Markdown table is '|'-delimited by definition: sniffed, a last row cut before its closing pipe -- one
    # cell fewer -- made the sniffer give up and the whole table was read as one column.)
    dialect = _PIPES if table else _dialect(path, [line for _, line in lines[:20]])
    if table:
        parsed = [[cell.replace(_HELD_PIPE, "|") for cell in row]
                  for row in csv.reader([line.replace(_ESCAPED_PIPE, _HELD_PIPE) for _, line in lines], dialect)]
    else:
        parsed = list(csv.reader([line for _, line in lines], dialect))
    cut_pipe = ""
    if dialect.delimiter == "|":
        lines, parsed, cut_pipe = _markdown_table(lines, parsed)
    encoding_note = "; ".join(n for n in (encoding_note, outside, cut_pipe) if n) or None
    header = [h.strip() for h in parsed[0]]
    rows = [(lineno, row) for (lineno, _), row in zip(lines[1:], parsed[1:])]
    if not rows:
        raise InputError(f"{path}: the file has a header but no rows")
    # (A line read with newline="" keeps its line end: only the file's last line can lack one.)
    runs = run_column or DEFAULT_RUN_COLUMN
    rows, cut = without_cut_row(header, rows, last_line=lines[-1][1], ordered={x, *STEP_COLUMNS},
                                run_index=header.index(runs) if header.count(runs) == 1 else None)
    return header, rows, dialect.delimiter == ";", tuple(n for n in (encoding_note, cut) if n)


#: What a note on a Markdown table says where another table follows it (an unknown column may be that table's).
_ANOTHER_TABLE = "another Markdown table"
#: A cell of a Markdown table's delimiter row (``---``, ``:--``, ``--:``).
_MARKDOWN_RULE = re.compile(r"^\s*:?-+:?\s*$")
#: A Markdown table's delimiter row, two cells or more: ``|---|:--:|``, ``-- | --``.
_MARKDOWN_RULE_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")
#: How many of a file's first lines are looked at for a Markdown table's header and rule.
_TABLE_SNIFF_LINES = 200


def _table_start(lines: list[str]) -> int | None:
    """The index of a Markdown table's header among ``lines`` (non-blank): a line with ``|`` over a
    delimiter row; None where there is none."""
    return next((i for i in range(len(lines) - 1)
                 if "|" in lines[i] and not _MARKDOWN_RULE_ROW.match(lines[i]) and _MARKDOWN_RULE_ROW.match(lines[i + 1])),
                None)


def looks_like_markdown_table(path: Path) -> bool:
    """Whether ``path`` holds a Markdown table (a ``|`` header over its ``---`` rule) among its first lines:
    a table pasted into a ``.log`` file, or one a script printed among its other output."""
    head = text_head(path, 1_000_000)
    if head is None:
        return False
    lines = [line for line in head.splitlines() if line.strip()][:_TABLE_SNIFF_LINES]
    return _table_start(lines) is not None


def _markdown_block(lines: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], str, bool]:
    """The lines of the Markdown table among ``lines`` -- its header, rule and the ``|`` lines after them --,
    a note on the lines around it that were passed over (a heading, a script's other output, a second table),
    and whether there is one; ``lines`` as they are where they hold no Markdown table or nothing else."""
    start = _table_start([line for _, line in lines[:_TABLE_SNIFF_LINES]])
    if start is None:
        return lines, "", False
    end = start + 2
    opened = lines[start][1].lstrip().startswith("|")
    # A blank (or '#') line ends a table, as Markdown ends one -- but in a table whose rows are spaced from the start
    # (a blank line between its rule and its first row): there, at the next table's header or at a line the table's
    # would open with a pipe and does not (_another_block). Review bv: a note after a blank line under a table
    # without outer pipes was read as a row.
    spaced = end < len(lines) and lines[end][0] > lines[end - 1][0] + 1
    while end < len(lines) and "|" in lines[end][1] and not (
            lines[end][0] > lines[end - 1][0] + 1 and (not spaced or _another_block(lines, end, opened))):
        end += 1
    outside = lines[:start] + lines[end:]
    if not outside:
        return lines, "", True
    shown = ", ".join(str(n) for n, _ in outside[:5]) + (", ..." if len(outside) > 5 else "")
    another = _table_start([line for _, line in lines[end:]]) is not None
    return lines[start:end], (f"read the Markdown table of lines {lines[start][0]}-{lines[end - 1][0]}; "
                              f"{len(outside)} line(s) around it (line {shown}) passed over"
                              + (f", {_ANOTHER_TABLE} among them" if another else "")), True


def _another_block(lines: list[tuple[int, str]], i: int, opened: bool) -> bool:
    """Whether line ``i`` of a table whose rows are spaced by blank (or ``#``) lines -- gone from ``lines``, a gap
    in their numbers --, after such a gap, is not a row of the table: the header of another table (over its own
    rule: review bp, read as rows of the first), or, where the table's lines open with a pipe, a line that does
    not (a note holding one: review br). Tools print tables with blank lines between rows, and CRLF text written
    again in text mode reads as a blank line after every row (review bt)."""
    if opened and not lines[i][1].lstrip().startswith("|"):
        return True
    return i + 1 < len(lines) and bool(_MARKDOWN_RULE_ROW.match(lines[i + 1][1]))


def _columns_needed(path: Path, header: list[str], rows: list[tuple[int, list[str]]], x: str, y: str,
                    run_column: str | None, decimal_comma: bool) -> list[str]:
    """The columns ``x`` and ``y`` read, in order (x's columns, then y: which bad cell an error names must not
    depend on the hash seed); :class:`UnknownColumn` for one the header lacks, or a ``run_column`` it lacks."""
    columns = set(header)
    # A column the header names but no row fills in (blank, "nan", "None" in every row) is listed as one missing
    # (review FU: the row readers' listing then named the columns read alone, hiding the log's metrics).
    at = header.index(y) if y in columns else -1
    empty = at >= 0 and not any(at < len(row) and logged(row[at]) for _, row in rows)
    if y not in columns or empty:
        layout = _wandb_layout(header) if not empty else None
        if layout is not None:  # name the metrics ('val/acc'), not the raw per-run columns
            plain, metrics, runs = layout
            exc = unknown_column(path, "y", y, plain + metrics)
            raise UnknownColumn(f"{exc} (a W&B chart export of {len(runs)} run(s): "
                                f"{', '.join(repr(r) for r in runs)}; --y takes the metric, --run the run)",
                                exc.available)
        # With the rows that log each (review bq: the row logs' listing has them, a CSV's did not): an evaluation
        # logged every 100 steps among per-step values is told apart by them.
        counts = {h: sum(1 for _, row in rows if j < len(row) and logged(row[j].strip())) for j, h in enumerate(header)}
        text = {h for j, h in enumerate(header) if not any(j < len(row) and _a_number(row[j], decimal_comma)
                                                            for _, row in rows)}
        raise unknown_column(path, "y", y, header, counts, text)
    needed = list(dict.fromkeys([*x_columns(path, columns, x), y]))
    if run_column is not None and run_column not in columns:
        raise unknown_column(path, "run", run_column, header)
    return needed


class _PIPES(csv.excel):
    """A Markdown table's cells: split at pipes, quotes kept as they are (review bv: a cell opening with ``"``, a
    ditto mark, ran on into the next line as a quoted field, and a row was lost)."""
    delimiter = "|"
    quoting = csv.QUOTE_NONE


#: GitHub's escaped pipe in a Markdown table's cell (``a \| b``), kept apart from the delimiter while the line is
#: split; no other backslash escapes anything there (review bb: an escape character took every backslash out of a
#: run named ``C:\runs\a``).
_ESCAPED_PIPE, _HELD_PIPE = "\\|", "\x00"


def _markdown_table(lines: list[tuple[int, str]], parsed: list[list[str]]):
    """A ``|``-delimited table as Markdown writes it (a notebook's table pasted into a GitHub issue:
    ``Step | Training Loss | reward`` over ``-- | -- | --``): its delimiter row under the header is
    no row, and the pipes that open and close each line (``| 1 | 0.5 |``) no empty columns. A last line
    with no newline that lacks the closing pipe every earlier line has was cut short (a table printed by a
    run killed while writing it): left out, and the note says so."""
    note = ""
    *before, (lineno, last) = lines
    if (len(lines) > 2 and not last.endswith(("\n", "\r")) and not last.rstrip().endswith("|")
            and all(line.rstrip().endswith("|") for _, line in before)):
        lines, parsed = lines[:-1], parsed[:-1]
        note = (f"the file ends inside its last line, with no newline after it (as a run killed while writing leaves "
                f"it): that line, line {lineno} ({last.strip()[-50:]!r}), left out -- it lacks the closing '|' every "
                "earlier line has: cut short")
    # The outer pipes line by line: a table may open its lines with one and not close them (review ba).
    parsed = [row[int(line.strip().startswith("|")):len(row) - int(line.strip().endswith("|"))]
              for (_, line), row in zip(lines, parsed)]
    if len(parsed) > 1 and parsed[1] and all(_MARKDOWN_RULE.match(c) for c in parsed[1]):
        lines, parsed = lines[:1] + lines[2:], parsed[:1] + parsed[2:]
    return lines, parsed, note


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+([eE][+-]?\d+)?$")


def _is_wandb_export(header: list[str], y: str) -> bool:
    return y not in header and any(h.endswith(f" - {y}") for h in header)


#: The columns a W&B chart export adds beside each run's metric (the range of a sampled bucket).
_WANDB_RANGE = ("__MIN", "__MAX")


def _wandb_layout(header: list[str]) -> tuple[list[str], list[str], list[str]] | None:
    """``(compute columns, metrics, runs)`` of a W&B chart export (every column but the step /
    time ones is ``"<run> - <metric>"``, with optional ``__MIN``/``__MAX`` beside it), else None.
    A run's name may hold " - " itself ("ppo - baseline"): the metric is what follows the last one."""
    plain = [h for h in header if " - " not in h]
    pairs = [h.removesuffix(_WANDB_RANGE[0]).removesuffix(_WANDB_RANGE[1]).rsplit(" - ", 1)
             for h in header if " - " in h]
    if not pairs or not plain or len(plain) > 3:
        return None
    runs = list(dict.fromkeys(run for run, _ in pairs))
    metrics = list(dict.fromkeys(metric for _, metric in pairs))
    return plain, metrics, runs


#: Columns not marked as logged beside a ``cum:`` x's (their values are read where they are read at all).
MARKS_NOT = frozenset({*STEP_COLUMNS, *COUNTERS, DEFAULT_RUN_COLUMN})


def _a_number(cell: str, decimal_comma: bool) -> bool:
    """Whether the reader reads ``cell`` as a number (finite): a column of none is text, which a listing offers as
    no metric (review fp: a decimal comma outside a ``;`` file, or ``41,5%``, is no number to the reader)."""
    cell = cell.strip()
    if decimal_comma and _DECIMAL_COMMA.match(cell):
        cell = cell.replace(",", ".")
    try:
        return math.isfinite(_number(cell, where=""))
    except InputError:
        return False


def _numeric(cell: str) -> bool:
    """Whether a cell holds a number (a metric's, as :func:`_number` reads it), not text (a note, a name)."""
    try:
        _number(cell.replace(",", "."), where="")  # (a decimal comma too)
        return True
    except InputError:
        return False


def read_csv(path, x: str, y: str, *, run_column: str | None = None, y_scale: float = 1.0,
             bounded: bool = True) -> list[Curve]:
    """One run, or one per value of ``run_column`` (default: a ``run`` column if there is one). An
    empty cell means the row did not log that column: a row with no ``y`` is not an evaluation (skipped, counted in the notes); an evaluation
    with no ``x`` takes the latest earlier one where only training rows (no ``y``) log it, as in the other
    row logs, and is dropped and counted where other evaluations log it (an empty cell in a table of
    evaluations). ``nan``/``inf`` cells are dropped and counted. ``x`` may be ``cum:COL`` / ``cum:GLOB``."""
    path = Path(path)
    header, rows, decimal_comma, read_notes = _read_csv_rows(path, x, run_column)
    if _is_wandb_export(header, y):
        return _wandb_from_rows(path, header, rows, x, y, y_scale=y_scale, bounded=bounded, notes=read_notes)
    try:
        needed = _columns_needed(path, header, rows, x, y, run_column, decimal_comma)
    except UnknownColumn as exc:  # (review bv: "no x column 'step'" of a README whose second table has it)
        table = next((note for note in read_notes if _ANOTHER_TABLE in note), None)
        if table is None:  # (review bx: the advice given of a file of one table)
            raise
        raise exc.reworded(f"{exc} -- {table}: only a file's first Markdown table is read; save the table to read "
                           "in a file of its own") from None
    index = {h: j for j, h in enumerate(header)}
    run_column = run_column or DEFAULT_RUN_COLUMN
    ir = index.get(run_column)
    rows, trailer = _without_trailer(rows, len(header))
    ir, unnamed = _run_cells(path, rows, ir, run_column)
    # One run's log (no run column) that a resumed training appended to: told by its step, as a
    # JSON-lines log is (a table of several runs is not: its runs' rows need not be in log order).
    # (A step column the header names twice is not read: which one is meant cannot be known.)
    step = next((c for c in STEP_COLUMNS if header.count(c) == 1), None) if ir is None else None
    _check_unique(path, header, {*needed, run_column})
    rows, repeated = drop_repeated_evaluations(rows, x, lambda r: len(r[1]) > index[y] and bool(r[1][index[y]].strip()),
                                               cells=lambda r: r[1])
    records, without_y, percent, percent_y = [], 0, 0, 0
    # What each row logs (its columns with a cell), beyond the ones read: a step logged again by a row of
    # the kind an earlier row at that step logged is said (and, at a resume, merged by kind); a training
    # row and an evaluation row at one step are not of one kind, though the columns read of the first
    # (the step alone) are among the second's. A cell is logged by the one rule every reader uses
    # (cells.logged): 'nan' is none (a writer of full rows, NaN where it logged nothing).
    kinds = [frozenset(h for h, cell in zip(header, row) if h != step and logged(cell))
             for _, row in rows]
    # A training row that a writer of whole rows filled in with 'NaN' for y (pandas' to_csv(na_rep='NaN'))
    # is no evaluation: it logs a column no evaluation of its run logs (the rule the other row logs
    # follow, rows._filled_in). An evaluation whose y came out NaN logs only what evaluations log: dropped
    # and counted as before.
    def run_of(row: list[str]) -> str:
        return row[ir].strip() if ir is not None and len(row) > ir else ""
    evaluation_columns: dict[str, set[str]] = {}
    for (_, row), kind in zip(rows, kinds):
        if len(row) > index[y] and logged(row[index[y]]):
            evaluation_columns.setdefault(run_of(row), set()).update(kind)
    filled_in = 0
    for (lineno, row), kind in zip(rows, kinds):
        if len(row) != len(header):
            raise InputError(f"{path}: line {lineno} has {len(row)} fields, the header has {len(header)} -- "
                             "fix or delete that line")
        record: dict = {} if ir is None else {run_column: row[ir].strip()}
        other_kind = not logged(row[index[y]]) and bool(kind - evaluation_columns.get(run_of(row), kind))
        filled_in += other_kind and bool(row[index[y]].strip())
        for col in needed:
            cell = row[index[col]].strip()
            if not cell or (col == y and other_kind):
                continue  # not logged in this row
            if decimal_comma and _DECIMAL_COMMA.match(cell):
                cell = cell.replace(",", ".")
            record[col] = _number(cell, where=f"{path}: line {lineno}, column {col!r}")
            percent += cell.endswith("%")
            percent_y += col == y and cell.endswith("%")
        if step and step not in needed:
            record[step] = _step_cell(row[index[step]])
        if x.startswith("cum:"):  # the metrics else the row logs: a training step without the timer is told by them
            record.update({h: True for h in kind - record.keys() - MARKS_NOT if _numeric(row[index[h]])})
        # (a run without any y is a run left out, said as one: its rows are not counted here too -- review dk)
        without_y += y not in record and run_of(row) in evaluation_columns
        records.append(record)
    check_percent_scale(path, cells=percent_y, y=y, y_scale=y_scale)
    notes = read_notes
    if without_y:
        filled = f", {filled_in} of them a NaN that a row of another kind filled in" if filled_in else ""
        notes += (f"{without_y} row(s) have no {y!r} value{filled} (not evaluations): skipped",)
    notes += tuple(n for n in (trailer, repeated, unnamed) if n)
    if percent:
        notes += (percent_note(percent),)
    if step:
        records, resumed = resumed_rows(path, records, step, kinds, x)
        notes += resumed
    return curves_from_rows(path, records, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                            bounded=bounded, table=True, run_column=run_column if ir is not None else None,
                            step_column=step)


def resumed_rows(path: Path, records: list[dict], step: str, kinds: list[frozenset], x: str) -> tuple[list[dict], tuple[str, ...]]:
    """One run's rows where a training resumed from a checkpoint was appended (``step`` goes back): the
    abandoned attempt's rows from the checkpoint's step on go, said in the notes, as in a JSON-lines log.
    A step that starts over, read on a clock (:func:`~scalerl.curves.attempts.is_clock`: wall time, W&B's
    ``_step``), is refused: in a table that is several runs without a run column more often than a training
    started anew, and the error says --run-column; on a counter the log holds, that counter goes back with
    it and its own error says so. A step that goes back to its start each time where the x -- a counter the
    trainer logs, tokens or samples -- goes on rising is no resume: a step counted per epoch
    (:func:`~scalerl.curves.attempts.steps_count_again`), read as it is. Rows in the text order
    of their steps (10, 100, 110, ..., 20, 200, ...: a file sorted as text) are no resume: read in the
    order of their steps, said (a resume dropped most of them); so are rows newest first (an export sorted
    by step, descending: refused as a compute that decreases, blaming a restart)."""
    text_sorted = _out_of_log_order(records, step, x)
    if text_sorted:
        return sorted(records, key=lambda r: r[step]), (text_sorted,)
    if steps_count_again(records, step, x):
        return records, (f"{step!r} goes back to its start where {x!r} goes on rising: read as one training whose "
                         "step counts again (per epoch), not as a resume",)
    split, notes = split_attempts([dict(r) for r in records], step, path.stem, late_rows=True, kinds=kinds)
    names = [r.get(DEFAULT_RUN_COLUMN) for r in split]  # (split_attempts names the runs of a start over so)
    if any(names) and is_clock(records, x):
        # On a clock that goes on (--x wall_time) two trainings appended to one file were read as one curve that
        # fell back to its start half-way, with no word (review cr).
        i = next(i for i, name in enumerate(names) if name != names[0])
        raise InputError(f"{path}: its step column {step!r} starts over ({_step_text(split[i - 1][step])} -> "
                         f"{_step_text(split[i][step])}, back to where the log began): several runs in one file, or "
                         "a training started anew in the same log -- add a column naming each run (--run-column "
                         "COL names it), give each run its own file, or delete the first attempt's rows")
    if any(names):  # on a counter the log holds: it goes back too, and the error for that names --run-column
        return records, ()
    return split, tuple(notes)


def _step_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _out_of_log_order(records: list[dict], step: str, x: str) -> str:
    """A note where every row has a step, each step's rows are together, and the rows are in the order of their
    steps as text, not as numbers (a spreadsheet or ``sort`` that sorted the column as text), or newest first
    -- where the compute ``x`` falls with the step (review ba: a table of runs, one row each, sorted by their
    compute, whose ``_step`` fell, was reordered and refused); else ""."""
    steps = [r.get(step) for r in records]
    if any(v is None or v != v for v in steps):
        return ""
    # A step's rows stay together (a training and an evaluation row at one step: review aj); a step that
    # comes back after others is no sort's doing.
    steps = [v for i, v in enumerate(steps) if i == 0 or v != steps[i - 1]]
    if len(steps) < 3 or len(set(steps)) < len(steps):
        return ""
    shown = ", ".join(_step_text(v) for v in steps[:6])
    xs = [r[x] for r in records if isinstance(r.get(x), float) and r[x] == r[x]]
    if steps == sorted(steps, reverse=True) and xs == sorted(xs, reverse=True):
        return (f"the rows are newest first ({shown}, ...): read in the order of their {step!r}, oldest first, "
                "as a log writes them")
    if steps == sorted(steps) or steps != sorted(steps, key=_step_text):
        return ""
    return (f"the rows are in the order of their {step!r} sorted as text ({shown}, ...), not as a log writes them "
            "-- was the file sorted as text? Read in the order of their steps as numbers, not as a resume")


def _step_cell(text: str) -> float | None:
    """A step column's cell where the step is not read as x or y: its number, None where it holds
    none (that row then stays where it is); not an error -- the user did not ask for this column."""
    try:
        return _number(text, where="")
    except InputError:
        return None


#: How many lines an error names before it says how many more.
_LINES_SHOWN = 10


def _run_cells(path: Path, rows: list, ir: int | None, run_column: str) -> tuple[int | None, str]:
    """The run column's index as read, and a note. A run column empty on every row is a file of one
    run whose column was never filled (a template's, an export's): read as no run column -- the run
    named after the file, as a file without one is -- and said. Empty on some rows only, which run
    those rows belong to cannot be known (the row before's? one of their own?): a guess could mix two
    runs' points silently, so that is refused, naming the lines (a run named '' was read)."""
    if ir is None:
        return None, ""
    blank = [lineno for lineno, row in rows if ir < len(row) and not row[ir].strip()]
    if not blank:
        return ir, ""
    if len(blank) == len(rows):
        return None, f"the {run_column!r} column is empty on every row: read as one run, named after the file"
    shown = ", ".join(map(str, blank[:_LINES_SHOWN])) + (f" (and {len(blank) - _LINES_SHOWN} more)"
                                                         if len(blank) > _LINES_SHOWN else "")
    raise InputError(f"{path}: the {run_column!r} cell is empty on line(s) {shown}, while the other rows name their "
                     "run -- fill in the run of those rows (or delete them)")


def _without_trailer(rows: list, n_fields: int) -> tuple[list, str]:
    """The rows less a last line with a single field where the header has several -- a message
    appended to the file ("Training finished!"), as JSONL's torn last line is skipped -- and a note
    saying so. A short line elsewhere stays an error: it is a damaged row."""
    if n_fields > 1 and rows and len(rows[-1][1]) == 1:
        lineno, (text,) = rows[-1]
        return rows[:-1], f"the last line (line {lineno}: {text[:40]!r}) is not a row of the table: skipped"
    return rows, ""


def _check_unique(path: Path, header: list[str], read: set[str]) -> None:
    """A column read that the header names twice: which one is meant cannot be known (the last one
    was read, silently)."""
    for col in sorted(read):
        where = [j + 1 for j, h in enumerate(header) if h == col]
        if len(where) > 1:
            raise InputError(f"{path}: the header names column {col!r} {len(where)} times (columns "
                             f"{', '.join(map(str, where))}); rename all but one so that it is clear which is meant")


def _wandb_from_rows(path: Path, header, rows, x: str, y: str, *, y_scale: float, bounded: bool,
                     notes: tuple[str, ...] = ()) -> list[Curve]:
    """W&B chart export: one ``"<run> - <metric>"`` column per run; ``__MIN/__MAX`` ignored."""
    if x not in header:
        raise unknown_column(path, "x", x, [h for h in header if " - " not in h])
    ix = header.index(x)
    suffix = f" - {y}"
    curves = []
    filled = False  # whether any run's column holds a value ("NaN" is none)
    for j, h in enumerate(header):
        if not h.endswith(suffix):
            continue
        name = h[: -len(suffix)]
        # W&B leaves cells empty where a run did not log that step: missing, not an error.
        cells = [(lineno, row[ix], row[j]) for lineno, row in rows if j < len(row) and row[j].strip()]
        filled = filled or any(logged(cell) for _, _, cell in cells)
        for _, _, cell in cells:
            check_percent_scale(path, cells=cell.strip().endswith("%"), y=h, y_scale=y_scale)
        if cells:
            curves.append(partial(_wandb_curve, path, cells, column=h, y_scale=y_scale, name=name, x_name=x,
                                  y_name=y, source=str(path), bounded=bounded, notes=notes))
    if not filled and any(h.endswith(suffix) for h in header):  # (every run's column blank or NaN: the metrics
        # listed, as a plain CSV's -- reviews FV, FX)
        _, metrics, _ = _wandb_layout(header) or ((), (), ())
        raise unknown_column(path, "y", y, [h for h in header if " - " not in h] + list(metrics), text={y})
    # One run that cannot be read (in percent; a cell that is not a number) is left out with its reason,
    # not fatal to the others.
    return readable_curves(curves) if curves else []


def _wandb_curve(path: Path, cells: list[tuple[int, str, str]], *, column: str, y_scale: float, **curve) -> Curve:
    """One run's curve of a W&B chart export from its ``(line, x cell, y cell)``. A cell that is not a
    number is the error it is in a plain CSV, naming its line, but this run's only: raised here, in
    :func:`readable_curves`, it leaves the run out with that reason and the others read."""
    xs = [_number(cx, where=f"{path}: line {lineno}, column {curve['x_name']!r}") for lineno, cx, _ in cells]
    ys = [_number(cy, where=f"{path}: line {lineno}, column {column!r}") * y_scale for lineno, _, cy in cells]
    return Curve.from_arrays(xs, ys, **curve)
