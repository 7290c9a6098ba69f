"""Replay (annotations/replay.py) on hand-made logs: every edit kind, UTF-16 offsets, divergences."""

from annotations.api.serializers_editor import event_from_wire
from annotations.log_event import LogEvent
from annotations.replay import iter_replay, replay, replay_texts, utf16_len


def log(*events: dict, page: str = "p1") -> list[LogEvent]:
    numbered = (dict(event, seq=seq) for seq, event in enumerate(events))
    return [
        event_from_wire({key: value for key, value in event.items() if key != "page"}, event.get("page", page))
        for event in numbered
    ]


def insert(t: float, s: int, e: int, data: str, *, before_len: int, it: str = "insertText") -> list[dict]:
    """A beforeinput/input pair as the logger records it (caret after = s + UTF-16 length of data)."""
    after_len = before_len - (e - s) + utf16_len(data)
    return [
        {"t": t, "k": "beforeinput", "it": it, "s": s, "e": e},
        {"t": t + 1, "k": "input", "it": it, "s": s + utf16_len(data), "len": after_len, "data": data},
    ]


def test_plain_typing_replays_to_the_typed_text():
    events = log(
        {"t": 0, "k": "load", "data": "Helo", "len": 4},
        {"t": 10, "k": "keydown", "key": "l"},
        *insert(11, 3, 3, "l", before_len=4),
        *insert(20, 5, 5, "!", before_len=5),
        *insert(30, 6, 6, "\n", before_len=6, it="insertLineBreak"),
    )
    result = replay("Helo", events, final_text="Hello!\n")
    assert (result.text, result.ok, result.divergence, result.steps) == ("Hello!\n", True, None, 4)


def test_backspace_and_delete_remove_at_the_caret():
    events = log(
        {"t": 0, "k": "load", "data": "abcdef", "len": 6},
        # Backspace at 3: removes "c"; the caret after is 2.
        {"t": 10, "k": "beforeinput", "it": "deleteContentBackward", "s": 3, "e": 3},
        {"t": 11, "k": "input", "it": "deleteContentBackward", "s": 2, "len": 5},
        # Delete at 2: removes "d".
        {"t": 20, "k": "beforeinput", "it": "deleteContentForward", "s": 2, "e": 2},
        {"t": 21, "k": "input", "it": "deleteContentForward", "s": 2, "len": 4},
        # Ctrl+Backspace at the end removes "ef".
        {"t": 30, "k": "beforeinput", "it": "deleteWordBackward", "s": 4, "e": 4},
        {"t": 31, "k": "input", "it": "deleteWordBackward", "s": 2, "len": 2},
    )
    result = replay("abcdef", events, final_text="ab")
    assert result.ok and result.text == "ab"


def test_typing_over_a_selected_range_replaces_it():
    events = log(
        {"t": 0, "k": "load", "data": "This are a test.", "len": 16},
        {"t": 5, "k": "select", "s": 5, "e": 8, "src": "mouse"},
        *insert(10, 5, 8, "i", before_len=16),
        *insert(20, 6, 6, "s", before_len=14),
    )
    assert replay("This are a test.", events, final_text="This is a test.").ok


def test_paste_over_a_selection_and_cut():
    events = log(
        {"t": 0, "k": "load", "data": "one two three", "len": 13},
        {"t": 10, "k": "cut", "data": "two "},
        {"t": 11, "k": "beforeinput", "it": "deleteByCut", "s": 4, "e": 8},
        {"t": 12, "k": "input", "it": "deleteByCut", "s": 4, "len": 9},
        {"t": 20, "k": "paste", "data": "TWO, "},
        *insert(21, 0, 4, "TWO, ", before_len=9, it="insertFromPaste"),
    )
    result = replay("one two three", events, final_text="TWO, three")
    assert result.ok and result.text == "TWO, three"


def test_undo_and_redo_carry_the_full_text():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2},
        *insert(10, 2, 2, "c", before_len=2),
        {"t": 20, "k": "beforeinput", "it": "historyUndo", "s": 3, "e": 3},
        {"t": 21, "k": "input", "it": "historyUndo", "s": 2, "len": 2, "data": "ab"},
        {"t": 30, "k": "beforeinput", "it": "historyRedo", "s": 2, "e": 2},
        {"t": 31, "k": "input", "it": "historyRedo", "s": 3, "len": 3, "data": "abc"},
    )
    assert [text for _, text in replay_texts("ab", events)] == ["ab", "abc", "ab", "abc"]
    assert replay("ab", events, final_text="abc").ok


def test_offsets_are_utf16_code_units_so_emoji_replay_exactly():
    original = "a😀b"  # UTF-16 length 4
    events = log(
        {"t": 0, "k": "load", "data": original, "len": 4},
        # Backspace after the emoji (caret 3) removes both of its code units.
        {"t": 10, "k": "beforeinput", "it": "deleteContentBackward", "s": 3, "e": 3},
        {"t": 11, "k": "input", "it": "deleteContentBackward", "s": 1, "len": 2},
        *insert(20, 2, 2, "👍🏽", before_len=2),
        *insert(30, 2, 2, "é", before_len=6),
    )
    result = replay(original, events, final_text="abé👍🏽")
    assert result.ok and result.text == "abé👍🏽"


def test_an_ime_conversion_that_shrinks_the_composition_replays_from_the_composition_data():
    # Typing "nihon" then converting to 日本: the composition grows, then shrinks behind the caret,
    # where the selection the logger sees cannot describe the change.
    events = log(
        {"t": 0, "k": "load", "data": "「」", "len": 2},
        {"t": 5, "k": "compositionstart", "data": ""},
        {"t": 6, "k": "compositionupdate", "data": "に"},
        {"t": 7, "k": "beforeinput", "it": "insertCompositionText", "s": 1, "e": 1},
        {"t": 8, "k": "input", "it": "insertCompositionText", "s": 2, "len": 3, "data": "に"},
        {"t": 10, "k": "compositionupdate", "data": "にほん"},
        {"t": 11, "k": "beforeinput", "it": "insertCompositionText", "s": 2, "e": 2},
        {"t": 12, "k": "input", "it": "insertCompositionText", "s": 4, "len": 5, "data": "ほん"},
        {"t": 20, "k": "compositionupdate", "data": "日本"},
        {"t": 21, "k": "beforeinput", "it": "insertCompositionText", "s": 4, "e": 4},
        {"t": 22, "k": "input", "it": "insertCompositionText", "s": 3, "len": 4, "data": ""},
        {"t": 30, "k": "compositionend", "data": "日本"},
    )
    result = replay("「」", events, final_text="「日本」")
    assert result.ok, result.divergence
    assert result.text == "「日本」"
    assert result.committed_compositions == {11}  # the committed text is what the composition inserted


def test_a_same_length_conversion_is_not_mistaken_for_no_change():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 1, "k": "compositionstart", "data": ""},
        {"t": 2, "k": "compositionupdate", "data": "かん"},
        {"t": 3, "k": "beforeinput", "it": "insertCompositionText", "s": 0, "e": 0},
        {"t": 4, "k": "input", "it": "insertCompositionText", "s": 2, "len": 2, "data": "かん"},
        {"t": 5, "k": "compositionupdate", "data": "漢"},
        {"t": 6, "k": "compositionupdate", "data": "漢字"},
        {"t": 7, "k": "beforeinput", "it": "insertCompositionText", "s": 2, "e": 2},
        {"t": 8, "k": "input", "it": "insertCompositionText", "s": 2, "len": 2, "data": ""},
        {"t": 9, "k": "compositionend", "data": "漢字"},
    )
    assert replay("", events, final_text="漢字").ok


def test_a_client_that_reports_the_composition_range_replays_by_the_plain_rule():
    # The selection of each beforeinput is the composition's range and `data` the whole composition;
    # the commit differs from the last compositionupdate (same length), which the plain rule gets right.
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        {"t": 1, "k": "compositionstart", "data": ""},
        {"t": 2, "k": "compositionupdate", "data": "かん"},
        {"t": 3, "k": "beforeinput", "it": "insertCompositionText", "s": 1, "e": 1},
        {"t": 4, "k": "input", "it": "insertCompositionText", "s": 3, "len": 3, "data": "かん"},
        {"t": 5, "k": "beforeinput", "it": "insertCompositionText", "s": 1, "e": 3},
        {"t": 6, "k": "input", "it": "insertCompositionText", "s": 3, "len": 3, "data": "漢字"},
        {"t": 7, "k": "compositionend", "data": "漢字"},
    )
    result = replay("a", events, final_text="a漢字")
    assert result.ok, result.divergence
    assert result.committed_compositions == {7}


def test_a_commit_the_composition_did_not_insert_is_not_corroborated():
    events = log(
        {"t": 0, "k": "load", "data": "a", "len": 1},
        {"t": 1, "k": "compositionstart", "data": ""},
        {"t": 2, "k": "compositionupdate", "data": "x"},
        *insert(3, 1, 1, "x", before_len=1, it="insertCompositionText"),
        {"t": 5, "k": "compositionend", "data": "xxxxxxxxxx"},  # claims more than it typed
        {"t": 6, "k": "compositionstart", "data": ""},
        {"t": 7, "k": "compositionend", "data": "yy"},  # no input at all
    )
    result = replay("a", events, final_text="ax")
    assert (result.ok, result.committed_compositions) == (True, frozenset())


def test_a_cancelled_beforeinput_is_ignored():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2},
        {"t": 5, "k": "beforeinput", "it": "insertText", "s": 0, "e": 2},  # prevented: no input follows
        *insert(10, 2, 2, "c", before_len=2),
    )
    assert replay("ab", events, final_text="abc").ok


def test_an_input_without_beforeinput_is_placed_before_the_caret():
    events = log(
        {"t": 0, "k": "load", "data": "a-c", "len": 3},
        # "-" replaced by "b" without a logged beforeinput: caret after 2, length unchanged.
        {"t": 10, "k": "input", "it": "insertText", "s": 2, "len": 3, "data": "b"},
    )
    assert replay("a-c", events, final_text="abc").ok


def test_the_full_text_flag_replaces_everything():
    events = log(
        {"t": 0, "k": "load", "data": "teh cat", "len": 7},
        {"t": 5, "k": "beforeinput", "it": "insertReplacementText", "s": 2, "e": 2},
        {"t": 6, "k": "input", "it": "insertReplacementText", "s": 3, "len": 7, "data": "the cat", "f": True},
    )
    assert replay("teh cat", events, final_text="the cat").ok


def test_a_wrong_length_marks_the_divergence_point_and_the_edit_is_not_ok():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        *insert(10, 3, 3, "d", before_len=3),
        # The browser says 6 after inserting one character into 4: an event is missing.
        {"t": 20, "k": "beforeinput", "it": "insertText", "s": 4, "e": 4},
        {"t": 21, "k": "input", "it": "insertText", "s": 5, "len": 6, "data": "e"},
        *insert(30, 5, 5, "f", before_len=5),
    )
    result = replay("abc", events, final_text="abcdef")
    assert not result.ok
    assert result.divergence["seq"] == 4
    assert (result.divergence["expected_len"], result.divergence["got_len"]) == (6, 5)
    assert result.divergence["context"] == "abcde"
    assert result.text == "abcdef"  # replay went on to the end


def test_a_load_that_differs_from_the_replayed_text_diverges_and_replay_continues_from_it():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3, "page": "v1"},
        *({**event, "page": "v1"} for event in insert(10, 3, 3, "d", before_len=3)),
        # Visit 2 starts from a text the log never produced ("abcX"): lost between visits.
        {"t": 0, "k": "load", "data": "abcX", "len": 4, "page": "v2"},
        *({**event, "page": "v2"} for event in insert(10, 4, 4, "!", before_len=4)),
    )
    result = replay("abc", events, final_text="abcX!")
    assert not result.ok
    assert result.divergence["seq"] == 3
    assert result.divergence["kind"] == "load"
    assert (result.divergence["expected_len"], result.divergence["got_len"]) == (4, 4)
    assert result.text == "abcX!"


def test_a_submitted_text_the_log_does_not_produce_is_a_mismatch():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        *insert(10, 3, 3, "d", before_len=3),
    )
    result = replay("abc", events, final_text="abcde")
    assert not result.ok
    assert result.divergence["reason"] == "the replayed text differs from the submitted text"
    assert (result.divergence["expected_len"], result.divergence["got_len"]) == (5, 4)
    assert result.divergence["seq"] == 2
    assert result.divergence["submitted_context"] == "abcde"


def test_an_out_of_range_change_is_a_divergence_not_an_exception():
    events = log(
        {"t": 0, "k": "load", "data": "ab", "len": 2},
        {"t": 10, "k": "beforeinput", "it": "insertText", "s": 9, "e": 9},
        {"t": 11, "k": "input", "it": "insertText", "s": 10, "len": 3, "data": "c"},
    )
    result = replay("ab", events)
    assert not result.ok
    assert result.divergence["seq"] == 2
    assert "outside the text" in result.divergence["reason"]


def test_without_events_replay_gives_the_original():
    assert replay("abc", [], final_text="abc").ok
    assert not replay("abc", [], final_text="abd").ok


def test_steps_describe_each_change_as_a_utf16_range():
    events = log(
        {"t": 0, "k": "load", "data": "x😀y", "len": 4},
        *insert(10, 1, 3, "o", before_len=4),
    )
    steps = list(iter_replay("x😀y", events))
    assert [(s.seq, s.kind, s.start, s.end, s.insert, s.text) for s in steps] == [
        (0, "load", 0, 4, "x😀y", "x😀y"),
        (2, "insertText", 1, 3, "o", "xoy"),
    ]
