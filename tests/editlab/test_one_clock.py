"""One running clock per annotator, with real concurrent requests: two items opened at once, two
items submitted at once (threads, each its own client and database connection; on PostgreSQL the
annotator's clock row serializes them, on SQLite the immediate transactions do)."""

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.utils import timezone

from annotations.editing import lifecycle
from annotations.editing.clock import server_observed_ms
from annotations.models import PostEdit, Visit
from tests.annotations.editing_helpers import ORIGINAL, post_json, url
from tests.factories import AssignmentFactory, UserFactory

# serialized_rollback: an earlier transactional test's flush may have removed the role groups.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SLOW_S = 0.3


def _together(user, requests: list[Callable[[Client], HttpResponse]]) -> list[int]:
    """Each request made by its own thread (its own client and connection), released together; their
    statuses. SQLite's shared in-memory test database refuses one of them as locked (a table lock
    waits for no timeout): it is made again afterwards, as the logger's retry or a reload would."""
    logged_in = Client()
    logged_in.force_login(user)
    start = threading.Barrier(len(requests))
    answers: list[tuple[Callable[[Client], HttpResponse], HttpResponse]] = []

    def one(request: Callable[[Client], HttpResponse]) -> None:
        own = Client(raise_request_exception=False)
        own.cookies = logged_in.cookies
        try:
            start.wait()
            answers.append((request, request(own)))
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == len(requests)
    statuses = []
    for request, answer in answers:
        if answer.status_code in (500, 503) and connection.vendor == "sqlite":
            answer = request(logged_in)
        statuses.append(answer.status_code)
    return statuses


def _slowed(monkeypatch, owner, name: str) -> None:
    """Hold every call of owner.name for SLOW_S after it returns: the two requests then overlap
    inside the window that a missing lock would leave open."""
    original = getattr(owner, name)

    def slow(*args, **kwargs):
        result = original(*args, **kwargs)
        time.sleep(SLOW_S)
        return result

    monkeypatch.setattr(owner, name, slow)


def _open(assignment) -> Callable[[Client], HttpResponse]:
    return lambda client: client.get(f"/edit/{assignment.pk}/")


def test_two_items_opened_at_once_leave_one_page_load_running(monkeypatch):
    # Without the annotator's lock both page loads stayed open on PostgreSQL: each transaction's
    # UPDATE ending the others could not see the other's new page load.
    _slowed(monkeypatch, Visit.objects, "create")
    for _ in range(3):
        user = UserFactory(role="annotator")
        first, second = AssignmentFactory(annotator=user), AssignmentFactory(annotator=user)
        assert _together(user, [_open(first), _open(second)]) == [200, 200]
        visits = list(Visit.objects.filter(post_edit__assignment__annotator=user).order_by("started_at", "pk"))
        assert len(visits) == 2
        assert [visit.ended_at is None for visit in visits] == [False, True]
        assert visits[0].ended_at == visits[1].started_at


def _claim_and_submit(assignment, claim_ms: float) -> Callable[[Client], HttpResponse]:
    # Read here, before the threads: SQLite's shared in-memory database would refuse this read too while
    # the other thread holds a table lock, and only the requests are made again.
    visit = Visit.objects.select_related("post_edit").get(post_edit__assignment=assignment)
    post_edit = visit.post_edit

    def request(client: Client) -> HttpResponse:
        events = [
            {"seq": 0, "t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)},
            {"seq": 1, "t": claim_ms / 2, "k": "mousedown"},
            {"seq": 2, "t": claim_ms, "k": "submit"},
        ]
        batch = {"page_id": str(visit.page_id), "events": events}
        sent = post_json(client, url("events", post_edit), batch)
        for _ in range(5):
            # SQLite's shared in-memory database refuses a write while the other thread holds its table
            # lock: the logger sends the batch again (stored once), and so does this request.
            if sent.status_code != 503 or connection.vendor != "sqlite":
                break
            time.sleep(SLOW_S)
            sent = post_json(client, url("events", post_edit), batch)
        assert sent.status_code == 200, sent.content
        payload = {"page_id": str(visit.page_id), "text": ORIGINAL, "version": 0, "last_seq": 2}
        return post_json(client, url("submit", post_edit), payload)

    return request


def test_two_items_submitted_at_once_share_one_tolerance(monkeypatch, settings):
    # Two page loads stored open side by side (as the race left them), each claiming 1,995 ms of a
    # few milliseconds the server saw: submitted at once, they get one tolerance between them.
    settings.EDITLAB_CLOCK_TOLERANCE_MS = 2000
    user = UserFactory(role="annotator")
    assignments = [AssignmentFactory(annotator=user, item__model_output=ORIGINAL) for _ in range(2)]
    now = timezone.now()
    for assignment in assignments:
        post_edit = lifecycle._new_post_edit(assignment)
        Visit.objects.create(post_edit=post_edit, started_at=now, last_seen_at=now)
    _slowed(monkeypatch, lifecycle, "stored_log")
    assert _together(user, [_claim_and_submit(assignment, 1995) for assignment in assignments]) == [200, 200]
    post_edits = list(PostEdit.objects.filter(assignment__annotator=user))
    visits = list(Visit.objects.filter(post_edit__assignment__annotator=user))
    # The later-started page load ended the earlier one (one clock); both windows count once.
    assert sum(1 for visit in visits if visit.ended_at == max(v.started_at for v in visits)) >= 1
    assert sum(p.server_elapsed_ms for p in post_edits) <= server_observed_ms(visits)
    assert sum(p.wall_ms for p in post_edits) <= server_observed_ms(visits) + 2000
    assert sorted(p.clock_tolerance_ms for p in post_edits)[0] < 2000
    assert all(p.active_ms <= p.wall_ms and p.replay_ok for p in post_edits)
