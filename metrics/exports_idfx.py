"""The event export as IDFX: one Inputlog/ScriptLog-style XML log per post-edit, in a zip (docs/events.md).

Each post-edit's log is replayed (annotations.replay) and every text change written the way ScriptLog
writes it and the WTA tool reads it (annotations/importers/idfx.py has the rules):

- a typed character at the caret: a `keyboard` event, `position` the caret before, `value` the text;
- one unit removed by Backspace or Delete: a `keyboard` event VK_BACK (`position` after the removed
  unit) or VK_DELETE (`position` at it);
- anything else (a selection replaced, a paste, a cut, undo, a composition, a load that differs): a
  `keyboard` event for the key that did it (`NONE` when no key did, as ScriptLog names keys it has no
  code for) followed by a `replacement` of the changed range (common start and end left out);
- the text the post-edit started from: an `insert` event first, as ScriptLog writes a session that
  continues a text;
- a navigation key: a `keyboard` event with an empty value; other keys that changed nothing
  (modifiers, shortcuts) likewise.

Positions and `documentLength` (the length after the event) count UTF-16 code units. Times are ms:
the event's client time plus the start of its page load relative to the first one. A carriage
return is written as `&#13;` so that an XML reader gives it back; characters XML 1.0 cannot carry
(C0 controls other than tab, line feed, carriage return) are written as U+FFFD.
"""

import re
import zipfile
from collections.abc import Iterator
from xml.sax.saxutils import escape

from annotations.effort import NAVIGATION_KEYS, LogEvent
from annotations.importers.idfx import VK_OF_KEY
from annotations.replay import iter_replay, utf16_len
from metrics.exports import _Drain
from metrics.exports_events import EventExportSpec, PostEditHead, log_event, post_edit_logs

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", value)).replace("\r", "&#13;")


def _vk(event: LogEvent | None) -> str:
    if event is None:
        return "NONE"
    if event.code.startswith("VK_") or event.code == "NONE":
        return event.code
    if event.key in VK_OF_KEY:
        return VK_OF_KEY[event.key]
    if len(event.key) == 1 and event.key.isascii() and event.key.isalnum():
        return f"VK_{event.key.upper()}"
    return "NONE"


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.count = 0

    def keyboard(self, *, position: int, length: int, time: int, vk: str, value: str) -> None:
        self.parts.append(
            f'    <event id="{self.count}" type="keyboard">\n'
            '        <part type="wordlog">\n'
            f"            <position>{position}</position>\n"
            f"            <documentLength>{length}</documentLength>\n"
            "            <replay>True</replay>\n"
            "        </part>\n"
            '        <part type="winlog">\n'
            f"            <startTime>{time}</startTime>\n"
            f"            <endTime>{time}</endTime>\n"
            f"            <key>{_text(vk)}</key>\n"
            f"            <value>{_text(value)}</value>\n"
            "            <keyboardstate></keyboardstate>\n"
            "        </part>\n"
            "    </event>\n"
        )
        self.count += 1

    def replacement(self, *, start: int, end: int, newtext: str) -> None:
        self.parts.append(
            f'    <event id="{self.count}" type="replacement">\n'
            '        <part type="wordlog">\n'
            f"            <start>{start}</start>\n"
            f"            <end>{end}</end>\n"
            f"            <newtext>{_text(newtext)}</newtext>\n"
            "        </part>\n"
            "    </event>\n"
        )
        self.count += 1

    def insert(self, *, position: int, before: str) -> None:
        self.parts.append(
            f'    <event id="{self.count}" type="insert">\n'
            '        <part type="wordlog">\n'
            f"            <position>{position}</position>\n"
            f"            <before>{_text(before)}</before>\n"
            "            <after></after>\n"
            "        </part>\n"
            "    </event>\n"
        )
        self.count += 1


def _trimmed(removed: str, inserted: str) -> tuple[int, int, str]:
    """(units kept before, units kept after, the new middle) of replacing `removed` by `inserted`."""
    head = 0
    limit = min(len(removed), len(inserted))
    while head < limit and removed[head] == inserted[head]:
        head += 1
    tail = 0
    while tail < limit - head and removed[len(removed) - 1 - tail] == inserted[len(inserted) - 1 - tail]:
        tail += 1
    return (
        utf16_len(removed[:head]),
        utf16_len(removed[len(removed) - tail :]),
        inserted[head : len(inserted) - tail],
    )


def idfx_document(head: PostEditHead, events: list[LogEvent], offsets: dict[str, int]) -> str:
    """The IDFX XML of one post-edit's log; `offsets`: ms from the first page load to each page load."""
    writer = _Writer()
    units = bytearray(head.original.encode("utf-16-le", "surrogatepass"))
    if head.original:
        writer.insert(position=utf16_len(head.original), before=head.original)
    steps = {step.seq: step for step in iter_replay(head.original, events, with_text=False)}
    pending: LogEvent | None = None
    caret = utf16_len(head.original)

    def time(event: LogEvent) -> int:
        return round(offsets.get(event.visit, 0) + event.t_ms)

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            writer.keyboard(position=caret, length=len(units) // 2, time=time(pending), vk=_vk(pending), value="")
            pending = None

    for event in events:
        if event.kind == "keydown":
            flush()
            if event.key in NAVIGATION_KEYS:
                writer.keyboard(position=caret, length=len(units) // 2, time=time(event), vk=_vk(event), value="")
            else:
                pending = event
            continue
        step = steps.get(event.seq)
        if step is None:
            continue
        start, end = step.start, step.end
        removed = bytes(units[2 * start : 2 * end]).decode("utf-16-le", "surrogatepass")
        units[2 * start : 2 * end] = step.insert.encode("utf-16-le", "surrogatepass")
        length = len(units) // 2
        key, pending = pending, None
        if removed == step.insert:
            if key is not None:
                writer.keyboard(position=caret, length=length, time=time(key), vk=_vk(key), value="")
            continue
        at = time(key if key is not None else event)
        typed = step.kind != "load" and not removed and utf16_len(step.insert) == 1 and not event.full_text
        erased = step.kind != "load" and not step.insert and end - start == 1 and not event.full_text
        if typed:
            writer.keyboard(position=start, length=length, time=at, vk=_vk(key), value=step.insert)
            caret = start + 1
        elif erased and (step.kind == "deleteContentBackward" or (key is not None and key.key == "Backspace")):
            writer.keyboard(position=end, length=length, time=at, vk="VK_BACK", value="")
            caret = start
        elif erased:
            writer.keyboard(position=start, length=length, time=at, vk="VK_DELETE", value="")
            caret = start
        else:
            before, after, middle = _trimmed(removed, step.insert)
            writer.keyboard(position=start + before, length=length, time=at, vk=_vk(key), value="")
            writer.replacement(start=start + before, end=end - after, newtext=middle)
            caret = start + before + utf16_len(middle)
    flush()
    meta = {
        "__LogProgramVersion": "editlab",
        "__LogCreationDate": "",
        "__MainDocument": head.external_id,
    }
    session = {
        "Participant": head.annotator,
        "Item": head.external_id,
        "Condition": head.condition,
        "PostEdit": str(head.id),
    }
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<log>\n'
        + _entries("meta", meta)
        + _entries("session", session)
        + "".join(writer.parts)
        + "</log>\n"
    )


def _entries(name: str, entries: dict[str, str]) -> str:
    body = "".join(
        f"        <entry>\n            <key>{_text(k)}</key>\n            <value>{_text(v)}</value>\n        </entry>\n"
        for k, v in entries.items()
    )
    return f"    <{name}>\n{body}    </{name}>\n"


def _offsets(head: PostEditHead) -> dict[str, int]:
    if not head.visits:
        return {}
    first = min(started for _, started in head.visits.values())
    return {page: round((started - first).total_seconds() * 1000) for page, started in head.visits.values()}


def _entry_name(head: PostEditHead) -> str:
    def safe(text: str) -> str:
        return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "_"

    return f"{safe(head.external_id)}__{safe(head.annotator)}__{head.id}.idfx"


def post_edit_idfx(spec: EventExportSpec) -> Iterator[tuple[str, str]]:
    """(file name, IDFX document) for each post-edit of the selection, one at a time."""
    for head, rows in post_edit_logs(spec):
        pages = {visit_id: page for visit_id, (page, _) in head.visits.items()}
        events = [log_event(stored, pages.get(stored[1], "")) for stored in rows]
        yield _entry_name(head), idfx_document(head, events, _offsets(head))


def stream_idfx_zip(spec: EventExportSpec) -> Iterator[bytes]:
    """A zip with one IDFX file per post-edit, handed out as each file is written."""
    sink = _Drain()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, document in post_edit_idfx(spec):
            archive.writestr(name, document.encode("utf-8"))
            chunk = sink.take()
            if chunk:
                yield chunk
    yield sink.take()
