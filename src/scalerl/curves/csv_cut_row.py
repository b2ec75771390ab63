"""A CSV's last row cut short by a kill (or read while its logger writes): told from a finished file's last
row, which may lack a newline too (spreadsheet exports end that way), by the shape of its last number
against the format of its column's earlier rows. :func:`without_cut_row` is what the CSV reader asks."""

from __future__ import annotations

import re
from collections.abc import Collection

#: A number's shape as a writer's format gives it: the digits after its decimal point (or comma), its
#: exponent, a percent sign.
_NUMBER_SHAPE = re.compile(r"^[+-]?\d*(?:[.,](?P<decimals>\d*))?(?:[eE](?P<exponent>[+-]?\d*))?(?P<percent>%?)$")


def _shape(cell: str) -> tuple[int, int, int] | None:
    """``(decimals, exponent's length, percent)`` of a number cell, -1 for a part it lacks; None for a
    cell that is no number (empty, ``nan``, a word)."""
    m = _NUMBER_SHAPE.match(cell.strip())
    if m is None or not any(ch.isdigit() for ch in cell):
        return None
    decimals, exponent = m.group("decimals"), m.group("exponent")
    return (-1 if decimals is None else len(decimals), -1 if exponent is None else len(exponent),
            len(m.group("percent")))


#: Fewest earlier rows whose shared format makes a last number short of it evidence of a cut.
_MIN_PRECISION_ROWS = 3
#: A number short of its column's decimals only is taken for a cut where the column has at least this many
#: and it lacks at least :data:`_MIN_DECIMALS_CUT` of them: a spreadsheet's or hand-made column of two
#: decimals may end in a plain 0.5, and a writer of shortest floats drops a trailing zero (str(0.470) is
#: '0.47', review am) -- a number one decimal short is read (it is off by less than its last place but one).
_MIN_CUT_DECIMALS = 3
_MIN_DECIMALS_CUT = 2
#: ... and where an earlier number of the column ends in a zero among its decimals (``0.5230``): the mark of a
#: fixed-width format, which a writer of shortest floats (a spreadsheet's export, ``str``) never leaves -- its
#: column of 3-decimal values ends in a ``1`` or ``0.8`` now and then (reviews ao, ap: counting rows of one
#: width told the two apart neither way).
_FIXED_WIDTH = re.compile(r"[.,]\d+0(?:[eE%]|$)")  # (not 'X.0': str's whole float; review ar)


def _cut_inside(text: str, cell: tuple[int, int, int], shared: tuple[int, int, int] | None, fixed: bool) -> bool:
    """Whether the number ``text`` (its shape ``cell``, :func:`_shape`) is what a cut leaves of one written in
    the column's format (``shared``, None where the earlier rows share none): a strict prefix of it. A number
    is written left to right -- digits, decimals, exponent, percent sign -- so a cut shortens its last part
    only: one that ends in its percent sign, or in the whole exponent the format has, was written to its end
    (review aj). ``fixed``: a number of the column shows the format fixed-width (:data:`_FIXED_WIDTH`)."""
    if shared is None:
        return False
    decimals, exponent, percent = cell
    want_decimals, want_exponent, want_percent = shared
    if percent:
        return False
    if exponent >= 0:  # all of it written before the percent sign (an exponent cut: :func:`_shorter_exponent`)
        return want_exponent >= 0 and decimals == want_decimals and exponent == want_exponent and bool(want_percent)
    if decimals > want_decimals:
        return False
    if want_exponent >= 0 or want_percent:  # stopped before the exponent or the percent sign
        return True
    # ("0" has no decimal point: one place more than its decimals is missing)
    return want_decimals >= _MIN_CUT_DECIMALS and want_decimals - decimals >= _MIN_DECIMALS_CUT and fixed


def without_cut_row(header: list[str], rows: list, *, last_line: str, ordered: Collection[str] = (),
                    run_index: int | None = None) -> tuple[list, str]:
    """The rows less a last one a kill (or a read while the logger writes) cut inside its last number,
    and a note saying so. A last row with no newline after it is data where a finished export ends that
    way (Google Sheets, a hand-made file): it is left out only where it is visibly cut: its last number ends
    in its decimal point, lacks the percent sign every earlier row has, or is short of the fixed-width format
    every earlier row of that column shares (:func:`_cut_inside`: ``0`` of ``0.6623`` under ``%.4f``). A
    column of varying precision or of shortest floats tells nothing more: the row is kept. ``last_line``: the
    file's last line of the table, as read (its line end kept). ``ordered``: the columns that cannot fall in a
    log (the compute read as x, the step): a whole number below the one before it there is cut
    (:func:`_cut_counter`) -- the one before it in the last row's run, where ``run_index`` is the column that
    names runs (review bb: a table's next run, starting below the last run's end, was taken for a cut)."""
    if last_line.endswith(("\n", "\r")) or len(rows) <= _MIN_PRECISION_ROWS:
        return rows, ""
    if last_line.rstrip().endswith(('"', "'", "|")):  # its closing quote or table pipe: the last cell was written whole
        return rows, ""
    lineno, last = rows[-1]
    if len(last) != len(header) or len(header) < 2:  # (a short row: refused or passed over as a trailer)
        return rows, ""
    j = len(last) - 1
    texts = [row[j].strip() for _, row in rows[:-1] if j < len(row)]
    earlier = [shape for t in texts if (shape := _shape(t)) is not None]
    cut, text = _shape(last[j]), last[j].strip()
    if len(earlier) < _MIN_PRECISION_ROWS:
        return rows, ""
    where = f"line {lineno} ({last_line.strip()[-50:]!r})"
    # A sign alone where the column's numbers carry it and it marks no missing value (review aq; ar: a '-'
    # placeholder is a value written whole).
    if cut is None and text in ("-", "+") and text not in texts and any(t.startswith(text) for t in texts):
        return rows[:-1], _cut_note(where, text, header[j], "is a sign alone")
    if cut is None:
        return rows, ""
    if _DANGLING_EXPONENT.search(text) or _shorter_exponent(text, cut, texts, earlier):  # (review ar: '4.8e', '4.8e+1')
        return rows[:-1], _cut_note(where, text, header[j], "is cut inside its exponent")
    run_texts = texts if run_index is None else [row[j].strip() for _, row in rows[:-1] if j < len(row)
                                                 and run_index < len(row) and row[run_index] == last[run_index]]
    if _cut_counter(text, run_texts):
        if header[j] in ordered:
            return rows[:-1], _cut_note(where, text, header[j], "is below the counter before it, which it should "
                                                                "pass")
        return rows, _maybe_cut_note(where, text, header[j], f"is below the one before it ({run_texts[-1]}) in a "
                                                             "column that rose until then")
    shared = earlier[0] if len(set(earlier)) == 1 else None
    # Fixed-width where a number of the column -- the last one too (review aq: '0.60' of '0.6023') -- ends in a zero
    # among its decimals; a number ending in its decimal point is cut unless the column's all do (printf's %#.0f).
    fixed = any(_FIXED_WIDTH.search(t) for t in (*texts, text) if _shape(t) is not None)
    points = all(t.endswith((".", ",")) for t in texts if _shape(t) is not None)  # (empty cells say nothing)
    if all(shape[2] for shape in earlier) and not cut[2]:  # a percent sign every earlier row has, whatever its decimals
        how = "lacks the percent sign every earlier row's has"
    elif text.endswith((".", ",")) and not points:
        how = "ends in its decimal point"
    elif _cut_inside(text, cut, shared, fixed):  # (whole numbers vary in width: no format to be cut short of)
        how = f"is written shorter than every earlier row's ({_precision(shared)})"
    elif shared is not None and _cut_inside(text, cut, shared, True):
        # Short by what a cut takes, in a column that shows no fixed width: a shortest-float export's last number
        # or a cut one -- the file cannot tell (review aq). Kept, and said.
        return rows, _maybe_cut_note(where, text, header[j], f"is written shorter than every earlier row's "
                                                             f"({_precision(shared)})")
    else:
        return rows, ""
    return rows[:-1], _cut_note(where, text, header[j], how)


#: An exponent begun and not written: ``4.8e``, ``4.8e+``.
_DANGLING_EXPONENT = re.compile(r"\d[eE][+-]?$")


def _shorter_exponent(text: str, cut: tuple[int, int, int], texts: list[str], earlier: list[tuple[int, int, int]]) -> bool:
    """Whether the last number's exponent is shorter than the one width every earlier exponent of the column
    is written in (``e+1`` under ``e+18``s, :data:`_MIN_PRECISION_ROWS` of them at least): cut inside it -- where
    the column pads its exponents (a leading zero: ``e-05``, ``e+01``, numpy's and printf's ``%e``), whatever it
    reads as (review ax: ``5.9e-0`` of ``5.9e-01`` was read as 5.9); where it pads none (JavaScript, Java), only
    where it lands more than a decade from the row before's: such a writer writes one a digit shorter as its
    value crosses a power of ten (``1e-9`` after ``5e-10``, ``9.0E9`` after ``1.5E10``: review au), a cut leaves a
    prefix of the exponent, decades away (``e+1`` of ``e+18``)."""
    widths = [shape[1] for shape in earlier if shape[1] >= 0]
    if not (cut[1] >= 0 and len(widths) >= _MIN_PRECISION_ROWS and len(set(widths)) == 1 and cut[1] < widths[0]):
        return False
    if any(_PADDED_EXPONENT.search(t) for t in texts):
        return True
    try:
        return abs(_exponent(text) - _exponent(texts[-1])) > 1
    except (ValueError, IndexError):  # (a row before with no exponent: cut, as before)
        return True


#: An exponent written with a leading zero: a writer that pads its exponents to a width.
_PADDED_EXPONENT = re.compile(r"[eE][+-]?0\d")


def _exponent(text: str) -> int:
    """The power of ten a number cell writes (``-10`` of ``1e-10``)."""
    return int(re.split("[eE]", text)[1].rstrip("%"))


def _cut_counter(text: str, texts: list[str]) -> bool:
    """Whether the last cell may cut a whole-number counter short (``5`` of ``500`` after ``400``, ``100`` of ``1000``
    after ``900``, ``25`` of ``2500`` after ``1000``): the column's earlier cells are whole numbers that rise, and this
    one is below the one before it -- every shorter number begins some larger one. In a column that cannot fall (the
    compute, the step) that is a cut; in another, a count that fell written whole is as likely (a mean length of
    ``371`` after ``390``, problems solved ``7`` after ``50``: reviews au, ba -- bounds on how far the count could go
    next dropped one or kept the other, reviews ar to ba)."""
    if not text.isdigit() or text.startswith("0") or len(texts) < 2 or not all(t.isdigit() for t in texts):
        return False
    values = [int(t) for t in texts]
    return all(b > a for a, b in zip(values, values[1:])) and int(text) < values[-1]


def _maybe_cut_note(where: str, text: str, column: str, how: str) -> str:
    """The note on a last row kept that a cut may have left so: the file cannot tell."""
    return (f"the file ends with no newline after its last line, {where}, whose last number, {text!r} in column "
            f"{column!r}, {how}: kept as a value -- if the file was read while being written or its writer was killed, "
            "it may be cut short (give the finished file, or delete that line)")


def _cut_note(where: str, text: str, column: str, how: str) -> str:
    return (f"the file ends inside its last line, with no newline after it (as a run killed while writing leaves it): "
            f"that line, {where}, left out -- its last number, {text!r} in column {column!r}, {how}: cut short")


def _precision(shape: tuple[int, int, int]) -> str:
    """A column's shared number format in words: ``4 decimals``, ``4 decimals, an exponent of 3``, ..."""
    decimals, exponent, percent = shape
    parts = [f"{max(decimals, 0)} decimals"] + ([f"an exponent of {exponent} characters"] if exponent >= 0 else [])
    return ", ".join(parts + (["a percent sign"] if percent else []))
