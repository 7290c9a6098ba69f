"""Effort derived from an editor event log: the published definition (pure; no Django).

Definition version 2 (annotations.models.DEFINITION_VERSION; the README's "Effort definition
(version 2)" says what changed from version 1 and why). PET convention. Events are taken in seq
order; a "visit" is one page load (its page_id); the browser's `t` is ms since that page load.

Counts, from `keydown` events:
- A keydown is a SHORTCUT when Meta is held, or Ctrl without Alt (Ctrl+Alt is AltGr, which types).
- erase: Backspace, Delete; navigation: ArrowLeft/Right/Up/Down, Home, End, PageUp, PageDown —
  both with or without a modifier (Shift+Arrow, Ctrl+Backspace count).
- Shortcuts count in no other class. Otherwise: spaces = " ", "Tab", "Enter" and any other single
  whitespace character; a single-character key is a letter (str.isalpha, or a combining mark —
  Unicode category M*, as in Devanagari vowel signs), a digit (isdigit/isnumeric), a symbol (any
  other printable character); anything else (Shift, Escape, F5, "Process", "Unidentified", "Dead",
  ...) is not counted. Auto-repeated keydowns (`rep`) count one each.
- Corroboration: a TYPING key (a keydown of class letters, digits, spaces, symbols or erase, outside
  a composition) counts in its class only when an `input` event of its page load follows it before
  that page load's next keydown: the text changed. Otherwise it counts in no class, and:
  - if a `beforeinput` followed it (the browser announced a change that did not happen: Backspace
    at the start of the text, Delete at its end, a full or read-only field), nothing more: the
    browser rejected the key;
  - if it is a Tab and a `blur` followed it (the focus moved on), nothing more;
  - else the key is UNCORROBORATED and counts in `uncorroborated_keys` (flag "keys_uncorroborated").
  Navigation keys and commands change no text by design and are not checked.
- IME: keydowns between compositionstart and compositionend of the same page load are the IME's,
  not counted (a page load starts outside any composition). Each compositionend counts its
  committed `data` character by character (code points) with the same classes when the replay
  found the composition's last input inserting exactly that text (`committed_compositions`, from
  annotations.replay); otherwise its characters count in `uncorroborated_keys`.
- copy, cut, paste: one per copy/cut/paste event (keyboard and menu alike; the Ctrl+C keydown is a
  shortcut, not counted again). undo_redo: one per beforeinput historyUndo/historyRedo, plus one per
  Ctrl/Cmd+Z, Ctrl/Cmd+Y or Ctrl/Cmd+Shift+Z keydown that is NOT followed by such a beforeinput
  before the next keydown (so a key undo counts once, a menu undo counts once). Ctrl+A and
  drag-and-drop count in no class.
- commands = copy + cut + paste + undo_redo; visible = letters + digits + spaces + symbols;
  keystrokes = visible + erase; allkeys = keystrokes + navigation + commands.

Times (ms, rounded to whole ms at the end):
- A visit's span runs from its `load` event (its first event if it has none) to its last event
  (the `submit` event for the visit that submits).
- Server bound (limits passed in by the caller): each visit's span is cut to at most its own limit
  (what the server observed of that page load, plus the clock tolerance), and the visits together,
  taken in order, to at most the post-edit's limit (what the server observed of all its page loads,
  overlaps counted once, plus the tolerance once): the visit in which the post-edit's limit runs
  out is cut there, later visits count nothing. What is cut off counts nowhere (wall, active,
  reading, pauses); clipped_ms = the total cut off (flag "wall_clipped" when > 0).
- wall = the sum of the visits' bounded spans.
- active: between two consecutive events of a visit, the gap counts as active when the page was
  visible and the WINDOW focused during it and the gap is at most the idle threshold. A longer gap
  counts WHOLE as idle (not just the part beyond the threshold). Hidden = from visibility "hidden" to
  "visible"; unfocused = from a window blur to a focus (src "textarea" focus/blur are ignored).
  A page starts visible and focused (hidden if its load event has state "hidden"); any key, input,
  clipboard, mouse-down or composition event shows the page visible and focused again. Only the
  part of a gap inside the visit's bounded span counts.
- reading: display to first edit = wall time accumulated before the first `input` event, over visits
  in order (a visit without any input counts whole); wall when nothing was ever edited.
- pauses: between consecutive keydowns of the same visit (any key, also modifiers), the pause is the
  ACTIVE time between them (so a pause never exceeds the active span it lies in, and each class's
  total never exceeds active_ms). A pause >= 300 ms counts in pauses_300 (count and total ms),
  >= 1000 in pauses_1000, >= 2000 in pauses_2000 (a 2.5 s pause counts in all three).
"""

import math
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

CTRL, SHIFT, ALT, META = 1, 2, 4, 8
ERASE_KEYS = frozenset({"Backspace", "Delete"})
NAVIGATION_KEYS = frozenset({"ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"})
SPACE_KEYS = frozenset({"Tab", "Enter"})
HISTORY_INPUT_TYPES = frozenset({"historyUndo", "historyRedo"})
INTERACTION_KINDS = frozenset(
    {
        "keydown",
        "beforeinput",
        "input",
        "paste",
        "cut",
        "copy",
        "mousedown",
        "compositionstart",
        "compositionupdate",
        "compositionend",
    }
)
PAUSE_THRESHOLDS_MS = (300, 1000, 2000)
KEY_CLASSES = ("letters", "digits", "spaces", "symbols", "erase", "navigation")


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One logged browser event; `page` is its page load's id. The wire's short names (k, it, s, e,
    ...) are translated at the boundary (annotations/api/serializers_editor.py: event_from_wire)."""

    seq: int
    t_ms: float
    kind: str
    page: str = ""
    key: str = ""
    code: str = ""
    modifiers: int = 0
    repeat: bool = False
    input_type: str = ""
    sel_start: int | None = None
    sel_end: int | None = None
    data: str = ""
    length_after: int | None = None
    state: str = ""
    source: str = ""
    full_text: bool = False


@dataclass(frozen=True)
class Effort:
    wall_ms: int
    active_ms: int
    reading_ms: int
    letters: int
    digits: int
    spaces: int
    symbols: int
    erase: int
    navigation: int
    copy: int
    cut: int
    paste: int
    undo_redo: int
    commands: int
    visible: int
    keystrokes: int
    allkeys: int
    pauses_300_count: int
    pauses_300_ms: int
    pauses_1000_count: int
    pauses_1000_ms: int
    pauses_2000_count: int
    pauses_2000_ms: int
    uncorroborated_keys: int = 0
    clipped_ms: int = 0


# ---------------------------------------------------------------- keys


TYPING_CLASSES = frozenset({"letters", "digits", "spaces", "symbols", "erase"})


def classify_char(char: str) -> str | None:
    """The class of one typed character: letters, digits, spaces, symbols, or None (invisible)."""
    if char.isspace():
        return "spaces"
    if char.isalpha() or unicodedata.category(char).startswith("M"):
        return "letters"
    if char.isdigit() or char.isnumeric():
        return "digits"
    if char.isprintable():
        return "symbols"
    return None


def is_shortcut(mods: int) -> bool:
    return bool(mods & META) or (bool(mods & CTRL) and not mods & ALT)


def classify_key(key: str, mods: int = 0) -> str | None:
    """The class of one keydown (see the module docstring), or None when it counts in none."""
    if key in ERASE_KEYS:
        return "erase"
    if key in NAVIGATION_KEYS:
        return "navigation"
    if is_shortcut(mods):
        return None
    if key in SPACE_KEYS:
        return "spaces"
    if len(key) == 1:
        return classify_char(key)
    return None


def is_undo_shortcut(event: LogEvent) -> bool:
    if not (event.modifiers & (CTRL | META)):
        return False
    letter = event.key.lower()
    if not (len(letter) == 1 and "a" <= letter <= "z"):  # a non-Latin layout: fall back to the key's place
        letter = {"KeyZ": "z", "KeyY": "y"}.get(event.code, "")
    return letter in ("z", "y")


@dataclass
class _PageKeys:
    """What one page load's key counting remembers between events."""

    composing: bool = False
    typing_class: str | None = None  # the class of the last typing keydown, until it is settled
    tab: bool = False  # that keydown was a Tab
    changed: bool = False  # an input followed it
    announced: bool = False  # a beforeinput followed it
    left: bool = False  # a blur followed it


def count_keys(events: Iterable[LogEvent], *, committed_compositions: Collection[int] = ()) -> dict[str, int]:
    """The key classes, commands and uncorroborated keys of a log in seq order (composed totals included).

    committed_compositions: the seqs of the compositionend events whose committed text the replay saw
    inserted (annotations.replay.ReplayResult.committed_compositions).
    """
    counts = dict.fromkeys((*KEY_CLASSES, "copy", "cut", "paste", "undo_redo", "uncorroborated_keys"), 0)
    pages: dict[str, _PageKeys] = {}
    undo_key_pending = False

    def settle(state: _PageKeys) -> None:
        if state.typing_class is None:
            return
        if state.changed:
            counts[state.typing_class] += 1
        elif not state.announced and not (state.tab and state.left):
            counts["uncorroborated_keys"] += 1
        state.typing_class = None

    for event in events:
        state = pages.setdefault(event.page, _PageKeys())
        kind = event.kind
        if kind == "keydown":
            settle(state)
            if undo_key_pending:
                counts["undo_redo"] += 1
            undo_key_pending = is_undo_shortcut(event)
            if not state.composing:
                cls = classify_key(event.key, event.modifiers)
                if cls in TYPING_CLASSES:
                    state.typing_class, state.tab = cls, event.key == "Tab"
                    state.changed = state.announced = state.left = False
                elif cls:
                    counts[cls] += 1
        elif kind == "input":
            state.changed = True
        elif kind == "beforeinput":
            state.announced = True
            if event.input_type in HISTORY_INPUT_TYPES:
                counts["undo_redo"] += 1
                undo_key_pending = False
        elif kind == "blur":
            state.left = True
        elif kind in ("copy", "cut", "paste"):
            counts[kind] += 1
        elif kind == "load":
            settle(state)
            state.composing = False
        elif kind == "compositionstart":
            state.composing = True
        elif kind == "compositionend":
            state.composing = False
            corroborated = event.seq in committed_compositions
            for char in event.data:
                cls = classify_char(char)
                if cls:
                    counts[cls if corroborated else "uncorroborated_keys"] += 1
    for state in pages.values():
        settle(state)
    if undo_key_pending:
        counts["undo_redo"] += 1
    counts["commands"] = counts["copy"] + counts["cut"] + counts["paste"] + counts["undo_redo"]
    counts["visible"] = counts["letters"] + counts["digits"] + counts["spaces"] + counts["symbols"]
    counts["keystrokes"] = counts["visible"] + counts["erase"]
    counts["allkeys"] = counts["keystrokes"] + counts["navigation"] + counts["commands"]
    return counts


# ---------------------------------------------------------------- times


@dataclass(frozen=True)
class VisitTimes:
    wall: float
    active: float
    reading: float
    clipped: float
    edited: bool
    pauses: tuple[float, ...]  # the active time between consecutive keydowns


def split_visits(events: Iterable[LogEvent]) -> list[list[LogEvent]]:
    """Events grouped by page load, visits in order of their first event (seq order inside)."""
    visits: dict[str, list[LogEvent]] = {}
    for event in events:
        visits.setdefault(event.page, []).append(event)
    return list(visits.values())


def _visit_start(visit: list[LogEvent]) -> float:
    for event in visit:
        if event.kind == "load":
            return event.t_ms
    return visit[0].t_ms


def visit_times(visit: list[LogEvent], *, idle_threshold_ms: float, limit_ms: float | None) -> VisitTimes:
    """wall/active/reading/pauses of one page load (events in seq order), its span cut to limit_ms."""
    start = _visit_start(visit)
    end = max(event.t_ms for event in visit)
    span = max(0.0, end - start)
    wall = span if limit_ms is None else min(span, max(0.0, limit_ms))
    cutoff = start + wall

    active = 0.0
    hidden = False
    unfocused = False
    # The active time up to each keydown: a pause is the difference between two of them.
    active_at_keydowns = [0.0] if visit[0].kind == "keydown" else []
    for before, after in pairwise(visit):
        if before.kind in ("load", "visibility"):
            hidden = before.state == "hidden"
        elif before.kind in ("blur", "focus") and before.source != "textarea":
            unfocused = before.kind == "blur"
        elif before.kind in INTERACTION_KINDS:
            hidden = unfocused = False
        low, high = max(before.t_ms, start), min(after.t_ms, cutoff)
        if high > low and not hidden and not unfocused and after.t_ms - before.t_ms <= idle_threshold_ms:
            active += high - low
        if after.kind == "keydown":
            active_at_keydowns.append(active)

    first_input = next((event for event in visit if event.kind == "input"), None)
    if first_input is None:
        reading = wall
    else:
        reading = min(max(first_input.t_ms, start), cutoff) - start
    return VisitTimes(
        wall=wall,
        active=min(active, wall),  # the pieces of the span, summed in floating point, may exceed it by an ulp
        reading=reading,
        clipped=span - wall,
        edited=first_input is not None,
        pauses=tuple(later - earlier for earlier, later in pairwise(active_at_keydowns)),
    )


def count_pauses(pauses: Iterable[float]) -> dict[str, int]:
    totals = {f"pauses_{limit}_{what}": 0.0 for limit in PAUSE_THRESHOLDS_MS for what in ("count", "ms")}
    for pause in pauses:
        for limit in PAUSE_THRESHOLDS_MS:
            if pause >= limit:
                totals[f"pauses_{limit}_count"] += 1
                totals[f"pauses_{limit}_ms"] += pause
    return {name: _whole_ms(value) for name, value in totals.items()}


def _whole_ms(value: float) -> int:
    return int(math.floor(value + 0.5))


def derive_effort(
    events: Iterable[LogEvent],
    *,
    idle_threshold_ms: float,
    visit_limits_ms: Mapping[str, float] | None = None,
    total_limit_ms: float | None = None,
    committed_compositions: Collection[int] = (),
) -> Effort:
    """Counts, times and pauses of an event log (any order; sorted by seq here).

    visit_limits_ms: the most time each page load (by page id) may count; total_limit_ms: the most
    all of them together may count (both: server-observed time plus the clock tolerance).
    """
    ordered = sorted(events, key=lambda event: event.seq)
    limits = visit_limits_ms or {}
    wall = active = reading = clipped = 0.0
    pauses: list[float] = []
    still_reading = True
    for visit in split_visits(ordered):
        limit = limits.get(visit[0].page)
        if total_limit_ms is not None:
            left = max(0.0, total_limit_ms - wall)
            limit = left if limit is None else min(limit, left)
        times = visit_times(visit, idle_threshold_ms=idle_threshold_ms, limit_ms=limit)
        wall += times.wall
        active += times.active
        clipped += times.clipped
        pauses.extend(times.pauses)
        if still_reading:
            reading += times.reading
            still_reading = not times.edited
    return Effort(
        wall_ms=_whole_ms(wall),
        active_ms=_whole_ms(active),
        reading_ms=_whole_ms(reading),
        clipped_ms=_whole_ms(clipped),
        **count_keys(ordered, committed_compositions=committed_compositions),
        **count_pauses(pauses),
    )
