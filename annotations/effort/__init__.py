"""Effort derived from an editor event log: the published definition (pure; no Django).

Definition version 3 (annotations.models.DEFINITION_VERSION; the README's "Effort definition"
says what changed from versions 1 and 2 and why). PET convention. Events are taken in seq
order; a "visit" is one page load (its page_id); the browser's `t` is ms since that page load.
The counts are keys.py's, the times times.py's (this package); derive_effort assembles them.

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

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from annotations.effort.keys import (
    ALT,
    CTRL,
    ERASE_KEYS,
    HISTORY_INPUT_TYPES,
    KEY_CLASSES,
    META,
    NAVIGATION_KEYS,
    RATE_LIMIT_KEYS,
    RATE_WINDOW_MS,
    SHIFT,
    SPACE_KEYS,
    TYPING_CLASSES,
    CountedKey,
    KeyCount,
    bound_rate,
    classify_char,
    classify_key,
    count_keys,
    find_keys,
    is_shortcut,
    most_keys_in,
)
from annotations.effort.times import (
    PAUSE_THRESHOLDS_MS,
    Clock,
    VisitTimes,
    count_pauses,
    split_visits,
    visit_clocks,
    visit_start,
    visit_times,
    whole_ms,
)
from annotations.log_event import LogEvent

__all__ = [
    "ALT",
    "CTRL",
    "ERASE_KEYS",
    "HISTORY_INPUT_TYPES",
    "KEY_CLASSES",
    "META",
    "NAVIGATION_KEYS",
    "PAUSE_THRESHOLDS_MS",
    "RATE_LIMIT_KEYS",
    "RATE_WINDOW_MS",
    "SHIFT",
    "SPACE_KEYS",
    "TYPING_CLASSES",
    "Clock",
    "CountedKey",
    "Effort",
    "KeyCount",
    "VisitTimes",
    "bound_rate",
    "classify_char",
    "classify_key",
    "count_keys",
    "count_pauses",
    "derive_effort",
    "find_keys",
    "is_shortcut",
    "most_keys_in",
    "split_visits",
    "visit_clocks",
    "visit_times",
]


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
        clocks[visit[0].visit] = (wall, visit_start(visit), times.wall)  # the visits one after another
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
        wall_ms=whole_ms(wall),
        active_ms=whole_ms(active),
        reading_ms=whole_ms(reading),
        clipped_ms=whole_ms(clipped),
        **counts,
        **count_pauses(pauses),
    )
