"""The linear representation of a post-edit: S-notation (Kollberg & Severinson Eklundh), as text (pure).

Every character the text ever held stays in place, marked by the revisions that touched it, in the
order of the revision episodes (annotations/process/trace.py), numbered from 1:
- `[deleted]i`: the characters revision i deleted;
- `{inserted}i`: the characters revision i inserted (an insertion anywhere but the end of the text);
- `|i`: the break before revision i, where the writer was (the end of the previous change of its
  page load); the first revision of a page load has none (where the writer was is not logged).
Characters inserted at the end of the text and those of the start text are written plain. A
deletion of characters of several insertions is written as one bracket per piece, with the same
index. Indices are written as superscript digits (Kollberg's typeset superscripts), so that a digit of
the text never reads as one; the notation's own characters `[ ] { } |`, `\\` and superscript digits in
the text are written with a `\\` before.
"""

from collections.abc import Iterable

from annotations.effort import LogEvent
from annotations.process.trace import SubChange, Trace, trace_log

SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
SPECIAL = frozenset("[]{}|\\⁰¹²³⁴⁵⁶⁷⁸⁹")


def _index(number: int) -> str:
    return str(number).translate(SUPERSCRIPTS)


class _Char:
    __slots__ = ("unit", "inserted", "deleted")

    def __init__(self, unit: str, inserted: int = 0) -> None:
        self.unit = unit  # one UTF-16 code unit (a surrogate half for an astral character)
        self.inserted = inserted
        self.deleted = 0


class _Break:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _units(text: str) -> list[str]:
    encoded = text.encode("utf-16-le", "surrogatepass")
    return [encoded[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(encoded), 2)]


def _live(element: object) -> bool:
    return isinstance(element, _Char) and not element.deleted


def _index_at(sequence: list, position: int) -> int:
    """The place of live position `position`: after the position-th live character and whatever
    deleted characters and breaks follow it."""
    live = 0
    index = 0
    while index < len(sequence) and live < position:
        if _live(sequence[index]):
            live += 1
        index += 1
    while index < len(sequence) and not _live(sequence[index]):
        index += 1
    return index


def _writer_position(change: SubChange | None) -> int | None:
    if change is None:
        return None
    return change.start if change.deletion else change.start + change.units


def s_notation_of_trace(trace: Trace) -> str:
    sequence: list = [_Char(unit) for unit in _units(trace.start_text)]
    revision = 0
    previous: SubChange | None = None
    for action in trace.actions:
        if action.gap_ms is None:
            previous = None  # a new page load: where the writer was is not known
        for change in action.changes:
            if change.new_episode:
                revision += 1
                where = _writer_position(previous)
                if where is not None:
                    sequence.insert(_index_at(sequence, where), _Break(revision))
            current = revision if change.revision else 0
            if change.deletion:
                _delete(sequence, change.start, change.units, current)
            else:
                at = _index_at(sequence, change.start)
                sequence[at:at] = [_Char(unit, current) for unit in _units(change.text)]
            previous = change
    return _render(sequence)


def _delete(sequence: list, start: int, units: int, revision: int) -> None:
    index = _index_at(sequence, start)
    left = units
    while left and index < len(sequence):
        element = sequence[index]
        if _live(element):
            element.deleted = revision
            left -= 1
        index += 1


def _render(sequence: list) -> str:
    out: list[str] = []
    open_insert = open_delete = 0
    for element in sequence:
        if isinstance(element, _Break):  # brackets close before it: the break lies after what they hold
            if open_delete:
                out.append(f"]{_index(open_delete)}")
            if open_insert:
                out.append(f"}}{_index(open_insert)}")
            open_insert = open_delete = 0
            out.append(f"|{_index(element.index)}")
            continue
        inserted, deleted = element.inserted, element.deleted
        if open_delete and (deleted != open_delete or inserted != open_insert):
            out.append(f"]{_index(open_delete)}")
            open_delete = 0
        if open_insert and inserted != open_insert:
            out.append(f"}}{_index(open_insert)}")
            open_insert = 0
        if inserted and not open_insert:
            out.append("{")
            open_insert = inserted
        if deleted and not open_delete:
            out.append("[")
            open_delete = deleted
        out.append("\\" + element.unit if element.unit in SPECIAL else element.unit)
    if open_delete:
        out.append(f"]{_index(open_delete)}")
    if open_insert:
        out.append(f"}}{_index(open_insert)}")
    joined = "".join(out)
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def s_notation(start_text: str, events: Iterable[LogEvent]) -> str:
    """The S-notation of a post-edit's log (any order) started from `start_text`."""
    return s_notation_of_trace(trace_log(start_text, events))
