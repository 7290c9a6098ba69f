"""Definition 2's key counting, kept as it was (annotations/effort.py at main 4828ea0), as the reference the
property tests hold honest logs to: definition 3 counts an honest log at human rates exactly as definition 2
did, except for the commands that did nothing (README: "What changed from version 2, and why")."""

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from annotations.effort import (
    CTRL,
    HISTORY_INPUT_TYPES,
    KEY_CLASSES,
    META,
    TYPING_CLASSES,
    classify_char,
    classify_key,
)
from annotations.log_event import LogEvent


def is_undo_shortcut(event: LogEvent) -> bool:
    if not (event.modifiers & (CTRL | META)):
        return False
    letter = event.key.lower()
    if not (len(letter) == 1 and "a" <= letter <= "z"):  # a non-Latin layout: fall back to the key's place
        letter = {"KeyZ": "z", "KeyY": "y"}.get(event.code, "")
    return letter in ("z", "y")


@dataclass
class _VisitKeys:
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
    pages: dict[str, _VisitKeys] = {}
    undo_key_pending = False

    def settle(state: _VisitKeys) -> None:
        if state.typing_class is None:
            return
        if state.changed:
            counts[state.typing_class] += 1
        elif not state.announced and not (state.tab and state.left):
            counts["uncorroborated_keys"] += 1
        state.typing_class = None

    for event in events:
        state = pages.setdefault(event.visit, _VisitKeys())
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
