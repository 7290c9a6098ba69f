"""Inputlog / ScriptLog IDFX keystroke logs: one file is one finished post-edit with its event log.

An IDFX file is XML: `<log>` holds `<meta>` and `<session>` entries (key, value) and a list of `<event
type=...>` elements. Each event's `<part type="wordlog">` says where in the text it acted and
`<part type="winlog">` which key it was and when (startTime, endTime, ms). The rules below are the
ones the WTA tool (mulasik/wta, ScriptLog IDFX) reads such files by, checked on its published corpus:

- keyboard: the key (`VK_...`) with the text it typed (`value`) at `position` (the caret before the
  key). Backspace removes the unit before `position`, Delete the one at it; a navigation key, a
  modifier or an empty value changes nothing. A value of more than one character was pasted.
  A keyboard event directly followed by a replacement changes nothing itself: the replacement
  says what the key did to the selection.
- replacement: the range [start, end) becomes `newtext`.
- insert: `before` is inserted so that it ends at `position`; an insert before any other change
  is the text the session started from (a later session of the same text).
- mouse, focus, selection, statistics: read and left out (no text change).

Positions count UTF-16 code units, as the editor's log does. ScriptLog writes Backspace's value as
`&#x8;`, a character reference XML 1.0 forbids; references to control characters are read as
nothing (the key name says which key it was).

Each IDFX event becomes editor events (annotations/effort.LogEvent) that annotations.replay replays
exactly: a keydown, and for a change a beforeinput (the range replaced) and an input (what was
inserted, the caret after, the length after). The text the log starts from becomes the item's
model output, the text it ends with the post-edit; `logs_store` then stores the log and derives
the effort from it as for a live edit.

Parsing is defused (defusedxml, SAX): no DTD, no entity, no external reference; the file size limit
(EDITLAB_IMPORT_MAX_BYTES) is checked before reading, and the text must be UTF-8.
"""

from __future__ import annotations

import re
import xml.sax
from dataclasses import dataclass, field
from pathlib import PurePath
from xml.sax.handler import ContentHandler
from xml.sax.xmlreader import Locator

import defusedxml.sax
from defusedxml import DefusedXmlException
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError

from annotations.effort import LogEvent
from annotations.importers.base import ImportDataError, ImportPlan, InputFile, ItemRow, Origin, PostEditRow, decode

NAVIGATION_VK = {
    "VK_LEFT": "ArrowLeft",
    "VK_RIGHT": "ArrowRight",
    "VK_UP": "ArrowUp",
    "VK_DOWN": "ArrowDown",
    "VK_HOME": "Home",
    "VK_END": "End",
    "VK_PRIOR": "PageUp",
    "VK_NEXT": "PageDown",
}
NAMED_VK = {
    **NAVIGATION_VK,
    "VK_BACK": "Backspace",
    "VK_DELETE": "Delete",
    "VK_RETURN": "Enter",
    "VK_TAB": "Tab",
    "VK_SPACE": " ",
    "VK_SHIFT": "Shift",
    "VK_LSHIFT": "Shift",
    "VK_RSHIFT": "Shift",
    "VK_CONTROL": "Control",
    "VK_LCONTROL": "Control",
    "VK_RCONTROL": "Control",
    "VK_MENU": "Alt",
    "VK_LMENU": "Alt",
    "VK_RMENU": "AltGraph",
    "VK_CAPITAL": "CapsLock",
    "VK_ESCAPE": "Escape",
    "VK_LWIN": "Meta",
    "VK_RWIN": "Meta",
    "VK_INSERT": "Insert",
}
# The key a browser reports for each named virtual key, and back (the IDFX export).
VK_OF_KEY = {"Backspace": "VK_BACK", "Delete": "VK_DELETE", "Enter": "VK_RETURN", "Tab": "VK_TAB", " ": "VK_SPACE"}
VK_OF_KEY.update({key: vk for vk, key in NAMED_VK.items() if key not in VK_OF_KEY})

_CONTROL_REFERENCE = re.compile(rb"&#(?:x0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F])|0*(?:[0-8]|1[1-24-9]|2[0-9]|3[01]));")
_DECLARED_ENCODING = re.compile(r"""<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_USERNAME = re.compile(r"[^\w.@+-]")
MAX_INT = 2**53


@dataclass
class RawEvent:
    id: str
    type: str
    line: int
    parts: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class IdfxPlan(ImportPlan):
    """A plan whose post-edits carry their event logs, keyed by (item id, annotator)."""

    logs: dict[tuple[str, str], list[LogEvent]] = field(default_factory=dict)


class _Reader(ContentHandler):
    """Collects the entries and events of an IDFX document as the SAX parser reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, str] = {}
        self.events: list[RawEvent] = []
        self._event: RawEvent | None = None
        self._part: dict[str, str] | None = None
        self._entry: dict[str, str] | None = None
        self._text: list[str] | None = None
        self._locator: Locator | None = None

    def setDocumentLocator(self, locator: Locator) -> None:  # noqa: N802 (SAX's name)
        self._locator = locator

    def line(self) -> int:
        line = self._locator.getLineNumber() if self._locator is not None else None
        return line or 1

    def startElement(self, name: str, attrs) -> None:  # noqa: N802
        if name == "event":
            self._event = RawEvent(id=attrs.get("id", ""), type=attrs.get("type", ""), line=self.line())
        elif name == "part" and self._event is not None:
            self._part = self._event.parts.setdefault(attrs.get("type", ""), {})
        elif name == "entry" and self._event is None:
            self._entry = {}
        elif self._part is not None or self._entry is not None:
            self._text = []

    def characters(self, content: str) -> None:
        if self._text is not None:
            self._text.append(content)

    def endElement(self, name: str) -> None:  # noqa: N802
        if name == "event" and self._event is not None:
            self.events.append(self._event)
            self._event, self._part = None, None
        elif name == "part":
            self._part = None
        elif name == "entry" and self._entry is not None:
            if "key" in self._entry:
                self.entries[self._entry["key"]] = self._entry.get("value", "")
            self._entry = None
        elif self._text is not None:
            target = self._part if self._part is not None else self._entry
            if target is not None:
                target[name] = "".join(self._text)
            self._text = None


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def read_events(file: InputFile) -> tuple[dict[str, str], list[RawEvent]]:
    """The meta and session entries and the events of an IDFX file; ImportDataError naming the line
    for anything that is not well-formed, defused UTF-8 XML."""
    text = decode(file.name, file.data)
    declared = _DECLARED_ENCODING.search(text[:200])
    if declared and declared.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise ImportDataError(
            f"declares encoding {declared.group(1)!r}; IDFX files are read as UTF-8 (save the file as UTF-8)",
            file=file.name,
            line=1,
        )
    data = _CONTROL_REFERENCE.sub(b"", text.encode("utf-8"))
    reader = _Reader()
    try:
        defusedxml.sax.parseString(data, reader, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        line = _line_of(text, "<!DOCTYPE") or _line_of(text, "<!ENTITY") or reader.line()
        raise ImportDataError(
            f"declares a DTD or entities ({type(exc).__name__}); IDFX files need none and they are refused",
            file=file.name,
            line=line,
        ) from None
    except xml.sax.SAXParseException as exc:
        raise ImportDataError(
            f"not well-formed XML: {exc.getMessage()} (column {(exc.getColumnNumber() or 0) + 1})",
            file=file.name,
            line=exc.getLineNumber(),
        ) from None
    if not reader.events:
        raise ImportDataError("holds no <event> element: not an IDFX keystroke log", file=file.name, line=1)
    return reader.entries, reader.events


def _number(event: RawEvent, part: str, name: str, *, file: str, required: bool = True) -> int | None:
    value = event.parts.get(part, {}).get(name)
    if value is None or not value.strip():
        if not required:
            return None
        raise ImportDataError(
            f"event {event.id} ({event.type}) has no {name}", file=file, line=event.line, field=f"{part}.{name}"
        )
    cleaned = value.strip()
    if not re.fullmatch(r"-?[0-9]{1,16}", cleaned) or not -MAX_INT <= int(cleaned) <= MAX_INT:
        raise ImportDataError(
            f"event {event.id}: {name} must be a whole number, got {cleaned[:40]!r}",
            file=file,
            line=event.line,
            field=f"{part}.{name}",
        )
    return int(cleaned)


def _units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


class _Log:
    """The text as the log builds it (UTF-16-LE, so positions are code units) and the events so far."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.units = bytearray()
        self.events: list[LogEvent] = [LogEvent(seq=0, t_ms=0.0, kind="load")]
        self.start: str | None = None
        self.t_ms = 0.0

    @property
    def length(self) -> int:
        return len(self.units) // 2

    def add(self, kind: str, **values) -> None:
        self.events.append(LogEvent(seq=len(self.events), t_ms=self.t_ms, kind=kind, **values))

    def check(self, event: RawEvent, start: int, end: int, what: str) -> None:
        if not 0 <= start <= end <= self.length:
            raise ImportDataError(
                f"event {event.id} ({event.type}) {what} [{start}, {end}) lies outside the text "
                f"(length {self.length}): the log does not replay",
                file=self.file,
                line=event.line,
            )

    def change(self, start: int, end: int, insert: str, *, input_type: str) -> None:
        self.add("beforeinput", input_type=input_type, sel_start=start, sel_end=end)
        self.units[2 * start : 2 * end] = _units(insert)
        caret = start + len(_units(insert)) // 2
        self.add("input", input_type=input_type, sel_start=caret, data=insert, length_after=self.length)

    def text(self) -> str:
        return bytes(self.units).decode("utf-16-le", "surrogatepass")


def _keyboard(log: _Log, event: RawEvent, superseded: bool) -> None:
    winlog = event.parts.get("winlog", {})
    vk = winlog.get("key", "").strip()
    value = winlog.get("value", "")
    position = _number(event, "wordlog", "position", file=log.file)
    assert position is not None
    named = NAMED_VK.get(vk)
    key = named if named is not None else (value if len(value) == 1 else vk.removeprefix("VK_").lower())
    pasted = len(value) > 1 and named is None
    log.add("keydown", key=key, code=vk, modifiers=1 if pasted and vk == "VK_V" else 0)
    if superseded or vk in NAVIGATION_VK:
        return
    if vk == "VK_BACK":
        if position > 0:
            log.check(event, position - 1, position, "Backspace at")
            log.change(position - 1, position, "", input_type="deleteContentBackward")
    elif vk == "VK_DELETE":
        if position != log.length:  # at the end of the text Delete removes nothing
            log.check(event, position, position + 1, "Delete at")
            log.change(position, position + 1, "", input_type="deleteContentForward")
    elif value and named not in ("Shift", "Control", "Alt", "CapsLock", "Escape", "Meta", "Insert"):
        log.check(event, position, position, "typing at")
        if pasted:
            log.add("paste", data=value)
        log.change(position, position, value, input_type="insertFromPaste" if pasted else "insertText")


def _replacement(log: _Log, event: RawEvent) -> None:
    start = _number(event, "wordlog", "start", file=log.file)
    end = _number(event, "wordlog", "end", file=log.file)
    assert start is not None and end is not None
    newtext = event.parts.get("wordlog", {}).get("newtext", "")
    log.check(event, start, end, "replacement of")
    log.change(start, end, newtext, input_type="insertReplacementText" if newtext else "deleteContentBackward")


def _insert(log: _Log, event: RawEvent, changed: bool) -> None:
    position = _number(event, "wordlog", "position", file=log.file)
    assert position is not None
    before = event.parts.get("wordlog", {}).get("before", "")
    start = position - len(_units(before)) // 2
    if not changed and log.length == 0 and start == 0:
        log.units[:] = _units(before)
        log.start = before
        return
    log.check(event, start, start, "insertion at")
    log.add("paste", data=before)
    log.change(start, start, before, input_type="insertFromPaste")


def log_from_events(events: list[RawEvent], *, file: str) -> tuple[str, str, list[LogEvent]]:
    """(start text, final text, editor events) of an IDFX event list."""
    log = _Log(file)
    t0: int | None = None
    changed = False
    for n, event in enumerate(events):
        started = _number(event, "winlog", "startTime", file=file, required=False)
        if started is not None:
            t0 = started if t0 is None else t0
            log.t_ms = float(max(0, started - t0))
        before = len(log.events)
        if event.type == "keyboard":
            superseded = n + 1 < len(events) and events[n + 1].type == "replacement"
            _keyboard(log, event, superseded)
        elif event.type == "replacement":
            _replacement(log, event)
        elif event.type == "insert":
            _insert(log, event, changed)
        changed = changed or any(e.kind == "input" for e in log.events[before:])
    start = log.start or ""
    log.events[0] = LogEvent(seq=0, t_ms=0.0, kind="load", data=start, length_after=len(_units(start)) // 2)
    return start, log.text(), log.events


def _username(entries: dict[str, str], stem: str, prefix: str) -> str:
    name = prefix + _USERNAME.sub("_", (entries.get("Participant") or stem).strip())[:100]
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        name = prefix + "idfx_" + _USERNAME.sub("_", stem)[:100]
    return name


def parse(file: InputFile, *, annotator_prefix: str = "") -> IdfxPlan:
    """One IDFX file as a plan: an item (its start text the model output) and its finished post-edit."""
    entries, events = read_events(file)
    start, final, log = log_from_events(events, file=file.name)
    stem = PurePath(file.name).name.removesuffix(".idfx").removesuffix(".IDFX") or "idfx"
    annotator = _username(entries, stem, annotator_prefix)
    origin = Origin(file=file.name, line=1)
    kept = {k: v[:200] for k, v in list(entries.items())[:50]}
    plan = IdfxPlan(fmt="idfx")
    plan.items.append(ItemRow(external_id=stem, model_output=start, origin=origin, meta={"idfx": kept}))
    plan.post_edits.append(PostEditRow(external_id=stem, annotator=annotator, text=final, origin=origin))
    plan.logs[(stem, annotator)] = log
    skipped = sum(1 for e in events if e.type not in ("keyboard", "replacement", "insert"))
    if skipped:
        plan.notes.append(f"{file.name}: {skipped} mouse, focus, selection or statistics events read and left out")
    return plan
