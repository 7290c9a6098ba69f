"""Effort derivation (annotations/effort.py) on hand-made event logs, with exact counts and times."""

import dataclasses

from annotations.api.serializers_editor import event_from_wire
from annotations.effort import Effort, LogEvent, classify_char, classify_key, derive_effort
from annotations.models import EFFORT_FIELDS

IDLE_MS = 30_000
ZERO_PAUSES = {
    "pauses_300_count": 0,
    "pauses_300_ms": 0,
    "pauses_1000_count": 0,
    "pauses_1000_ms": 0,
    "pauses_2000_count": 0,
    "pauses_2000_ms": 0,
}


def log(*events: dict, page: str = "p1") -> list[LogEvent]:
    """Contract EVENT dicts, numbered in order; a dict may name its own page with `page`."""
    return [
        event_from_wire({key: value for key, value in event.items() if key != "page"}, event.get("page", page))
        for event in (dict(event, seq=seq) for seq, event in enumerate(events))
    ]


def counts(effort: Effort) -> dict:
    names = ("letters", "digits", "spaces", "symbols", "erase", "navigation", "copy", "cut", "paste", "undo_redo")
    return {name: getattr(effort, name) for name in names if getattr(effort, name)}


def test_effort_fields_are_the_stored_field_names():
    names = {field.name for field in dataclasses.fields(Effort)}
    assert names - {"clipped_ms"} == set(EFFORT_FIELDS)


def test_plain_typing_counts_each_class_and_times():
    events = log(
        {"t": 0, "k": "load", "data": "Helo", "len": 4},
        {"t": 1000, "k": "keydown", "key": "l"},
        {"t": 1001, "k": "beforeinput", "it": "insertText", "s": 3, "e": 3},
        {"t": 1002, "k": "input", "it": "insertText", "s": 4, "len": 5, "data": "l"},
        {"t": 1400, "k": "keydown", "key": "!", "mods": 2},
        {"t": 1600, "k": "keydown", "key": " "},
        {"t": 3000, "k": "keydown", "key": "7"},
        {"t": 3100, "k": "keydown", "key": "Enter"},
        {"t": 3200, "k": "keydown", "key": "Shift"},
        {"t": 3300, "k": "keydown", "key": "Ä", "mods": 2},
        {"t": 4000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"letters": 2, "symbols": 1, "spaces": 2, "digits": 1}
    assert (effort.visible, effort.keystrokes, effort.commands, effort.allkeys) == (6, 6, 0, 6)
    assert (effort.wall_ms, effort.active_ms, effort.reading_ms) == (4000, 4000, 1002)
    # Keydown gaps: 400, 200, 1400, 100, 100, 100.
    assert (effort.pauses_300_count, effort.pauses_300_ms) == (2, 1800)
    assert (effort.pauses_1000_count, effort.pauses_1000_ms) == (1, 1400)
    assert (effort.pauses_2000_count, effort.pauses_2000_ms) == (0, 0)
    assert effort.clipped_ms == 0


def test_backspace_and_delete_count_with_or_without_modifiers_and_repeats():
    events = log(
        {"t": 0, "k": "load", "data": "abcdef", "len": 6},
        {"t": 100, "k": "keydown", "key": "Backspace"},
        {"t": 200, "k": "keydown", "key": "Backspace", "mods": 1},
        {"t": 300, "k": "keydown", "key": "Delete"},
        {"t": 330, "k": "keydown", "key": "Delete", "rep": True},
        {"t": 360, "k": "keydown", "key": "Delete", "rep": True},
        {"t": 400, "k": "keydown", "key": "Escape"},
        {"t": 500, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"erase": 5}
    assert (effort.visible, effort.keystrokes, effort.allkeys) == (0, 5, 5)
    assert effort.reading_ms == 500  # nothing was edited: reading is the whole wall time


def test_select_and_type_over_a_range_counts_only_the_typed_keys():
    events = log(
        {"t": 0, "k": "load", "data": "This are", "len": 8},
        {"t": 500, "k": "mousedown"},
        {"t": 700, "k": "select", "s": 5, "e": 8, "src": "mouse"},
        {"t": 900, "k": "keydown", "key": "i"},
        {"t": 901, "k": "beforeinput", "it": "insertText", "s": 5, "e": 8},
        {"t": 902, "k": "input", "it": "insertText", "s": 6, "len": 6, "data": "i"},
        {"t": 1100, "k": "keydown", "key": "s"},
        {"t": 1200, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"letters": 2}
    assert effort.navigation == 0  # a mouse selection is not a key
    assert (effort.wall_ms, effort.reading_ms) == (1200, 902)


def test_paste_cut_copy_count_once_each_keyboard_or_menu():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        {"t": 100, "k": "keydown", "key": "Control"},
        {"t": 150, "k": "keydown", "key": "c", "mods": 1},
        {"t": 151, "k": "copy", "data": "ab"},
        {"t": 300, "k": "keydown", "key": "x", "mods": 8},
        {"t": 301, "k": "cut", "data": "ab"},
        {"t": 302, "k": "beforeinput", "it": "deleteByCut", "s": 0, "e": 2},
        {"t": 303, "k": "input", "it": "deleteByCut", "s": 0, "len": 1},
        {"t": 500, "k": "keydown", "key": "v", "mods": 1},
        {"t": 501, "k": "paste", "data": "ab"},
        {"t": 900, "k": "paste", "data": "ab"},  # from the context menu: no keydown
        {"t": 1000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"copy": 1, "cut": 1, "paste": 2}
    assert (effort.commands, effort.keystrokes, effort.allkeys) == (4, 0, 4)


def test_undo_redo_counts_keys_and_menu_once():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2},
        # Ctrl+Z that undid something: the keydown and its beforeinput count once.
        {"t": 100, "k": "keydown", "key": "z", "mods": 1},
        {"t": 101, "k": "beforeinput", "it": "historyUndo", "s": 2, "e": 2},
        {"t": 102, "k": "input", "it": "historyUndo", "s": 1, "len": 1, "data": "a"},
        # Ctrl+Shift+Z redo.
        {"t": 200, "k": "keydown", "key": "Z", "mods": 3},
        {"t": 201, "k": "beforeinput", "it": "historyRedo", "s": 1, "e": 1},
        {"t": 202, "k": "input", "it": "historyRedo", "s": 2, "len": 2, "data": "ab"},
        # Undo from the menu: a beforeinput without a key.
        {"t": 300, "k": "beforeinput", "it": "historyUndo", "s": 2, "e": 2},
        {"t": 301, "k": "input", "it": "historyUndo", "s": 1, "len": 1, "data": "a"},
        # Ctrl+Z with nothing left to undo: no beforeinput before the next key.
        {"t": 400, "k": "keydown", "key": "z", "mods": 1},
        {"t": 500, "k": "keydown", "key": "b"},
        {"t": 501, "k": "beforeinput", "it": "insertText", "s": 1, "e": 1},
        {"t": 502, "k": "input", "it": "insertText", "s": 2, "len": 2, "data": "b"},
        # Cmd+Y, the last key of the log, again without a beforeinput.
        {"t": 600, "k": "keydown", "key": "y", "mods": 8},
        {"t": 700, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"undo_redo": 5, "letters": 1}
    assert (effort.commands, effort.keystrokes, effort.allkeys) == (5, 1, 6)


def test_navigation_keys_count_with_modifiers_mouse_moves_do_not():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        {"t": 100, "k": "keydown", "key": "ArrowLeft"},
        {"t": 101, "k": "select", "s": 2, "e": 2, "src": "key"},
        {"t": 200, "k": "keydown", "key": "ArrowRight", "mods": 2},
        {"t": 300, "k": "keydown", "key": "Home"},
        {"t": 400, "k": "keydown", "key": "End", "mods": 1},
        {"t": 500, "k": "keydown", "key": "PageDown"},
        {"t": 600, "k": "keydown", "key": "ArrowUp", "rep": True},
        {"t": 700, "k": "mousedown"},
        {"t": 701, "k": "select", "s": 0, "e": 0, "src": "mouse"},
        {"t": 800, "k": "keydown", "key": "a", "mods": 1},  # Ctrl+A selects all: no class
        {"t": 900, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"navigation": 6}
    assert (effort.keystrokes, effort.allkeys) == (0, 6)


def test_ime_composition_counts_the_committed_characters_not_the_keys():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 100, "k": "keydown", "key": "Process", "code": "KeyN"},
        {"t": 101, "k": "compositionstart", "data": ""},
        {"t": 102, "k": "compositionupdate", "data": "n"},
        {"t": 200, "k": "keydown", "key": "Process", "code": "KeyI"},
        {"t": 201, "k": "compositionupdate", "data": "に"},
        {"t": 300, "k": "keydown", "key": "Backspace"},  # inside the composition: the IME's key
        {"t": 400, "k": "keydown", "key": " "},
        {"t": 401, "k": "compositionupdate", "data": "日本"},
        {"t": 500, "k": "keydown", "key": "Enter"},
        {"t": 501, "k": "compositionend", "data": "日本"},
        {"t": 600, "k": "keydown", "key": "。"},
        {"t": 700, "k": "keydown", "key": "Unidentified"},
        # Devanagari: a consonant and a combining vowel sign are both letters.
        {"t": 800, "k": "compositionstart", "data": ""},
        {"t": 801, "k": "compositionend", "data": "कि"},
        {"t": 900, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"letters": 4, "symbols": 1}
    assert (effort.visible, effort.keystrokes, effort.allkeys) == (5, 5, 5)


def test_idle_gaps_beyond_the_threshold_are_not_active_time():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        {"t": 1000, "k": "keydown", "key": "b"},
        {"t": 41_000, "k": "keydown", "key": "c"},  # 40 s gap: idle, as a whole
        {"t": 41_001, "k": "beforeinput", "it": "insertText", "s": 1, "e": 1},
        {"t": 41_002, "k": "input", "it": "insertText", "s": 2, "len": 2, "data": "c"},
        {"t": 71_002, "k": "keydown", "key": "d"},  # exactly the threshold: still active
        {"t": 72_002, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert effort.wall_ms == 72_002
    assert effort.active_ms == 72_002 - 40_000
    assert effort.reading_ms == 41_002
    # Keydown gaps: 40000, 30002.
    assert (effort.pauses_300_count, effort.pauses_300_ms) == (2, 70_002)
    assert (effort.pauses_1000_count, effort.pauses_1000_ms) == (2, 70_002)
    assert (effort.pauses_2000_count, effort.pauses_2000_ms) == (2, 70_002)


def test_hidden_tab_and_unfocused_window_are_not_active_time():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        {"t": 1000, "k": "keydown", "key": "b"},
        {"t": 2000, "k": "visibility", "state": "hidden"},
        {"t": 12_000, "k": "visibility", "state": "visible"},  # 10 s hidden
        {"t": 13_000, "k": "keydown", "key": "c"},
        {"t": 14_000, "k": "blur"},
        {"t": 20_000, "k": "focus"},  # 6 s unfocused
        {"t": 20_500, "k": "blur", "src": "textarea"},  # reading the references: still active
        {"t": 21_000, "k": "focus", "src": "textarea"},
        {"t": 22_000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert effort.wall_ms == 22_000
    assert effort.active_ms == 22_000 - 10_000 - 6_000
    assert (effort.pauses_2000_count, effort.pauses_2000_ms) == (1, 12_000)


def test_a_key_after_a_missed_focus_event_makes_the_page_active_again():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        {"t": 1000, "k": "blur"},
        {"t": 3000, "k": "keydown", "key": "b"},  # typing proves the window has the focus
        {"t": 5000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.wall_ms, effort.active_ms) == (5000, 3000)


def test_a_page_loaded_hidden_starts_inactive():
    events = log(
        {"t": 100, "k": "load", "data": "a", "len": 1, "state": "hidden"},
        {"t": 5100, "k": "visibility", "state": "visible"},
        {"t": 6100, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.wall_ms, effort.active_ms, effort.reading_ms) == (6000, 1000, 6000)


def test_times_accumulate_over_visits_and_reading_ends_at_the_first_edit():
    events = log(
        # Visit 1: read for 10 s, never edit, leave.
        {"t": 300, "k": "load", "data": "ab", "len": 2, "page": "v1"},
        {"t": 10_300, "k": "blur", "page": "v1"},
        # Visit 2 (the next day): edit after 2 s, submit 3 s after the load.
        {"t": 200, "k": "load", "data": "ab", "len": 2, "page": "v2"},
        {"t": 2100, "k": "keydown", "key": "c", "page": "v2"},
        {"t": 2101, "k": "beforeinput", "it": "insertText", "s": 2, "e": 2, "page": "v2"},
        {"t": 2200, "k": "input", "it": "insertText", "s": 3, "len": 3, "data": "c", "page": "v2"},
        {"t": 3200, "k": "submit", "page": "v2"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert effort.wall_ms == 10_000 + 3000
    assert effort.active_ms == 10_000 + 3000
    assert effort.reading_ms == 10_000 + 2000
    assert effort.letters == 1


def test_wall_time_is_clipped_to_the_server_bound_of_each_visit():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1, "page": "v1"},
        {"t": 20_000, "k": "keydown", "key": "b", "page": "v1"},
        {"t": 70_000, "k": "keydown", "key": "c", "page": "v1"},
        {"t": 70_001, "k": "beforeinput", "it": "insertText", "s": 1, "e": 1, "page": "v1"},
        {"t": 70_002, "k": "input", "it": "insertText", "s": 2, "len": 2, "data": "c", "page": "v1"},
        {"t": 100_000, "k": "submit", "page": "v1"},
        {"t": 0, "k": "load", "data": "ac", "len": 2, "page": "v2"},
        {"t": 5000, "k": "submit", "page": "v2"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS, visit_limits_ms={"v1": 60_000, "v2": 9000})
    assert effort.wall_ms == 60_000 + 5000
    assert effort.clipped_ms == 40_000
    # Active time stops at the cut-off too: 0..20 s, then 20..60 s is a 50 s gap (idle), v2 5 s.
    assert effort.active_ms == 20_000 + 5000
    assert effort.reading_ms == 60_000  # the first edit lies after the cut-off


def test_altgr_types_but_ctrl_and_meta_shortcuts_do_not():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 100, "k": "keydown", "key": "@", "mods": 5},  # AltGr+Q on a German keyboard
        {"t": 200, "k": "keydown", "key": "é", "mods": 4},  # Option+e, e on a Mac
        {"t": 300, "k": "keydown", "key": "s", "mods": 1},
        {"t": 400, "k": "keydown", "key": "Enter", "mods": 1},  # Ctrl+Enter submits
        {"t": 500, "k": "keydown", "key": "a", "mods": 8},
        {"t": 600, "k": "keydown", "key": "Dead"},
        {"t": 700, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"symbols": 1, "letters": 1}


def test_an_empty_log_gives_zero_everywhere():
    effort = derive_effort([], idle_threshold_ms=IDLE_MS)
    assert all(value == 0 for value in dataclasses.asdict(effort).values())


def test_events_are_taken_in_seq_order_whatever_order_they_come_in():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 100, "k": "keydown", "key": "a"},
        {"t": 900, "k": "keydown", "key": "b"},
        {"t": 1000, "k": "submit"},
    )
    in_order = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert derive_effort(reversed(events), idle_threshold_ms=IDLE_MS) == in_order


def test_character_classes_follow_unicode():
    assert [classify_char(c) for c in "aЖ語5٣ \t\u00a0!€😀\u200d"] == [
        "letters", "letters", "letters", "digits", "digits", "spaces", "spaces", "spaces",
        "symbols", "symbols", "symbols", None,
    ]  # fmt: skip
    assert classify_key("Tab") == "spaces"
    assert classify_key("F5") is None
    assert classify_key("Process") is None
    assert classify_key("Delete", 9) == "erase"
    assert classify_key("v", 1) is None
