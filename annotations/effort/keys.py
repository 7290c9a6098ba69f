"""Effort: which keys and commands count, and in which class (the counts of the definition in
annotations/effort/__init__.py; pure)."""

import math
import unicodedata
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from annotations.effort.times import Clock, visit_clocks
from annotations.log_event import LogEvent

CTRL, SHIFT, ALT, META = 1, 2, 4, 8
ERASE_KEYS = frozenset({"Backspace", "Delete"})
NAVIGATION_KEYS = frozenset({"ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"})
SPACE_KEYS = frozenset({"Tab", "Enter"})
HISTORY_INPUT_TYPES = frozenset({"historyUndo", "historyRedo"})
KEY_CLASSES = ("letters", "digits", "spaces", "symbols", "erase", "navigation")
RATE_WINDOW_MS = 1000.0
RATE_LIMIT_KEYS = 50  # keys of all classes together in any RATE_WINDOW_MS of the timeline

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
