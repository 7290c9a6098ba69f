"""The admin replay page: who sees it, what it carries, and that texts stay text."""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_submit
from tests.annotations.editing_helpers import EDITED, ORIGINAL, edit_log, open_item, wire

pytestmark = pytest.mark.django_db


def page_url(post_edit) -> str:
    return reverse("manage-post-edit-replay", args=[post_edit.pk])


def submitted(annotator, *, text=EDITED, model_output=ORIGINAL, events=None):
    post_edit, visit = open_item(annotator, model_output=model_output, now=timezone.now() - timedelta(minutes=1))
    events = edit_log() if events is None else events
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(events))
    post_edit_submit(post_edit=post_edit, page_id=visit.page_id, text=text, version=0, last_seq=len(events) - 1)
    post_edit.refresh_from_db()
    return post_edit


def replay_data(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="replay-data" type="application/json">') + len(
        '<script id="replay-data" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_an_admin_sees_every_step_of_the_replay(annotator, admin_client):
    post_edit = submitted(annotator)
    response = admin_client.get(page_url(post_edit))
    assert response.status_code == 200
    data = replay_data(response)
    assert data["original"] == ORIGINAL
    assert data["divergence_step"] is None
    assert [(s["seq"], s["kind"], s["start"], s["end"], s["insert"]) for s in data["steps"]] == [
        (0, "load", 0, 16, ORIGINAL),
        (5, "insertText", 5, 8, "i"),
        (8, "insertText", 6, 6, "s"),
    ]
    assert [s["t"] for s in data["steps"]] == [120, 1022, 1422]
    body = response.content.decode()
    assert "ends in the submitted text" in body
    assert "Replay diverged" not in body
    assert 'id="replay-slider" min="0" max="3"' in body


def test_a_researcher_may_watch_read_only(annotator, researcher_client):
    post_edit = submitted(annotator)
    assert researcher_client.get(page_url(post_edit)).status_code == 200
    assert researcher_client.post(page_url(post_edit)).status_code == 405


def test_annotators_get_404_even_for_their_own(annotator, annotator_client, other_annotator_client):
    post_edit = submitted(annotator)
    assert annotator_client.get(page_url(post_edit)).status_code == 404
    assert other_annotator_client.get(page_url(post_edit)).status_code == 404


def test_anonymous_goes_to_the_login_page(annotator, client):
    post_edit = submitted(annotator)
    response = client.get(page_url(post_edit))
    assert response.status_code == 302
    assert response.url.startswith("/login/")


def test_a_missing_post_edit_is_404(admin_client):
    assert admin_client.get(reverse("manage-post-edit-replay", args=[424242])).status_code == 404


def test_the_divergence_point_is_shown(annotator, admin_client):
    events = edit_log()
    events[8]["len"] = 99  # the second input claims a length the replay cannot reach
    post_edit = submitted(annotator, events=events)
    assert post_edit.flags == ["replay_mismatch"]
    response = admin_client.get(page_url(post_edit))
    body = response.content.decode()
    assert "Replay diverged" in body
    assert "at event seq 8 (insertText)" in body
    assert "Expected length 99, got 15." in body
    assert replay_data(response)["divergence_step"] == 3
    assert "ends in the submitted text" in body  # only the reported length was off


def test_hostile_markup_is_shown_as_text(annotator, admin_client):
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    events = [
        {"seq": 0, "t": 0, "k": "load", "data": hostile, "len": len(hostile)},
        {"seq": 1, "t": 10, "k": "beforeinput", "it": "insertText", "s": 0, "e": 0},
        {"seq": 2, "t": 11, "k": "input", "it": "insertText", "s": 8, "len": len(hostile) + 8, "data": "</pre><b>"},
        {"seq": 3, "t": 20, "k": "submit"},
    ]
    post_edit = submitted(annotator, model_output=hostile, text="</pre><b>" + hostile, events=events)
    response = admin_client.get(page_url(post_edit))
    body = response.content.decode()
    assert "<script>alert" not in body
    assert "<img src=x" not in body
    assert "</pre><b>" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert replay_data(response)["steps"][1]["insert"] == "</pre><b>"  # intact once parsed


def test_the_django_admin_post_edit_page_links_to_the_replay(annotator, admin_client):
    post_edit = submitted(annotator)
    response = admin_client.get(reverse("admin:annotations_postedit_change", args=[post_edit.pk]))
    assert response.status_code == 200
    assert f'href="{page_url(post_edit)}"' in response.content.decode()
