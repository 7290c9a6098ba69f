"""Reading a table file for the `table` importer: its kind, its header, its records by line.

The kind of table comes from the file's extension: .csv (RFC 4180 quoting), .tsv or
.tab (tab-separated, quoted the way `csv.writer(dialect="excel-tab")` and pandas'
`to_csv(sep="\t")` write it: a field holding a tab, a newline or a quote is quoted and
its quotes doubled), .jsonl or .ndjson (one object per line; keys are the columns). A
header whose first column has no name is pandas' row index and is left out.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from annotations.importers.base import ImportDataError, InputFile, json_lines, shown

KINDS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
WHOLE = re.compile(r"[+-]?[0-9]+")


def table_kind(file: InputFile) -> str:
    name = file.basename.lower()
    for suffix, kind in KINDS.items():
        if name.endswith(suffix):
            return kind
    raise ImportDataError(f"cannot tell the table's kind from its name; use one of {', '.join(KINDS)}", file=file.name)


def read_table(file: InputFile) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The header's columns, and (line, {column: value}) for each record under it, read from the
    file as they are asked for (a file is never held in memory whole)."""
    kind = table_kind(file)
    if kind == "jsonl":
        records = json_lines(file)
        first = next(records, None)
        if first is None:
            return [], iter(())
        return list(first[1]), itertools.chain([first], records)
    _allow_cells_up_to(settings.EDITLAB_IMPORT_MAX_BYTES)
    # A file on disk is read a line at a time; bytes already in memory (an upload) are decoded whole.
    lines = file.lines() if file.path is not None else _lines(file.text())
    reader = csv.reader(lines, dialect="excel-tab" if kind == "tsv" else "excel", strict=True)
    rows = _csv_rows(reader, file)
    try:
        header_line, columns = next(rows)
    except StopIteration:
        raise ImportDataError("the file is empty", file=file.name, line=1) from None
    columns = [c.strip() for c in columns]
    # pandas writes its row index as a first column without a name: it is no data of ours.
    skip_index = len(columns) > 1 and not columns[0]
    if skip_index:
        columns = columns[1:]
    for n, column in enumerate(columns):
        if not column:
            raise ImportDataError(
                f"column {n + 1 + skip_index} of the header has no name", file=file.name, line=header_line
            )
        if columns.index(column) != n:
            raise ImportDataError("column named twice in the header", file=file.name, line=header_line, field=column)
    return columns, _records(rows, columns, file, skip_index)


# A line and its ending (\r\n, \r or \n, kept), as a file opened with newline="" yields them.
_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.DOTALL)


def _lines(text: str) -> Iterator[str]:
    """The lines of `text` for csv.reader, one at a time: io.StringIO would copy the whole text into
    a buffer of 4 bytes a character first (200 MB for a 50 MB file)."""
    return (match.group() for match in _LINE.finditer(text))


def _allow_cells_up_to(size: int) -> None:
    # csv refuses fields over 131,072 characters by default; a cell may be as long as the file may be.
    # The limit is process-wide, so it is only ever raised.
    if csv.field_size_limit() < size:
        csv.field_size_limit(size)


def _csv_rows(reader, file: InputFile) -> Iterator[tuple[int, list[str]]]:
    """(the line the record starts on, its fields), skipping blank lines; quoting errors name their line."""
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportDataError(_quoting_problem(exc, start, reader.line_num), file=file.name, line=start) from None
        if fields and any(f.strip() for f in fields):
            yield start, fields
        start = reader.line_num + 1


def _quoting_problem(exc: csv.Error, start: int, now: int) -> str:
    message = str(exc)
    if "expected after" in message:
        return (
            f"unreadable row: {message} (a field that starts with a quote must be quoted as a whole, "
            'its own quotes doubled: "He said ""yes""", as csv.writer and pandas write it)'
        )
    if "unexpected end of data" in message or now > start:
        return f"unreadable row: a quoted field that starts in this record is never closed ({message})"
    return f"unreadable row: {message}"


def _records(rows, columns: list[str], file: InputFile, skip_index: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, fields in rows:
        if skip_index:
            if not WHOLE.fullmatch(fields[0].strip()):
                raise ImportDataError(
                    f"column 1 of the header has no name and holds {shown(fields[0])}, not a row number "
                    "(pandas' index, which is left out); name the column",
                    file=file.name,
                    line=line,
                )
            fields = fields[1:]
        if len(fields) != len(columns):
            raise ImportDataError(
                f"{len(fields)} fields, but the header names {len(columns)} columns",
                file=file.name,
                line=line,
            )
        yield line, dict(zip(columns, fields, strict=True))
