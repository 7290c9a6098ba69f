"""Process measures (annotations/process) on hand-made logs with known answers, and their invariants on
generated ones (tests/annotations/effort_streams.py)."""

import dataclasses
import math
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.api.serializers_editor import event_from_wire
from annotations.effort import CTRL, LogEvent
from annotations.process import (
    LOCATIONS,
    MeasureNameError,
    parse_measure,
    pause_thresholds,
    process_measures,
    s_notation,
    trace_log,
)
from annotations.process.measures import quantile
from annotations.replay import replay, utf16_len
from tests.annotations.effort_streams import Stream, honest_actions


class Log:
    """A log written as the editor's logger writes it, with the text it leads to."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.t = 0.0
        self.page = 0
        self.wire: list[dict] = []
        self.reload()

    def add(self, kind: str, **fields) -> None:
        self.wire.append({"t": self.t, "k": kind, "page": f"p{self.page}", **fields})

    def reload(self) -> None:
        self.page += 1
        self.t = 0.0
        self.add("load", data=self.text, len=utf16_len(self.text))

    def wait(self, ms: float) -> "Log":
        self.t += ms
        return self

    def change(self, start: int, end: int, data: str, it: str) -> None:
        self.add("beforeinput", it=it, s=start, e=end)
        self.text = self.text[:start] + data + self.text[end:]
        caret = start if it.startswith("delete") else start + len(data)
        self.add("input", it=it, s=caret, len=len(self.text), data=data)

    def type(self, data: str, *, at: int | None = None, gap: float = 100.0) -> "Log":
        """Each character a key after `gap` ms (the first at `at`, default the end)."""
        at = len(self.text) if at is None else at
        for char in data:
            self.wait(gap)
            self.add("keydown", key=char)
            self.change(at, at, char, "insertText")
            at += 1
        return self

    def backspace(self, times: int = 1, *, at: int | None = None, gap: float = 100.0) -> "Log":
        at = len(self.text) if at is None else at
        for _ in range(times):
            self.wait(gap)
            self.add("keydown", key="Backspace")
            self.change(at - 1, at, "", "deleteContentBackward")
            at -= 1
        return self

    def paste(self, data: str, *, at: int, gap: float = 100.0, keyboard: bool = True) -> "Log":
        self.wait(gap)
        if keyboard:
            self.add("keydown", key="Control", mods=CTRL)
            self.add("keydown", key="v", mods=CTRL)
        self.add("paste", data=data)
        self.change(at, at, data, "insertFromPaste")
        return self

    def history(self, text: str, it: str, *, gap: float = 100.0) -> "Log":
        self.wait(gap)
        self.add("keydown", key="z", mods=CTRL)
        self.add("beforeinput", it=it, s=len(self.text), e=len(self.text))
        self.text = text
        self.add("input", it=it, s=len(text), len=len(text), data=text)
        return self

    def events(self) -> list[LogEvent]:
        return [
            event_from_wire({k: v for k, v in event.items() if k != "page"} | {"seq": seq}, event["page"])
            for seq, event in enumerate(self.wire)
        ]


def measures(start: str, log: Log, thresholds=(200.0, 500.0, 1000.0, 2000.0)):
    events = log.events()
    assert replay(start, events, final_text=log.text).ok
    return process_measures(start, events, thresholds_ms=thresholds)


def located(result, threshold: float) -> dict[str, int]:
    return {where: count for where, (count, _) in result.at(threshold).by_location.items() if count}


# ---------------------------------------------------------------- pauses and their locations


def test_a_pause_inside_a_word_is_located_within_the_word():
    log = Log("The c").type("a").type("t", gap=1200)  # at the end: production, no revision
    result = measures("The c", log)
    assert located(result, 1000) == {"within_word": 1}
    assert result.at(1000).by_location["within_word"] == (1, 1200.0)
    assert result.flat()["pause_ms_within_word@1000"] == 1200.0


def test_pauses_between_words_and_between_sentences():
    log = Log("The").type(" ", gap=600).type("cat", gap=700).type(".", gap=50).type(" ", gap=900).type("A", gap=800)
    result = measures("The", log, thresholds=(500.0, 800.0))
    # "c" after "The ": between words (the first key has no interval before it); " " after "cat." and
    # "A" after "cat. ": between sentences.
    assert located(result, 500) == {"between_words": 1, "within_word": 2, "between_sentences": 2}
    assert located(result, 800) == {"between_sentences": 2}
    assert result.at(800).total_ms == 1700.0


def test_pauses_before_and_after_a_revision():
    # Type at the end, pause, Backspace (a revision), pause, type at the end again.
    log = Log("ab").type("c", gap=100).backspace(gap=1500).type("d", gap=1200)
    result = measures("ab", log)
    assert located(result, 1000) == {"before_revision": 1, "after_revision": 1}


def test_thresholds_count_the_pauses_at_or_above_them():
    log = Log("").type("a", gap=0).type("b", gap=199).type("c", gap=200).type("d", gap=999).type("e", gap=2500)
    result = measures("", log)
    assert result.intervals == (199.0, 200.0, 999.0, 2500.0)
    assert [p.count for p in result.pauses] == [3, 2, 1, 1]
    assert result.at(200).total_ms == 3699.0
    assert result.iki_median == pytest.approx(599.5)


def test_iki_median_and_iqr_as_numpy_computes_them():
    log = Log("").type("a", gap=0).type("b", gap=100).type("c", gap=400).type("d", gap=200).type("e", gap=300)
    result = measures("", log)
    assert result.intervals == (100.0, 400.0, 200.0, 300.0)
    assert (result.iki_median, result.iki_q1, result.iki_q3, result.iki_iqr) == (250.0, 175.0, 325.0, 150.0)
    values = np.array(result.intervals)
    assert result.iki_iqr == np.percentile(values, 75) - np.percentile(values, 25)


def test_intervals_never_cross_a_page_load():
    log = Log("").type("ab", gap=100)
    log.reload()
    log.type("c", gap=5000)  # 5 s after its own page load: not an interval of the first page
    result = measures("", log)
    assert result.intervals == (100.0,)
    assert result.at(2000).count == 0
    assert result.at(2000).p_bursts == 2  # the page load ends the first burst


# ---------------------------------------------------------------- bursts and revisions


def test_a_burst_ended_by_a_revision_and_one_ended_by_a_pause():
    log = Log("").type("abc", gap=100).backspace(gap=100).type("d", gap=100).type("e", gap=2500).type("f")
    result = measures("", log).at(2000)
    # "abc" ends at the Backspace (R-burst, 200 ms); "d" ends at the 2.5 s pause (P); "ef" at the end (P).
    assert (result.r_bursts, result.r_burst_chars, result.r_burst_ms) == (1, 3.0, 200.0)
    assert (result.p_bursts, result.p_burst_chars, result.p_burst_ms) == (2, 1.5, 50.0)
    assert result.burst_chars == 2.0


def test_a_pause_before_a_revision_ends_an_r_burst():
    log = Log("xy").type("ab", gap=100).type("Z", at=0, gap=3000)
    result = measures("xy", log).at(2000)
    assert (result.r_bursts, result.p_bursts) == (1, 1)  # "ab" (ended at the revision), "Z" (the end)


def test_revisions_are_episodes_sized_in_characters():
    # Backspace x3 at the end: one deletion; typing "XY" inside: one insertion; typing at the end: none.
    log = Log("hello world").backspace(3).type("XY", at=0).type("!")
    result = measures("hello world", log)
    assert (result.revision_deletions, result.revision_insertions, result.revisions) == (1, 1, 2)
    assert (result.deleted_chars, result.inserted_chars) == (3, 2)
    assert result.produced_chars == 3
    assert result.product_process_ratio == pytest.approx(len("XYhello wo!") / (11 + 3))


def test_a_replaced_selection_is_a_deletion_then_an_insertion():
    log = Log("one two")
    log.wait(100)
    log.add("keydown", key="T")
    log.change(4, 7, "T", "insertText")  # "two" selected, then T typed over it
    result = measures("one two", log)
    assert (result.revision_deletions, result.revision_insertions) == (1, 0)  # "T" lands at the end
    assert result.deleted_chars == 3 and result.produced_chars == 1


def test_a_paste_is_one_action_producing_its_characters():
    log = Log("a b").paste("long text ", at=2).paste("X", at=0, keyboard=False)
    result = measures("a b", log)
    trace = trace_log("a b", log.events())
    assert [len(action.changes) for action in trace.actions] == [0, 1, 1]  # Control, v (its paste), a menu paste
    assert [action.keyed for action in trace.actions] == [True, True, False]
    assert result.produced_chars == 11
    assert result.revision_insertions == 2  # neither at the end


def test_undo_and_redo_produce_nothing_but_revise():
    log = Log("ab").type("c").history("ab", "historyUndo").history("abc", "historyRedo")
    result = measures("ab", log)
    assert result.produced_chars == 1  # only the typed "c"
    assert (result.revision_deletions, result.revision_insertions) == (1, 0)  # the undo deletes; redo is at the end
    assert result.product_process_ratio == 1.0


# A Japanese IME composition typed into 「」 and committed as 日本 (Chromium's events).
IME_WIRE = [
    {"t": 0, "k": "load", "data": "「」", "len": 2},
    {"t": 4, "k": "keydown", "key": "Process"},
    {"t": 5, "k": "compositionstart", "data": ""},
    {"t": 6, "k": "compositionupdate", "data": "に"},
    {"t": 7, "k": "beforeinput", "it": "insertCompositionText", "s": 1, "e": 1},
    {"t": 8, "k": "input", "it": "insertCompositionText", "s": 2, "len": 3, "data": "に"},
    {"t": 9, "k": "keydown", "key": "Process"},
    {"t": 10, "k": "compositionupdate", "data": "にほん"},
    {"t": 11, "k": "beforeinput", "it": "insertCompositionText", "s": 2, "e": 2},
    {"t": 12, "k": "input", "it": "insertCompositionText", "s": 4, "len": 5, "data": "ほん"},
    {"t": 19, "k": "keydown", "key": " "},
    {"t": 20, "k": "compositionupdate", "data": "日本"},
    {"t": 21, "k": "beforeinput", "it": "insertCompositionText", "s": 4, "e": 4},
    {"t": 22, "k": "input", "it": "insertCompositionText", "s": 3, "len": 4, "data": ""},
    {"t": 30, "k": "compositionend", "data": "日本"},
]


def test_an_ime_composition_produces_its_committed_text_once():
    events = [event_from_wire(dict(event, seq=seq), "p") for seq, event in enumerate(IME_WIRE)]
    result = process_measures("「」", events)
    assert result.actions == 3 and result.intervals == (5.0, 10.0)
    assert result.produced_chars == 2  # 日本, not に + ほん + 日本
    assert (result.revision_deletions, result.revision_insertions, result.inserted_chars) == (0, 1, 2)
    assert result.product_process_ratio == 1.0
    assert s_notation("「」", events) == "「{日本}¹」"


# ---------------------------------------------------------------- S-notation


def test_s_notation_marks_deletions_insertions_and_breaks():
    log = Log("The cat.").type(" A").backspace().type("B").type("b", at=4)
    assert s_notation("The cat.", log.events()) == "The {b}²cat. [A]¹|¹B|²"


def test_s_notation_escapes_its_own_characters():
    log = Log("a[b]²").type("{", at=0)
    assert s_notation("a[b]²", log.events()) == "{\\{}¹a\\[b\\]\\²"


# ---------------------------------------------------------------- names and thresholds


def test_measure_names_parse_with_their_thresholds():
    assert parse_measure("pause_count@1000") == ("pause_count", 1000.0)
    assert parse_measure("pause_ms_within_word@250.5") == ("pause_ms_within_word", 250.5)
    assert parse_measure("product_process_ratio") == ("product_process_ratio", None)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("pause_count", "needs a pause threshold"),
        ("revisions@200", "takes no pause threshold"),
        ("pause_count@nan", "must be a number of milliseconds more than 0"),
        ("pause_count@inf", "must be a number of milliseconds more than 0"),
        ("pause_count@-5", "must be a number of milliseconds more than 0"),
        ("pause_count@1e400", "must be a number of milliseconds more than 0"),
        ("pause_count@x", "is not a number of milliseconds"),
        ("typing_speed", "is not a process measure"),
    ],
)
def test_bad_measure_names_are_refused_by_name(name, message):
    with pytest.raises(MeasureNameError, match=message):
        parse_measure(name)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("200,nan", "'nan' must be a number"),
        ("200,-1", "'-1' must be a number"),
        ("99999999999", "at most 3600000"),
        ("200,,500", "is empty"),
        ("200,500,200", "200 is given twice"),
        (",".join(str(n) for n in range(1, 30)), "at most 20 pause thresholds"),
        ("0x10", "is not a number"),
    ],
)
def test_bad_pause_thresholds_are_refused_naming_the_option(text, message):
    with pytest.raises(MeasureNameError, match=re.escape(message)):
        pause_thresholds(text)


def test_pause_thresholds_default_and_sort():
    assert pause_thresholds(None) == pause_thresholds(" ") == (200.0, 500.0, 1000.0, 2000.0)
    assert pause_thresholds("2000, 300") == (300.0, 2000.0)


# ---------------------------------------------------------------- invariants on generated logs


def _renumbered(events: list[LogEvent], gaps: list[int], rng: random.Random) -> list[LogEvent]:
    seq, out = 0, []
    for index, event in enumerate(events):
        seq += 1 + gaps[index % len(gaps)]
        out.append(dataclasses.replace(event, seq=seq))
    rng.shuffle(out)
    return out


def _strip_s_notation(text: str) -> str:
    """The final text an S-notation describes: deleted pieces, breaks and brackets left out."""
    out, depth, index = [], 0, 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if not depth:
                out.append(text[index + 1])
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char not in "{}|":
            if not depth:
                out.append(char)
            index += 1
            continue
        index += 1
        while index < len(text) and text[index] in "⁰¹²³⁴⁵⁶⁷⁸⁹" and char in "]}|":
            index += 1
    return "".join(out)


@settings(max_examples=60, deadline=None)
@given(honest_actions, st.lists(st.integers(0, 3), min_size=1, max_size=50), st.integers(0, 2**32 - 1))
def test_measures_do_not_depend_on_event_order_or_seq_gaps(actions, gaps, seed):
    stream = Stream("Das ist ein Test.").run(actions)
    events = stream.events
    result = process_measures(stream.original, events)
    again = process_measures(stream.original, _renumbered(events, gaps, random.Random(seed)))
    assert dataclasses.asdict(again) == dataclasses.asdict(result)


@settings(max_examples=60, deadline=None)
@given(honest_actions)
def test_measures_are_consistent_on_any_honest_log(actions):
    stream = Stream("Das ist ein Test.").run(actions)
    trace = trace_log(stream.original, stream.events)
    assert trace.final_text == stream.text == replay(stream.original, stream.events).text
    text = trace.start_text  # the sub-changes, applied in order, give the final text
    units = bytearray(text.encode("utf-16-le", "surrogatepass"))
    for change in trace.changes:
        piece = b"" if change.deletion else change.text.encode("utf-16-le", "surrogatepass")
        units[2 * change.start : 2 * change.start + (2 * change.units if change.deletion else 0)] = piece
    assert units.decode("utf-16-le", "surrogatepass") == stream.text
    assert _strip_s_notation(s_notation(stream.original, stream.events)) == stream.text
    result = process_measures(stream.original, stream.events)
    counts = [pauses.count for pauses in result.pauses]
    assert counts == sorted(counts, reverse=True)  # a higher threshold keeps fewer pauses
    for pauses in result.pauses:
        assert sum(count for count, _ in pauses.by_location.values()) == pauses.count
        assert set(pauses.by_location) == set(LOCATIONS)
        assert pauses.total_ms == pytest.approx(sum(ms for _, ms in pauses.by_location.values()))
    for name, value in result.flat().items():
        assert value is None or (math.isfinite(value) and value >= 0), name


def test_an_iwslt_like_post_edit_has_finite_measures():
    """A post-edit of an MT output as IWSLT 2019's post-editors made them: reading, a few word-level
    corrections across the sentence, deletions, a paste, typing at human speed with pauses."""
    rng = random.Random(2019)
    mt = "The european parliament have adopt yesterday a resolution about the climate change in Europe ."
    stream = Stream(mt)
    actions = []
    for _ in range(40):
        roll = rng.random()
        if roll < 0.6:
            actions.append(("type", rng.choice("abcdefghij ,."), rng.uniform(80, 400)))
        elif roll < 0.75:
            actions.append(("backspace", None, rng.uniform(100, 900)))
        elif roll < 0.9:
            actions.append(("arrow", rng.random() < 0.7, rng.uniform(100, 3000)))
        else:
            actions.append(("paste", None, rng.uniform(500, 6000)))
    stream.run(actions)
    result = process_measures(mt, stream.events, thresholds_ms=pause_thresholds("200,500,1000,2000"))
    assert result.replay_ok and result.actions >= 30
    values = result.flat()
    assert len(values) == 10 + 4 * (2 + 2 * len(LOCATIONS) + 8)
    assert all(value is None or math.isfinite(value) for value in values.values())
    assert 0 < result.product_process_ratio <= 1


def test_quantile_interpolates_as_numpy():
    values = sorted(random.Random(1).uniform(0, 1000) for _ in range(37))
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 1.0):
        assert quantile(values, q) == pytest.approx(np.quantile(values, q))
