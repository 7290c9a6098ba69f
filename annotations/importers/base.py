"""What every importer shares: the error that names file, line and field, the
parsed rows handed to the one writer, and reading bytes safely.

Parsers (editeval, natinst, table, pet) turn files into an `ImportPlan` without touching
the database; `annotations.importers.store.plan_store` writes a plan atomically.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypedDict

from django.conf import settings
from django.db import models

from annotations.models import EFFORT_FIELDS, PostEdit
from editlab import limits, safe_json
from editlab.refusals import Refusal

if TYPE_CHECKING:
    from annotations.importers.spool import PostEditSpool

# Deeper than any published format nests (Super-NaturalInstructions: 4, EditEval: 5); far below recursion limits.
JSON_MAX_DEPTH = 64


class ImportDataError(Refusal):
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


class Where(TypedDict):
    """The place an error names, passed on as keywords (`**where`) to ImportDataError and the checks."""

    file: str
    line: int


class WhereField(Where):
    field: str


@dataclass(frozen=True, slots=True)
class Origin:
    file: str
    line: int


def fail(message: str, origin: Origin, field: str | None = None) -> ImportDataError:
    """The refusal of a value read at `origin` (a row's file and line), naming its field."""
    return ImportDataError(message, file=origin.file, line=origin.line, field=field)


@dataclass(slots=True)
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
    # Study design (annotations.importers.study checks them): "" = no document; a position of
    # None in a document is given on storing, after the document's last one.
    document: str = ""
    document_position: int | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    highlights: dict[str, list] = field(default_factory=dict)
    practice: bool = False
    # A long finished-study table: what each condition's post-editors started from (and the row
    # that says so), keyed by condition; the store turns it into outputs once it knows which
    # output each condition shows.
    start_texts: dict[str, tuple[str, Origin]] = field(default_factory=dict)
    # No model_output column: the item's first output becomes its model output.
    model_output_from_outputs: bool = False


@dataclass(slots=True)
class PostEditRow:
    external_id: str
    annotator: str
    text: str
    origin: Origin
    effort: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    condition: str = ""  # the condition the post-editor worked under (a finished study's design)
    # How many CRLF and lone CR the text had before they became LF (kept in origin_detail).
    line_endings: dict[str, int] = field(default_factory=dict)


@dataclass
class ImportPlan:
    """Everything one import would store, written in one transaction; built in memory, but for the
    post-edits of a long table, which wait on disk (spooled)."""

    fmt: str
    items: list[ItemRow] = field(default_factory=list)
    post_edits: list[PostEditRow] = field(default_factory=list)
    # Project attributes the file defines (natinst): set when the project has none yet.
    task_type: str = ""
    project_meta: dict[str, Any] = field(default_factory=dict)
    definition_version: str = ""
    notes: list[str] = field(default_factory=list)  # for the report: what was read but not imported, and why
    # A long file's post-edits (the table importer), on disk in file order; post_edits is then empty.
    spooled: PostEditSpool | None = None

    def post_edit_rows(self) -> Iterable[PostEditRow]:
        """The post-edits in file order, from the list or the spool (iterable again and again)."""
        return self.post_edits if self.spooled is None else self.spooled

    def post_edit_chunks(self, size: int) -> Iterator[list[PostEditRow]]:
        if self.spooled is not None:
            yield from self.spooled.chunks()
            return
        for low in range(0, len(self.post_edits), size):
            yield self.post_edits[low : low + size]


@dataclass(frozen=True)
class InputFile:
    """One file to import: its name as the user knows it, and its bytes (`data`), or the path they
    are read from a line at a time (`path`: a file is then never held in memory whole)."""

    name: str
    data: bytes = b""
    path: Path | None = None

    @classmethod
    def from_path(cls, path: Path, display: str | None = None, *, streamed: bool = False) -> InputFile:
        name = display or str(path)
        if not path.is_file():
            raise ImportDataError("no such file", file=name)
        check_size(name, path.stat().st_size)
        if streamed:
            return cls(name=name, path=path)
        return cls(name=name, data=path.read_bytes())

    @property
    def basename(self) -> str:
        return self.name.replace("\\", "/").rsplit("/", 1)[-1]

    def open(self) -> BinaryIO:
        return self.path.open("rb") if self.path is not None else io.BytesIO(self.data)

    def text(self) -> str:
        return decode(self.name, self.data if self.path is None else self.path.read_bytes())

    def check_text(self) -> None:
        """What `text()` refuses (bytes that are not UTF-8, a NUL), checked a line at a time: a line
        break is never part of a UTF-8 sequence, so the lines decode alike one by one or all at once."""
        offset, nul = 0, None
        with self.open() as handle:
            for line_no, raw in enumerate(handle, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ImportDataError(
                        f"byte 0x{raw[exc.start]:02x} at offset {offset + exc.start} is not UTF-8; "
                        "save the file as UTF-8",
                        file=self.name,
                        line=line_no,
                    ) from None
                if nul is None and b"\x00" in raw:
                    nul = line_no
                offset += len(raw)
        if nul is not None:
            raise ImportDataError("contains a NUL character", file=self.name, line=nul)

    def lines(self) -> Iterator[str]:
        """The decoded lines, each with its ending (\\r\\n, \\r or \\n, as a file opened with newline=""
        gives them; a leading BOM dropped), after check_text: the file is read a line at a time."""
        self.check_text()
        with io.TextIOWrapper(self.open(), encoding="utf-8-sig", newline="") as text:
            yield from text


def json_lines(file: InputFile) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; anything else names its line."""
    file.check_text()
    with file.open() as handle:
        for line_no, raw in enumerate(handle, start=1):
            line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            if not line.strip():
                continue
            record = parse_json(line.removesuffix("\n"), file=file.name, line=line_no)
            if not isinstance(record, dict):
                raise ImportDataError(f"expected a JSON object, got {json_type(record)}", file=file.name, line=line_no)
            yield line_no, record


def parse_json(text: str, *, file: str, line: int = 1, field: str | None = None, what: str = "invalid JSON") -> Any:
    """safe_json.loads with every refusal as an ImportDataError naming file, line and field.

    `line` is where `text` starts in the file and `field` the column or key holding it (a
    JSON cell); a place inside the JSON is added to the field (`refs[2]`, `meta.score`).
    """
    try:
        return safe_json.loads(text, max_depth=JSON_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise ImportDataError(
            f"{what}: {exc.msg} (column {exc.colno})", file=file, line=line + exc.lineno - 1, field=field
        ) from None
    except (safe_json.JSONValueError, safe_json.JSONDepthError) as exc:
        inside = exc.path if not field else f"{field}{'' if exc.path.startswith('[') else '.'}{exc.path}"
        if exc.lineno is not None:
            at: int | None = line + exc.lineno - 1
        else:  # a NUL or surrogate escape: known by its place in the document, not by its line
            at = line if "\n" not in text.strip() else None
        raise ImportDataError(
            f"{what}: {exc.problem}", file=file, line=at, field=(inside if exc.path else field) or None
        ) from None
    except ValueError as exc:  # any other limit: its message names it
        raise ImportDataError(f"{what}: {exc}", file=file, line=line, field=field) from None


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


_INT = re.compile(r"[+-]?[0-9]{1,19}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def scalar(text: str) -> Any:
    """Plain decimal numbers as numbers, everything else as text.

    Integers only within 64 bits (a 30-digit id stays text rather than become a number most
    readers cannot hold) and finite floats only (JSON has no NaN: `1e400` stays text).
    """
    if _INT.fullmatch(text):
        integer = int(text)
        return integer if len(text) < 19 or -limits.MAX_ID <= integer <= limits.MAX_ID else text
    if _FLOAT.fullmatch(text):
        real = float(text)
        if math.isfinite(real):
            return real
    return text


def shown(value: Any, limit: int = 60) -> str:
    """A value as an error message quotes it: repr, cut short (a cell can hold megabytes)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def effort_max(name: str) -> int:
    """The largest value the effort column `name` can hold (IntegerField or BigIntegerField)."""
    column = PostEdit._meta.get_field(name)
    return limits.MAX_ID if isinstance(column, models.BigIntegerField) else limits.MAX_INT


def max_length(model: type[models.Model], name: str) -> int:
    """The most characters the text column `name` holds (longer text is refused at import)."""
    column = model._meta.get_field(name)
    if not isinstance(column, models.CharField) or column.max_length is None:
        raise TypeError(f"{model.__name__}.{name} is not a CharField with a max_length")
    return column.max_length


EFFORT_MAX = {name: effort_max(name) for name in EFFORT_FIELDS}


def effort_value(
    number: int | float, *, name: str, file: str, line: int, field: str, unit: int = 1, written: str | None = None
) -> int:
    """A whole, non-negative effort figure its column can hold, or an error with the allowed range.

    `unit` converts the file's unit to the column's (1000 for seconds into a `_ms` column);
    `written` is the value as the file spells it, for messages.
    """
    where: WhereField = {"file": file, "line": line, "field": field}
    label = _number_text(number) if written is None else written if len(written) <= 60 else written[:59] + "…"
    if not math.isfinite(number):
        raise ImportDataError(f"{label} is not a finite number", **where)
    if number < 0:
        raise ImportDataError(f"{label} is negative", **where)
    if unit == 1 and number != int(number):
        raise ImportDataError(f"{label} is not a whole number", **where)
    value = round(number * unit)
    limit = EFFORT_MAX[name]
    if value > limit:
        bound = f"{limit:,}" if unit == 1 else f"{limit // unit:,} seconds"
        raise ImportDataError(
            f"{label} is out of range: {field} must be between 0 and {bound}"
            f" (the {name} column holds at most {limit:,})",
            **where,
        )
    return value


def _number_text(number: int | float) -> str:
    return shown(number) if isinstance(number, int) else repr(number)


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


def _past_ws(text: str, pos: int) -> int:
    """The first position at or after `pos` that is not JSON whitespace."""
    match = _WS.match(text, pos)
    assert match is not None  # the pattern matches the empty string, so it matches anywhere
    return match.end()


def array_lines(text: str, key: str) -> list[int]:
    """The line of each element of the top-level array `key` in a valid JSON object.

    json.loads keeps no positions; messages about the n-th instance still need its line.
    """
    decoder = json.JSONDecoder()
    lines: list[int] = []
    pos = _past_ws(text, 0)
    if text[pos : pos + 1] != "{":
        return lines
    pos += 1
    while True:
        pos = _past_ws(text, pos)
        if text[pos : pos + 1] in ("}", ""):
            return lines
        name, pos = decoder.raw_decode(text, pos)
        pos = _past_ws(text, _past_ws(text, pos) + 1)  # past ':'
        if name == key and text[pos : pos + 1] == "[":
            lines, pos = _element_lines(text, pos + 1, decoder)
        else:
            _, pos = decoder.raw_decode(text, pos)
        pos = _past_ws(text, pos)
        if text[pos : pos + 1] == ",":
            pos += 1


def _element_lines(text: str, pos: int, decoder: json.JSONDecoder) -> tuple[list[int], int]:
    lines: list[int] = []
    line, counted = 1, 0
    while True:
        pos = _past_ws(text, pos)
        if text[pos : pos + 1] in ("]", ""):
            return lines, pos + 1
        line += text.count("\n", counted, pos)
        counted = pos
        lines.append(line)
        _, pos = decoder.raw_decode(text, pos)
        pos = _past_ws(text, pos)
        if text[pos : pos + 1] == ",":
            pos += 1


def normalize_line_endings(text: str) -> tuple[str, int, int]:
    """`text` with every CRLF and every lone CR as LF (what a browser's textarea gives), and how many
    of each it had. Idempotent: a text without CR comes back as it is."""
    if "\r" not in text:
        return text, 0, 0
    crlf = text.count("\r\n")
    normalized = text.replace("\r\n", "\n")
    lone = normalized.count("\r")
    return normalized.replace("\r", "\n"), crlf, lone


def removed_before(text: str) -> list[int]:
    """The offsets (code points) of the CRs that normalize_line_endings removes from `text`: the CR
    of each CRLF. An offset p of `text` is p - bisect_left(removed, p) in the normalized text."""
    removed = []
    at = text.find("\r\n")
    while at >= 0:
        removed.append(at)
        at = text.find("\r\n", at + 2)
    return removed
