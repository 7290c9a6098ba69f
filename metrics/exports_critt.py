"""The event export as CRITT TPR-DB keystroke (KD) tables: one tab-separated table per post-edit, in a
zip (docs/events.md, "CRITT TPR-DB keystroke (KD) tables").

The columns are the KD features of the TPR-DB 3.0 documentation (the features table
table_features_v3.tsv of the GitHub repository Critt-Kent/TPR-DB-documentation) that editlab's log
gives faithfully:

- Id: 1..n per session (post-edit), in time order;
- Study, Session, StudySession (`<Study>@<Session>`), Part (the annotator), Text (the item);
- Time: ms since the session's start (the first page load's start; a later page load's events are
  placed after their page load's start, as the IDFX export places them);
- Type: `Ins` or `Del`; Cur: where in the text it happened (UTF-16 units before it, as Translog-II
  counts them on Windows); Char: the characters typed or deleted;
- Pause: the keystroke pause preceding it (ms since the previous row, the first row: since the
  session's start).

A row is one text change of the trace (annotations/process/trace.py): a keystroke's deletion or
insertion; a selection typed over gives a Del then an Ins at the same Time; a paste, a cut, an undo
one row each with all its characters; an IME composition one Ins of the text it committed, at its
first key. The features built on the TPR-DB's own segmentation, alignment and phase heuristics
(Border, Phase, STid, SGid, STseg, TTid, TGid, TTseg), the key release (Dur), IME key counts
(Strokes) and the naming convention's Task, SL and TL are not written: editlab has no faithful value.
"""

import csv
import io
import zipfile
from collections.abc import Iterator

from annotations.effort import LogEvent
from annotations.process import trace_log
from metrics.exports import _Drain
from metrics.exports_events import EventExportSpec, PostEditHead, log_event, post_edit_logs
from metrics.exports_idfx import _offsets

KD_COLUMNS = ("Id", "Study", "Session", "StudySession", "Part", "Text", "Time", "Type", "Cur", "Char", "Pause")


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "_"


def session_name(head: PostEditHead) -> str:
    """The KD table's Session: the item, the annotator and the post-edit's id (unique in the study)."""
    return f"{_safe(head.external_id)}__{_safe(head.annotator)}__{head.id}"


def kd_rows(study: str, head: PostEditHead, events: list[LogEvent], offsets: dict[str, int]) -> list[tuple]:
    """The KD rows of one post-edit's log; `offsets`: ms from the first page load to each page load."""
    pages = {event.seq: event.visit for event in events}
    session = session_name(head)
    rows: list[tuple] = []
    previous = 0
    for action in trace_log(head.original, events).actions:
        time = round(offsets.get(pages.get(action.seq, ""), 0) + action.t_ms)
        for change in action.changes:
            if not change.text:
                continue
            rows.append(
                (
                    len(rows) + 1,
                    study,
                    session,
                    f"{study}@{session}",
                    head.annotator,
                    head.external_id,
                    time,
                    "Del" if change.deletion else "Ins",
                    change.start,
                    change.text,
                    time - previous,
                )
            )
            previous = time
    return rows


def kd_table(rows: list[tuple]) -> str:
    """Rows as the TPR-DB writes its tables: tab-separated, a header line; a tab, line break or quote in
    a cell is quoted (RFC 4180 style), so that a reader splitting on tabs alone sees it quoted."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(KD_COLUMNS)
    writer.writerows(rows)
    return buffer.getvalue()


def post_edit_kd(spec: EventExportSpec) -> Iterator[tuple[str, str]]:
    """(file name, KD table) for each post-edit of the selection, one at a time."""
    study = spec.project.name
    for head, stored in post_edit_logs(spec):
        pages = {visit_id: page for visit_id, (page, _) in head.visits.items()}
        events = [log_event(row, pages.get(row[1], "")) for row in stored]
        yield f"{session_name(head)}.kd", kd_table(kd_rows(study, head, events, _offsets(head)))


def stream_kd_zip(spec: EventExportSpec) -> Iterator[bytes]:
    """A zip with one KD table per post-edit, handed out as each table is written."""
    sink = _Drain()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, table in post_edit_kd(spec):
            archive.writestr(name, table.encode("utf-8"))
            chunk = sink.take()
            if chunk:
                yield chunk
    yield sink.take()
