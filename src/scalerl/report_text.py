"""The Markdown and HTML around every report (a run's, a study's): tables and the page.

Pure string functions, no plotting and no torch, so that ``scalerl report`` on a run or a study
directory writes both formats from the same rows.
"""

from __future__ import annotations

import html
import re
from typing import Sequence


def md_text(text: str) -> str:
    """``text`` (a run or variant name, a model path: anything a user named) as literal Markdown:
    backslash before the characters that would format it -- `` ` `` (code), ``*`` (emphasis),
    ``<`` (raw HTML: a run directory named ``<script>...`` ran in a viewer that renders HTML) and
    ``|`` (a table cell's end: the rest of the row slid one column)."""
    return re.sub(r"([`*<|])", r"\\\1", str(text))


def md_fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``: a model's completion holding
    ```` ``` ```` (it writes code) closed a three-backtick fence, and the rest of it was read as Markdown."""
    return "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))


def md_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Markdown lines of a table whose first row is the header (cells as :func:`md_text`)."""
    esc = [[md_text(c) for c in r] for r in rows]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])] + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def html_table(rows: Sequence[Sequence[str]]) -> str:
    """An HTML table whose first row is the header (cells escaped)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows[1:])
    return f"<table><tr>{head}</tr>{body}</table>"


def inline_md(text: str) -> str:
    """One line of Markdown with **bold**, *italic* and `code` as escaped HTML."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def html_page(title: str, body: str, *, max_width: int = 1100) -> str:
    """A self-contained HTML page (figures are files beside it, referenced by name)."""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:{max_width}px;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin:1em 0}}
th,td{{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}}img{{max-width:100%;display:block;margin:1em 0}}
pre{{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:6px 8px;font-size:13px}}</style></head><body>
<h1>{html.escape(title)}</h1>{body}
</body></html>"""
