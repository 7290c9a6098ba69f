"""One pass over a post-edit's event log: its actions in time and the text changes they made (pure).

The trace is what every process measure reads (annotations/process/measures.py); docs/process.md
defines each term used here with its source.

- The text after every event is the replay's (annotations.replay.iter_replay); this pass applies
  its steps to its own copy of the text (UTF-16 units, as the replay does) to see what each change
  removed and what lay before it.
- ACTIONS are the writer's acts in time, per page load: every keydown, and every text change that no
  keydown of its page produced (a paste from the menu, a drag and drop, an IME commit chosen with
  the mouse, dictation). A text change belongs to the latest keydown of its page when that keydown
  produced no change yet and is not a navigation key.
- A text change is cut into SUB-CHANGES: a deletion (its removed range) then an insertion (its
  inserted text). A full-text input (undo, redo, an input reported whole) is first reduced to the
  range that differs (common prefix and suffix removed).
- The LEADING EDGE is the end of the text. A REVISION is a deletion, or an insertion anywhere but the
  leading edge (Kollberg & Severinson Eklundh's S-notation); consecutive sub-changes of one page load
  make ONE revision (an episode) while they continue each other: a deletion ending where the previous
  deletion started (Backspace) or starting where it started (Delete); an insertion starting where
  the previous revision insertion ended. Any other revision starts a new episode.
- IME: the updates of one composition replace its own text; they are neither deletions nor new
  revisions, and the characters it produced are its committed text.
- PRODUCED characters: the characters the writer inserted (typed, pasted, composed); an undo or redo
  restores text the writer produced before and produces nothing.
"""

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from annotations.effort import NAVIGATION_KEYS, LogEvent
from annotations.replay import iter_replay

SENTENCE_ENDS = frozenset(".!?…。！？")
HISTORY = frozenset({"historyUndo", "historyRedo"})
LOOK_BACK_UNITS = 200  # how far back a sentence end is looked for, past whitespace

# Where a sub-change lies (the pause before it is located there).
WITHIN_WORD = "within_word"
BETWEEN_WORDS = "between_words"
BETWEEN_SENTENCES = "between_sentences"
BEFORE_REVISION = "before_revision"
AFTER_REVISION = "after_revision"
OTHER = "other"
LOCATIONS = (WITHIN_WORD, BETWEEN_WORDS, BETWEEN_SENTENCES, BEFORE_REVISION, AFTER_REVISION, OTHER)


@dataclass(slots=True)
class SubChange:
    """One deletion or insertion: `start` in UTF-16 units of the text before it, `size` in code points."""

    seq: int
    t_ms: float
    deletion: bool
    start: int
    units: int  # UTF-16 units removed (deletion) or inserted (insertion)
    size: int  # code points removed or inserted
    text: str  # what was removed or inserted
    revision: bool
    new_episode: bool
    produced: int  # characters this sub-change produced (negative: a composition shrank)
    location: str
    composition: bool = False


@dataclass(slots=True)
class Action:
    """A keydown, or a text change no keydown produced; `gap_ms` is the time since the previous action of
    its page load (None for a page load's first action)."""

    seq: int
    t_ms: float
    gap_ms: float | None
    keyed: bool
    changes: list[SubChange] = field(default_factory=list)


@dataclass
class Trace:
    start_text: str
    final_text: str
    actions: list[Action]
    changes: list[SubChange]
    replay_ok: bool  # no divergence: each input gave the length the browser reported, each load the text


def _is_word_char(char: str) -> bool:
    """Letters, digits, the underscore and combining marks (Devanagari vowel signs) make words."""
    return char.isalnum() or char == "_" or unicodedata.category(char).startswith("M")


def _decode(units: bytes | bytearray) -> str:
    return bytes(units).decode("utf-16-le", "surrogatepass")


def _encode(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _char_location(units: bytearray, start: int, first: str) -> str:
    """within word, between words or between sentences, from the character before `start` and the
    first inserted character."""
    before = (
        chr(units[2 * start - 2] | units[2 * start - 1] << 8) if start else ""
    )  # one unit: a lone surrogate stays one
    if before and first and _is_word_char(before) and _is_word_char(first):
        return WITHIN_WORD
    if not before or before.isspace() or first.isspace() or before in SENTENCE_ENDS:
        back = _decode(units[max(0, 2 * (start - LOOK_BACK_UNITS)) : 2 * start]).rstrip()
        if not back or back[-1] in SENTENCE_ENDS:
            return BETWEEN_SENTENCES
    return BETWEEN_WORDS


def _differing_range(units: bytearray, new: bytes) -> tuple[int, int, bytes]:
    """(start, end, inserted units) of the smallest change that turns `units` into `new`."""
    old = bytes(units)
    limit = min(len(old), len(new)) // 2
    prefix = 0
    while prefix < limit and old[2 * prefix : 2 * prefix + 2] == new[2 * prefix : 2 * prefix + 2]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and old[len(old) - 2 * suffix - 2 : len(old) - 2 * suffix]
        == new[len(new) - 2 * suffix - 2 : len(new) - 2 * suffix]
    ):
        suffix += 1
    return prefix, len(old) // 2 - suffix, new[2 * prefix : len(new) - 2 * suffix]


class _Page:
    """What the pass remembers within one page load."""

    __slots__ = ("last_t", "action", "previous", "composition", "composition_units")

    def __init__(self) -> None:
        self.last_t: float | None = None
        self.action: Action | None = None  # the latest keydown's action, while it may still take a change
        self.previous: SubChange | None = None
        self.composition: SubChange | None = None  # the open composition's insertion
        self.composition_units = 0


def trace_log(start_text: str, events: Iterable[LogEvent]) -> Trace:
    """The actions and sub-changes of a log (any order; taken in seq order)."""
    ordered = sorted(events, key=lambda event: event.seq)
    steps = iter_replay(start_text, ordered, with_text=False)
    units = bytearray(_encode(start_text))
    actions: list[Action] = []
    changes: list[SubChange] = []
    pages: dict[str, _Page] = {}
    replay_ok = True
    page: _Page | None = None
    page_id = None
    for event in ordered:
        kind = event.kind
        if event.visit != page_id or page is None:
            page_id = event.visit
            page = pages.get(page_id)
            if page is None:
                page = pages[page_id] = _Page()
        if kind == "load":
            step = next(steps)
            replay_ok = replay_ok and step.divergence is None
            units[2 * step.start : 2 * step.end] = _encode(step.insert)
            page.previous = page.composition = page.action = None
        elif kind == "keydown":
            action = _action(page, event, keyed=True)
            actions.append(action)
            page.action = None if event.key in NAVIGATION_KEYS else action
        elif kind == "compositionstart" or kind == "compositionend":
            page.composition = None
        elif kind == "input":
            step = next(steps)
            replay_ok = replay_ok and step.divergence is None
            start, end, inserted = step.start, step.end, _encode(step.insert)
            if event.full_text or not step.kind.startswith(("insert", "delete")):
                start, end, inserted = _differing_range(units, inserted)
            if start == end and not inserted:
                continue
            owner = page.action
            if owner is None or owner.changes:
                owner = _action(page, event, keyed=False)
                actions.append(owner)
            page.action = None
            composing = step.kind == "insertCompositionText"
            made = _sub_changes(
                units, page, event, start, end, inserted, history=step.kind in HISTORY, composing=composing
            )
            owner.changes.extend(made)
            changes.extend(made)
            units[2 * start : 2 * end] = inserted
            if composing and page.composition is not None:
                _composed(units, page.composition, page.composition_units)
    return Trace(
        start_text=start_text, final_text=_decode(units), actions=actions, changes=changes, replay_ok=replay_ok
    )


def _action(page: _Page, event: LogEvent, *, keyed: bool) -> Action:
    gap = None if page.last_t is None else max(0.0, event.t_ms - page.last_t)
    page.last_t = event.t_ms if page.last_t is None else max(page.last_t, event.t_ms)
    return Action(event.seq, event.t_ms, gap, keyed, [])


def _sub_changes(
    units: bytearray,
    page: _Page,
    event: LogEvent,
    start: int,
    end: int,
    inserted: bytes,
    *,
    history: bool,
    composing: bool,
) -> list[SubChange]:
    """The deletion and insertion of one text change, with their revision episodes and locations."""
    made: list[SubChange] = []
    length = len(units) // 2
    composition = page.composition if composing else None
    if composing and composition is None:
        page.composition_units = 0
    if end > start:
        # A composition's update replaces its own text: that part is no deletion.
        own = min(end - start, page.composition_units) if composition is not None else 0
        page.composition_units -= own
        if end - start > own:
            made.append(_deletion(page, event, start + own, end, _decode(units[2 * (start + own) : 2 * end])))
        length -= end - start
    if inserted:
        text = _decode(inserted)
        if composition is not None:
            page.composition_units += len(inserted) // 2
        else:
            made.append(_insertion(units, page, event, start, length, text, len(inserted) // 2, history=history))
            if composing:
                page.composition = made[-1]
                made[-1].composition = True
                page.composition_units = len(inserted) // 2
    return made


def _composed(units: bytearray, composition: SubChange, length: int) -> None:
    """The open composition's insertion holds the composition's text as it is now."""
    composition.text = _decode(units[2 * composition.start : 2 * (composition.start + length)])
    composition.size = composition.produced = len(composition.text)
    composition.units = length


def _deletion(page: _Page, event: LogEvent, start: int, end: int, removed: str) -> SubChange:
    previous = page.previous
    continues = previous is not None and previous.deletion and (end == previous.start or start == previous.start)
    change = SubChange(
        seq=event.seq,
        t_ms=event.t_ms,
        deletion=True,
        start=start,
        units=end - start,
        size=len(removed),
        text=removed,
        revision=True,
        new_episode=not continues,
        produced=0,
        location=OTHER if continues else BEFORE_REVISION,
    )
    page.previous = change
    return change


def _insertion(
    units: bytearray,
    page: _Page,
    event: LogEvent,
    start: int,
    length: int,
    text: str,
    size_units: int,
    *,
    history: bool,
) -> SubChange:
    previous = page.previous
    revision = start != length
    continues = (
        revision
        and previous is not None
        and previous.revision
        and not previous.deletion
        and start == previous.start + previous.units
    )
    if revision and not continues:
        location = BEFORE_REVISION
    elif not revision and previous is not None and previous.revision:
        location = AFTER_REVISION
    else:
        location = _char_location(units, start, text[:1])
    change = SubChange(
        seq=event.seq,
        t_ms=event.t_ms,
        deletion=False,
        start=start,
        units=size_units,
        size=len(text),
        text=text,
        revision=revision,
        new_episode=revision and not continues,
        produced=0 if history else len(text),
        location=location,
    )
    page.previous = change
    return change
