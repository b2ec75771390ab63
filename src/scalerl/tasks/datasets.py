"""Load ``{prompt, answer}`` rows from a data file (the file formats: :mod:`scalerl.tasks.data_files`), checked.

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

import ast
import decimal
import difflib
import json
import math
import numbers
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from scalerl.config import override_value
from scalerl.errors import InputError
from scalerl.tasks.base import is_bool
from scalerl.tasks.data_files import RepeatedColumn, dotted_field, map_as_dict, records


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


def _text(value: Any) -> str | None:
    """A field's value as text: a string as it is, a number as math-verify reads it (a float column's
    ``42.0`` as ``42``; ``1e+20``, which math-verify reads as no number, as its digits), UTF-8 bytes (a
    parquet binary column) decoded; None for anything else (a list, an object: :func:`_not_text`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, (numbers.Real, decimal.Decimal)):
        number = decimal.Decimal(repr(float(value))) if isinstance(value, numbers.Real) else value
        if number == number.to_integral_value():
            return str(int(number))
        return format(number, "f")  # positional: 1e-07 as 0.0000001
    return None


def _listed_texts(text: str) -> list[str] | None:
    """The texts of a list of quoted texts written as one text (Skywork-OR1's ``reward_model.ground_truth``:
    ``'["2"]'``, JSON; ``"['2']"``, Python's ``str`` of a list), else None. Only quoted items: ``[1, 2]``
    unquoted is an answer itself (an interval, a vector)."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]") and ('"' in stripped or "'" in stripped)):
        return None
    try:
        items = json.loads(stripped)
    except ValueError:
        try:
            items = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if isinstance(items, list) and items and all(isinstance(item, str) for item in items):
        return items
    return None


def _one_answer(value: Any) -> Any:
    """The one reference in an answer given as a list -- ``[3]``, ``["3"]``, a JSON text of one
    (``'["3"]'``), or several that are the same text -- else ``value`` as it is (a list of different
    ones is refused: :func:`_not_text`). Without this, a list's text reached math-verify: ``[3]`` was
    refused, and a text of several (``'["3", "4"]'``) scored every completion -1, silently."""
    if isinstance(value, str):
        value = _listed_texts(value) or value
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):
        value = value.tolist()  # a numpy array (pandas-written data)
    if isinstance(value, (list, tuple)) and value:
        texts = {(_text(item) or "").strip() for item in value}
        if len(texts) == 1 and "" not in texts and not any(isinstance(item, (list, tuple, dict)) for item in value):
            return value[0]
    return value


#: Texts that are a missing value written out -- a NaN or NA through ``str()`` or pandas'
#: ``astype(str)`` -- refused as prompts and answers, as the NaN itself is. (Not "NA", "N/A", "null" or "None":
#: answers some tasks have.)
MISSING_TEXTS = frozenset({"nan", "NaN", "NAN", "<NA>", "NaT"})


@dataclass(frozen=True)
class Advice:
    """Why a field is not what a setting needs, and the field to name instead: ``setting`` (``prompt_field`` /
    ``answer_field``) as ``name`` (``NAME`` where it is not known)."""

    why: str
    setting: str
    name: str


def _not_text(value: Any, setting: str, name: str, record: dict | None = None) -> "str | Advice | None":
    """Why a field value that ``str()`` would turn into plausible text is not one, else None.

    A NaN is how pandas (and Python's json) writes a missing value in a numeric column; as the
    text "nan" it is an answer no completion can match. A JSON ``true`` is rarely the answer
    "True" that its text would be. A list's text (``"['1/2', '0.5']"``) is no answer at all. ``record``: the row
    ``value`` is read from, where a dotted path the error suggests could read another of its keys."""
    if isinstance(value, RepeatedColumn):
        return value.why()
    if is_bool(value):
        return f"is the boolean {str(value).lower()}, not text; quote it if that is the answer"
    if isinstance(value, numbers.Real) and not math.isfinite(value):
        return f"is {value} (a missing value?); fill it in or drop the row"
    if isinstance(value, (decimal.Decimal,)) and not value.is_finite():
        return f"is {value} (a missing value?); fill it in or drop the row"
    if isinstance(value, bytes) and _text(value) is None:
        return "holds bytes that are not UTF-8 text"
    mapping = map_as_dict(value)  # a parquet / Arrow map column reads as its (key, value) pairs
    if isinstance(mapping, dict):
        keys = list(mapping)
        shown = ", ".join(map(repr, keys[:5])) + (", ..." if len(keys) > 5 else "")
        inner = keys[0] if len(keys) == 1 else "FIELD"
        what = "an object (fields" if mapping is value else "a map (keys"
        path = f"{name}.{inner}"
        if len(keys) == 1 and record is not None and dotted_field(record, path)[1] is not mapping[inner]:
            # (the row's own key "a.b" beside "a": {"b": ...} -- the path reads that key, another field: review FS)
            return (f"is {what} {shown}), not text; the dotted path {path!r} to the field inside it reads another "
                    "of the row's fields instead (a key that holds the dots itself) -- rename one of the two")
        return Advice(f"is {what} {shown or 'none'}), not text; name the field inside it as a dotted path",
                      setting, path)
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):
        value = value.tolist()  # a numpy array (pandas-written data)
    if isinstance(value, (list, tuple)):
        if not value:
            return "is an empty list"
        if setting == "prompt_field" and all(isinstance(m, dict) for m in value):
            return None  # a conversation: _conversation reads it
        if setting == "answer_field":
            return (f"is a list of {len(value)} different answers ({_short(value)}), not one; math-verify compares "
                    "each completion with one reference: keep one (it takes equal forms, such as 1/2 and 0.5, as "
                    "equal; a list of one, or of one answer repeated, reads as that answer)")
        return f"is a list ({_short(value)}), not text (nor a conversation: a list of {{role, content}} messages)"
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def _conversation(value: Any) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """A prompt given as chat messages, as ``(role, content)`` pairs, or why a list of messages is
    none; ``((), None)`` when ``value`` is no list of objects. A message's content may be a list of
    parts (``[{"type": "text", "text": ...}]``: OpenAI's and TRL's multimodal format): its texts,
    joined as a chat template renders them."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # a numpy array (pandas-written parquet)
        value = value.tolist()
    if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
        return (), None
    pairs = []
    for i, message in enumerate(value, start=1):
        role, content = message.get("role"), message.get("content")
        if role is None and {"from", "value"} & set(message):
            return (), (f"message {i} has the fields {', '.join(map(repr, message))}, ShareGPT's; write its messages as "
                        "{role, content} (from human: role user; from gpt: role assistant)")
        if role not in ROLES:
            return (), (f"message {i} has the role {role!r}; a prompt conversation's roles are {', '.join(ROLES)}, "
                        "ending with a user turn")
        if hasattr(content, "tolist") and not isinstance(content, (str, bytes)):
            content = content.tolist()
        if isinstance(content, list) and all(isinstance(part, dict) for part in content):
            kinds = [part.get("type") for part in content]
            other = next((k for k in kinds if k != "text"), None)
            if other is not None or not all(isinstance(part.get("text"), str) for part in content):
                return (), (f"message {i} holds a part of type {other!r}; only text parts ({{type: text, text}}) "
                            "are read")
            content = "".join(part["text"] for part in content)
        if not isinstance(content, str):
            return (), f"message {i}'s content is {_short(content)}, not text"
        pairs.append((role, content))
    return tuple(pairs), None


def _nested_fields(record: dict, depth: int = 2) -> list[str]:
    """The fields of a record as dotted paths (to the given depth): what a message can suggest."""
    out = []
    for key, value in record.items():
        if isinstance(value, dict) and depth > 1:
            out += [f"{key}.{sub}" for sub in _nested_fields(value, depth - 1)]
        else:
            out.append(str(key))
    return out


def _orz_pair(record: Any) -> dict | None:
    """A row written as Open-Reasoner-Zero's data is -- ``[{"from": "human", "value": QUESTION},
    {"from": "assistant", "ground_truth": {"value": ANSWER}}]``, a list, not an object -- as
    ``{"prompt": QUESTION, "answer": ANSWER}``; None for any other list."""
    if not (isinstance(record, list) and len(record) == 2 and all(isinstance(m, dict) for m in record)):
        return None
    human, assistant = record
    truth = assistant.get("ground_truth")
    if human.get("from") != "human" or "value" not in human or not isinstance(truth, dict) or "value" not in truth:
        return None
    return {"prompt": human["value"], "answer": truth["value"]}


class FieldAdvice(InputError):
    """A row whose fix is naming another field: ``setting`` (``prompt_field`` / ``answer_field``) as ``name``
    (``NAME`` where it is not known); ``found``: the other settings whose fields the row has, each to its field.
    The message ends with the ``--set`` of a task whose only settings are those fields; the math task gives one
    that keeps its other settings and evaluation sets (:meth:`scalerl.tasks.math.MathTask`'s), which ``--set``
    would replace -- after ``without_advice``, the message less that ``--set``."""

    def __init__(self, without_advice: str, setting: str, name: str, found: dict[str, str], *, lead: str = "",
                 tail: str = "", eval_lead: str = "") -> None:
        """``lead`` / ``tail``: the text before and after the ``--set``; ``eval_lead``: the text before an evaluation
        file's own (:meth:`for_evaluation_file`)."""
        super().__init__(f"{without_advice}{lead}{_set_settings(setting, name)}{tail}")
        self.without_advice, self.lead, self.tail, self.eval_lead = without_advice, lead, tail, eval_lead
        self.setting, self.name, self.found = setting, name, found

    def with_settings(self, flag: str) -> str:
        """The message with ``flag`` (a ``--set``) as its advice."""
        return f"{self.without_advice}{self.lead}{flag}{self.tail}"

    def for_evaluation_file(self, flag: str) -> str:
        """The message with ``flag``, the ``--set`` of an evaluation file's own fields, as its advice."""
        return (f"{self.without_advice.rstrip('; ')} -- {self.eval_lead}for this evaluation file alone: "
                f"{flag}{self.tail}")


def _found(record: dict, fields: dict[str, str], setting: str) -> dict[str, str]:
    """The settings other than ``setting`` whose field ``record`` has, each to its field."""
    return {other: field for other, field in fields.items() if other != setting and dotted_field(record, field)[0]}


def load_rows(source: str | Path, prompt_field: str = "prompt", answer_field: str = "answer", split: str = "train") -> list[Row]:
    """Every row of ``source`` as :class:`Row`; :class:`InputError` naming file and row on the first bad one."""
    source = str(source)
    rows = []
    for number, record in records(source, split, prompt_field):
        record = _orz_pair(record) or record
        if not isinstance(record, dict):
            raise InputError(f"{source}: row {number}: expected an object with fields {prompt_field!r} and {answer_field!r}"
                             f", got {_short(record)}")
        values = {}
        fields_of = {"prompt_field": prompt_field, "answer_field": answer_field}
        for setting, name in fields_of.items():
            found, values[setting] = dotted_field(record, name)
            if setting == "answer_field":
                values[setting] = _one_answer(values[setting])
            if not found:
                fields = _nested_fields(record)
                present = ", ".join(map(repr, fields)) or "none"
                # (a misspelt field named, as a misspelt config key is -- review fk)
                close = difflib.get_close_matches(name, fields, n=1, cutoff=0.75)
                meant = f"did you mean {close[0]!r}? " if close else ""
                raise FieldAdvice(f"{source}: row {number}: missing field {name!r} (fields present: {present}); {meant}",
                                  setting, close[0] if close else "NAME", _found(record, fields_of, setting),
                                  lead="if another field holds it: ", eval_lead="if other fields hold them, ",
                                  tail=" (a nested one as a dotted path: reward_model.ground_truth)")
            why = _not_text(values[setting], setting, name, record)
            if isinstance(why, Advice):
                raise FieldAdvice(f"{source}: row {number}: field {name!r} {why.why}", why.setting, why.name,
                                  _found(record, fields_of, setting), lead=": ")
            if why is not None:
                raise InputError(f"{source}: row {number}: field {name!r} {why}")
        messages, why = _conversation(values["prompt_field"])
        if why is not None:
            raise InputError(f"{source}: row {number}: field {prompt_field!r} is not a conversation: {why}")
        if messages:
            if messages[-1][0] != "user":
                ends = (f"{source}: row {number}: the conversation in {prompt_field!r} ends with a message of role "
                        f"{messages[-1][0]!r}; a prompt ends with the user's turn")
                if messages[-1][0] == "assistant":  # NuminaMath's, OpenR1-Math's messages: SFT data, the solution last
                    text_fields = [k for k, v in record.items() if isinstance(v, str) and k != prompt_field][:4]
                    raise FieldAdvice(f"{ends} (a conversation with its solution, as SFT data holds it: give the field "
                                      "of the question alone"
                                      f"{': ' + ', '.join(map(repr, text_fields)) + '?' if text_fields else ''}",
                                      "prompt_field", "NAME", _found(record, fields_of, "prompt_field"), lead=" ",
                                      tail=")")
                raise InputError(ends)
            prompt = messages[-1][1]
        else:
            prompt = _text(values["prompt_field"])
        answer = _text(values["answer_field"])
        if not prompt or not prompt.strip():
            raise InputError(f"{source}: row {number}: field {prompt_field!r} is empty or not text (nor a "
                             "conversation: a list of {role, content} messages ending with a user turn)")
        if answer is None or not answer.strip():
            raise InputError(f"{source}: row {number}: field {answer_field!r} is empty or not text")
        for name, text, why in ((prompt_field, prompt, "as a prompt it asks nothing"),
                                (answer_field, answer, "as an answer no completion should match it")):
            if text.strip() in MISSING_TEXTS:  # (the prompt too -- review fk: a 'nan' prompt was trained on)
                raise InputError(f"{source}: row {number}: field {name!r} is the text {text.strip()!r}, how Python "
                                 f"and pandas write a missing value out (str(float('nan')), astype(str)); {why}: "
                                 "fill it in or drop the row")
        for name, texts in ((prompt_field, [c for _, c in messages] or [prompt]), (answer_field, [answer])):
            why = _surrogate(texts)
            if why is not None:
                raise InputError(f"{source}: row {number}: field {name!r} {why}")
        rows.append(Row(row=number, prompt=prompt, answer=answer.strip(), messages=messages))
    if not rows:
        raise InputError(f"{source}: no rows")
    return rows


def flow_text(name: str) -> str:
    """``name`` as a key or a value of a YAML flow mapping that ``--set`` reads back as itself: bare where it does
    both, else a double-quoted (JSON) string (review fm: ``prompt `` read back as ``prompt``; review fo: ``prompt,
    en`` as two keys, ``0o7`` as a number; review fr: an evaluation set named ``<<``, a merge key)."""
    return name if override_value("{" + name + ": " + name + "}") == {name: name} else _double_quoted(name)


def _double_quoted(name: str) -> str:
    """``name`` as a YAML double-quoted string: its characters as they are, a character YAML does not print (a
    control, NEL, a line separator) escaped -- an ASCII-only JSON string wrote a character past U+FFFF as a
    surrogate pair, which YAML reads back as two lone surrogates (review FS: ``aime 🏆, 2024.jsonl``)."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                   for c in json.dumps(name, ensure_ascii=False))


def flow_mapping(value: Any) -> str:
    """``value`` (a mapping of settings: text, numbers, booleans, mappings) as YAML flow text that ``--set`` reads
    back as ``value``; ``NAME`` stays bare, a placeholder to fill in."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{flow_text(str(k))}: {flow_mapping(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # (YAML reads 1e-05 as text: a float's mantissa needs its point, 1.0e-05)
        text = {math.inf: ".inf", -math.inf: "-.inf"}.get(value, repr(value))
        return re.sub(r"^(-?\d+)(e)", r"\1.0\2", text) if value == value else ".nan"
    return str(value) if value == "NAME" else flow_text(str(value))


def settings_flag(flow: str) -> str:
    """``--set 'task.settings=FLOW'`` as one POSIX-shell argument (review fp: a quote inside the shell's split it;
    review fq: a path's own)."""
    return "--set " + shlex.quote(f"task.settings={flow}")


def _set_settings(setting: str, name: str) -> str:
    """``--set 'task.settings={SETTING: NAME}'`` as a shell takes it and ``--set`` reads it back."""
    return settings_flag(f"{{{setting}: {flow_text(name)}}}")


def prompt_key(prompt: str) -> str:
    """A prompt with its whitespace normalized: how prompts are told to be one problem ("3+1?" and
    "3+1? ", a trailing space another export left) -- training against evaluation prompts, and a
    prompt's answers against each other."""
    return " ".join(prompt.split())


def answer_conflicts(rows: list[Row]) -> tuple[int, tuple[Row, Row] | None]:
    """How many prompts (conversations) appear in ``rows`` with more than one answer, and the first
    two rows that disagree. Each row is scored against its own answer, so a completion right by one
    is wrong by the other: a broken merge or export the user should hear of, not a row to drop
    (which of the two is right is the user's call)."""
    first_row: dict[Any, Row] = {}
    conflicting: dict[Any, tuple[Row, Row]] = {}
    for row in rows:
        key = row.messages or prompt_key(row.prompt)
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
