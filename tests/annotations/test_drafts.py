"""POST /api/post-edits/<id>/draft/: autosave with optimistic locking; the two-tab conflict."""

import json

import pytest

from annotations.editing.lifecycle import post_edit_open
from annotations.models import PostEdit
from tests.annotations.editing_helpers import ORIGINAL, open_item, post_json, url

pytestmark = pytest.mark.django_db


def save(client, post_edit, visit, text, version):
    return post_json(client, url("draft", post_edit), {"page_id": str(visit.page_id), "text": text, "version": version})


def test_opening_creates_the_draft_from_the_model_output(annotator):
    post_edit, _ = open_item(annotator)
    assert (post_edit.draft_text, post_edit.version) == (ORIGINAL, 0)


def test_a_draft_save_bumps_the_version(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    first = save(annotator_client, post_edit, visit, "This is a test.", 0)
    assert (first.status_code, first.json()) == (200, {"version": 1})
    second = save(annotator_client, post_edit, visit, "  This is a test!\n", 1)
    assert second.json() == {"version": 2}
    post_edit.refresh_from_db()
    assert (post_edit.draft_text, post_edit.version) == ("  This is a test!\n", 2)


def test_an_empty_draft_is_a_draft(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    assert save(annotator_client, post_edit, visit, "", 0).json() == {"version": 1}
    post_edit.refresh_from_db()
    assert post_edit.draft_text == ""


def test_two_tabs_the_second_writer_gets_both_texts_and_nothing_is_lost(annotator, annotator_client):
    post_edit, tab_one = open_item(annotator)
    _, tab_two = post_edit_open(assignment=post_edit.assignment, user=annotator)
    # Both tabs loaded version 0. Tab one saves first.
    assert save(annotator_client, post_edit, tab_one, "Tab one's text.", 0).json() == {"version": 1}
    conflict = save(annotator_client, post_edit, tab_two, "Tab two's text.", 0)
    assert conflict.status_code == 409
    assert conflict.json() == {
        "detail": "conflict",
        "code": "conflict",
        "server_text": "Tab one's text.",
        "server_version": 1,
    }
    post_edit.refresh_from_db()
    assert (post_edit.draft_text, post_edit.version) == ("Tab one's text.", 1)
    # Tab two shows both, the annotator merges, and it saves against the version it was shown.
    merged = save(annotator_client, post_edit, tab_two, "Tab one's text. Tab two's text.", 1)
    assert merged.json() == {"version": 2}
    # Now tab one is the stale writer.
    stale = save(annotator_client, post_edit, tab_one, "Tab one again.", 1)
    assert stale.status_code == 409
    assert stale.json()["server_text"] == "Tab one's text. Tab two's text."
    post_edit.refresh_from_db()
    assert (post_edit.draft_text, post_edit.version) == ("Tab one's text. Tab two's text.", 2)


def test_a_draft_of_a_submitted_post_edit_is_refused(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    post_json(
        annotator_client,
        url("submit", post_edit),
        {"page_id": str(visit.page_id), "text": "Final.", "version": 0, "last_seq": -1},
    )
    response = save(annotator_client, post_edit, visit, "Later.", 1)
    assert response.status_code == 409
    assert response.json()["code"] == "closed"
    assert PostEdit.objects.get(pk=post_edit.pk).draft_text == "Final."


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"text": "x", "version": 0}, "page_id: This field is required."),
        ({"page_id": "PAGE", "version": 0}, "text: This field is required."),
        ({"page_id": "PAGE", "text": "x"}, "version: This field is required."),
        ({"page_id": "PAGE", "text": "x", "version": "new"}, "version: A valid integer is required."),
        ({"page_id": "PAGE", "text": "x", "version": -1}, "version: Ensure this value is greater than or equal to 0."),
        ({"page_id": "PAGE", "text": 5, "version": 0}, "text: Not a valid string."),
        ({"page_id": "PAGE", "text": ["x"], "version": 0}, "text: Not a valid string."),
        (
            {"page_id": "PAGE", "text": "a\x00b", "version": 0},
            "JSON parse error - the body: the text holds a NUL character (\\u0000), which cannot be stored at text",
        ),
        (
            {"page_id": "PAGE", "text": "a\ud83d", "version": 0},
            "JSON parse error - the body: the text holds a lone UTF-16 surrogate (\\ud83d), which is not a character at text",
        ),
    ],
)
def test_it_rejects_malformed_drafts(annotator, annotator_client, payload, message):
    post_edit, visit = open_item(annotator)
    if payload.get("page_id") == "PAGE":
        payload["page_id"] = str(visit.page_id)
    response = post_json(annotator_client, url("draft", post_edit), payload)
    assert response.status_code == 400
    assert response.json()["detail"] == message
    post_edit.refresh_from_db()
    assert (post_edit.draft_text, post_edit.version) == (ORIGINAL, 0)


def test_a_draft_can_be_beaconed_as_a_form_post(annotator, annotator_client):
    post_edit, visit = open_item(annotator)
    payload = json.dumps({"page_id": str(visit.page_id), "text": "Beaconed.", "version": 0})
    response = annotator_client.post(url("draft", post_edit), {"payload": payload})
    assert response.json() == {"version": 1}


def test_another_annotator_cannot_save_a_draft(annotator, other_annotator_client, researcher_client):
    post_edit, visit = open_item(annotator)
    assert save(other_annotator_client, post_edit, visit, "Mine now.", 0).status_code == 404
    assert save(researcher_client, post_edit, visit, "Mine now.", 0).status_code == 403
    post_edit.refresh_from_db()
    assert post_edit.draft_text == ORIGINAL
