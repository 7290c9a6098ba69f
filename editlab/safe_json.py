"""One JSON parser for untrusted input: request bodies, imported files and cells.

    from editlab import safe_json
    value = safe_json.loads(text, max_depth=64, max_bytes=1_048_576)

`json.loads` alone is unsafe on input nobody checked: nesting ~1,000 deep raises
RecursionError (a 500 wherever it is not caught, and a crash later in code that walks the
value), `NaN`/`Infinity`/`1e400` become floats that PostgreSQL's jsonb and every later
computation refuse, and `\\u0000` or a lone `\\ud800` escape gives a string that neither
PostgreSQL nor the UTF-8 encoder can store. Every refusal here is a `ValueError` subclass
whose message names the limit or the place; `json.JSONDecodeError` (also a ValueError)
still reports malformed JSON. Nothing here imports Django.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

DEFAULT_MAX_DEPTH = 64
MAX_INT_DIGITS = 4300  # Python's own int/str conversion limit (sys.get_int_max_str_digits)

# A JSON string (the unrolled form: fast, no nested repeat), or a bracket, comma or colon.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRUCTURE = re.compile(_STRING + r"|[\[\]{},:]")
# Everything JSON allows outside strings except brackets (outside strings JSON is ASCII).
_INNERMOST = re.compile(r"\[\]|\{\}")
_KEEP_BRACKETS = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "[]{}"))
PATH_LEVELS_SHOWN = 4
# Escapes that decode to text no database stores: NUL and UTF-16 surrogate halves.
_RISKY_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
_NUMBER_TOKENS = re.compile(_STRING + r"|(-?(?:Infinity|NaN)|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)")


class JSONLimitError(ValueError):
    """The input is over a configured limit (`limit` names it, `value` is what was found)."""

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class JSONDepthError(JSONLimitError):
    """Nested past max_depth; `path` is where (its first levels), `lineno` the line of the bracket,
    `problem` the message without the place."""

    def __init__(self, message: str, *, limit: str, value: int, path: str = "", lineno: int | None = None) -> None:
        super().__init__(message, limit=limit, value=value)
        self.path = path
        self.lineno = lineno
        self.problem = message


class JSONSizeError(JSONLimitError):
    pass


class JSONValueError(ValueError):
    """A value JSON may spell but editlab cannot store: a non-finite or oversized number, NUL, a lone surrogate.

    `path` locates it inside the document (e.g. `Instances[3].output[0]`, "" for the top level);
    `lineno`/`colno` (1-based) where the text shows it, when known.
    """

    def __init__(self, problem: str, *, path: str, lineno: int | None = None, colno: int | None = None) -> None:
        where = f" at {path}" if path else ""
        if lineno is not None:
            where += f" (line {lineno}, column {colno})"
        super().__init__(f"{problem}{where}")
        self.problem = problem
        self.path = path
        self.lineno = lineno
        self.colno = colno


def loads(
    text: str | bytes | bytearray,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int | None = None,
) -> Any:
    """json.loads with limits: nesting depth, size, finite numbers, storable text.

    Raises JSONDepthError / JSONSizeError (limits), JSONValueError (NaN, Infinity, a number
    that overflows a float or has over 4,300 digits, `\\u0000`, a lone surrogate) or
    json.JSONDecodeError (malformed); all are ValueErrors.
    """
    if isinstance(text, bytes | bytearray):
        if max_bytes is not None and len(text) > max_bytes:
            raise _too_big(len(text), max_bytes)
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONValueError(f"byte 0x{text[exc.start]:02x} at offset {exc.start} is not UTF-8", path="") from None
    elif (
        max_bytes is not None and len(text) > max_bytes // 4 and len(text.encode("utf-8", "surrogatepass")) > max_bytes
    ):
        raise _too_big(len(text.encode("utf-8", "surrogatepass")), max_bytes)
    deep = _too_deep(text, max_depth) if _deeper_than(text, max_depth) else None
    if deep is not None:
        path, offset = deep
        lineno, colno = _line_col(text, offset)
        where = f" at {path}" if path else ""
        error = JSONDepthError(
            f"JSON nested more than {max_depth} levels deep{where} (line {lineno}, column {colno}; "
            f"the limit is {max_depth})",
            limit="max_depth",
            value=max_depth + 1,
            path=path,
            lineno=lineno,
        )
        error.problem = f"JSON nested more than {max_depth} levels deep (the limit is {max_depth})"
        raise error
    bad: list[str] = []

    def constant(name: str) -> Any:
        bad.append(name)
        return _Refused(name, f"{name} is not allowed (JSON has no NaN or Infinity)")

    def number(literal: str) -> Any:
        value = float(literal)
        if math.isfinite(value):
            return value
        bad.append(literal)
        return _Refused(literal, f"{literal} is out of range for a number")

    def integer(literal: str) -> Any:
        if len(literal.lstrip("-")) > MAX_INT_DIGITS:
            bad.append(literal)
            return _Refused(literal, f"a number with {len(literal.lstrip('-')):,} digits is too long")
        return int(literal)

    value = json.loads(text, parse_constant=constant, parse_float=number, parse_int=integer)
    if bad:
        path, refused = _first_refused(value)
        number_line, number_column = _locate_number(text, refused.literal)
        raise JSONValueError(refused.problem, path=path, lineno=number_line, colno=number_column)
    if _RISKY_ESCAPE.search(text) or _has_bad_char(text):
        found = find_unstorable_text(value)
        if found is not None:
            raise JSONValueError(found[1], path=found[0])
    return value


def _deeper_than(text: str, max_depth: int) -> bool:
    """Whether the brackets outside strings nest past max_depth: a fast check, C string operations only.

    Escaped backslashes and quotes dropped, the text split at quotes keeps what lies outside
    strings; of that only brackets are kept, and each pass removes the innermost pairs, so a
    balanced text empties after exactly its depth in passes. Malformed nesting stops
    changing: the parser reports it.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return False  # fewer opening brackets than the limit: the common small case
    outside = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[::2])
    brackets = outside.translate(_KEEP_BRACKETS)
    for _ in range(max_depth):
        shorter = _INNERMOST.sub("", brackets)  # one level: both kinds in one scan
        if shorter == brackets:
            return False
        brackets = shorter
    return _INNERMOST.sub("", brackets) != brackets


def _too_deep(text: str, max_depth: int) -> tuple[str, int] | None:
    """(path, offset) of the first bracket nested past max_depth, or None; one pass, no recursion."""
    frames: list[list] = []  # [key or None] for objects, [index] for arrays
    last_string = ""
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            if len(frames) >= max_depth:
                return _frames_path(frames), match.start()
            frames.append([0] if token == "[" else [None])
        elif token in "]}":
            if frames:
                frames.pop()
        elif token == ",":
            if frames and isinstance(frames[-1][0], int):
                frames[-1][0] += 1
        elif token == ":":
            if frames:
                frames[-1][0] = last_string
        else:
            last_string = token
    return None


def _frames_path(frames: list[list]) -> str:
    path = ""
    for n, (place,) in enumerate(frames):
        if n == PATH_LEVELS_SHOWN:
            return path + "…"
        if isinstance(place, int):
            path += f"[{place}]"
        elif place is not None:
            try:
                key = json.loads(place)
            except ValueError:
                key = place
            path = _join(path, key)
    return path


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def find_unstorable_text(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, problem) of the first string or key holding NUL or a lone surrogate, else None."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, str):
            problem = _text_problem(node)
            if problem:
                return where, problem
        elif isinstance(node, dict):
            for key, child in reversed(node.items()):
                problem = _text_problem(key)
                if problem:
                    return _join(where, key), f"the key {problem.removeprefix('the text ')}"
                stack.append((_join(where, key), child))
        elif isinstance(node, list):
            stack.extend((f"{where}[{n}]", child) for n, child in reversed(list(enumerate(node))))
    return None


def _has_bad_char(text: str) -> bool:
    if "\x00" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")  # fails on a lone surrogate, at C speed
    except UnicodeEncodeError:
        return True
    return False


def _text_problem(text: str) -> str | None:
    match = _BAD_CHAR.search(text)
    if match is None:
        return None
    char = match.group()
    if char == "\x00":
        return "the text holds a NUL character (\\u0000), which cannot be stored"
    return f"the text holds a lone UTF-16 surrogate (\\u{ord(char):04x}), which is not a character"


class _Refused:
    __slots__ = ("literal", "problem")

    def __init__(self, literal: str, problem: str) -> None:
        self.literal = literal
        self.problem = problem


def _first_refused(value: Any) -> tuple[str, _Refused]:
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _Refused):
            return where, node
        if isinstance(node, dict):
            stack.extend((_join(where, key), child) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((f"{where}[{n}]", child) for n, child in reversed(list(enumerate(node))))
    raise AssertionError("a refused number was recorded but not found")  # pragma: no cover


def _join(path: str, key: str) -> str:
    # Keys come from the input: a message must stay printable and short whatever they hold.
    label = _BAD_CHAR.sub(lambda m: f"\\u{ord(m.group()):04x}", key[:40]) + ("…" if len(key) > 40 else "")
    return f"{path}.{label}" if path else label


def _locate_number(text: str, literal: str) -> tuple[int | None, int | None]:
    for match in _NUMBER_TOKENS.finditer(text):
        if match.group(1) == literal:
            return _line_col(text, match.start(1))
    return None, None


def _too_big(size: int, limit: int) -> JSONSizeError:
    return JSONSizeError(f"JSON is {size:,} bytes, over the limit of {limit:,} bytes", limit="max_bytes", value=size)
