"""POST /api/post-edits/<id>/events/: idempotency, gaps, every malformed case, who may write."""

import json
import uuid

import pytest
from django.test import Client

from annotations.editing.lifecycle import post_edit_open
from annotations.editing.logs import stored_log
from annotations.editing.selectors import editor_config
from annotations.models import Assignment, EditEvent
from tests.annotations.editing_helpers import edit_log, open_item, post_json, send, url, wire
from tests.factories import PASSWORD, AssignmentFactory

pytestmark = pytest.mark.django_db


def test_it_stores_a_batch_field_by_field(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    response = send(annotator_client, post_edit, visit, events)
    assert response.status_code == 200
    assert response.json() == {"stored": 11, "duplicates": 0, "gaps": [], "max_seq": 10}
    stored = EditEvent.objects.get(post_edit=post_edit, seq=4)
    assert (stored.kind, stored.input_type, stored.sel_start, stored.sel_end, stored.t_ms) == (
        "beforeinput", "insertText", 5, 8, 1021.0
    )  # fmt: skip
    assert stored.visit == visit
    typed = EditEvent.objects.get(post_edit=post_edit, seq=5)
    assert (typed.data, typed.length_after, typed.sel_start) == ("i", 14, 6)
    select = EditEvent.objects.get(post_edit=post_edit, seq=2)
    assert select.extra == {"src": "mouse"}
    submit_key = EditEvent.objects.get(post_edit=post_edit, seq=9)
    assert (submit_key.key, submit_key.code, submit_key.modifiers, submit_key.repeat) == ("Enter", "Enter", 1, False)


def test_the_same_batch_twice_is_stored_once(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    send(annotator_client, post_edit, visit, events)
    again = send(annotator_client, post_edit, visit, events)
    assert again.status_code == 200
    assert again.json() == {"stored": 0, "duplicates": 11, "gaps": [], "max_seq": 10}
    overlapping = send(annotator_client, post_edit, visit, events[8:] + [{"seq": 11, "t": 3000, "k": "blur"}])
    assert overlapping.json() == {"stored": 1, "duplicates": 3, "gaps": [], "max_seq": 11}
    assert EditEvent.objects.filter(post_edit=post_edit).count() == 12


def test_gaps_are_recorded_then_filled(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    first = send(annotator_client, post_edit, visit, events[2:4] + events[7:9])
    assert first.json() == {"stored": 4, "duplicates": 0, "gaps": [[0, 1], [4, 6]], "max_seq": 8}
    post_edit.refresh_from_db()
    assert post_edit.event_gaps == [[0, 1], [4, 6]]
    partly = send(annotator_client, post_edit, visit, [events[5]])
    assert partly.json()["gaps"] == [[0, 1], [4, 4], [6, 6]]
    rest = send(annotator_client, post_edit, visit, events[0:2] + [events[4], events[6]] + events[9:])
    assert rest.json() == {"stored": 6, "duplicates": 0, "gaps": [], "max_seq": 10}
    post_edit.refresh_from_db()
    assert post_edit.event_gaps == []


def test_a_sendbeacon_form_post_is_accepted_with_the_form_csrf_token(annotator):
    client = Client(enforce_csrf_checks=True)
    client.login(username=annotator.username, password=PASSWORD)
    post_edit, visit = open_item(annotator)
    client.get("/login/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    payload = json.dumps({"page_id": str(visit.page_id), "events": edit_log()[:3]})
    response = client.post(url("events", post_edit), {"csrfmiddlewaretoken": token, "payload": payload})
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == 3


def test_it_enforces_csrf(annotator):
    client = Client(enforce_csrf_checks=True)
    client.login(username=annotator.username, password=PASSWORD)
    post_edit, visit = open_item(annotator)
    response = send(client, post_edit, visit, edit_log()[:3])
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not EditEvent.objects.exists()


def test_it_accepts_late_events_of_an_ended_page_load(annotator, annotator_client):
    post_edit, first_visit = open_item(annotator)
    post_edit, second_visit = post_edit_open(assignment=post_edit.assignment, user=annotator)  # a reload
    first_visit.refresh_from_db()
    assert first_visit.ended_at is not None
    response = send(annotator_client, post_edit, first_visit, edit_log()[:4])
    assert response.status_code == 200
    assert set(EditEvent.objects.values_list("visit", flat=True)) == {first_visit.pk}


MALFORMED = [
    ("unknown kind", lambda e: e[3].update(k="keypress"), "event 3 (seq 3) field 'k': unknown event kind 'keypress'"),
    ("t is a string", lambda e: e[4].update(t="soon"), "event 4 (seq 4) field 't' must be a number"),
    ("t is negative", lambda e: e[4].update(t=-1), "event 4 (seq 4) field 't' must be between 0"),
    ("seq is negative", lambda e: e[2].update(seq=-2), "event 2 field 'seq' must be an integer"),
    ("seq is a bool", lambda e: e[2].update(seq=True), "event 2 field 'seq' must be an integer"),
    ("seq is a float", lambda e: e[2].update(seq=2.5), "event 2 field 'seq' must be an integer"),
    ("seq beyond 32 bits", lambda e: e[2].update(seq=2**31), "event 2 field 'seq' must be an integer"),
    ("mods out of range", lambda e: e[3].update(mods=16), "event 3 (seq 3) field 'mods' must be an integer 0..15"),
    ("rep not a bool", lambda e: e[3].update(rep=1), "event 3 (seq 3) field 'rep' must be true or false"),
    ("data not a string", lambda e: e[5].update(data=5), "event 5 (seq 5) field 'data' must be a string"),
    ("key too long", lambda e: e[3].update(key="k" * 65), "event 3 (seq 3) field 'key' is longer than 64"),
    ("bad visibility", lambda e: e.append({"seq": 11, "t": 3000, "k": "visibility", "state": "gone"}), "event 11 (seq 11) field 'state'"),
    ("unknown field", lambda e: e[3].update(shift=True), "event 3 (seq 3) has unknown field 'shift'"),
    ("missing t", lambda e: e[3].pop("t"), "event 3 (seq 3) misses the field 't'"),
    ("input without len", lambda e: e[5].pop("len"), "event 5 (seq 5) (input) misses the field 'len'"),
    ("selection end before start", lambda e: e[2].update(s=8, e=5), "event 2 (seq 2) field 'e' is smaller than 's'"),
    ("not an object", lambda e: e.__setitem__(1, [1, 2]), "event 1 is not a JSON object"),
    ("decreasing t", lambda e: e[6].update(t=100), "event 6 (seq 6) field 't' decreases"),
    ("repeated seq", lambda e: e[6].update(seq=5), "event 6 (seq 5) repeats the seq of event 5"),
]  # fmt: skip


@pytest.mark.parametrize("spoil, message", [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED])
def test_it_rejects_a_malformed_batch_and_stores_none_of_it(annotator, annotator_client, spoil, message):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    spoil(events)
    response = send(annotator_client, post_edit, visit, events)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"events: {message}"), response.json()
    assert not EditEvent.objects.exists()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("i\x00", "the text holds a NUL character (\\u0000), which cannot be stored"),
        ("\ud83d", "the text holds a lone UTF-16 surrogate (\\ud83d), which is not a character"),
    ],
)
def test_it_rejects_text_no_database_can_store_before_reading_the_batch(annotator, annotator_client, data, problem):
    # Refused by the JSON parser itself (editlab.safe_json), for every endpoint alike: the path names the field.
    post_edit, visit = open_item(annotator)
    events = edit_log()
    events[5]["data"] = data
    response = send(annotator_client, post_edit, visit, events)
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"JSON parse error - the body: {problem} at events[5].data",
        "code": "parse_error",
    }
    assert not EditEvent.objects.exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ("[1, 2]", "the request must be a JSON object"),
        ('{"page_id": "x",', "JSON parse error"),
        ('{"events": []}', "page_id: This field is required."),
        ('{"page_id": "not-a-uuid", "events": []}', "page_id: Must be a valid UUID."),
        ('{"page_id": "%s", "events": {"seq": 0}}', "events: events must be a list"),
        ('{"page_id": "%s", "events": [{"seq": 0, "t": NaN, "k": "blur"}]}', "JSON parse error"),
    ],
)
def test_it_rejects_malformed_bodies(annotator, annotator_client, body, message):
    post_edit, visit = open_item(annotator)
    if "%s" in body:
        body = body % visit.page_id
    response = annotator_client.post(url("events", post_edit), data=body, content_type="application/json")
    assert response.status_code == 400
    assert message in response.json()["detail"]


def test_it_rejects_a_form_post_without_valid_json(annotator, annotator_client):
    post_edit, _ = open_item(annotator)
    missing = annotator_client.post(url("events", post_edit), {"other": "x"})
    assert missing.status_code == 400
    assert missing.json() == {"detail": "a form post must carry the JSON in the field 'payload'", "code": "parse_error"}
    broken = annotator_client.post(url("events", post_edit), {"payload": "{nope"})
    assert broken.status_code == 400
    assert broken.json()["detail"].startswith("payload is not valid JSON")


def test_it_rejects_more_events_than_configured(annotator, annotator_client, settings):
    settings.EDITLAB_EVENTS_MAX_PER_BATCH = 10
    post_edit, visit = open_item(annotator)
    response = send(annotator_client, post_edit, visit, edit_log())
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "events: 11 events in one batch; at most 10 (EDITLAB_EVENTS_MAX_PER_BATCH) are accepted"
    )
    assert not EditEvent.objects.exists()


def test_it_rejects_more_bytes_than_configured(annotator, annotator_client, settings):
    settings.EDITLAB_EVENTS_MAX_BYTES = 2048
    post_edit, visit = open_item(annotator)
    events = edit_log()
    events[5]["data"] = "i" * 2000
    response = send(annotator_client, post_edit, visit, events)
    assert response.status_code == 400
    assert "(EDITLAB_EVENTS_MAX_BYTES)" in response.json()["detail"]
    assert not EditEvent.objects.exists()


def test_it_rejects_an_unknown_page_id(annotator, annotator_client):
    post_edit, _ = open_item(annotator)
    _, other_visit = open_item(annotator)  # a page load of ANOTHER post-edit of the same annotator
    for page_id in (uuid.uuid4(), other_visit.page_id):
        payload = {"page_id": str(page_id), "events": edit_log()}
        response = post_json(annotator_client, url("events", post_edit), payload)
        assert response.status_code == 400
        assert response.json()["detail"] == f"page_id {page_id} is not a page load of post-edit {post_edit.pk}"
    assert not EditEvent.objects.exists()


def test_a_seq_taken_by_another_tab_is_a_conflict_with_the_next_free_seq(annotator, annotator_client):
    post_edit, tab_one = open_item(annotator)
    _, tab_two = post_edit_open(assignment=post_edit.assignment, user=annotator)
    send(annotator_client, post_edit, tab_one, edit_log()[:5])
    response = send(annotator_client, post_edit, tab_two, edit_log()[:3])
    assert response.status_code == 409
    assert response.json()["code"] == "seq_conflict"
    assert response.json()["next_seq"] == 5
    assert EditEvent.objects.filter(visit=tab_two).count() == 0
    renumbered = send(annotator_client, post_edit, tab_two, edit_log(start_seq=5)[:3])
    assert renumbered.json() == {"stored": 3, "duplicates": 0, "gaps": [], "max_seq": 7}


def test_a_batch_only_partly_taken_by_another_tab_stores_none_of_its_events(annotator, annotator_client):
    post_edit, tab_one = open_item(annotator)
    _, tab_two = post_edit_open(assignment=post_edit.assignment, user=annotator)
    send(annotator_client, post_edit, tab_one, edit_log()[:5])  # seqs 0-4
    response = send(annotator_client, post_edit, tab_two, edit_log(start_seq=3)[:5])  # seqs 3-7: 5-7 are free
    assert response.status_code == 409
    assert response.json()["detail"].startswith("seq 3 is already taken by another page load of this post-edit")
    assert response.json()["next_seq"] == 5
    assert EditEvent.objects.filter(visit=tab_two).count() == 0  # the free ones were not kept either
    assert sorted(EditEvent.objects.filter(post_edit=post_edit).values_list("seq", flat=True)) == [0, 1, 2, 3, 4]


def test_events_for_a_submitted_post_edit_are_refused_but_retries_are_acknowledged(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    send(annotator_client, post_edit, visit, events)
    submitted = post_json(
        annotator_client,
        url("submit", post_edit),
        {"page_id": str(visit.page_id), "text": "This is a test.", "version": 0, "last_seq": 10},
    )
    assert submitted.status_code == 200
    retry = send(annotator_client, post_edit, visit, events[5:])
    assert retry.status_code == 200
    assert retry.json()["duplicates"] == 6
    late = send(annotator_client, post_edit, visit, [{"seq": 11, "t": 5000, "k": "blur"}])
    assert late.status_code == 409
    assert late.json()["code"] == "closed"
    assert "already submitted" in late.json()["detail"]
    assert EditEvent.objects.filter(post_edit=post_edit).count() == 11


def test_another_annotators_post_edit_is_not_found(annotator, other_annotator_client):
    post_edit, visit = open_item(annotator)
    response = send(other_annotator_client, post_edit, visit, edit_log())
    assert response.status_code == 404
    assert not EditEvent.objects.exists()
    missing = post_json(other_annotator_client, url("events", 999_999), {"page_id": str(visit.page_id), "events": []})
    assert missing.status_code == 404


@pytest.mark.parametrize("reader", ["researcher_client", "admin_client"])
def test_researchers_and_admins_cannot_write(annotator, reader, request):
    post_edit, visit = open_item(annotator)
    response = send(request.getfixturevalue(reader), post_edit, visit, edit_log())
    assert response.status_code == 403
    assert response.json() == {
        "detail": "Researchers and admins cannot write post-edits; only their annotator can.",
        "code": "permission_denied",
    }
    assert not EditEvent.objects.exists()


def test_anonymous_is_refused(annotator, client):
    post_edit, visit = open_item(annotator)
    response = send(client, post_edit, visit, edit_log())
    assert response.status_code == 403
    # The code lets the browser logger tell an expired session from other refusals without parsing words.
    assert response.json() == {"detail": "Authentication credentials were not provided.", "code": "not_authenticated"}
    assert not EditEvent.objects.exists()


def test_get_is_not_allowed(annotator, annotator_client):
    post_edit, _ = open_item(annotator)
    assert annotator_client.get(url("events", post_edit)).status_code == 405


def test_the_endpoints_are_in_the_openapi_schema(annotator_client):
    schema = annotator_client.get("/api/schema/?format=json").json()
    for name in ("events", "draft", "submit", "skip"):
        operation = schema["paths"][f"/api/post-edits/{{post_edit_id}}/{name}/"]["post"]
        assert operation["operationId"] == f"post_edit_{name}"
        assert {"200", "400", "403", "404", "409"} <= set(operation["responses"])


def test_an_assignment_status_does_not_change_by_ingesting(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    send(annotator_client, post_edit, visit, edit_log())
    assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.IN_PROGRESS


def test_the_editor_config_carries_the_contract_keys_and_the_next_seq(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    later = AssignmentFactory(annotator=annotator)
    send(annotator_client, post_edit, visit, edit_log()[:4])
    config = editor_config(post_edit=post_edit, visit=visit, csrf_token="token")
    assert config == {
        "post_edit_id": post_edit.pk,
        "page_id": str(visit.page_id),
        "next_seq": 4,
        "version": 0,
        "original": "This are a test.",
        "draft": "This are a test.",
        "idle_threshold_ms": 30_000,
        "urls": {
            "events": f"/api/post-edits/{post_edit.pk}/events/",
            "draft": f"/api/post-edits/{post_edit.pk}/draft/",
            "submit": f"/api/post-edits/{post_edit.pk}/submit/",
            "skip": f"/api/post-edits/{post_edit.pk}/skip/",
            "next": f"/edit/{later.pk}/",
        },
        "csrf_token": "token",
        "highlights": [],  # error spans to draw, in conditions that show them (tests/annotations/test_study_editor.py)
    }


def test_a_far_seq_jump_is_one_gap_and_fills_in_pieces(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    far = 2**31 - 2  # the top seq accepted
    jump = [{"seq": 0, "t": 0, "k": "blur"}, {"seq": far, "t": 1, "k": "focus"}]
    response = send(annotator_client, post_edit, visit, jump)
    assert response.json() == {"stored": 2, "duplicates": 0, "gaps": [[1, far - 1]], "max_seq": far}
    pieces = [{"seq": 1, "t": 0, "k": "blur"}, {"seq": 5, "t": 0, "k": "blur"}]
    filled = send(annotator_client, post_edit, visit, pieces)
    assert filled.json()["gaps"] == [[2, 4], [6, far - 1]]


# ---------------------------------------------------------------- client time across batches, the top seq


def test_client_time_running_backwards_across_batches_is_refused_and_nothing_of_it_stored(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()  # t 120 .. 2621
    assert send(annotator_client, post_edit, visit, events[:6]).status_code == 200
    earlier = [dict(events[6], t=1000.0), dict(events[7], t=1500.0)]  # 1000 < 1022 stored at seq 5
    response = send(annotator_client, post_edit, visit, earlier)
    assert response.status_code == 400
    assert response.json() == {
        "detail": "events: event 0 (seq 6) field 't' decreases: 1000 after 1022 at seq 5, stored from an earlier "
        "batch of this page load (client time may not run backwards within a page load)",
        "code": "invalid",
    }
    assert list(EditEvent.objects.order_by("seq").values_list("seq", flat=True)) == [0, 1, 2, 3, 4, 5]
    visit.refresh_from_db()
    assert (visit.last_seq, visit.last_t_ms) == (5, 1022.0)
    assert send(annotator_client, post_edit, visit, events[6:]).json()["stored"] == 5  # the honest rest


def test_the_alternating_clock_of_single_event_batches_is_refused(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    answers = [
        send(annotator_client, post_edit, visit, [{"seq": seq, "t": t, "k": "keydown", "key": "a"}]).status_code
        for seq, t in enumerate([0, 1e10, 0, 1e10])
    ]
    assert answers == [200, 200, 400, 200]
    assert list(EditEvent.objects.order_by("seq").values_list("seq", "t_ms")) == [(0, 0.0), (1, 1e10), (3, 1e10)]


def test_another_page_loads_clock_is_its_own(annotator, annotator_client):
    post_edit, first = open_item(annotator)
    send(annotator_client, post_edit, first, edit_log()[:6])
    _, reload = post_edit_open(assignment=post_edit.assignment, user=annotator)
    response = send(annotator_client, post_edit, reload, edit_log(start_seq=6, t0=5.0))
    assert response.json() == {"stored": 11, "duplicates": 0, "gaps": [], "max_seq": 16}


def test_resent_and_late_batches_are_placed_among_the_stored_times(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    events = edit_log()
    assert send(annotator_client, post_edit, visit, events[:4]).status_code == 200
    assert send(annotator_client, post_edit, visit, events[8:]).json()["gaps"] == [[4, 7]]
    # A retry of the first batch (its answer was lost), then one that also carries new events.
    assert send(annotator_client, post_edit, visit, events[:4]).json() == {
        "stored": 0, "duplicates": 4, "gaps": [[4, 7]], "max_seq": 10,
    }  # fmt: skip
    # The gap's events arrive late (a beacon overtaken by a later request): their times fit between.
    late = send(annotator_client, post_edit, visit, events[2:6])
    assert late.json() == {"stored": 2, "duplicates": 2, "gaps": [[6, 7]], "max_seq": 10}
    # A late event later than the stored event after it runs time backwards there.
    too_late = send(annotator_client, post_edit, visit, [dict(events[6], t=3000.0)])
    assert too_late.status_code == 400
    assert too_late.json()["detail"] == (
        "events: event 0 (seq 6) field 't' is 3000, later than 1422 at seq 8, stored from an earlier batch of "
        "this page load (client time may not run backwards within a page load)"
    )
    assert send(annotator_client, post_edit, visit, events[6:8]).json()["gaps"] == []
    visit.refresh_from_db()
    assert (visit.last_seq, visit.last_t_ms) == (10, 2621.0)


def test_a_seq_that_leaves_no_room_for_the_next_one_is_refused(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    top = 2**31 - 1
    response = send(annotator_client, post_edit, visit, [{"seq": top, "t": 0, "k": "blur"}])
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"events: event 0 field 'seq' must be an integer between 0 and {top - 1} "
        "(the seq after it must still fit in 32 bits)"
    )
    assert not EditEvent.objects.exists()
    assert send(annotator_client, post_edit, visit, [{"seq": top - 1, "t": 0, "k": "blur"}]).status_code == 200
    config = editor_config(post_edit=post_edit, visit=visit, csrf_token="token")
    assert config["next_seq"] == top  # still a 32-bit integer: the page can number, send and submit
    submitted = post_json(
        annotator_client,
        url("submit", post_edit),
        {"page_id": str(visit.page_id), "text": "This are a test.", "version": 0, "last_seq": top},
    )
    assert submitted.status_code == 200


def test_every_value_is_stored_exactly_as_sent(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    tricky = 'quote " backslash \\ tab \t newline \n CR \r sep \u2028 emoji 😀🏽 RTL \u202e é 日本 {"json": [1]}'
    events = [
        {"seq": 0, "t": 0.1, "k": "load", "data": tricky, "len": 90, "state": "hidden"},
        {"seq": 1, "t": 1021.37, "k": "keydown", "key": "'", "code": "Quote", "mods": 15, "rep": True},
        {"seq": 2, "t": 1021.3700000000001, "k": "beforeinput", "it": "insertText", "s": 0, "e": 2147483647},
        {"seq": 3, "t": 9999999999.999, "k": "input", "it": "insertText", "s": 5, "len": 0, "data": "", "f": True},
        {"seq": 4, "t": 1e10, "k": "focus", "src": "textarea"},
    ]
    assert send(annotator_client, post_edit, visit, events).status_code == 200
    stored = {
        row[0]: row[1:]
        for row in EditEvent.objects.values_list(
            "seq", "t_ms", "kind", "key", "code", "modifiers", "repeat", "input_type", "sel_start", "sel_end",
            "data", "length_after", "extra",
        )
    }  # fmt: skip
    assert stored == {
        0: (0.1, "load", "", "", 0, False, "", None, None, tricky, 90, {"state": "hidden"}),
        1: (1021.37, "keydown", "'", "Quote", 15, True, "", None, None, "", None, {}),
        2: (1021.3700000000001, "beforeinput", "", "", 0, False, "insertText", 0, 2147483647, "", None, {}),
        3: (9999999999.999, "input", "", "", 0, False, "insertText", 5, None, "", 0, {"f": True}),
        4: (1e10, "focus", "", "", 0, False, "", None, None, "", None, {"src": "textarea"}),
    }
    assert stored_log(post_edit) == wire(events, page=str(visit.page_id))
