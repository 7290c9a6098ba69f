"""The study-design fields of imported items and post-edits, read from one cell or value each.

document, position (the segment's place in its document), outputs keyed by system, highlight
spans per output, practice, and the condition a finished study's post-editor worked under.
Every importer and the items API read them here, so a value means the same whatever brought it;
each refusal is an ImportDataError naming file, line and field. What needs the whole plan or the
project (positions unique per document, spans inside their output's text, conditions declared)
is checked when the one writer stores the plan (checks.py, conditions.py, existing.py).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from annotations.design import CONDITION_NAME
from annotations.importers.base import Origin, fail, json_type, max_length, shown
from annotations.models import Item
from editlab import limits

DOCUMENT_MAX = max_length(Item, "document")
NAME_MAX = 100  # an output (system) name, as a condition's `output` may be
_WHOLE = re.compile(r"[0-9]+(?:\.0+)?")  # pandas writes an integer column with gaps as 3.0
TRUE = frozenset({"1", "true", "yes", "y", "t"})
FALSE = frozenset({"", "0", "false", "no", "n", "f"})


def invisible_character(text: str) -> str | None:
    """The first control, format (bidi, zero-width) or separator character other than a space, as "U+" and its hex code (e.g. U+200B).

    Names and ids are read by people choosing among them (a plan, a form): two that look the
    same must be the same, so what cannot be seen is refused there (texts keep it: it is data).
    """
    for char in text:
        if char != " " and unicodedata.category(char)[0] in "CZ":
            return f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')})"
    return None


def id_problem(value: str, *, what: str, max_chars: int) -> str | None:
    """Why `value` is no acceptable id (an item's external_id, a document id), or None: the one rule
    for ids, at most `max_chars` characters and nothing invisible (control, format such as bidi
    overrides and zero-width characters, separators other than a space)."""
    if len(value) > max_chars:
        article = "an" if what[0] in "aeiou" else "a"
        return f"{article} {what} is at most {max_chars} characters, this one has {len(value):,}"
    odd = invisible_character(value)
    if odd:
        return f"the {what} holds an invisible or control character, {odd}"
    return None


def document_id(value: Any, *, origin: Origin, field: str = "document") -> str:
    """A document id: text (a number is read as its digits), "" for none."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise fail(f"must be a document id (text), got {json_type(value)}", origin, field)
    value = value.strip()
    problem = id_problem(value, what="document id", max_chars=DOCUMENT_MAX)
    if problem:
        raise fail(problem, origin, field)
    return value


def document_position(value: Any, *, origin: Origin, field: str = "position") -> int | None:
    """A segment's place in its document: a whole number from 0 to 2,147,483,647; None when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    problem = f"must be a whole number from 0 to {limits.MAX_INT:,}"
    if isinstance(value, bool):
        raise fail(f"{problem}, got a boolean", origin, field)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            raise fail(f"{problem}, got {value!r}", origin, field)
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if not _WHOLE.fullmatch(text):
            raise fail(f"{problem}, got {shown(text)}", origin, field)
        digits = text.split(".", 1)[0]
        # Past 12 digits it is out of range whatever follows (and int() of 5,000 digits is refused).
        value = int(digits) if len(digits) <= 12 else limits.MAX_INT + 1
    if not isinstance(value, int):
        raise fail(f"{problem}, got {json_type(value)}", origin, field)
    if not 0 <= value <= limits.MAX_INT:
        raise fail(f"{problem}, got {shown(value)}", origin, field)
    return value


def output_name(name: Any, *, origin: Origin, field: str) -> str:
    """An output's (a system's) name: 1-100 visible characters, no surrounding spaces."""
    if not isinstance(name, str) or not name.strip() or name != name.strip() or len(name) > NAME_MAX:
        raise fail(
            f"an output name is 1-{NAME_MAX} characters without surrounding spaces, got {shown(name)}", origin, field
        )
    odd = invisible_character(name)
    if odd:
        raise fail(f"the output name {name!r} holds an invisible or control character, {odd}", origin, field)
    return name


def output_text(value: Any, *, origin: Origin, field: str) -> str:
    if not isinstance(value, str):
        raise fail(f"an output must be text, got {json_type(value)}", origin, field)
    return value


def outputs(value: Any, *, origin: Origin, field: str = "outputs") -> dict[str, str]:
    """{"system": "text", ...}; None or "" for none."""
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise fail(f'must be an object of outputs by system ({{"sysA": "…"}}), got {json_type(value)}', origin, field)
    found: dict[str, str] = {}
    for name, text in value.items():
        output_name(name, origin=origin, field=field)
        found[name] = output_text(text, origin=origin, field=f"{field}.{name}")
    return found


def highlights(value: Any, *, origin: Origin, field: str = "highlights") -> dict[str, list]:
    """{"system": [[start, end, label], ...], ...}; the spans themselves are checked on storing,
    against the output they lie over."""
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise fail(
            f'must be an object of span lists by output ({{"sysA": [[0, 4, "minor"]]}}), got {json_type(value)}',
            origin,
            field,
        )
    for name, spans in value.items():
        output_name(name, origin=origin, field=field)
        span_list(spans, origin=origin, field=f"{field}.{name}")
    return {name: spans for name, spans in value.items() if spans}


def span_list(value: Any, *, origin: Origin, field: str) -> list:
    if value is None or value == "":
        return []
    if not isinstance(value, list):
        raise fail(f"must be a list of [start, end, label] spans, got {json_type(value)}", origin, field)
    return value


def practice(value: Any, *, origin: Origin, field: str = "practice") -> bool:
    """true/false, yes/no, 1/0 (any case); empty is false."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().casefold()
        if word in TRUE:
            return True
        if word in FALSE:
            return False
    raise fail(f"must be true or false (true/false, yes/no, 1/0, or empty), got {shown(value)}", origin, field)


def condition_name(value: Any, *, origin: Origin, field: str = "condition") -> str:
    """The condition a finished study's post-editor worked under; "" for none."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(f"must be a condition name (text), got {json_type(value)}", origin, field)
    name = value.strip()
    if name and not CONDITION_NAME.match(name):
        raise fail(
            f"a condition name is 1-100 letters, digits, spaces, '.', '-' or '_', got {shown(name)}", origin, field
        )
    return name
