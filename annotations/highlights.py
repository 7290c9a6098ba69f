"""Error highlights over an output (QE4PE-style), pure: where they lie in the editor's text and
which of them the annotator edited.

Spans are stored in code points ([start, end, label], end exclusive); the browser counts UTF-16
units, so the editor gets them converted. While the text changes, a span moves with it: a
change wholly before it shifts it, a change after it leaves it, and a change that overlaps it
(or inserts strictly inside it) edits it, and typing on at the end of an edited span extends
it. A step that replaces the whole text (a page load, undo, redo) changes only what differs
between the texts before and after it. The same rule runs in the editor's overlay
(annotations/static/annotations/editor/highlights.js) and here, over the replayed log, to record
for each span whether and when (first seq) the text under it was edited.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from annotations.log_event import LogEvent
from annotations.replay import iter_replay, utf16_len


def to_utf16(text: str, spans: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Code point spans over `text` as UTF-16 unit spans."""
    return [(utf16_len(text[:start]), utf16_len(text[:end]), label) for start, end, label in spans]


def map_span(
    start: int, end: int, change_start: int, change_end: int, inserted: int, *, edited: bool = False
) -> tuple[int, int, bool]:
    """The span [start, end) after [change_start, change_end) was replaced by `inserted` units,
    and whether the change touched the text under it. Typing on at the end of a span already
    edited extends it: a highlighted word being retyped stays highlighted as a whole."""
    delta = inserted - (change_end - change_start)
    if edited and change_start == change_end == end and inserted:
        return start, end + inserted, True
    if change_end <= start:
        return start + delta, end + delta, False
    if change_start >= end:
        return start, end, False
    new_start = start if start < change_start else change_start
    new_end = end + delta if end > change_end else change_start + inserted
    return new_start, max(new_start, new_end), True


@dataclass
class _Span:
    start: int
    end: int
    label: str
    original_start: int
    original_end: int
    edits: int = 0
    first_seq: int | None = None


def _changed_range(before: str, after: str) -> tuple[int, int, int]:
    """The replaced range of `before` (UTF-16 units) and the inserted length, from the texts."""
    a, b = before.encode("utf-16-le", "surrogatepass"), after.encode("utf-16-le", "surrogatepass")
    shortest = min(len(a), len(b)) // 2
    start = 0
    while start < shortest and a[2 * start : 2 * start + 2] == b[2 * start : 2 * start + 2]:
        start += 1
    tail = 0
    while (
        tail < shortest - start
        and a[len(a) - 2 * tail - 2 : len(a) - 2 * tail] == b[len(b) - 2 * tail - 2 : len(b) - 2 * tail]
    ):
        tail += 1
    return start, len(a) // 2 - tail, len(b) // 2 - tail - start


def highlight_edits(original: str, spans: Iterable[tuple[int, int, str]], events: Iterable[LogEvent]) -> list[dict]:
    """For each span (code points over `original`): its label, whether the text under it was
    edited, how many logged changes touched it, the seq of the first one, and where it lies now
    (UTF-16 units in the replayed text)."""
    tracked = [_Span(s, e, label, s, e) for s, e, label in to_utf16(original, spans)]
    originals = list(spans)
    text = original
    length = utf16_len(original)
    for step in iter_replay(original, events, with_text=True):
        after = step.text if step.text is not None else text
        if step.kind == "load" or (step.start == 0 and step.end == length):
            # A page load restores a text and an undo, redo or other full-text step replaces all of
            # it: only what differs between the texts before and after is a change.
            start, end, inserted = _changed_range(text, after)
        else:
            start, end, inserted = step.start, step.end, utf16_len(step.insert)
        length += inserted - (end - start)
        text = after
        if start == end and inserted == 0:
            continue
        for span in tracked:
            span.start, span.end, touched = map_span(span.start, span.end, start, end, inserted, edited=span.edits > 0)
            if touched:
                span.edits += 1
                if span.first_seq is None:
                    span.first_seq = step.seq
    return [
        {
            "start": code_start,
            "end": code_end,
            "label": label,
            "edited": span.edits > 0,
            "edits": span.edits,
            "first_seq": span.first_seq,
            "now": [span.start, span.end],  # UTF-16 units in the replayed text
        }
        for span, (code_start, code_end, label) in zip(tracked, originals, strict=True)
    ]
