"""The event endpoint's plain answer (PostEditEventsApi._answer_plainly) equals DRF's dispatch: for
generated requests (who sends, CSRF, content type, Accept, body, the post-edit's state) the status, the
JSON, the headers and the rows stored are the same with the plain answer on and off."""

import json
import uuid

import pytest
from django.db import connection, transaction
from django.middleware.csrf import _get_new_csrf_string
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.views import APIView

from annotations.api.views_editor import PostEditEventsApi
from annotations.editing.lifecycle import post_edit_submit
from annotations.models import EditEvent, PostEdit, Visit
from tests.annotations.editing_helpers import EDITED, edit_log, open_item, url
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SENDERS = ("owner", "other annotator", "researcher", "anonymous")
BODIES = (
    "batch",
    "the batch again",
    "overlapping",
    "a gap",
    "another page load",
    "unknown page",
    "page id as a number",
    "no page id",
    "events not a list",
    "bad event",
    "seq repeated",
    "time runs back",
    "not JSON",
    "not UTF-8",
    "a list",
    "empty",
    "NaN",
    "too deep",
    "too large",
    "a lone surrogate",
    "a huge number",
    "another post-edit's page",
)
CONTENT_TYPES = ("application/json", "application/json; charset=utf-8", "text/plain", "form")
ACCEPTS = (None, "*/*", "application/json", "text/html")


def _body(kind: str, page: str, events: list[dict], other_page: str) -> bytes:
    batch = {"page_id": page, "events": events}
    special = {
        "the batch again": batch,
        "overlapping": {"page_id": page, "events": events[5:] + [{"seq": 11, "t": 9000, "k": "blur"}]},
        "a gap": {"page_id": page, "events": events[6:]},
        "another page load": {"page_id": str(uuid.uuid4()), "events": events},
        "unknown page": {"page_id": "not a uuid", "events": events},
        "page id as a number": {"page_id": 7, "events": events},
        "no page id": {"events": events},
        "events not a list": {"page_id": page, "events": {"seq": 0}},
        "bad event": {"page_id": page, "events": [*events[:3], {"seq": 3, "t": 1, "k": "nonsense"}]},
        "seq repeated": {"page_id": page, "events": [*events[:3], events[2]]},
        "time runs back": {"page_id": page, "events": [*events[:3], dict(events[3], t=0)]},
        "a list": [batch],
        "another post-edit's page": {"page_id": other_page, "events": events},
    }
    if kind == "not JSON":
        return b'{"page_id": '
    if kind == "not UTF-8":
        return b'{"page_id": "\xff"}'
    if kind == "empty":
        return b""
    if kind == "NaN":
        return json.dumps(batch).replace('"t": 120.0', '"t": NaN').encode()
    if kind == "too deep":
        return ("[" * 100 + "]" * 100).encode()
    if kind == "a lone surrogate":
        return json.dumps({"page_id": page, "events": [dict(events[0], data="\ud800")]}).encode()
    if kind == "a huge number":
        return json.dumps(batch).replace('"t": 120.0', '"t": 1e400').encode()
    if kind == "too large":
        return json.dumps({"page_id": page, "events": events, "pad": "x" * 2_000_000}).encode()
    return json.dumps(special.get(kind, batch)).encode()


def _answer(client: Client, target: str, body: bytes, content_type: str, accept: str | None, token: str | None):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    if token is not None:
        headers["HTTP_X_CSRFTOKEN"] = token
    if content_type == "form":
        data = {"payload": body.decode("utf-8", "replace")}
        return client.post(target, data, **headers)
    return client.post(target, body, content_type=content_type, **headers)


def _state(post_edit: PostEdit) -> tuple:
    events = list(EditEvent.objects.filter(post_edit=post_edit).order_by("seq").values_list("seq", "visit_id", "kind"))
    row = PostEdit.objects.get(pk=post_edit.pk)
    visits = list(Visit.objects.filter(post_edit=post_edit).order_by("pk").values_list("pk", "last_seq", "last_t_ms"))
    return events, row.event_gaps, visits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sender=st.sampled_from(SENDERS),
    csrf=st.sampled_from(("token", "wrong token", "none")),
    content_type=st.sampled_from(CONTENT_TYPES),
    accept=st.sampled_from(ACCEPTS),
    body=st.sampled_from(BODIES),
    first=st.sampled_from(("nothing", "the first half", "the batch")),
    closed=st.booleans(),
)
def test_the_plain_answer_is_drfs(db, monkeypatch, sender, csrf, content_type, accept, body, first, closed):
    owner = UserFactory(username=f"owner-{uuid.uuid4().hex[:8]}", role="annotator")
    people = {
        "owner": owner,
        "other annotator": UserFactory(username=f"other-{uuid.uuid4().hex[:8]}", role="annotator"),
        "researcher": UserFactory(username=f"res-{uuid.uuid4().hex[:8]}", role="researcher"),
        "anonymous": None,
    }
    _, other_visit = open_item(owner)  # the owner's other item, opened first: its page load is not this one's
    post_edit, visit = open_item(owner)
    events = edit_log()
    page = str(visit.page_id)
    setup = Client()
    setup.force_login(owner)
    stored_first = {"nothing": [], "the first half": events[:5], "the batch": events}[first]
    if stored_first:
        sent = setup.post(url("events", post_edit), {"page_id": page, "events": stored_first}, "application/json")
        assert sent.status_code == 200, sent.content
    if closed:
        post_edit_submit(post_edit=post_edit, page_id=page, text=EDITED, version=0, last_seq=len(stored_first) - 1)
    client = Client(enforce_csrf_checks=True)
    if people[sender] is not None:
        client.force_login(people[sender])
    token = _get_new_csrf_string()
    client.cookies["csrftoken"] = token
    sent_token = {"token": token, "wrong token": _get_new_csrf_string(), "none": None}[csrf]
    request = (
        url("events", post_edit),
        _body(body, page, events, str(other_visit.page_id)),
        content_type,
        accept,
        sent_token,
    )

    answers = []
    for plain in (True, False):
        monkeypatch.setattr(PostEditEventsApi, "plain", plain)
        saved = transaction.savepoint()
        response = _answer(client, *request)
        json_answer = response["Content-Type"] == "application/json"
        answers.append(
            (
                response.status_code,
                # DRF's browsable page (Accept: text/html, never the plain answer) embeds a fresh CSRF token.
                response.content if json_answer else response["Content-Type"],
                {name: response.get(name) for name in ("Content-Type", "Allow", "Vary", "Retry-After")},
                _state(post_edit),
            )
        )
        transaction.savepoint_rollback(saved)
    assert answers[0] == answers[1]


# The session with its user; the ownership check; the service's transaction (a savepoint inside the
# test's) holding the lock with the page load and the insert; SQLite locks, marks the page load and reads
# the top seq in three statements where PostgreSQL needs one.
QUERIES = {"postgresql": 6, "sqlite": 8}


def test_a_good_batch_is_answered_without_drfs_dispatch(annotator, monkeypatch, django_assert_num_queries):
    """The plain answer is the one given (not a test of the comparison alone), in the same statements."""
    post_edit, visit = open_item(annotator)
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator)
    token = _get_new_csrf_string()
    client.cookies["csrftoken"] = token
    dispatched = []
    original = APIView.dispatch
    monkeypatch.setattr(APIView, "dispatch", lambda self, *a, **k: dispatched.append(1) or original(self, *a, **k))
    body = json.dumps({"page_id": str(visit.page_id), "events": edit_log()})
    with django_assert_num_queries(QUERIES[connection.vendor]):
        response = client.post(url("events", post_edit), body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 11, "duplicates": 0, "gaps": [], "max_seq": 10}
    assert dispatched == []
    monkeypatch.setattr(PostEditEventsApi, "plain", False)
    again = client.post(url("events", post_edit), body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert again.json() == {"stored": 0, "duplicates": 11, "gaps": [], "max_seq": 10}
    assert dispatched == [1]
