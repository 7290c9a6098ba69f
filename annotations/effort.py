"""Effort derived from an editor event log: the published definition (pure; no Django).

Definition version 3 (annotations.models.DEFINITION_VERSION; the README's "Effort definition"
says what changed from versions 1 and 2 and why). PET convention. Events are taken in seq
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
  An input that changed nothing (`noop_inputs`, from annotations.replay) corroborates nothing, nor
  does an undo/redo input. Navigation keys change no text by design and are not checked.
- IME: keydowns between compositionstart and compositionend of the same page load are the IME's,
  and so is the keydown just before compositionstart when it counts in no class ("Process",
  "Dead") or no input followed it (a page load starts outside any composition). A compositionend
  whose committed `data` the replay found the composition's last input inserting
  (`committed_compositions`) counts its characters (code points) with the same classes, as many as
  the composition's keydowns (the keys that produced it, each at its keydown's time), or one
  character (at the compositionend) when no keydown produced it; its other characters count
  nowhere. Otherwise all its characters count in `uncorroborated_keys`. A committed composition with
  more characters than most_keys_in(its time, from its first keydown or compositionstart to its
  compositionend) is FAST (fast_compositions; flag "key_rate").
- Commands count only when they had an effect: copy and cut one per copy/cut event whose `data` (the
  selection) is not empty; paste one per paste event followed by an input of its page that changed
  the text before the page's next keydown or clipboard event; undo_redo one per historyUndo /
  historyRedo input that changed the text (keyboard and menu alike; the Ctrl+C, Ctrl+Z keydowns are
  shortcuts, not counted again). Ctrl+A and drag-and-drop count in no class.
- Rate bound: every counted key and command lies on the post-edit's TIMELINE: the page loads one
  after another in order of their first event, each as long as its bounded span (below), an event at
  its page's offset plus its time since the page's start, cut to [0, span] (visit_clocks). Taken in
  timeline order, a key counts only while fewer than RATE_LIMIT_KEYS (50) counted keys of any class
  lie in the RATE_WINDOW_MS (1,000 ms) before it (the half-open window (t - 1000, t]); the others
  count in `uncorroborated_keys` (rate_excess_keys; flag "key_rate"). So no 1 s of the timeline holds
  more than 50 counted keys, and a post-edit's allkeys never exceeds most_keys_in(wall).
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
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import NamedTuple

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
RATE_WINDOW_MS = 1000.0
RATE_LIMIT_KEYS = 50  # keys of all classes together in any RATE_WINDOW_MS of the timeline


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One logged browser event; `visit` is its visit's page_id. The wire's short names (k, it, s, e,
    ...) are translated at the boundary (annotations/api/serializers_editor.py: event_from_wire)."""

    seq: int
    t_ms: float
    kind: str
    visit: str = ""
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
    rate_excess_keys: int = 0  # part of uncorroborated_keys
    fast_compositions: int = 0


# ---------------------------------------------------------------- keys


TYPING_CLASSES = frozenset({"letters", "digits", "spaces", "symbols", "erase"})
# The events key counting reads, and those of them whose time it needs.
TIMED_KINDS = frozenset({"keydown", "paste", "copy", "cut", "compositionstart", "compositionend"})
KEY_EVENT_KINDS = TIMED_KINDS | {"input", "beforeinput", "blur", "load"}


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


class CountedKey(NamedTuple):
    """One key (or command) that counts: where it lies on the post-edit's timeline, its event, its class."""

    at_ms: float
    seq: int
    cls: str


@dataclass(frozen=True)
class KeyCount:
    """What count_keys found: the keys that count, and what counts apart."""

    counted: tuple[CountedKey, ...]  # in timeline order; none more than RATE_LIMIT_KEYS in any RATE_WINDOW_MS
    uncorroborated: int  # typing keys no text change corroborates, composed text the replay did not see
    rate_excess: int  # keys beyond the rate bound (also in uncorroborated_keys)
    fast_compositions: int  # compositions longer than the rate bound allows in the time they took


@dataclass
class _VisitKeys:
    """What one page load's key counting remembers between events."""

    offset: float = 0.0  # the page load's clock (visit_clocks)
    start: float = 0.0
    span: float = math.inf
    composing: bool = False
    typing_class: str | None = None  # the class of the last typing keydown, until it is settled
    typing_at: float = 0.0
    typing_seq: int = 0
    tab: bool = False  # that keydown was a Tab
    changed: bool = False  # a text-changing input followed it
    announced: bool = False  # a beforeinput followed it
    left: bool = False  # a blur followed it
    paste: tuple[float, int] | None = None  # a paste, until an input shows whether it changed the text
    pasted: bool = False
    opening_key: float | None = None  # a keydown counted in no class: the key that may open a composition
    composition_start: float = 0.0
    composition_keys: list[float] = field(default_factory=list)  # the timeline of the composition's keydowns


Clock = tuple[float, float, float]  # a page load's (offset on the timeline, its start, its bounded span)


def visit_clocks(events: Iterable[LogEvent], spans: Mapping[str, float] | None = None) -> dict[str, Clock]:
    """Each page load's place on the post-edit's timeline: page loads one after another in order of their
    first event, each as long as its bounded span (spans, by page id; its whole span when not given)."""
    clocks: dict[str, Clock] = {}
    offset = 0.0
    for visit in split_visits(events):
        start = _visit_start(visit)
        span = max(0.0, max(event.t_ms for event in visit) - start)
        if spans is not None:
            span = min(span, spans.get(visit[0].visit, span))
        clocks[visit[0].visit] = (offset, start, span)
        offset += span
    return clocks


def bound_rate(candidates: Iterable[CountedKey]) -> tuple[list[CountedKey], int]:
    """The keys that count under the rate bound (at most RATE_LIMIT_KEYS in any RATE_WINDOW_MS of the
    timeline, all classes together, taken in timeline order), and how many are beyond it."""
    counted: list[CountedKey] = []
    window: deque[float] = deque()
    excess = 0
    for key in sorted(candidates):  # by time, then seq (unique)
        while window and window[0] <= key.at_ms - RATE_WINDOW_MS:
            window.popleft()
        if len(window) < RATE_LIMIT_KEYS:
            window.append(key.at_ms)
            counted.append(key)
        else:
            excess += 1
    return counted, excess


def most_keys_in(span_ms: float) -> int:
    """The most keys the rate bound lets count in a stretch of the timeline span_ms long."""
    return RATE_LIMIT_KEYS * (math.floor(max(0.0, span_ms) / RATE_WINDOW_MS) + 1)


def find_keys(
    events: Iterable[LogEvent],
    *,
    committed_compositions: Collection[int] = (),
    noop_inputs: Collection[int] = (),
    clocks: Mapping[str, Clock] | None = None,
) -> KeyCount:
    """The keys and commands of a log in seq order that count, each on the timeline (see the module docstring).

    committed_compositions: the seqs of the compositionend events whose committed text the replay saw
    inserted; noop_inputs: the seqs of the input events that changed nothing (both from
    annotations.replay.ReplayResult); clocks: visit_clocks of the log (by default unbounded).
    """
    events = list(events)
    clocks = visit_clocks(events) if clocks is None else clocks
    candidates: list[CountedKey] = []
    uncorroborated = fast = 0
    pages: dict[str, _VisitKeys] = {}

    def settle(state: _VisitKeys) -> None:
        nonlocal uncorroborated
        if state.typing_class is None:
            return
        if state.changed:
            candidates.append(CountedKey(state.typing_at, state.typing_seq, state.typing_class))
        elif not state.announced and not (state.tab and state.left):
            uncorroborated += 1
        state.typing_class = None

    def settle_paste(state: _VisitKeys) -> None:
        if state.paste is not None and state.pasted:
            candidates.append(CountedKey(state.paste[0], state.paste[1], "paste"))
        state.paste = None

    for event in events:
        kind = event.kind
        if kind not in KEY_EVENT_KINDS:
            continue
        state = pages.get(event.visit)
        if state is None:
            state = pages[event.visit] = _VisitKeys()
            state.offset, state.start, state.span = clocks.get(event.visit, (0.0, 0.0, math.inf))
        at = 0.0
        if kind in TIMED_KINDS:  # its place on the timeline
            at = state.offset + min(max(event.t_ms - state.start, 0.0), state.span)
        if kind == "keydown":
            settle(state)
            settle_paste(state)
            if state.composing:
                state.composition_keys.append(at)
                continue
            cls = classify_key(event.key, event.modifiers)
            state.opening_key = at if cls is None else None
            if cls in TYPING_CLASSES:
                state.typing_class, state.typing_at, state.typing_seq = cls, at, event.seq
                state.tab = event.key == "Tab"
                state.changed = state.announced = state.left = False
            elif cls:
                candidates.append(CountedKey(at, event.seq, cls))
        elif kind == "input":
            if event.seq in noop_inputs:
                continue
            if event.input_type in HISTORY_INPUT_TYPES:
                at = state.offset + min(max(event.t_ms - state.start, 0.0), state.span)
                candidates.append(CountedKey(at, event.seq, "undo_redo"))
            else:
                state.changed = True
                state.pasted = True
        elif kind == "beforeinput":
            state.announced = True
        elif kind == "blur":
            state.left = True
        elif kind == "paste":
            settle(state)
            settle_paste(state)
            state.paste, state.pasted = (at, event.seq), False
        elif kind in ("copy", "cut"):
            if kind == "cut":
                settle(state)
            if event.data:
                candidates.append(CountedKey(at, event.seq, kind))
        elif kind == "load":
            settle(state)
            settle_paste(state)
            state.composing = False
            state.opening_key = None
        elif kind == "compositionstart":
            state.composing, state.composition_start = True, at
            if state.typing_class is not None and not state.changed:
                state.composition_keys = [state.typing_at]  # the key that opened the composition
                state.typing_class = None
            else:
                state.composition_keys = [] if state.opening_key is None else [state.opening_key]
            state.opening_key = None
        elif kind == "compositionend":
            keys = state.composition_keys if state.composing else []
            state.composing, state.composition_keys = False, []
            classes = [cls for cls in map(classify_char, event.data) if cls]
            if event.seq not in committed_compositions:
                uncorroborated += len(classes)
                continue
            if not classes:
                continue
            if len(classes) > most_keys_in(at - (keys[0] if keys else state.composition_start)):
                fast += 1
            times = keys[-len(classes) :] if keys else [at]  # the keys that produced it, else one composition
            candidates.extend(CountedKey(time, event.seq, cls) for time, cls in zip(times, classes, strict=False))
    for state in pages.values():
        settle(state)
        settle_paste(state)
    counted, excess = bound_rate(candidates)
    return KeyCount(
        counted=tuple(counted), uncorroborated=uncorroborated + excess, rate_excess=excess, fast_compositions=fast
    )


def count_keys(
    events: Iterable[LogEvent],
    *,
    committed_compositions: Collection[int] = (),
    noop_inputs: Collection[int] = (),
    clocks: Mapping[str, Clock] | None = None,
) -> dict[str, int]:
    """The key classes, commands and keys counted apart of a log in seq order (composed totals included);
    the arguments are find_keys's."""
    found = find_keys(events, committed_compositions=committed_compositions, noop_inputs=noop_inputs, clocks=clocks)
    counts = dict.fromkeys((*KEY_CLASSES, "copy", "cut", "paste", "undo_redo"), 0)
    for key in found.counted:
        counts[key.cls] += 1
    counts["uncorroborated_keys"] = found.uncorroborated
    counts["rate_excess_keys"] = found.rate_excess
    counts["fast_compositions"] = found.fast_compositions
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
        visits.setdefault(event.visit, []).append(event)
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
    noop_inputs: Collection[int] = (),
) -> Effort:
    """Counts, times and pauses of an event log (any order; sorted by seq here).

    visit_limits_ms: the most time each page load (by page id) may count; total_limit_ms: the most
    all of them together may count (both: server-observed time plus the clock tolerance).
    committed_compositions, noop_inputs: from the replay (annotations.replay.ReplayResult).
    """
    ordered = sorted(events, key=lambda event: event.seq)
    limits = visit_limits_ms or {}
    wall = active = reading = clipped = 0.0
    pauses: list[float] = []
    clocks: dict[str, Clock] = {}
    still_reading = True
    for visit in split_visits(ordered):
        limit = limits.get(visit[0].visit)
        if total_limit_ms is not None:
            left = max(0.0, total_limit_ms - wall)
            limit = left if limit is None else min(limit, left)
        times = visit_times(visit, idle_threshold_ms=idle_threshold_ms, limit_ms=limit)
        clocks[visit[0].visit] = (wall, _visit_start(visit), times.wall)  # the visits one after another
        wall += times.wall
        active += times.active
        clipped += times.clipped
        pauses.extend(times.pauses)
        if still_reading:
            reading += times.reading
            still_reading = not times.edited
    counts = count_keys(
        ordered,
        committed_compositions=committed_compositions,
        noop_inputs=noop_inputs,
        clocks=clocks,
    )
    return Effort(
        wall_ms=_whole_ms(wall),
        active_ms=_whole_ms(active),
        reading_ms=_whole_ms(reading),
        clipped_ms=_whole_ms(clipped),
        **counts,
        **count_pauses(pauses),
    )
