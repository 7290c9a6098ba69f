"""Faults without a browser: the database drops mid-request, a submit arrives twice, the session
expires mid-edit, a metric job's worker is stopped or killed mid-run.

The browser side (the app server killed while an annotator types; the session expiring in the
page) is in test_faults_browser.py.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.http import HttpResponse
from django.test import Client
from django.utils import timezone

from annotations.editing import event_store, lifecycle
from annotations.models import Assignment, EditEvent, PostEdit, Visit
from editlab.logins.models import Session
from metrics import text as engine
from metrics.jobs import metric_job_create, metric_job_retry
from metrics.models import MetricJob, MetricValue
from tests.annotations.editing_helpers import EDITED, edit_log, open_item, post_json, send, url
from tests.editlab.app_process import ROOT, copy_of, process_env, query, run_script
from tests.factories import PASSWORD, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


def _submit(client, post_edit, visit, *, text=EDITED, last_seq=10):
    payload = {"page_id": str(visit.page_id), "text": text, "version": 0, "last_seq": last_seq}
    return post_json(client, url("submit", post_edit), payload)


def _opened(annotator):
    # Opened 30 s ago: the logged 2.5 s of editing fit in the server-observed time (no clipping).
    return open_item(annotator, now=timezone.now() - timedelta(seconds=30))


def _dropped_connection(*args, **kwargs):
    raise OperationalError("server closed the connection unexpectedly")


# --------------------------------------------------------------------------- the database drops


def test_a_batch_cut_by_the_database_is_a_503_stores_nothing_and_its_retry_stores_it_once(
    annotator, annotator_client, monkeypatch
):
    post_edit, visit = _opened(annotator)
    log = edit_log()
    assert send(annotator_client, post_edit, visit, log[:4]).status_code == 200
    insert = event_store.insert_following_events  # the insert of a batch that follows the stored ones

    def insert_then_drop(*args, **kwargs):
        insert(*args, **kwargs)  # the rows are written inside the transaction ...
        _dropped_connection()  # ... then the connection goes

    monkeypatch.setattr(event_store, "insert_following_events", insert_then_drop)
    cut = send(annotator_client, post_edit, visit, log[4:])

    assert cut.status_code == 503
    assert cut["Retry-After"] == "2"
    assert cut.json()["code"] == "unavailable" and "Send it again" in cut.json()["detail"]
    assert list(EditEvent.objects.filter(post_edit=post_edit).values_list("seq", flat=True)) == [0, 1, 2, 3]
    assert PostEdit.objects.get(pk=post_edit.pk).event_gaps == []

    monkeypatch.setattr(event_store, "insert_following_events", insert)
    retry = send(annotator_client, post_edit, visit, log[4:])
    assert retry.status_code == 200 and retry.json()["stored"] == 7
    # The answer to the retry is lost too: the logger sends the batch a third time.
    again = send(annotator_client, post_edit, visit, log[4:])
    assert (again.json()["stored"], again.json()["duplicates"]) == (0, 7)
    seqs = list(EditEvent.objects.filter(post_edit=post_edit).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(11))
    assert _submit(annotator_client, post_edit, visit).status_code == 200
    post_edit.refresh_from_db()
    assert (post_edit.replay_ok, post_edit.flags, post_edit.keystrokes) == (True, [], 2)


def test_a_submit_cut_by_the_database_is_a_503_and_changes_nothing(annotator, annotator_client, monkeypatch):
    post_edit, visit = _opened(annotator)
    send(annotator_client, post_edit, visit, edit_log())
    monkeypatch.setattr(lifecycle, "replay", _dropped_connection)  # fails after the visit row was updated

    cut = _submit(annotator_client, post_edit, visit)

    assert cut.status_code == 503 and cut.json()["code"] == "unavailable"
    post_edit.refresh_from_db()
    assert (post_edit.text, post_edit.submitted_at, post_edit.keystrokes) == ("", None, None)
    assert post_edit.assignment.status == Assignment.IN_PROGRESS
    visit.refresh_from_db()
    assert visit.ended_at is None
    monkeypatch.undo()
    assert _submit(annotator_client, post_edit, visit).status_code == 200
    assert PostEdit.objects.get(pk=post_edit.pk).text == EDITED


def test_a_draft_cut_by_the_database_keeps_the_stored_version(annotator, annotator_client, monkeypatch):
    post_edit, visit = _opened(annotator)
    store = event_store.store_draft

    def store_then_drop(*args, **kwargs):
        store(*args, **kwargs)  # the draft row's UPDATE, inside the transaction ...
        _dropped_connection()  # ... then the connection goes

    monkeypatch.setattr(event_store, "store_draft", store_then_drop)
    payload = {"page_id": str(visit.page_id), "text": "Half saved?", "version": 0}

    cut = post_json(annotator_client, url("draft", post_edit), payload)

    assert cut.status_code == 503
    post_edit.refresh_from_db()
    assert (post_edit.draft_text, post_edit.version) == (post_edit.start_text, 0)
    monkeypatch.undo()
    saved = post_json(annotator_client, url("draft", post_edit), payload)
    assert saved.json() == {"version": 1}


# --------------------------------------------------------------------------- a submit arrives twice


def test_a_submit_sent_again_after_a_timeout_submits_once_with_the_first_result(annotator, annotator_client):
    post_edit, visit = _opened(annotator)
    send(annotator_client, post_edit, visit, edit_log())
    first = _submit(annotator_client, post_edit, visit)
    post_edit.refresh_from_db()
    stored = {name: getattr(post_edit, name) for name in ("text", "submitted_at", "wall_ms", "keystrokes", "flags")}

    # The retry (or a third, with other text from a stale tab) changes nothing and answers the same.
    again = _submit(annotator_client, post_edit, visit)
    other = _submit(annotator_client, post_edit, visit, text="Something else entirely.")

    assert first.status_code == again.status_code == other.status_code == 200
    assert first.json() == again.json() == other.json()
    post_edit.refresh_from_db()
    assert {name: getattr(post_edit, name) for name in stored} == stored
    assert PostEdit.objects.filter(assignment__annotator=annotator, submitted_at__isnull=False).count() == 1


def _at_once(client: Client, copies: int, request: Callable[[Client], HttpResponse]) -> list[HttpResponse]:
    """`request` made by `copies` threads released together, each with its own client on the same
    session (and its own database connection); their answers."""
    start = threading.Barrier(copies)
    answers: list[HttpResponse] = []

    def one() -> None:
        own = Client()
        own.cookies = client.cookies
        try:
            start.wait()
            answers.append(request(own))
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(copies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


# serialized_rollback: an earlier transactional test's flush may have removed the role groups.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_double_click_sends_two_submits_at_once_and_one_submit_happens(annotator):
    post_edit, visit = _opened(annotator)
    client = Client()
    client.force_login(annotator)
    send(client, post_edit, visit, edit_log())
    answers = _at_once(client, 2, lambda own: _submit(own, post_edit, visit))

    # Each is answered 200, or 503 when the database was locked (SQLite): the logger then sends it again.
    assert len(answers) == 2 and {a.status_code for a in answers} <= {200, 503}, [a.content for a in answers]
    results = [a.json() if a.status_code == 200 else _submit(client, post_edit, visit).json() for a in answers]
    assert results[0] == results[1] == {"next_url": "/annotate/", "diff_url": f"/edit/{post_edit.assignment_id}/diff/"}
    post_edit.refresh_from_db()
    assert (post_edit.text, post_edit.replay_ok, post_edit.flags) == (EDITED, True, [])
    assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.SUBMITTED


# serialized_rollback: as above.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_same_batch_sent_four_times_at_once_is_stored_once(annotator):
    post_edit, visit = _opened(annotator)
    client = Client()
    client.force_login(annotator)
    log = edit_log()
    assert send(client, post_edit, visit, log[:4]).status_code == 200
    answers = _at_once(client, 4, lambda own: send(own, post_edit, visit, log[4:]))

    # PostgreSQL: the post-edit's lock queues them; SQLite may answer 503 (locked): the logger sends again.
    assert len(answers) == 4 and {a.status_code for a in answers} <= {200, 503}, [a.content for a in answers]
    stored = [a.json()["stored"] for a in answers if a.status_code == 200]
    if connection.vendor == "postgresql":
        assert sorted(stored) == [0, 0, 0, 7]  # one stored the 7 events, three were answered as duplicates
    assert stored.count(7) <= 1 and set(stored) <= {0, 7}
    if 7 not in stored:  # every attempt that could have stored it was refused (locked): the logger sends again
        assert send(client, post_edit, visit, log[4:]).json()["stored"] == 7
    seqs = list(EditEvent.objects.filter(post_edit=post_edit).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(11))
    assert Visit.objects.get(pk=visit.pk).last_seq == 10


# --------------------------------------------------------------------------- the session expires


def test_an_expired_session_is_a_403_the_logger_keeps_and_after_a_new_login_everything_is_stored(annotator):
    post_edit, visit = _opened(annotator)
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=annotator.username, password=PASSWORD)
    token = "t" * 32
    client.cookies["csrftoken"] = token
    log = edit_log()

    def post(name: str, payload: dict, csrf: str = token):
        return client.post(
            url(name, post_edit), data=payload, content_type="application/json", headers={"X-CSRFToken": csrf}
        )

    assert post("events", {"page_id": str(visit.page_id), "events": log[:5]}).status_code == 200
    Session.objects.all().delete()  # the session expires (or is flushed) mid-edit

    # A 403 with JSON, never a redirect to the login page: fetch() would follow a redirect to a
    # 200 HTML page and the logger would take the batch for acknowledged.
    for name, payload in (
        ("events", {"page_id": str(visit.page_id), "events": log[5:]}),
        ("draft", {"page_id": str(visit.page_id), "text": EDITED, "version": 0}),
    ):
        refused = post(name, payload)
        assert refused.status_code == 403, name
        assert refused["Content-Type"] == "application/json" and "detail" in refused.json()
    assert EditEvent.objects.filter(post_edit=post_edit).count() == 5

    # The annotator logs in again: a new session and a new CSRF token (Django rotates it at login).
    assert client.login(username=annotator.username, password=PASSWORD)
    fresh = client.cookies["csrftoken"].value if "csrftoken" in client.cookies else token
    client.cookies["csrftoken"] = fresh
    sent = post("events", {"page_id": str(visit.page_id), "events": log[5:]}, csrf=fresh)
    assert (sent.status_code, sent.json()["stored"]) == (200, 6)
    assert post("draft", {"page_id": str(visit.page_id), "text": EDITED, "version": 0}, csrf=fresh).json() == {
        "version": 1
    }
    submitted = client.post(
        url("submit", post_edit),
        data={"page_id": str(visit.page_id), "text": EDITED, "version": 1, "last_seq": 10},
        content_type="application/json",
        headers={"X-CSRFToken": fresh},
    )
    assert submitted.status_code == 200
    post_edit.refresh_from_db()
    assert (post_edit.text, post_edit.replay_ok, post_edit.flags) == (EDITED, True, [])
    assert list(post_edit.events.order_by("seq").values_list("seq", flat=True)) == list(range(11))


# --------------------------------------------------------------------------- metric jobs


def _values(project) -> dict:
    return {
        (pe, metric, variant): value
        for pe, metric, variant, value in MetricValue.objects.filter(
            post_edit__assignment__item__project=project
        ).values_list("post_edit_id", "metric", "variant", "value")
    }


@pytest.mark.parametrize("stop", [SystemExit(1), KeyboardInterrupt()], ids=["SIGTERM twice", "Ctrl+C"])
def test_a_worker_stopped_mid_job_leaves_a_failed_job_whose_retry_gives_the_values_of_a_clean_run(
    researcher, monkeypatch, settings, stop
):
    project = ProjectFactory(name="Stopped")
    for n in range(7):
        SubmittedPostEditFactory(assignment__item__project=project, text=f"This is test number {n}.")
    settings.EDITLAB_METRIC_CHUNK_SIZE = 3
    metrics = ["levenshtein", "levenshtein_words"]

    with transaction.atomic():  # the clean run, undone
        metric_job_create(project=project, user=researcher, metrics=metrics, variants=["plain"])
        clean = _values(project)
        transaction.set_rollback(True)
    assert len(clean) == 14 and not MetricValue.objects.exists()

    real = engine.score_pairs
    calls = {"n": 0}

    def stopped_on_the_second_chunk(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise stop  # db_worker's second SIGTERM calls sys.exit(1) inside the running task
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "score_pairs", stopped_on_the_second_chunk)
    try:
        metric_job_create(project=project, user=researcher, metrics=metrics, variants=["plain"])
    except KeyboardInterrupt:
        pass  # the in-process task backend re-raises Ctrl+C and records anything else on its result
    job = MetricJob.objects.get(project=project)
    assert job.status == MetricJob.FAILED and job.error.startswith(type(stop).__name__)
    assert len(_values(project)) == 6  # the first chunk (3 post-edits x 2 metrics), whole

    monkeypatch.setattr(engine, "score_pairs", real)
    job = metric_job_retry(job=job)
    assert (job.status, job.total, job.done) == (MetricJob.DONE, 8, 8)  # only what was missing
    assert _values(project) == clean


WORKER = """
import os, pathlib, time
from django.core.management import call_command
from metrics import jobs

marker = pathlib.Path(os.environ["FAULT_MARKER"])
write = jobs.metric_values_store
chunks = {"n": 0}

def metric_values_store(**kwargs):
    result = write(**kwargs)
    chunks["n"] += 1
    if chunks["n"] == 2:
        # The second chunk's rows are written, its transaction is still open: the worker dies here.
        marker.write_text("inside")
        time.sleep(600)
    return result

jobs.metric_values_store = metric_values_store
call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")
"""

SEED_METRIC_PROJECT = """
import json
from django.contrib.auth import get_user_model
from django.utils import timezone
from annotations.models import Assignment, Item, PostEdit, Project
from metrics.jobs import metric_job_create

anna = get_user_model().objects.get(username="anna")
project = Project.objects.create(name="Killed worker", instructions=["Fix it"])
items = Item.objects.bulk_create(
    Item(project=project, external_id=f"i{n}", position=n, model_output=f"This are test number {n}.")
    for n in range(1200)
)
assignments = Assignment.objects.bulk_create(
    Assignment(item=item, annotator=anna, status=Assignment.SUBMITTED) for item in items
)
now = timezone.now()
PostEdit.objects.bulk_create(
    PostEdit(assignment=a, text=f"This is test {n} indeed.", submitted_at=now, wall_ms=1000 + n, keystrokes=n)
    for n, a in enumerate(assignments)
)
rita = get_user_model().objects.get(username="rita")
job = metric_job_create(project=project, user=rita, metrics=["levenshtein", "levenshtein_words"], variants=["plain"])
print(json.dumps({"job": job.pk, "status": job.status}))
"""

RESUME = """
import json
from django.contrib.auth import get_user_model
from annotations.models import Project
from metrics.jobs import metric_job_create

job = metric_job_create(
    project=Project.objects.get(name="Killed worker"), user=get_user_model().objects.get(username="rita"),
    metrics=["levenshtein", "levenshtein_words"], variants=["plain"],
)
print(json.dumps({"status": job.status, "total": job.total, "done": job.done}))
"""


def _stored(database) -> dict:
    rows = query(database, "SELECT post_edit_id, metric, variant, value FROM metrics_metricvalue")
    return {(pe, metric, variant): value for pe, metric, variant, value in rows}


def test_a_killed_db_worker_leaves_only_whole_chunks_and_a_new_job_completes_the_clean_values(
    process_db_template, tmp_path
):
    seeded = copy_of(process_db_template, tmp_path, "seeded.sqlite3")
    queued = run_script(seeded, SEED_METRIC_PROJECT, TASKS_BACKEND="database")
    assert queued["status"] == "queued"
    clean_db = copy_of(seeded, tmp_path, "clean.sqlite3")
    marker = tmp_path / "inside-second-chunk"

    worker = subprocess.Popen(
        [sys.executable, "-c", "import django\ndjango.setup()\n" + WORKER],
        cwd=ROOT,
        env=process_env(seeded, TASKS_BACKEND="database", FAULT_MARKER=str(marker)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert worker.poll() is None, worker.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the worker never reached its second chunk"
            time.sleep(0.1)
        os.killpg(worker.pid, signal.SIGKILL)  # no handler runs: the worker simply vanishes
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        worker.stderr.close()

    # Only the first chunk (500 post-edits x 2 metrics) is stored: the second chunk's uncommitted
    # rows are gone, and no post-edit has one metric without the other.
    after_kill = _stored(seeded)
    assert len(after_kill) == 1000
    per_post_edit = query(seeded, "SELECT COUNT(*) FROM metrics_metricvalue GROUP BY post_edit_id")
    assert {count for (count,) in per_post_edit} == {2}
    [(status,)] = query(seeded, "SELECT status FROM metrics_metricjob WHERE id = ?", (queued["job"],))
    assert status == "running"  # the dead worker could not say otherwise

    # A new job picks up what is missing, and only that; the result is a clean run's.
    resumed = run_script(seeded, RESUME)
    assert resumed == {"status": "done", "total": 1400, "done": 1400}
    run_script(
        clean_db,
        "from django.core.management import call_command\n"
        'call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload")',
        TASKS_BACKEND="database",
    )
    clean = _stored(clean_db)
    assert len(clean) == 2400
    assert _stored(seeded) == clean
