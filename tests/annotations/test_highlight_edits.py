"""Which error highlights an annotator edited (annotations.highlights.highlight_edits): a step that
replaces the whole text (undo, redo, a reload) edits only the highlights whose text it changes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.highlights import highlight_edits
from annotations.replay import replay, utf16_len
from tests.annotations.editing_helpers import wire

OUTPUT = "The cat sat on teh mat."
SPANS = [(4, 7, "minor"), (15, 18, "major")]


def _typed(seq: int, text: str, start: int, end: int, insert: str) -> tuple[list[dict], str]:
    """The events of typing `insert` over [start, end) of `text` (BMP text: UTF-16 = code points)."""
    after = text[:start] + insert + text[end:]
    return [
        {"seq": seq, "t": seq * 10, "k": "beforeinput", "it": "insertText", "s": start, "e": end},
        {
            "seq": seq + 1,
            "t": seq * 10 + 1,
            "k": "input",
            "it": "insertText",
            "s": start + len(insert),
            "len": len(after),
            "data": insert,
        },
    ], after


def _full_text(seq: int, text: str, after: str, kind: str = "historyUndo") -> list[dict]:
    """An undo or redo: the browser restores `after`; the log carries the whole text."""
    return [
        {"seq": seq, "t": seq * 10, "k": "beforeinput", "it": kind, "s": len(text), "e": len(text)},
        {
            "seq": seq + 1,
            "t": seq * 10 + 1,
            "k": "input",
            "it": kind,
            "s": len(after),
            "len": len(after),
            "data": after,
        },
    ]


def _load(text: str) -> dict:
    return {"seq": 0, "t": 0, "k": "load", "data": text, "len": utf16_len(text)}


def test_an_undo_and_a_redo_edit_only_the_highlight_whose_text_they_change():
    typed, fixed = _typed(1, OUTPUT, 15, 18, "the")
    log = [_load(OUTPUT), *typed, *_full_text(3, fixed, OUTPUT), *_full_text(5, OUTPUT, fixed, "historyRedo")]
    assert replay(OUTPUT, wire(log), final_text=fixed).ok
    edits = highlight_edits(OUTPUT, SPANS, wire(log))
    assert [(e["label"], e["edited"], e["edits"], e["first_seq"], e["now"]) for e in edits] == [
        ("minor", False, 0, None, [4, 7]),
        ("major", True, 3, 2, [15, 18]),
    ]


def test_an_undo_of_an_edit_elsewhere_edits_no_highlight():
    typed, changed = _typed(1, OUTPUT, 0, 3, "A")  # "The" -> "A", outside both spans
    log = [_load(OUTPUT), *typed, *_full_text(3, changed, OUTPUT)]
    edits = highlight_edits(OUTPUT, SPANS, wire(log))
    assert [(e["edited"], e["now"]) for e in edits] == [(False, [4, 7]), (False, [15, 18])]


def test_a_full_text_step_that_changes_nothing_edits_nothing():
    log = [_load(OUTPUT), *_full_text(1, OUTPUT, OUTPUT)]
    assert [e["edited"] for e in highlight_edits(OUTPUT, SPANS, wire(log))] == [False, False]


BASE = st.text(alphabet="abc .", min_size=1, max_size=30)


@st.composite
def changes(draw, fresh: bool):
    """An original text, spans over it, and a list of replacements (start, end, insert). With
    `fresh`, every insert is made of a character that appears nowhere before it: the difference of
    the texts before and after is then exactly the replaced range."""
    text = draw(BASE)
    spans = []
    for n in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, len(text)))
        spans.append((start, draw(st.integers(start, len(text))), f"s{n}"))
    steps = []
    current = text
    for n in range(draw(st.integers(1, 6))):
        start = draw(st.integers(0, len(current)))
        end = draw(st.integers(start, len(current)))
        if fresh:
            insert = chr(0x4E00 + n) * draw(st.integers(1, 3))
        else:
            insert = draw(st.text(alphabet="abcx .", max_size=4))
        steps.append((start, end, insert))
        current = current[:start] + insert + current[end:]
    return text, spans, steps


@settings(max_examples=300, deadline=None)
@given(changes(fresh=True))
def test_a_change_made_by_undo_or_redo_edits_the_highlights_typing_it_would_edit(case):
    """The same changes typed, or restored by undo/redo (each carrying the whole text), edit the
    same highlights at the same seqs and leave them at the same places."""
    original, spans, steps = case
    typed_log, full_log, text, seq = [_load(original)], [_load(original)], original, 1
    for start, end, insert in steps:
        events, after = _typed(seq, text, start, end, insert)
        typed_log += events
        full_log += _full_text(seq, text, after, "historyRedo")
        text, seq = after, seq + 2
    assert replay(original, wire(full_log), final_text=text).ok
    assert highlight_edits(original, spans, wire(full_log)) == highlight_edits(original, spans, wire(typed_log))


@settings(max_examples=300, deadline=None)
@given(changes(fresh=False))
def test_a_highlight_left_unedited_by_full_text_steps_still_holds_its_text(case):
    """Whatever undo/redo restores: a highlight reported unedited covers, in the final text, exactly
    the text it covered in the original."""
    original, spans, steps = case
    log, text, seq = [_load(original)], original, 1
    for start, end, insert in steps:
        after = text[:start] + insert + text[end:]
        log += _full_text(seq, text, after)
        text, seq = after, seq + 2
    for (start, end, _), edit in zip(spans, highlight_edits(original, spans, wire(log)), strict=True):
        if not edit["edited"]:
            now_start, now_end = edit["now"]
            assert text[now_start:now_end] == original[start:end]
