"""Submit and skip: effort derived from the stored log, replay, clipping by server time, visits."""

from datetime import timedelta

import pytest
from django.http import Http404
from django.utils import timezone

from annotations.editing.clock import server_observed_ms
from annotations.editing.errors import PostEditClosed
from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_open, post_edit_submit
from annotations.models import DEFINITION_VERSION, Assignment, PostEdit, Visit
from tests.annotations.editing_helpers import EDITED, ORIGINAL, edit_log, open_item, post_json, send, url, wire
from tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


def submit(client, post_edit, visit, text=EDITED, version=0, last_seq=10):
    payload = {"page_id": str(visit.page_id), "text": text, "version": version, "last_seq": last_seq}
    return post_json(client, url("submit", post_edit), payload)


def test_submit_derives_counts_and_times_from_the_stored_events(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=30))
    send(annotator_client, post_edit, visit, edit_log())
    response = submit(annotator_client, post_edit, visit)
    assert response.status_code == 200
    assert response.json() == {"next_url": "/annotate/", "diff_url": f"/edit/{post_edit.assignment_id}/diff/"}
    post_edit.refresh_from_db()
    assert post_edit.text == EDITED
    assert (post_edit.letters, post_edit.digits, post_edit.spaces, post_edit.symbols) == (2, 0, 0, 0)
    assert (post_edit.erase, post_edit.navigation, post_edit.commands) == (0, 0, 0)
    assert (post_edit.visible, post_edit.keystrokes, post_edit.allkeys) == (2, 2, 2)
    # load at 120 ms, first input at 1022 ms, submit at 2621 ms.
    assert (post_edit.wall_ms, post_edit.active_ms, post_edit.reading_ms) == (2501, 2501, 902)
    # Keydowns at 1020, 1420, 2620 ms.
    assert (post_edit.pauses_300_count, post_edit.pauses_300_ms) == (2, 1600)
    assert (post_edit.pauses_1000_count, post_edit.pauses_1000_ms) == (1, 1200)
    assert (post_edit.pauses_2000_count, post_edit.pauses_2000_ms) == (0, 0)
    assert (post_edit.replay_ok, post_edit.replay_divergence, post_edit.flags) == (True, None, [])
    assert post_edit.definition_version == DEFINITION_VERSION
    assert 30_000 <= post_edit.server_elapsed_ms < 60_000
    assignment = post_edit.assignment
    assert (assignment.status, assignment.finished) == (Assignment.SUBMITTED, post_edit.submitted_at)
    visit.refresh_from_db()
    assert visit.ended_at == post_edit.submitted_at


def test_wall_time_beyond_the_server_observed_time_is_clipped_and_flagged(annotator, settings):
    settings.EDITLAB_CLOCK_TOLERANCE_MS = 500
    start = timezone.now()
    post_edit, visit = open_item(annotator, now=start)
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(edit_log()), now=start)
    post_edit_submit(
        post_edit=post_edit, page_id=visit.page_id, text=EDITED, version=0, last_seq=10,
        now=start + timedelta(seconds=1),
    )  # fmt: skip
    post_edit.refresh_from_db()
    # The client claims 2501 ms; the server saw 1000 ms, plus 500 ms tolerance.
    assert (post_edit.wall_ms, post_edit.active_ms, post_edit.reading_ms) == (1500, 1500, 902)
    assert post_edit.server_elapsed_ms == 1000
    assert post_edit.flags == ["wall_clipped"]
    assert post_edit.replay_ok is True


def test_a_replay_mismatch_is_flagged_and_the_edit_kept(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=30))
    send(annotator_client, post_edit, visit, edit_log())
    response = submit(annotator_client, post_edit, visit, text="This is a TEST.")
    assert response.status_code == 200
    post_edit.refresh_from_db()
    assert post_edit.text == "This is a TEST."
    assert post_edit.replay_ok is False
    assert post_edit.flags == ["replay_mismatch"]
    assert post_edit.replay_divergence == {
        "seq": 10,
        "kind": "submit",
        "reason": "the replayed text differs from the submitted text",
        "expected_len": 15,
        "got_len": 15,
        "context": "This is a test.",
        "submitted_context": "This is a TEST.",
    }
    assert post_edit.letters == 2
    assert post_edit.assignment.status == Assignment.SUBMITTED


def test_a_double_submit_gives_one_result(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=30))
    send(annotator_client, post_edit, visit, edit_log())
    first = submit(annotator_client, post_edit, visit)
    post_edit.refresh_from_db()
    stored = {name: getattr(post_edit, name) for name in ("text", "submitted_at", "wall_ms", "version", "flags")}
    second = submit(annotator_client, post_edit, visit, text="Something else entirely.", version=7, last_seq=99)
    assert (second.status_code, second.json()) == (200, first.json())
    post_edit.refresh_from_db()
    assert {name: getattr(post_edit, name) for name in stored} == stored


def test_times_accumulate_across_two_visits(annotator):
    start = timezone.now() - timedelta(days=2)
    post_edit, first = open_item(annotator, model_output="ab", now=start)
    visit_one = [
        {"seq": 0, "t": 100, "k": "load", "data": "ab", "len": 2},
        {"seq": 1, "t": 5100, "k": "keydown", "key": "c"},
        {"seq": 2, "t": 5101, "k": "beforeinput", "it": "insertText", "s": 2, "e": 2},
        {"seq": 3, "t": 5102, "k": "input", "it": "insertText", "s": 3, "len": 3, "data": "c"},
        {"seq": 4, "t": 10_100, "k": "blur"},
    ]
    post_edit_ingest_events(
        post_edit=post_edit, page_id=first.page_id, events=wire(visit_one), now=start + timedelta(seconds=11)
    )
    # Another item in between, then back the next day (a new page load: a new visit).
    open_item(annotator, now=start + timedelta(seconds=12))
    next_day = start + timedelta(days=1)
    post_edit, second = post_edit_open(assignment=post_edit.assignment, user=annotator, now=next_day)
    assert post_edit.draft_text == "ab"  # no draft was saved; the log still holds the "c"
    visit_two = [
        {"seq": 5, "t": 50, "k": "load", "data": "abc", "len": 3},
        {"seq": 6, "t": 1050, "k": "keydown", "key": "d"},
        {"seq": 7, "t": 1051, "k": "beforeinput", "it": "insertText", "s": 3, "e": 3},
        {"seq": 8, "t": 1052, "k": "input", "it": "insertText", "s": 4, "len": 4, "data": "d"},
        {"seq": 9, "t": 3050, "k": "submit"},
    ]
    post_edit_ingest_events(
        post_edit=post_edit, page_id=second.page_id, events=wire(visit_two), now=next_day + timedelta(seconds=4)
    )
    post_edit_submit(
        post_edit=post_edit, page_id=second.page_id, text="abcd", version=0, last_seq=9,
        now=next_day + timedelta(seconds=4),
    )  # fmt: skip
    post_edit.refresh_from_db()
    assert (post_edit.wall_ms, post_edit.active_ms, post_edit.reading_ms) == (10_000 + 3000, 13_000, 5002)
    assert post_edit.server_elapsed_ms == 11_000 + 4000
    assert (post_edit.letters, post_edit.replay_ok, post_edit.flags) == (2, True, [])
    assert post_edit.first_shown_at == start


def test_opening_item_b_ends_item_as_visit(annotator):
    start = timezone.now()
    _, visit_a = open_item(annotator, now=start)
    _, visit_b = open_item(annotator, now=start + timedelta(seconds=5))
    _, someone_elses = open_item(AssignmentFactory().annotator, now=start + timedelta(seconds=6))
    visit_a.refresh_from_db()
    visit_b.refresh_from_db()
    someone_elses.refresh_from_db()
    assert visit_a.ended_at == start + timedelta(seconds=5)
    assert visit_b.ended_at is None
    assert someone_elses.ended_at is None


def test_events_of_a_visit_after_another_item_was_opened_do_not_count(annotator, settings):
    settings.EDITLAB_CLOCK_TOLERANCE_MS = 0
    start = timezone.now()
    post_edit, visit_a = open_item(annotator, model_output="ab", now=start)
    open_item(annotator, now=start + timedelta(seconds=10))  # item B opened in another tab at 10 s
    events = [
        {"seq": 0, "t": 0, "k": "load", "data": "ab", "len": 2},
        {"seq": 1, "t": 60_000, "k": "submit"},  # still ticking in A's tab a minute later
    ]
    post_edit_ingest_events(
        post_edit=post_edit, page_id=visit_a.page_id, events=wire(events), now=start + timedelta(minutes=1)
    )
    post_edit_submit(
        post_edit=post_edit, page_id=visit_a.page_id, text="ab", version=0, last_seq=1,
        now=start + timedelta(minutes=1),
    )  # fmt: skip
    post_edit.refresh_from_db()
    assert (post_edit.wall_ms, post_edit.server_elapsed_ms, post_edit.flags) == (10_000, 10_000, ["wall_clipped"])


def test_missing_events_at_submit_are_recorded_and_flagged(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=30))
    events = edit_log()
    send(annotator_client, post_edit, visit, events[:4] + events[6:])
    response = submit(annotator_client, post_edit, visit, last_seq=12)
    assert response.status_code == 200
    post_edit.refresh_from_db()
    assert post_edit.event_gaps == [[4, 5], [11, 12]]
    # The lost input also leaves the "i" key without the text change that corroborates it.
    assert post_edit.flags == ["keys_uncorroborated", "replay_mismatch", "event_gap"]
    assert post_edit.replay_ok is False


def test_a_stale_version_at_submit_is_a_conflict(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    other_tab = {"page_id": str(visit.page_id), "text": "Other tab.", "version": 0}
    post_json(annotator_client, url("draft", post_edit), other_tab)
    response = submit(annotator_client, post_edit, visit, version=0)
    assert response.status_code == 409
    assert response.json()["server_text"] == "Other tab."
    post_edit.refresh_from_db()
    assert (post_edit.submitted_at, post_edit.assignment.status) == (None, Assignment.IN_PROGRESS)


def test_submit_sends_the_annotator_to_the_next_open_item(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=30))
    later = AssignmentFactory(annotator=annotator)
    response = submit(annotator_client, post_edit, visit, last_seq=-1)
    assert response.json()["next_url"] == f"/edit/{later.pk}/"


def test_astral_characters_survive_storage_and_replay(annotator, annotator_client):
    post_edit, visit = open_item(annotator, model_output="ok 😀", now=timezone.now() - timedelta(seconds=30))
    events = [
        {"seq": 0, "t": 0, "k": "load", "data": "ok 😀", "len": 5},
        {"seq": 1, "t": 10, "k": "compositionstart", "data": ""},
        {"seq": 2, "t": 11, "k": "compositionupdate", "data": "👍🏽"},
        {"seq": 3, "t": 12, "k": "beforeinput", "it": "insertCompositionText", "s": 3, "e": 5},
        {"seq": 4, "t": 13, "k": "input", "it": "insertCompositionText", "s": 7, "len": 7, "data": "👍🏽"},
        {"seq": 5, "t": 14, "k": "compositionend", "data": "👍🏽"},
        {"seq": 6, "t": 20, "k": "submit"},
    ]
    assert send(annotator_client, post_edit, visit, events).status_code == 200
    assert submit(annotator_client, post_edit, visit, text="ok 👍🏽", last_seq=6).status_code == 200
    post_edit.refresh_from_db()
    # A composition no keydown produced (an emoji picker) counts as one, not per code point.
    assert (post_edit.replay_ok, post_edit.text, post_edit.symbols, post_edit.letters) == (True, "ok 👍🏽", 1, 0)


def test_post_edit_open_refuses_closed_and_foreign_assignments(annotator, other_annotator):
    post_edit, visit = open_item(annotator)
    with pytest.raises(Http404):
        post_edit_open(assignment=post_edit.assignment, user=other_annotator)
    post_edit_submit(post_edit=post_edit, page_id=visit.page_id, text=EDITED, version=0, last_seq=-1)
    with pytest.raises(PostEditClosed):
        post_edit_open(assignment=post_edit.assignment, user=annotator)
    assert Visit.objects.filter(post_edit=post_edit).count() == 1


def test_first_shown_is_set_once_and_the_assignment_started(annotator):
    start = timezone.now()
    post_edit, _ = open_item(annotator, now=start)
    post_edit, _ = post_edit_open(assignment=post_edit.assignment, user=annotator, now=start + timedelta(hours=1))
    assert post_edit.first_shown_at == start
    assert (post_edit.assignment.status, post_edit.assignment.started) == (Assignment.IN_PROGRESS, start)
    assert PostEdit.objects.count() == 1


# ---------------------------------------------------------------- skip


def skip(client, post_edit, visit, reason):
    return post_json(client, url("skip", post_edit), {"page_id": str(visit.page_id), "reason": reason})


def test_skip_needs_a_reason(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    for reason in ("", "   "):
        response = skip(annotator_client, post_edit, visit, reason)
        assert response.status_code == 400
        assert response.json()["detail"] == "reason: say why you skip this item"
    missing = post_json(annotator_client, url("skip", post_edit), {"page_id": str(visit.page_id)})
    assert missing.json() == {
        "detail": "reason: This field is required.",
        "code": "invalid",
        "errors": {"reason": ["This field is required."]},
    }
    assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.IN_PROGRESS


def test_skip_closes_the_item_keeps_its_log_and_is_final(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    send(annotator_client, post_edit, visit, edit_log()[:5])
    response = skip(annotator_client, post_edit, visit, " The source is garbled. ")
    assert response.json() == {"next_url": "/annotate/"}
    assignment = Assignment.objects.get(pk=post_edit.assignment_id)
    assert (assignment.status, assignment.skip_reason) == (Assignment.SKIPPED, "The source is garbled.")
    assert post_edit.events.count() == 5
    assert skip(annotator_client, post_edit, visit, "again").status_code == 200
    assert Assignment.objects.get(pk=post_edit.assignment_id).skip_reason == "The source is garbled."
    refused = submit(annotator_client, post_edit, visit)
    assert (refused.status_code, refused.json()["code"]) == (409, "closed")


def test_a_submitted_item_cannot_be_skipped(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    submit(annotator_client, post_edit, visit, last_seq=-1)
    response = skip(annotator_client, post_edit, visit, "changed my mind")
    assert response.status_code == 409
    assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.SUBMITTED


@pytest.mark.parametrize(
    "who, status",
    [("other_annotator_client", 404), ("researcher_client", 403), ("admin_client", 403), ("client", 403)],
)
def test_only_the_annotator_submits_or_skips(annotator, who, status, request):
    post_edit, visit = open_item(annotator)
    other = request.getfixturevalue(who)
    assert submit(other, post_edit, visit, last_seq=-1).status_code == status
    assert skip(other, post_edit, visit, "not mine").status_code == status
    assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.IN_PROGRESS


# ---------------------------------------------------------------- a client that lies about its effort


def test_ten_page_loads_in_a_second_cannot_add_up_their_clock_tolerance(annotator, settings):
    settings.EDITLAB_CLOCK_TOLERANCE_MS = 2000
    start = timezone.now()
    post_edit, _ = open_item(annotator, now=start)
    post_edit.visits.all().delete()
    visits = [
        post_edit_open(assignment=post_edit.assignment, user=annotator, now=start + timedelta(milliseconds=120 * n))[1]
        for n in range(10)
    ]
    for n, visit in enumerate(visits):  # each page load claims 2 s of active reading
        claim = [
            {"seq": 3 * n, "t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)},
            {"seq": 3 * n + 1, "t": 1000, "k": "mousedown"},
            {"seq": 3 * n + 2, "t": 2000, "k": "select", "s": 0, "e": 0, "src": "mouse"},
        ]
        post_edit_ingest_events(
            post_edit=post_edit, page_id=visit.page_id, events=wire(claim), now=start + timedelta(milliseconds=1150)
        )
    post_edit_submit(
        post_edit=post_edit, page_id=visits[-1].page_id, text=ORIGINAL, version=0, last_seq=29,
        now=start + timedelta(milliseconds=1200),
    )  # fmt: skip
    post_edit.refresh_from_db()
    # The server saw the item open for 1.2 s in all (nine 120 ms windows, the last one until the submit);
    # version 1 counted 10 x 2 s = 20 s. The tolerance is granted once: 1.2 s + 2 s.
    assert post_edit.server_elapsed_ms == 1200
    assert (post_edit.wall_ms, post_edit.active_ms, post_edit.reading_ms) == (3200, 3200, 3200)
    assert post_edit.flags == ["wall_clipped"]
    assert post_edit.replay_ok is True


def test_keys_that_change_no_text_count_apart_and_flag_the_edit(annotator, annotator_client):
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(minutes=2))
    keys = [{"seq": n, "t": 10.0 * n, "k": "keydown", "key": "a", "code": "KeyA"} for n in range(1, 2000)]
    log = [{"seq": 0, "t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)}, *keys]
    log.append({"seq": 2000, "t": 20_000, "k": "submit"})
    assert send(annotator_client, post_edit, visit, log[:1000]).status_code == 200
    assert send(annotator_client, post_edit, visit, log[1000:]).status_code == 200
    assert submit(annotator_client, post_edit, visit, text=ORIGINAL, last_seq=2000).status_code == 200
    post_edit.refresh_from_db()
    # Version 1 stored keystrokes = letters = allkeys = 1,999 and no flag.
    assert (post_edit.letters, post_edit.keystrokes, post_edit.allkeys) == (0, 0, 0)
    assert post_edit.uncorroborated_keys == 1999
    assert (post_edit.replay_ok, post_edit.flags) == (True, ["keys_uncorroborated"])


def test_pauses_cannot_exceed_the_time_the_server_saw(annotator, annotator_client, settings):
    settings.EDITLAB_CLOCK_TOLERANCE_MS = 2000
    post_edit, visit = open_item(annotator, now=timezone.now() - timedelta(seconds=1))
    # Time cannot alternate between 0 and 1e10 any more (tests/annotations/test_ingestion.py); a page load
    # whose clock leaps forward is the rest of that attack.
    leaps = [
        {"seq": 0, "t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)},
        {"seq": 1, "t": 0, "k": "keydown", "key": "Shift"},
        {"seq": 2, "t": 1e10 - 2500, "k": "keydown", "key": "Shift"},
        {"seq": 3, "t": 1e10, "k": "keydown", "key": "Shift"},
        {"seq": 4, "t": 1e10, "k": "submit"},
    ]
    for event in leaps:
        assert send(annotator_client, post_edit, visit, [event]).status_code == 200
    assert submit(annotator_client, post_edit, visit, text=ORIGINAL, last_seq=4).status_code == 200
    post_edit.refresh_from_db()
    # Version 1 stored pauses_2000_ms = 10,000,000,000 beside a wall time of about 3 s.
    bound = post_edit.server_elapsed_ms + 2000
    assert post_edit.wall_ms == bound
    assert post_edit.active_ms == 0  # the leap is one idle gap; nothing after it lies within the bound
    assert (post_edit.pauses_2000_count, post_edit.pauses_2000_ms) == (0, 0)
    assert (post_edit.pauses_300_count, post_edit.pauses_300_ms) == (0, 0)
    assert post_edit.flags == ["wall_clipped"]


def test_overlapping_page_loads_count_the_servers_time_once():
    start = timezone.now()

    def seen(begin_s: float, end_s: float) -> Visit:
        return Visit(started_at=start + timedelta(seconds=begin_s), last_seen_at=start + timedelta(seconds=end_s))

    windows = [seen(0, 10), seen(5, 12), seen(11, 11.5), seen(20, 21)]
    assert server_observed_ms(windows) == 13_000
    assert server_observed_ms([]) == 0
