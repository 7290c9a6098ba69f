"""What every importer shares: the error that names file, line and field, the
parsed rows handed to the one writer, and reading bytes safely.

Parsers (editeval, natinst, table, pet) turn files into a `Plan` without touching
the database; `annotations.importers.store.plan_store` writes a plan atomically.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings


class ImportDataError(Exception):
    """Bad input: the message names the file, the line (1-based) and the field."""

    def __init__(self, message: str, *, file: str, line: int | None = None, field: str | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", line {self.line}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Origin:
    file: str
    line: int


@dataclass
class ItemRow:
    external_id: str
    model_output: str
    origin: Origin
    source: str = ""
    instruction: str = ""
    references: list = field(default_factory=list)
    gold_edits: list = field(default_factory=list)
    task_type: str = ""
    meta: dict = field(default_factory=dict)


@dataclass
class PostEditRow:
    external_id: str
    annotator: str
    text: str
    origin: Origin
    effort: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """Everything one import would store; built in memory, written in one transaction."""

    fmt: str
    items: list[ItemRow] = field(default_factory=list)
    post_edits: list[PostEditRow] = field(default_factory=list)
    # Project attributes the file defines (natinst): set when the project has none yet.
    guidelines: str = ""
    task_type: str = ""
    project_meta: dict[str, Any] = field(default_factory=dict)
    definition_version: str = ""


@dataclass(frozen=True)
class InputFile:
    """One file to import: its name as the user knows it, and its bytes."""

    name: str
    data: bytes

    @classmethod
    def from_path(cls, path: Path, display: str | None = None) -> InputFile:
        name = display or str(path)
        if not path.is_file():
            raise ImportDataError("no such file", file=name)
        check_size(name, path.stat().st_size)
        return cls(name=name, data=path.read_bytes())

    @property
    def basename(self) -> str:
        return self.name.replace("\\", "/").rsplit("/", 1)[-1]

    def text(self) -> str:
        return decode(self.name, self.data)


def json_lines(file: InputFile):
    """(line number, object) for every non-blank line; anything else names its line."""
    for line_no, line in enumerate(file.text().split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line)
        except json.JSONDecodeError as exc:
            raise ImportDataError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", file=file.name, line=line_no
            ) from None
        except ValueError as exc:
            raise ImportDataError(f"invalid JSON: {exc}", file=file.name, line=line_no) from None
        if not isinstance(record, dict):
            raise ImportDataError(f"expected a JSON object, got {json_type(record)}", file=file.name, line=line_no)
        yield line_no, record


def check_size(name: str, size: int) -> None:
    limit = settings.EDITLAB_IMPORT_MAX_BYTES
    if size > limit:
        raise ImportDataError(
            f"file is {size:,} bytes, over the import limit of {limit:,} bytes (EDITLAB_IMPORT_MAX_BYTES)",
            file=name,
        )


def decode(name: str, data: bytes) -> str:
    """UTF-8 (a leading BOM is dropped); other bytes or NUL characters are refused by line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportDataError(
            f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8; save the file as UTF-8",
            file=name,
            line=line,
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        # PostgreSQL cannot store NUL in text, so refuse it everywhere alike.
        raise ImportDataError("contains a NUL character", file=name, line=text.count("\n", 0, nul) + 1)
    return text


def content_id(source: str, model_output: str) -> str:
    """A stable id for rows that carry none: the same texts always get the same id."""
    digest = hashlib.sha1(f"{source}\x1f{model_output}".encode()).hexdigest()
    return f"sha1-{digest[:16]}"


def require_str(value: Any, *, file: str, line: int, field: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ImportDataError(f"must be a string, got {json_type(value)}", file=file, line=line, field=field)
    if not allow_empty and not value.strip():
        raise ImportDataError("must not be empty", file=file, line=line, field=field)
    return value


def require_str_list(value: Any, *, file: str, line: int, field: str) -> list[str]:
    if not isinstance(value, list):
        raise ImportDataError(f"must be a list of strings, got {json_type(value)}", file=file, line=line, field=field)
    for n, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ImportDataError(
                f"entry {n} must be a string, got {json_type(entry)}", file=file, line=line, field=field
            )
    return value


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def scalar(text: str) -> Any:
    """Plain decimal numbers as numbers (finite ones: JSON has no NaN), everything else as text."""
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):
            return number
    return text


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not allowed (JSON has no NaN or Infinity)")


def load_json(text: str) -> Any:
    """json.loads that refuses NaN/Infinity, which Python accepts and PostgreSQL does not."""
    return json.loads(text, parse_constant=_no_constants)


def json_type(value: Any) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


_WS = re.compile(r"[ \t\n\r]*")


def array_lines(text: str, key: str) -> list[int]:
    """The line of each element of the top-level array `key` in a valid JSON object.

    json.loads keeps no positions; messages about the n-th instance still need its line.
    """
    decoder = json.JSONDecoder()
    lines: list[int] = []
    pos = _WS.match(text, 0).end()
    if text[pos : pos + 1] != "{":
        return lines
    pos += 1
    while True:
        pos = _WS.match(text, pos).end()
        if text[pos : pos + 1] in ("}", ""):
            return lines
        name, pos = decoder.raw_decode(text, pos)
        pos = _WS.match(text, _WS.match(text, pos).end() + 1).end()  # past ':'
        if name == key and text[pos : pos + 1] == "[":
            lines, pos = _element_lines(text, pos + 1, decoder)
        else:
            _, pos = decoder.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()
        if text[pos : pos + 1] == ",":
            pos += 1


def _element_lines(text: str, pos: int, decoder: json.JSONDecoder) -> tuple[list[int], int]:
    lines: list[int] = []
    line, counted = 1, 0
    while True:
        pos = _WS.match(text, pos).end()
        if text[pos : pos + 1] in ("]", ""):
            return lines, pos + 1
        line += text.count("\n", counted, pos)
        counted = pos
        lines.append(line)
        _, pos = decoder.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()
        if text[pos : pos + 1] == ",":
            pos += 1
