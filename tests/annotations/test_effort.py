"""Effort derivation (annotations/effort/) on hand-made event logs, with exact counts and times."""

import dataclasses

from annotations.api.serializers_editor import event_from_wire
from annotations.effort import Effort, classify_char, classify_key, derive_effort
from annotations.log_event import LogEvent
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


def typed(
    t: float, key: str, at: int, length: int, *, mods: int = 0, it: str = "insertText", data=None, repeat=False
) -> list[dict]:
    """A typing key as the logger records it: keydown, beforeinput, input (the text changed: `length` after)."""
    keydown = {
        "t": t,
        "k": "keydown",
        "key": key,
        **({"mods": mods} if mods else {}),
        **({"rep": True} if repeat else {}),
    }
    inserted = {} if it.startswith("delete") else {"data": key if data is None else data}
    return [
        keydown,
        {"t": t, "k": "beforeinput", "it": it, "s": at, "e": at},
        {"t": t, "k": "input", "it": it, "s": at if it.startswith("delete") else at + 1, "len": length, **inserted},
    ]


def counts(effort: Effort) -> dict:
    names = ("letters", "digits", "spaces", "symbols", "erase", "navigation", "copy", "cut", "paste", "undo_redo")
    return {name: getattr(effort, name) for name in names if getattr(effort, name)}


def test_effort_fields_are_the_stored_field_names():
    names = {field.name for field in dataclasses.fields(Effort)}
    assert names - {"clipped_ms", "uncorroborated_keys", "rate_excess_keys", "fast_compositions"} == set(EFFORT_FIELDS)


def test_plain_typing_counts_each_class_and_times():
    events = log(
        {"t": 0, "k": "load", "data": "Helo", "len": 4},
        {"t": 1000, "k": "keydown", "key": "l"},
        {"t": 1001, "k": "beforeinput", "it": "insertText", "s": 3, "e": 3},
        {"t": 1002, "k": "input", "it": "insertText", "s": 4, "len": 5, "data": "l"},
        *typed(1400, "!", 5, 6, mods=2),
        *typed(1600, " ", 6, 7),
        *typed(3000, "7", 7, 8),
        *typed(3100, "Enter", 8, 9, it="insertLineBreak"),
        {"t": 3200, "k": "keydown", "key": "Shift"},
        *typed(3300, "Ä", 9, 10, mods=2),
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
    assert (effort.clipped_ms, effort.uncorroborated_keys) == (0, 0)


def test_backspace_and_delete_count_with_or_without_modifiers_and_repeats():
    events = log(
        {"t": 0, "k": "load", "data": "abcdef", "len": 6},
        *typed(100, "Delete", 0, 5, it="deleteContentForward"),
        *typed(130, "Delete", 0, 4, it="deleteContentForward", repeat=True),
        *typed(160, "Delete", 0, 3, it="deleteContentForward", repeat=True),
        {"t": 180, "k": "select", "s": 3, "e": 3, "src": "mouse"},
        *typed(200, "Backspace", 2, 2, it="deleteContentBackward"),
        *typed(300, "Backspace", 0, 0, mods=1, it="deleteWordBackward"),
        # Nothing left to erase: the browser announces the deletion, then rejects it.
        {"t": 350, "k": "keydown", "key": "Backspace"},
        {"t": 350, "k": "beforeinput", "it": "deleteContentBackward", "s": 0, "e": 0},
        {"t": 400, "k": "keydown", "key": "Escape"},
        {"t": 500, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"erase": 5}
    assert (effort.visible, effort.keystrokes, effort.allkeys, effort.uncorroborated_keys) == (0, 5, 5, 0)


def test_select_and_type_over_a_range_counts_only_the_typed_keys():
    events = log(
        {"t": 0, "k": "load", "data": "This are", "len": 8},
        {"t": 500, "k": "mousedown"},
        {"t": 700, "k": "select", "s": 5, "e": 8, "src": "mouse"},
        {"t": 900, "k": "keydown", "key": "i"},
        {"t": 901, "k": "beforeinput", "it": "insertText", "s": 5, "e": 8},
        {"t": 902, "k": "input", "it": "insertText", "s": 6, "len": 6, "data": "i"},
        *typed(1100, "s", 6, 7),
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
        {"t": 502, "k": "beforeinput", "it": "insertFromPaste", "s": 0, "e": 0},
        {"t": 503, "k": "input", "it": "insertFromPaste", "s": 2, "len": 3, "data": "ab"},
        {"t": 900, "k": "paste", "data": "ab"},  # from the context menu: no keydown
        {"t": 902, "k": "beforeinput", "it": "insertFromPaste", "s": 2, "e": 2},
        {"t": 903, "k": "input", "it": "insertFromPaste", "s": 4, "len": 5, "data": "ab"},
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
        # Ctrl+Z with nothing left to undo: no beforeinput before the next key, no effect, no command.
        {"t": 400, "k": "keydown", "key": "z", "mods": 1},
        {"t": 500, "k": "keydown", "key": "b"},
        {"t": 501, "k": "beforeinput", "it": "insertText", "s": 1, "e": 1},
        {"t": 502, "k": "input", "it": "insertText", "s": 2, "len": 2, "data": "b"},
        # Cmd+Y, the last key of the log, again without a beforeinput: nothing to redo.
        {"t": 600, "k": "keydown", "key": "y", "mods": 8},
        {"t": 700, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"undo_redo": 3, "letters": 1}
    assert (effort.commands, effort.keystrokes, effort.allkeys) == (3, 1, 4)


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
    assert effort.reading_ms == 900  # nothing was edited: reading is the whole wall time


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
        *typed(600, "。", 2, 3),
        {"t": 700, "k": "keydown", "key": "Unidentified"},
        # Devanagari: a consonant and a combining vowel sign are both letters.
        {"t": 790, "k": "keydown", "key": "Process", "code": "KeyK"},
        {"t": 800, "k": "compositionstart", "data": ""},
        {"t": 800, "k": "keydown", "key": "Process", "code": "KeyI"},
        {"t": 801, "k": "compositionend", "data": "कि"},
        {"t": 900, "k": "submit"},
    )
    # Both compositions' texts were inserted, as the replay found (its inputs are left out here).
    committed = {event.seq for event in events if event.kind == "compositionend"}
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS, committed_compositions=committed)
    assert counts(effort) == {"letters": 4, "symbols": 1}
    assert (effort.visible, effort.keystrokes, effort.allkeys, effort.uncorroborated_keys) == (5, 5, 5, 0)


def test_idle_gaps_beyond_the_threshold_are_not_active_time():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        *typed(1000, "b", 1, 2),
        *typed(41_000, "c", 2, 3),  # 40 s gap: idle, as a whole
        *typed(71_000, "d", 3, 4),  # exactly the threshold: still active
        {"t": 72_000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert effort.wall_ms == 72_000
    assert effort.active_ms == 72_000 - 40_000
    assert effort.reading_ms == 1000
    # Keydown gaps 40000 (idle: no active time in it, so no pause) and 30000 (active).
    assert (effort.pauses_300_count, effort.pauses_300_ms) == (1, 30_000)
    assert (effort.pauses_1000_count, effort.pauses_1000_ms) == (1, 30_000)
    assert (effort.pauses_2000_count, effort.pauses_2000_ms) == (1, 30_000)


def test_hidden_tab_and_unfocused_window_are_not_active_time():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        *typed(1000, "b", 1, 2),
        {"t": 2000, "k": "visibility", "state": "hidden"},
        {"t": 12_000, "k": "visibility", "state": "visible"},  # 10 s hidden
        *typed(13_000, "c", 2, 3),
        {"t": 14_000, "k": "blur"},
        {"t": 20_000, "k": "focus"},  # 6 s unfocused
        {"t": 20_500, "k": "blur", "src": "textarea"},  # reading the references: still active
        {"t": 21_000, "k": "focus", "src": "textarea"},
        {"t": 22_000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert effort.wall_ms == 22_000
    assert effort.active_ms == 22_000 - 10_000 - 6_000
    # The keydowns lie 12 s apart, 10 s of which hidden: the pause is the 2 s of active time.
    assert (effort.pauses_2000_count, effort.pauses_2000_ms) == (1, 2000)


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
        *typed(100, "@", 0, 1, mods=5),  # AltGr+Q on a German keyboard
        *typed(200, "é", 1, 2, mods=4),  # Option+e, e on a Mac
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


# ---------------------------------------------------------------- version 2: what a lying client cannot inflate


def test_keys_no_text_change_corroborates_count_apart():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        *({"t": 10.0 * n, "k": "keydown", "key": "a"} for n in range(1, 2000)),
        {"t": 20_000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.letters, effort.keystrokes, effort.allkeys) == (0, 0, 0)
    assert effort.uncorroborated_keys == 1999


def test_auto_repeat_altgr_enter_and_a_typed_tab_are_counted_when_the_text_changes():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        *typed(100, "x", 0, 1),
        *typed(130, "x", 1, 2, repeat=True),
        *typed(160, "x", 2, 3, repeat=True),
        *typed(200, "€", 3, 4, mods=5),  # AltGr+E
        *typed(300, "Enter", 4, 5, it="insertLineBreak"),
        *typed(400, "Tab", 5, 6, data="\t"),  # an editor that types a tab
        {"t": 500, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"letters": 3, "symbols": 1, "spaces": 2}
    assert effort.uncorroborated_keys == 0


def test_a_tab_that_moves_the_focus_and_a_key_the_page_rejects_count_nowhere():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2},
        {"t": 100, "k": "keydown", "key": "c"},  # the field is full (maxlength) or read-only
        {"t": 100, "k": "beforeinput", "it": "insertText", "s": 2, "e": 2},
        {"t": 200, "k": "keydown", "key": "Tab"},
        {"t": 200, "k": "blur", "src": "textarea"},  # the focus moves to the next control
        {"t": 300, "k": "keydown", "key": "Tab", "mods": 2},
        {"t": 400, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {}
    assert effort.uncorroborated_keys == 1  # the Shift+Tab that neither typed nor moved the focus


def test_only_the_same_page_loads_input_corroborates_a_key():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2, "page": "tab-1"},
        {"t": 100, "k": "keydown", "key": "c", "page": "tab-1"},
        {"t": 0, "k": "load", "data": "ab", "len": 2, "page": "tab-2"},
        {"t": 5, "k": "beforeinput", "it": "insertText", "s": 2, "e": 2, "page": "tab-2"},
        {"t": 6, "k": "input", "it": "insertText", "s": 3, "len": 3, "data": "c", "page": "tab-2"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.letters, effort.uncorroborated_keys) == (0, 1)


def test_a_composition_whose_text_was_not_inserted_counts_apart():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 1, "k": "compositionstart", "data": ""},
        {"t": 2, "k": "compositionend", "data": "xxxxxxxxxx"},
        {"t": 3, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.letters, effort.keystrokes, effort.uncorroborated_keys) == (0, 0, 10)


def test_all_page_loads_together_are_bounded_once_by_the_server_time():
    # Ten page loads, each claiming 2 s; the server saw each for 120 ms: 1.2 s in all.
    events = log(
        *(
            {"t": t, "k": kind, "page": f"v{n}", **({"data": "ab", "len": 2} if kind == "load" else {})}
            for n in range(10)
            for t, kind in ((0, "load"), (1000, "mousedown"), (2000, "mousedown"))
        )
    )
    effort = derive_effort(
        events,
        idle_threshold_ms=IDLE_MS,
        visit_limits_ms={f"v{n}": 120 + 2000 for n in range(10)},
        total_limit_ms=1200 + 2000,
    )
    # Each page load alone stays within its own window plus the tolerance; together they get it once.
    assert (effort.wall_ms, effort.active_ms, effort.reading_ms) == (3200, 3200, 3200)
    assert effort.clipped_ms == 20_000 - 3200


def test_a_pause_never_exceeds_the_active_time_it_lies_in():
    # A log stored before version 2, when time could alternate between batches: 0, 1e10, 0, 1e10.
    events = log(
        {"t": 0, "k": "keydown", "key": "Shift"},
        {"t": 1e10, "k": "keydown", "key": "Shift"},
        {"t": 0, "k": "keydown", "key": "Shift"},
        {"t": 1e10, "k": "keydown", "key": "Shift"},
    )
    unbounded = derive_effort(events, idle_threshold_ms=IDLE_MS)
    bounded = derive_effort(events, idle_threshold_ms=IDLE_MS, visit_limits_ms={"p1": 2380}, total_limit_ms=2380)
    for effort in (unbounded, bounded):
        assert (effort.active_ms, effort.pauses_300_count, effort.pauses_2000_ms) == (0, 0, 0)
    assert bounded.wall_ms == 2380
    # Within the active time a pause is the whole gap between the keys.
    typing = log(
        {"t": 0, "k": "keydown", "key": "Shift"},
        {"t": 2500, "k": "keydown", "key": "Shift"},
        {"t": 3000, "k": "keydown", "key": "Shift"},
    )
    clipped = derive_effort(typing, idle_threshold_ms=IDLE_MS, total_limit_ms=2800)
    assert (clipped.wall_ms, clipped.active_ms) == (2800, 2800)
    # The second gap (500 ms) is cut at the bound: 300 ms of it count.
    assert (clipped.pauses_2000_count, clipped.pauses_2000_ms) == (1, 2500)
    assert (clipped.pauses_300_count, clipped.pauses_300_ms) == (2, 2800)
