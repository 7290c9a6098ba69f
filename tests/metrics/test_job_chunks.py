"""A metric job cut into chunk tasks, run by `db_worker` in this process (the database backend): fan-out,
a worker stopped inside a chunk, the cleanup after a dead worker, a claim lost to another worker, and the
heartbeats the health endpoint reads. Real worker processes: test_job_workers.py."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from rest_framework.test import APIClient

from metrics import jobs
from metrics import text as engine
from metrics.management.commands.db_worker import sweep
from metrics.models import MetricChunk, MetricJob, MetricValue, TaskWorker
from metrics.selectors_jobs import database_now, job_activity, worker_status
from metrics.workers import worker_register, worker_stop
from tests.factories import ProjectFactory, SubmittedPostEditFactory

ROOT = Path(__file__).resolve().parents[2]
DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
TEXTS = ["This is a test.", "This is the test.", "It is a test.", "This is test."]
ORIGINAL = "This are a test."  # the factories' model output

# db_worker closes connections between tasks: transactional tests (see test_compute.py).
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def database_backend(settings):
    settings.TASKS = DATABASE_TASKS
    settings.EDITLAB_METRIC_CHUNK_SIZE = 1


@pytest.fixture
def project():
    project = ProjectFactory(name="chunked")
    for n, text in enumerate(TEXTS):
        SubmittedPostEditFactory(assignment__item__project=project, assignment__item__external_id=f"c{n}", text=text)
    return project


def work(*options: str) -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", *options, verbosity=0)


def planned_job(project, researcher) -> MetricJob:
    """A job whose plan task has run: 4 chunks (1 post-edit each) queued, each with a task."""
    job = jobs.metric_job_create(project=project, user=researcher, metrics=["levenshtein"], variants=["plain"])
    work("--max-tasks", "1")
    job.refresh_from_db()
    return job


def levenshtein_values() -> list[float]:
    return sorted(MetricValue.objects.filter(metric="levenshtein").values_list("value", flat=True))


EXPECTED = sorted(engine.METRICS["levenshtein"](ORIGINAL, text) for text in TEXTS)


def dead_worker(seconds_ago: float = 120) -> TaskWorker:
    worker = TaskWorker.objects.create(engine_id="gone", host="elsewhere", pid=4242)
    TaskWorker.objects.filter(pk=worker.pk).update(heartbeat=database_now() - timedelta(seconds=seconds_ago))
    worker.refresh_from_db()
    return worker


def held_by(chunk: MetricChunk, worker: TaskWorker, *, attempts: int = 1) -> None:
    """As if `worker` had claimed the chunk's task and died in it."""
    MetricChunk.objects.filter(pk=chunk.pk).update(status=MetricChunk.RUNNING, attempts=attempts, worker=worker)
    DBTaskResult.objects.filter(id=chunk.task_id).update(status="RUNNING", worker_ids=[worker.engine_id])


def test_a_job_fans_out_into_chunk_tasks_that_the_workers_claim(database_backend, project, researcher):
    job = planned_job(project, researcher)

    assert (job.status, job.total, job.done) == (MetricJob.RUNNING, 4, 0)
    chunks = list(job.chunks.all())
    assert [(c.seq, c.status, c.size, c.total) for c in chunks] == [(n, "queued", 1, 1) for n in range(4)]
    assert DBTaskResult.objects.filter(id__in=[c.task_id for c in chunks], status="READY").count() == 4
    activity = job_activity(job)
    assert activity.chunks == {"queued": 4, "running": 0, "done": 0, "failed": 0, "total": 4}
    assert activity.waiting_s is not None  # nobody works on it

    work()

    job.refresh_from_db()
    assert (job.status, job.total, job.done, job.error) == (MetricJob.DONE, 4, 4, "")
    assert levenshtein_values() == EXPECTED
    [share] = job_activity(job).workers
    assert (share.chunks, share.post_edits, share.values, share.running) == (4, 4, 4, 0)
    assert share.status.stopped is not None  # the batch worker has exited
    assert job_activity(job).waiting_s is None


def test_a_worker_stopped_inside_a_chunk_gives_it_back_and_the_job_completes(
    database_backend, project, researcher, monkeypatch
):
    job = planned_job(project, researcher)
    real, calls = engine.score_pairs, {"n": 0}

    def stopped_in_the_second_chunk(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit(1)  # what db_worker's second SIGTERM raises inside the running task
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "score_pairs", stopped_in_the_second_chunk)
    work()  # the engine records the interrupted task as failed and goes on with the queue

    job.refresh_from_db()
    assert (job.status, job.done, job.error) == (MetricJob.DONE, 4, "")
    assert levenshtein_values() == EXPECTED
    assert sorted(job.chunks.values_list("attempts", flat=True)) == [1, 1, 1, 2]
    interrupted = DBTaskResult.objects.get(status="FAILED")
    assert interrupted.exception_class_path == "builtins.SystemExit"


def test_the_chunk_of_a_dead_worker_is_queued_again_and_its_engine_row_failed(database_backend, project, researcher):
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=2)
    gone = dead_worker()
    held_by(chunk, gone)
    old_task = chunk.task_id
    me = worker_register(engine_id="me")
    try:
        sweep(me, database_now())
    finally:
        worker_stop(me)

    chunk.refresh_from_db()
    assert (chunk.status, chunk.worker, chunk.attempts) == (MetricChunk.QUEUED, None, 1)
    assert chunk.task_id and chunk.task_id != old_task
    lost = DBTaskResult.objects.get(id=old_task)
    assert (lost.status, lost.exception_class_path) == ("FAILED", "metrics.workers.WorkerLost")
    assert "worker gone (elsewhere pid 4242) stopped sending heartbeats" in lost.traceback

    work()
    job.refresh_from_db()
    assert (job.status, job.done) == (MetricJob.DONE, 4)
    assert levenshtein_values() == EXPECTED
    assert job.chunks.get(seq=2).attempts == 2
    assert not DBTaskResult.objects.filter(status="RUNNING").exists()


def test_a_live_worker_keeps_its_chunk(database_backend, project, researcher):
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=0)
    busy = dead_worker(seconds_ago=1)  # beat a second ago: alive
    held_by(chunk, busy)
    me = worker_register(engine_id="me")
    sweep(me, database_now())
    worker_stop(me)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.worker_id) == (MetricChunk.RUNNING, busy.pk)
    assert DBTaskResult.objects.get(id=chunk.task_id).status == "RUNNING"


def test_a_chunk_that_keeps_losing_its_worker_fails_the_job_naming_its_post_edits(
    database_backend, project, researcher, settings
):
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=1)
    held_by(chunk, dead_worker(), attempts=settings.EDITLAB_CHUNK_MAX_ATTEMPTS)
    me = worker_register(engine_id="me")
    sweep(me, database_now())
    worker_stop(me)

    job.refresh_from_db()
    [post_edit] = chunk.post_edit_ids
    assert job.status == MetricJob.FAILED
    assert job.error == (
        f"chunk 1 (1 post-edits, #{post_edit}–#{post_edit}, plain) lost its worker 3 times, last elsewhere pid 4242 "
        "(killed? out of memory?); the values of the chunks that finished are stored"
    )
    work()  # the other chunks' tasks find their job failed and do nothing
    assert not MetricValue.objects.exists()
    assert job.chunks.filter(status=MetricChunk.QUEUED).count() == 3

    job = jobs.metric_job_retry(job=job)
    work()
    job.refresh_from_db()
    assert (job.status, job.total, job.done) == (MetricJob.DONE, 4, 4)
    assert levenshtein_values() == EXPECTED


def test_a_job_whose_planner_died_is_planned_again(database_backend, project, researcher):
    job = jobs.metric_job_create(project=project, user=researcher, metrics=["levenshtein"], variants=["plain"])
    gone = dead_worker()
    MetricJob.objects.filter(pk=job.pk).update(status=MetricJob.RUNNING, planner=gone)
    DBTaskResult.objects.filter(id=job.task_id).update(status="RUNNING", worker_ids=[gone.engine_id])
    me = worker_register(engine_id="me")
    sweep(me, database_now())
    worker_stop(me)

    job.refresh_from_db()
    assert (job.status, job.planner) == (MetricJob.QUEUED, None)
    work()
    job.refresh_from_db()
    assert (job.status, job.done) == (MetricJob.DONE, 4)
    assert levenshtein_values() == EXPECTED


def test_a_worker_that_lost_its_claim_stores_nothing_and_the_job_counts_each_chunk_once(
    database_backend, project, researcher, monkeypatch
):
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=0)
    slow = worker_register(engine_id="slow")
    fast = worker_register(engine_id="fast")
    real = engine.score_pairs
    reclaimed = {"done": False}

    def taken_for_dead_while_scoring(*args, **kwargs):
        if not reclaimed["done"]:
            reclaimed["done"] = True
            # The slow worker's heartbeat went stale: its chunk is queued again and the fast one stores it.
            jobs.metric_work_reclaim(dead=[slow])
            assert jobs.metric_chunk_run(chunk_id=chunk.pk, worker=fast) == 1
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "score_pairs", taken_for_dead_while_scoring)
    assert jobs.metric_chunk_run(chunk_id=chunk.pk, worker=slow) is None  # its values are not written

    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts, chunk.worker_id) == (MetricChunk.DONE, 2, fast.pk)
    assert MetricValue.objects.count() == 1
    job.refresh_from_db()
    assert (job.status, job.done) == (MetricJob.RUNNING, 1)  # not 2


def test_worker_status_gives_each_workers_last_heartbeat(settings):
    settings.EDITLAB_WORKER_STALE_S = 60
    alive = worker_register(engine_id="alive")
    silent = dead_worker(seconds_ago=90)
    stopped = worker_register(engine_id="stopped")
    worker_stop(stopped)

    status = {s.engine_id: s for s in worker_status()}
    assert set(status) == {"alive", "gone"}  # a worker that stopped cleanly is no longer listed
    assert status["alive"].alive and status["alive"].seconds_since_heartbeat < 60
    assert not status["gone"].alive and status["gone"].seconds_since_heartbeat >= 90
    assert status["gone"].label == "elsewhere pid 4242"
    assert (status["alive"].heartbeat, status["gone"].heartbeat) == (
        TaskWorker.objects.get(pk=alive.pk).heartbeat,
        silent.heartbeat,
    )
    assert {s.engine_id for s in worker_status(include_stopped=True)} == {"alive", "gone", "stopped"}


def test_a_restarted_worker_with_a_fixed_id_cleans_up_after_its_predecessor_at_once(
    database_backend, project, researcher
):
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=3)
    before = worker_register(engine_id="fixed")  # the same --worker-id on this host, then SIGKILL
    held_by(chunk, before)

    work("--worker-id", "fixed")

    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == (MetricChunk.DONE, 2)
    job.refresh_from_db()
    assert (job.status, job.done) == (MetricJob.DONE, 4)
    assert DBTaskResult.objects.filter(exception_class_path="metrics.workers.WorkerLost").count() == 1


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"EDITLAB_WORKER_HEARTBEAT_S": "often"}, "EDITLAB_WORKER_HEARTBEAT_S='often' is not a number"),
        ({"EDITLAB_WORKER_HEARTBEAT_S": "nan"}, "EDITLAB_WORKER_HEARTBEAT_S='nan' is not a finite number"),
        ({"EDITLAB_WORKER_STALE_S": "inf"}, "EDITLAB_WORKER_STALE_S='inf' is not a finite number"),
        ({"EDITLAB_WORKER_HEARTBEAT_S": "0"}, "EDITLAB_WORKER_HEARTBEAT_S=0.0 is below the minimum of 0.1"),
        ({"EDITLAB_WORKER_HEARTBEAT_S": "30"}, "EDITLAB_WORKER_STALE_S (60.0) must be at least 3 x"),
        ({"EDITLAB_METRIC_CHUNK_SIZE": "0"}, "EDITLAB_METRIC_CHUNK_SIZE=0 is below the minimum of 1"),
        ({"EDITLAB_CHUNK_MAX_ATTEMPTS": "1e9"}, "EDITLAB_CHUNK_MAX_ATTEMPTS='1e9' is not an integer"),
    ],
)
def test_bad_worker_settings_stop_the_start_with_the_variable_named(env, message):
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL"}}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**base, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_the_api_reports_a_jobs_chunks_workers_and_wait(database_backend, project, researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    job = planned_job(project, researcher)
    url = reverse("api-metric-job", kwargs={"job_id": job.pk})

    waiting = client.get(url).json()["activity"]
    assert waiting["chunks"] == {"total": 4, "queued": 4, "running": 0, "done": 0, "failed": 0}
    assert (waiting["in_flight"], waiting["workers"], waiting["live_workers"]) == (0, [], 0)
    assert isinstance(waiting["waiting_s"], float) and waiting["waiting_s"] >= 0

    work("--worker-id", "api-worker")
    body = client.get(url).json()
    assert (body["status"], body["total"], body["done"]) == ("done", 4, 4)
    assert body["activity"]["waiting_s"] is None
    [share] = body["activity"]["workers"]
    worker = TaskWorker.objects.get(engine_id="api-worker")
    assert share == {
        "worker": f"{worker.host} pid {worker.pid}",
        "engine_id": "api-worker",
        "chunks": 4,
        "post_edits": 4,
        "values": 4,
        "running": 0,
        "heartbeat": share["heartbeat"],
        "alive": False,  # it has exited
    }
    assert share["heartbeat"] is not None


def test_a_long_chunk_of_a_live_worker_does_not_make_its_job_stalled(database_backend, project, researcher, settings):
    settings.EDITLAB_JOB_STALE_S = 60
    job = planned_job(project, researcher)
    MetricJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(seconds=3600))
    busy = dead_worker(seconds_ago=1)
    held_by(job.chunks.get(seq=0), busy)
    job.refresh_from_db()
    assert not job.is_stalled  # no progress for an hour, but its worker beats: one long chunk

    TaskWorker.objects.filter(pk=busy.pk).update(heartbeat=database_now() - timedelta(seconds=3600))
    assert job.is_stalled
    job = jobs.metric_job_retry(job=job)
    work()
    job.refresh_from_db()
    assert (job.status, job.done) == (MetricJob.DONE, 4)
    assert levenshtein_values() == EXPECTED


def test_queued_work_whose_task_the_engine_will_never_run_gets_a_new_task(database_backend, project, researcher):
    # A worker stopped between the engine's claim and the task's start leaves the chunk queued and its task
    # RUNNING, then (once the worker is found dead) FAILED: nobody would run the chunk.
    job = planned_job(project, researcher)
    chunk = job.chunks.get(seq=1)
    gone = dead_worker()
    DBTaskResult.objects.filter(id=chunk.task_id).update(status="RUNNING", worker_ids=[gone.engine_id])
    stale_job = jobs.metric_job_create(
        project=project, user=researcher, metrics=["levenshtein_words"], variants=["plain"]
    )
    DBTaskResult.objects.filter(id=stale_job.task_id).update(status="FAILED")
    MetricJob.objects.filter(pk=stale_job.pk).update(created=timezone.now() - timedelta(seconds=3600))

    me = worker_register(engine_id="me")
    sweep(me, database_now())
    worker_stop(me)

    chunk.refresh_from_db()
    stale_job.refresh_from_db()
    assert DBTaskResult.objects.get(id=chunk.task_id).status == "READY"
    assert DBTaskResult.objects.get(id=stale_job.task_id).status == "READY"
    work()
    job.refresh_from_db()
    stale_job.refresh_from_db()
    assert (job.status, job.done, stale_job.status) == (MetricJob.DONE, 4, MetricJob.DONE)
    assert levenshtein_values() == EXPECTED
    assert MetricValue.objects.filter(metric="levenshtein_words").count() == 4
