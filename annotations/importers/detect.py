"""Pure: which import format a file is, from its name and its first bytes (no Django, no database).

`detect(files)` never raises, whatever the bytes: it answers a `Detection` whose `fmt` is a key of
annotations.importers.FORMATS (or None when no importable format fits) and whose `label` says what the
file looks like, for a person: "CSV table (comma separated, 5 columns)". The upload page preselects
`fmt`, shows the label, and names the format that fits when the chosen one fails (`hint`).

Only the head of a file is read (HEAD_BYTES), so a large upload costs no more than a small one; a
Super-NaturalInstructions task file is one JSON object, recognised by its keys near the start.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass

HEAD_BYTES = 64 * 1024
UNKNOWN = "a file of unknown format"
# The formats' names as the upload page's Format list starts them (FORMATS' labels).
NAMES = {
    "editeval": "EditEval JSONL",
    "natinst": "Super-NaturalInstructions",
    "table": "Table",
    "pet": "Finished PET study",
}
NAMES["idfx"] = "Inputlog/ScriptLog IDFX"
NAMES["mqm"] = "WMT MQM TSV"
# The WMT MQM TSV's header (annotations.importers.mqm.COLUMNS; the comment column may be left out).
MQM_COLUMNS = ["system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity"]
EDITEVAL_KEYS = {"edits", "tasks", "task_type"}
NATINST_KEYS = ('"Definition"', '"Instances"', '"Positive Examples"')
PET_HEADER = "header"
TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class Detection:
    fmt: str | None  # a key of FORMATS, or None: no importable format fits
    label: str  # what the file looks like, for a person

    def hint(self, chosen: str) -> str:
        """The sentence to add when the `chosen` format failed: which format fits, if another does."""
        if self.fmt is None:
            return "" if self.label == UNKNOWN else f"this file looks like {self.label}"
        if self.fmt == chosen:
            return ""
        return f"this file looks like {self.label}; choose '{NAMES[self.fmt]}'"


def detect(files: Sequence[tuple[str, bytes]]) -> Detection:
    """The format of an upload (one file, or a PET folder's files) as (name, first bytes) pairs."""
    try:
        return _detect(files)
    except Exception:  # noqa: BLE001 - a guess must never fail the page; the importer says what is wrong
        return Detection(None, UNKNOWN)


def _basename(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _detect(files: Sequence[tuple[str, bytes]]) -> Detection:
    if not files:
        return Detection(None, "no file")
    names = [_basename(name) for name, _ in files]
    if PET_HEADER in names:
        others = len(names) - 1
        return Detection("pet", f"a PET study (a header file and {others} other file{'s' if others != 1 else ''})")
    if len(files) > 1:
        first = _one(*files[0])
        return Detection(first.fmt, f"{len(files)} files, the first {first.label}")
    return _one(*files[0])


def _one(name: str, data: bytes) -> Detection:
    head = bytes(data[:HEAD_BYTES])
    base = _basename(name).lower()
    if head.startswith(b"PAR1"):
        return Detection(None, "a Parquet file (export it as CSV or JSON Lines to import it)")
    if head.startswith(b"PK\x03\x04"):
        return Detection(None, "a ZIP archive (unpack it and import the files inside)")
    text = _text(head, complete=len(data) <= HEAD_BYTES)
    if text is None:
        return Detection(None, "a binary file, not UTF-8 text")
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        return Detection(None, "an empty file")
    if stripped.startswith("<"):
        if "<log" in stripped[:4096]:
            return Detection("idfx", "an IDFX keystroke log (XML)")
        return Detection(None, "an XML or HTML file that is not an IDFX log")
    if stripped.startswith(("{", "[")):
        # A key in quotes: inside a JSON string its quotes would be escaped.
        if any(key in stripped for key in NATINST_KEYS):
            return Detection("natinst", "a Super-NaturalInstructions task file (JSON)")
        if stripped.startswith("["):
            return Detection(None, "a JSON array, not one object a line")
        return _json_lines(stripped)
    return _delimited(stripped, base)


def _text(head: bytes, *, complete: bool) -> str | None:
    """The head as text; a character cut at the end of the head is dropped, any other bad byte is no text."""
    if b"\x00" in head:
        return None
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if complete or exc.start < len(head) - 3:
            return None
        return head[: exc.start].decode("utf-8")


def _json_lines(text: str) -> Detection:
    line = next(line for line in text.splitlines() if line.strip())
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # cut at HEAD_BYTES, nested too deep, or broken: its keys by name
        first = {key: None for key in (*EDITEVAL_KEYS, "id", "input", "prediction") if f'"{key}"' in line}
    if not isinstance(first, dict):
        return Detection(None, "JSON that is not one object a line")
    keys = set(first)
    if {"id", "prediction"} <= keys and len(keys) <= 3:
        return Detection(None, "a predictions file (id, prediction): give it as the Predictions of a natinst task file")
    counted = f"{len(keys)} key{'s' if len(keys) != 1 else ''}"
    if {"id", "input"} <= keys and keys & EDITEVAL_KEYS:
        return Detection("editeval", f"EditEval JSONL ({counted} on line 1)")
    return Detection("table", f"a JSON Lines table ({counted} on line 1)")


def _delimited(text: str, base: str) -> Detection:
    first = text.splitlines()[0]
    suffix = next((kind for ending, kind in TABLE_SUFFIXES.items() if base.endswith(ending)), None)
    tabs, commas = first.count("\t"), first.count(",")
    kind = suffix if suffix in ("csv", "tsv") else ("tsv" if tabs and tabs >= commas else "csv" if commas else None)
    if kind is None:
        return Detection(None, "plain text with no columns (neither tabs nor commas on line 1)")
    dialect = "excel-tab" if kind == "tsv" else "excel"
    columns = [column.strip() for column in next(csv.reader([first], dialect=dialect), [])]
    if kind == "tsv" and columns in (MQM_COLUMNS, [*MQM_COLUMNS, "comment"]):
        return Detection("mqm", f"a WMT MQM TSV ({len(columns)} columns: one row per error, spans in <v>)")
    if kind == "tsv" and {"MT", "PE"} <= {column.strip("<>") for column in columns}:
        return Detection("pet", f"a PET header ({len(columns)} columns); select the post-editors' files too")
    what = "CSV table (comma separated" if kind == "csv" else "TSV table (tab separated"
    label = f"a {what}, {len(columns)} column{'s' if len(columns) != 1 else ''})"
    if suffix is None:
        label += f"; name it .{kind} to import it"
    return Detection("table", label)
