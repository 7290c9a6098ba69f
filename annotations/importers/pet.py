"""`pet`: a finished PET study laid out like ../shared/data/iwslt2019.

A `header` file names the tab-separated columns (`<MT>` or `MT`); every other file
holds one post-editor's rows, and the file's name is the post-editor's account name.

A segment is identified by (`file_name`, `line_in_file`) when both columns exist:
in iwslt2019 those are the same in all five files while `src` differs per file and
two distinct segments share an identical S and MT. Without them a segment is its
(S, MT) text. Every row becomes one submitted post-edit of its segment's item.

Documents: `file_name` is the document the segment comes from (iwslt2019's README:
"name of the original file", e.g. a WMT test document as one system translated it) and
`line_in_file` its place there, so they become Item.document and document_position. A
post-editor's file is not a document: every file holds the same segments, shuffled
across documents in one order shared by all five.

A study folder also holds files that are not data (its README, a licence, dotfiles such
as .DS_Store): `is_data_file` says which, for the command line and the upload page alike.
"""

from __future__ import annotations

import re

from annotations.importers import study
from annotations.importers.base import (
    ImportDataError,
    ImportPlan,
    InputFile,
    ItemRow,
    Origin,
    PostEditRow,
    content_id,
    effort_value,
    scalar,
    shown,
)

HEADER_FILE = "header"
REQUIRED = ("MT", "PE")
EFFORT_COLUMNS = (
    "letters",
    "digits",
    "spaces",
    "symbols",
    "navigation",
    "erase",
    "commands",
    "visible",
    "keystrokes",
    "allkeys",
)
TIME_COLUMN = "time"  # milliseconds in PET
SEGMENT_ID = ("file_name", "line_in_file")
ITEM_META = (*SEGMENT_ID, "sys")
STORED = {"S", "REF", "MT", "PE", TIME_COLUMN, *EFFORT_COLUMNS, *ITEM_META}
DEFINITION_VERSION = "pet"
_WHOLE = re.compile(r"[+-]?[0-9]+")
NOT_DATA_PREFIXES = ("readme", "license", "licence", "notice", "changelog", "citation")
NOT_DATA_SUFFIXES = (".md", ".pdf", ".bib", ".cff")


def is_data_file(name: str) -> bool:
    """False for documentation next to the data: README*, LICENSE*, *.md, *.pdf, dotfiles..."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return not (base.startswith(".") or base.startswith(NOT_DATA_PREFIXES) or base.endswith(NOT_DATA_SUFFIXES))


def skipped_note(names: list[str]) -> str:
    return f"skipped {len(names)} file(s) that are not study data: {', '.join(names)}"


def data_files(files: list[InputFile]) -> tuple[list[InputFile], list[str]]:
    """The study's data files, and the names of the others (skipped, for the report)."""
    kept = [f for f in files if is_data_file(f.name)]
    return kept, [f.name for f in files if not is_data_file(f.name)]


def parse(files: list[InputFile], *, annotator_prefix: str = "") -> ImportPlan:
    headers = [f for f in files if f.basename == HEADER_FILE]
    if not headers:
        names = ", ".join(f.name for f in files) or "nothing"
        raise ImportDataError(
            f"a PET study needs a file named {HEADER_FILE!r} naming the columns; got {names}",
            file=files[0].name if files else HEADER_FILE,
        )
    header = headers[0]
    columns = _columns(header)
    editors = sorted((f for f in files if f.basename != HEADER_FILE), key=lambda f: f.name)
    if not editors:
        raise ImportDataError("no post-editor files next to the header", file=header.name)

    plan = ImportPlan(fmt="pet", definition_version=DEFINITION_VERSION)
    segments: dict[str, ItemRow] = {}
    for editor in editors:
        annotator = annotator_prefix + editor.basename
        for line_no, fields in _rows(editor, header, columns):
            origin = Origin(editor.name, line_no)
            item = _item(fields, origin)
            known = segments.get(item.external_id)
            if known is None:
                segments[item.external_id] = item
                plan.items.append(item)
            else:
                _same_segment(known, item)
            plan.post_edits.append(_post_edit(fields, item.external_id, annotator, origin))
    return plan


def _columns(header: InputFile) -> list[str]:
    lines = [line for line in header.text().splitlines() if line.strip()]
    if not lines:
        raise ImportDataError("the header file is empty", file=header.name, line=1)
    columns = [name.strip().removeprefix("<").removesuffix(">") for name in lines[0].split("\t")]
    seen: set[str] = set()
    for name in columns:
        if not name:
            raise ImportDataError("a column has no name", file=header.name, line=1)
        if name in seen:
            raise ImportDataError("column named twice", file=header.name, line=1, field=name)
        seen.add(name)
    for name in REQUIRED:
        if name not in seen:
            raise ImportDataError(
                f"the header has no {name} column (columns: {', '.join(columns)})", file=header.name, line=1
            )
    return columns


def _rows(editor: InputFile, header: InputFile, columns: list[str]):
    for line_no, line in enumerate(editor.text().split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line:
            continue
        values = line.split("\t")
        if len(values) != len(columns):
            raise ImportDataError(
                f"{len(values)} tab-separated fields, but {header.name} names {len(columns)} columns",
                file=editor.name,
                line=line_no,
            )
        yield line_no, dict(zip(columns, values, strict=True))


def _item(fields: dict[str, str], origin: Origin) -> ItemRow:
    mt = fields["MT"]
    if not mt.strip():
        raise ImportDataError("the machine translation is empty", file=origin.file, line=origin.line, field="MT")
    source = fields.get("S", "")
    if all(name in fields for name in SEGMENT_ID):
        external_id = f"{fields['file_name']}:{fields['line_in_file']}"
    else:
        external_id = content_id(source, mt)
    reference = fields.get("REF", "")
    document, position = "", None
    if all(name in fields for name in SEGMENT_ID):
        document = study.document_id(fields["file_name"], origin=origin, field="file_name")
        position = study.document_position(fields["line_in_file"], origin=origin, field="line_in_file")
        if not document or position is None:
            empty = "file_name" if not document else "line_in_file"
            raise ImportDataError(
                "is empty: a segment is known by its file_name and line_in_file",
                file=origin.file,
                line=origin.line,
                field=empty,
            )
    return ItemRow(
        external_id=external_id,
        source=source,
        model_output=mt,
        references=[reference] if reference else [],
        meta={name: scalar(fields[name]) for name in ITEM_META if name in fields},
        origin=origin,
        document=document,
        document_position=position,
    )


def _same_segment(known: ItemRow, item: ItemRow) -> None:
    for attr, column in (("model_output", "MT"), ("source", "S"), ("references", "REF")):
        if getattr(known, attr) != getattr(item, attr):
            raise ImportDataError(
                f"segment {item.external_id!r} has a different {column} than at "
                f"{known.origin.file}, line {known.origin.line}",
                file=item.origin.file,
                line=item.origin.line,
                field=column,
            )


def _post_edit(fields: dict[str, str], external_id: str, annotator: str, origin: Origin) -> PostEditRow:
    effort: dict[str, int | None] = {}
    if TIME_COLUMN in fields:
        effort["wall_ms"] = _count(fields[TIME_COLUMN], origin, TIME_COLUMN, "wall_ms")
    for name in EFFORT_COLUMNS:
        if name in fields:
            effort[name] = _count(fields[name], origin, name, name)
    return PostEditRow(
        external_id=external_id,
        annotator=annotator,
        text=fields["PE"],
        effort={k: v for k, v in effort.items() if v is not None},
        extra={name: scalar(value) for name, value in fields.items() if name not in STORED},
        origin=origin,
    )


def _count(value: str, origin: Origin, column: str, target: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if len(value) <= 9 and value.isascii() and value.isdigit():
        return int(value)  # the common case: under 10^9, within every effort column's range
    if not _WHOLE.fullmatch(value):
        raise ImportDataError(f"{shown(value)} is not a whole number", file=origin.file, line=origin.line, field=column)
    # Past 40 digits no column can hold it (and Python converts at most 4,300): any such number says so.
    number = int(value) if len(value) <= 40 else 10**40
    return effort_value(number, name=target, file=origin.file, line=origin.line, field=column, written=value)
