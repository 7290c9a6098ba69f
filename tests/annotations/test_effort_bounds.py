"""Effort definition 3: counted keys have physical bounds (a human rate), IME and commands count what they did.

Hand-made logs with known answers, the attacks of issue 18 §1, and Hypothesis-generated logs of honest and
lying clients (tests/annotations/effort_streams.py) against the invariants: no RATE_WINDOW_MS of the
timeline holds more than RATE_LIMIT_KEYS counted keys of any class; replay stays exact; honest logs at
human rates are counted exactly.
"""

import csv
import io
from bisect import bisect_right
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.api.serializers_editor import event_from_wire
from annotations.effort import (
    RATE_LIMIT_KEYS,
    RATE_WINDOW_MS,
    derive_effort,
    find_keys,
    most_keys_in,
    visit_clocks,
)
from annotations.models import Assignment, PostEdit
from annotations.replay import replay
from annotations.selectors_progress import project_progress
from editlab.benchmarks.effort_attacks import START_TEXT, command_flood, flood_a_backspace, ime_flood
from metrics.exports import export_spec, export_stream
from tests.annotations import effort_definition_2 as definition_2
from tests.annotations.editing_helpers import open_item, post_json, send, url
from tests.annotations.effort_streams import Stream, honest_actions, lying_actions
from tests.annotations.test_effort import IDLE_MS, counts, log, typed

CLASSES = ("letters", "digits", "spaces", "symbols", "erase", "navigation", "copy", "cut", "paste", "undo_redo")


def derived(events, original: str, final_text: str | None = None, **limits):
    """Replay and effort as the submit derives them."""
    result = replay(original, events, final_text=final_text)
    effort = derive_effort(
        events,
        idle_threshold_ms=IDLE_MS,
        committed_compositions=result.committed_compositions,
        noop_inputs=result.noop_inputs,
        **limits,
    )
    return result, effort


def wire_log(events: list[dict]):
    return [event_from_wire(event, "attack") for event in events]


def assert_within_the_bound(keys) -> None:
    """No half-open window (t - RATE_WINDOW_MS, t] of the timeline holds more than RATE_LIMIT_KEYS counted keys."""
    times = [key.at_ms for key in keys]
    assert times == sorted(times)
    for index, at in enumerate(times):
        first = bisect_right(times, at - RATE_WINDOW_MS)
        assert bisect_right(times, at) - first <= RATE_LIMIT_KEYS, (at, times[first : index + 1])


# ---------------------------------------------------------------- the attacks of issue 18 §1


def test_a_flood_of_real_typing_and_erasing_counts_one_second_of_keys():
    result, effort = derived(wire_log(flood_a_backspace()), START_TEXT, START_TEXT)
    assert result.ok
    assert (effort.wall_ms, effort.letters, effort.erase, effort.keystrokes, effort.allkeys) == (300, 25, 25, 50, 50)
    assert (effort.uncorroborated_keys, effort.rate_excess_keys) == (5950, 5950)


def test_a_composition_of_5000_letters_in_9_ms_counts_as_one_and_is_fast():
    result, effort = derived(wire_log(ime_flood()), START_TEXT, START_TEXT)
    assert result.ok and result.committed_compositions
    assert (effort.letters, effort.erase, effort.keystrokes, effort.allkeys) == (1, 1, 2, 2)
    assert (effort.uncorroborated_keys, effort.rate_excess_keys, effort.fast_compositions) == (0, 0, 1)


def test_copies_arrows_and_undo_with_nothing_to_undo_count_one_second_of_keys():
    result, effort = derived(wire_log(command_flood()), START_TEXT, START_TEXT)
    assert result.ok
    # The copies come first on the timeline and take the second's 50 keys; the undos did nothing.
    assert counts(effort) == {"copy": 50}
    assert (effort.allkeys, effort.uncorroborated_keys, effort.rate_excess_keys) == (50, 3940, 3940)


# ---------------------------------------------------------------- the rate bound, by hand


def test_the_51st_key_within_a_second_counts_apart_and_one_a_second_later_counts():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        *({"t": 100 + n * 0.01, "k": "keydown", "key": "ArrowLeft"} for n in range(51)),
        {"t": 1100, "k": "keydown", "key": "ArrowLeft"},  # the first key's window (100, 1100] is over
        {"t": 1100.005, "k": "keydown", "key": "ArrowLeft"},  # the second one's (100.01, 1100.01] is not
        {"t": 2000, "k": "submit"},
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.navigation, effort.rate_excess_keys, effort.uncorroborated_keys) == (51, 2, 2)
    assert most_keys_in(999.9) == RATE_LIMIT_KEYS == 50 and most_keys_in(1000) == 100


def test_a_fast_typist_and_a_held_key_never_reach_the_bound():
    text = ""
    events = [{"t": 0, "k": "load", "data": "", "len": 0}]
    t = 100.0
    for n in range(60):  # 15 keys/s for 4 s
        events += typed(t, "abcdefghij"[n % 10], len(text), len(text) + 1)
        text += "abcdefghij"[n % 10]
        t += 1000 / 15
    for n in range(150):  # then "x" held for 5 s: auto-repeat at 33 keys/s (macOS's fastest)
        events += typed(t, "x", len(text), len(text) + 1, repeat=n > 0)
        text += "x"
        t += 30
    for _ in range(40):  # and Backspace held
        events += typed(t, "Backspace", len(text) - 1, len(text) - 1, it="deleteContentBackward")
        text = text[:-1]
        t += 30
    events.append({"t": t, "k": "submit"})
    effort = derive_effort(log(*events), idle_threshold_ms=IDLE_MS)
    assert counts(effort) == {"letters": 210, "erase": 40}
    assert (effort.rate_excess_keys, effort.uncorroborated_keys, effort.fast_compositions) == (0, 0, 0)


def test_page_loads_share_one_timeline_so_reloads_do_not_renew_the_bound():
    # Ten page loads, each 60 arrow keys at its own t = 0: the visits take no time, so all lie at one point.
    events = log(
        *(
            event
            for n in range(10)
            for event in (
                {"t": 0, "k": "load", "data": "", "len": 0, "page": f"v{n}"},
                *({"t": 0, "k": "keydown", "key": "ArrowRight", "page": f"v{n}"} for _ in range(60)),
            )
        )
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS)
    assert (effort.wall_ms, effort.navigation, effort.rate_excess_keys) == (0, 50, 550)
    # Each visit a second long: each may count its 50, one after the other.
    spaced = log(
        *(
            event
            for n in range(3)
            for event in (
                {"t": 0, "k": "load", "data": "", "len": 0, "page": f"v{n}"},
                *({"t": 1, "k": "keydown", "key": "ArrowRight", "page": f"v{n}"} for _ in range(60)),
                {"t": 1000, "k": "mousedown", "page": f"v{n}"},
            )
        )
    )
    effort = derive_effort(spaced, idle_threshold_ms=IDLE_MS)
    assert (effort.wall_ms, effort.navigation, effort.rate_excess_keys) == (3000, 150, 30)


def test_keys_beyond_the_server_bound_lie_at_its_end():
    # The client claims 60 keys one per 100 ms (6 s); the server saw the page 1 s (+ tolerance, here none).
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        *({"t": 100.0 * n, "k": "keydown", "key": "End"} for n in range(1, 61)),
    )
    effort = derive_effort(events, idle_threshold_ms=IDLE_MS, visit_limits_ms={"p1": 1000}, total_limit_ms=1000)
    assert effort.wall_ms == 1000
    # 10 keys before the cut (100..1000 ms), then 50 at the cut: 50 in the window (0, 1000] in all.
    assert (effort.navigation, effort.rate_excess_keys) == (50, 10)
    clocks = visit_clocks(events, {"p1": 1000})
    assert clocks == {"p1": (0.0, 0.0, 1000.0)}


# ---------------------------------------------------------------- IME and commands, by hand


def composition(
    keys_before: int, keys_inside: int, committed: str, at: int = 0, t: float = 100, key_gap: float = 100
) -> list[dict]:
    """An IME composition committing `committed` at `at`, keys_inside keydowns key_gap ms apart."""
    end = t + 2 + key_gap * keys_inside + 10
    return [
        *({"t": t, "k": "keydown", "key": "Process", "code": "KeyA"} for _ in range(keys_before)),
        {"t": t + 1, "k": "compositionstart", "data": ""},
        *({"t": t + 2 + key_gap * n, "k": "keydown", "key": "Process", "code": "KeyA"} for n in range(keys_inside)),
        {"t": end, "k": "compositionupdate", "data": committed},
        {"t": end + 1, "k": "beforeinput", "it": "insertCompositionText", "s": at, "e": at},
        {"t": end + 2, "k": "input", "it": "insertCompositionText", "s": at + len(committed), "len": at + len(committed), "data": committed},
        {"t": end + 3, "k": "compositionend", "data": committed},
    ]  # fmt: skip


def test_a_composition_counts_the_keys_that_produced_it_at_most_its_characters():
    # "nihongo" + Space + Enter: 9 keys for 3 characters -> 3 letters.
    events = log({"t": 0, "k": "load", "data": "", "len": 0}, *composition(1, 8, "日本語"), {"t": 700, "k": "submit"})
    _, effort = derived(events, "", "日本語")
    assert (effort.letters, effort.uncorroborated_keys, effort.fast_compositions) == (3, 0, 0)
    # A prediction committing 5 characters after 2 keys counts the 2 keys.
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0}, *composition(1, 1, "ありがとう"), {"t": 700, "k": "submit"}
    )
    _, effort = derived(events, "", "ありがとう")
    assert (effort.letters, effort.uncorroborated_keys, effort.fast_compositions) == (2, 0, 0)
    # No key at all (an emoji picker, dictation): one composition.
    events = log({"t": 0, "k": "load", "data": "", "len": 0}, *composition(0, 0, "👍🏽ok"), {"t": 700, "k": "submit"})
    _, effort = derived(events, "", "👍🏽ok")
    assert (effort.symbols, effort.letters, effort.keystrokes) == (1, 0, 1)


def test_a_typed_key_that_opens_a_composition_is_the_compositions_not_a_letter_besides():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        {"t": 100, "k": "keydown", "key": "e"},  # a browser that names the key opening a dead-key composition
        *composition(0, 1, "é", t=100),
        {"t": 700, "k": "submit"},
    )
    _, effort = derived(events, "", "é")
    assert (effort.letters, effort.keystrokes, effort.uncorroborated_keys) == (1, 1, 0)


def test_a_composition_longer_than_its_time_allows_is_fast():
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        *composition(1, 60, "x" * 60),  # 61 keys within 6 s: fine
        {"t": 9000, "k": "submit"},
    )
    _, effort = derived(events, "", "x" * 60)
    assert (effort.letters, effort.fast_compositions) == (60, 0)
    many = "x" * (most_keys_in(1000) + 1)  # 101 characters from 101 keys within 1,000 ms: too many
    events = log(
        {"t": 0, "k": "load", "data": "", "len": 0},
        *composition(1, len(many) - 1, many, key_gap=10),
        {"t": 9000, "k": "submit"},
    )
    _, effort = derived(events, "", many)
    # Flagged, and its keys are held to the bound like any other: 50 in the second they took.
    assert (effort.fast_compositions, effort.letters, effort.rate_excess_keys) == (1, 50, 51)


def test_commands_that_change_nothing_are_not_commands():
    events = log(
        {"t": 0, "k": "load", "data": "abc", "len": 3},
        {"t": 100, "k": "copy", "data": ""},  # an empty selection
        {"t": 200, "k": "cut", "data": ""},
        {"t": 300, "k": "paste", "data": ""},  # an empty clipboard: no input follows
        {"t": 400, "k": "paste", "data": "b"},
        {"t": 401, "k": "beforeinput", "it": "insertFromPaste", "s": 3, "e": 3},
        {"t": 402, "k": "input", "it": "insertFromPaste", "s": 3, "len": 3, "data": ""},  # inserted nothing
        {"t": 500, "k": "keydown", "key": "z", "mods": 1},  # nothing to undo: no events follow
        {"t": 600, "k": "beforeinput", "it": "historyRedo", "s": 3, "e": 3},
        {"t": 601, "k": "input", "it": "historyRedo", "s": 3, "len": 3, "data": "abc"},  # the same text
        {"t": 700, "k": "keydown", "key": "q"},
        {"t": 701, "k": "beforeinput", "it": "insertText", "s": 3, "e": 3},
        {"t": 702, "k": "input", "it": "insertText", "s": 3, "len": 3, "data": ""},  # typed nothing
        # What did something counts: a copy, a cut, a paste and an undo that changed the text.
        {"t": 800, "k": "copy", "data": "ab"},
        {"t": 900, "k": "cut", "data": "c"},
        {"t": 901, "k": "beforeinput", "it": "deleteByCut", "s": 2, "e": 3},
        {"t": 902, "k": "input", "it": "deleteByCut", "s": 2, "len": 2},
        {"t": 1000, "k": "paste", "data": "ab"},
        {"t": 1001, "k": "beforeinput", "it": "insertFromPaste", "s": 2, "e": 2},
        {"t": 1002, "k": "input", "it": "insertFromPaste", "s": 4, "len": 4, "data": "ab"},
        {"t": 1100, "k": "beforeinput", "it": "historyUndo", "s": 4, "e": 4},
        {"t": 1101, "k": "input", "it": "historyUndo", "s": 2, "len": 2, "data": "ab"},
        {"t": 1200, "k": "submit"},
    )
    result, effort = derived(events, "abc", "ab")
    assert result.ok
    assert counts(effort) == {"copy": 1, "cut": 1, "paste": 1, "undo_redo": 1}
    assert (effort.allkeys, effort.uncorroborated_keys) == (4, 0)  # the "q" was announced, then typed nothing


# ---------------------------------------------------------------- generated logs


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(actions=honest_actions, original=st.text("abc .", max_size=12))
def test_an_honest_log_at_human_rates_counts_every_key_exactly(actions, original):
    stream = Stream(original).run(actions)
    result, effort = derived(stream.events, original, stream.text)
    assert result.ok, result.divergence
    assert {name: getattr(effort, name) for name in CLASSES} == {name: stream.truth[name] for name in CLASSES}
    assert (effort.uncorroborated_keys, effort.rate_excess_keys, effort.fast_compositions) == (0, 0, 0)
    # As definition 2 counted it, but for the commands that did nothing.
    before = definition_2.count_keys(stream.events, committed_compositions=result.committed_compositions)
    assert {name: getattr(effort, name) for name in CLASSES} == {
        name: before[name] - stream.no_effect[name] for name in CLASSES
    }


@FAST
@given(
    actions=lying_actions,
    original=st.text("abc .", max_size=12),
    limits=st.one_of(st.none(), st.floats(0, 20_000)),
)
def test_a_lying_log_counts_within_the_rate_bound_and_still_replays_exactly(actions, original, limits):
    stream = Stream(original).run(actions)
    bounds = {} if limits is None else {"visit_limits_ms": {}, "total_limit_ms": limits}
    result, effort = derived(stream.events, original, stream.text, **bounds)
    assert result.ok, result.divergence
    # Every counted key of every class lies on the timeline, whose length is the wall time.
    counted = sum(getattr(effort, name) for name in CLASSES)
    assert counted == effort.allkeys <= most_keys_in(effort.wall_ms + 0.5)
    spans = None
    if limits is not None:
        spans = {}
        left = limits
        for page, (_, _, span) in visit_clocks(stream.events).items():
            spans[page] = min(span, left)
            left -= spans[page]
    found = find_keys(
        stream.events,
        committed_compositions=result.committed_compositions,
        noop_inputs=result.noop_inputs,
        clocks=visit_clocks(stream.events, spans),
    )
    assert len(found.counted) == effort.allkeys
    assert_within_the_bound(found.counted)
    assert found.rate_excess == effort.rate_excess_keys <= effort.uncorroborated_keys


# ---------------------------------------------------------------- through the API: stored, flagged, travelling


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("attack", "stored"),
    [
        (flood_a_backspace, {"keystrokes": 50, "allkeys": 50, "uncorroborated_keys": 5950, "wall_ms": 300}),
        (ime_flood, {"keystrokes": 2, "allkeys": 2, "uncorroborated_keys": 0, "wall_ms": 9}),
        (command_flood, {"keystrokes": 0, "allkeys": 50, "uncorroborated_keys": 3940, "wall_ms": 64}),
    ],
)
def test_the_attacks_are_stored_bounded_and_flagged_key_rate(annotator, annotator_client, attack, stored):
    post_edit, visit = open_item(annotator, model_output=START_TEXT, now=timezone.now() - timedelta(seconds=5))
    events = attack()
    for start in range(0, len(events), 2000):
        assert send(annotator_client, post_edit, visit, events[start : start + 2000]).status_code == 200
    payload = {"page_id": str(visit.page_id), "text": START_TEXT, "version": 0, "last_seq": len(events) - 1}
    assert post_json(annotator_client, url("submit", post_edit), payload).status_code == 200
    post_edit.refresh_from_db()
    assert {name: getattr(post_edit, name) for name in stored} == stored
    assert (post_edit.flags, post_edit.replay_ok, post_edit.definition_version) == (["key_rate"], True, "3")
    assert post_edit.extra["key_rate"] == {
        "window_ms": RATE_WINDOW_MS,
        "limit": RATE_LIMIT_KEYS,
        "excess_keys": stored["uncorroborated_keys"],
        "fast_compositions": int(attack is ime_flood),
    }
    # The flag travels like the others: the progress page counts it, the export carries it.
    progress = project_progress(project=post_edit.assignment.item.project)
    assert progress.total.flag_counts == {"key_rate": 1}
    exported = b"".join(export_stream(export_spec(project=post_edit.assignment.item.project), "csv"))
    row = next(csv.DictReader(io.StringIO(exported.decode("utf-8-sig"))))
    assert (row["flags"], row["definition_version"]) == ("key_rate", "3")


@pytest.mark.django_db
def test_a_post_edit_submitted_under_definition_2_keeps_its_figures(annotator, annotator_client):
    post_edit, visit = open_item(annotator, model_output=START_TEXT)
    assignment = post_edit.assignment
    PostEdit.objects.filter(pk=post_edit.pk).update(
        definition_version="2", allkeys=6000, keystrokes=6000, text=START_TEXT, submitted_at=timezone.now()
    )
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.SUBMITTED)
    payload = {"page_id": str(visit.page_id), "text": START_TEXT, "version": 0, "last_seq": 0}
    assert post_json(annotator_client, url("submit", post_edit), payload).status_code == 200  # idempotent
    post_edit.refresh_from_db()
    assert (post_edit.definition_version, post_edit.allkeys, post_edit.flags) == ("2", 6000, [])
