import threading
import time

import pytest
from django.db import transaction

from metrics.jobs import metric_job_create
from metrics.models import MetricChunk, MetricJob, MetricValue, TaskWorker
from metrics.selectors_jobs import job_activity
from tests.factories import ProjectFactory, SubmittedPostEditFactory, UserFactory

THREAD_TASKS = {"default": {"BACKEND": "editlab.task_backends.ThreadBackend"}}


def _wait_for(job: MetricJob, *, timeout_s: float = 60) -> MetricJob:
    # Join the task's thread instead of polling the row: the test database is SQLite's shared
    # in-memory one, whose table locks make a concurrent reader fail the worker's writes.
    deadline = time.monotonic() + timeout_s
    for thread in [t for t in threading.enumerate() if t.name.startswith("task-")]:
        thread.join(max(0.0, deadline - time.monotonic()))
        assert not thread.is_alive(), f"the task thread still runs after {timeout_s} s"
    job.refresh_from_db()
    return job


# The job runs in another thread with its own connection: a transactional test, so that it
# sees the committed rows; serialized_rollback restores the role groups after the flush.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_thread_backend_returns_at_once_and_runs_the_job_in_the_background(settings):
    settings.TASKS = THREAD_TASKS
    project = ProjectFactory(name="threaded")
    for n, text in enumerate(["This is a test.", "This is the test."]):
        SubmittedPostEditFactory(assignment__item__project=project, assignment__item__external_id=f"t{n}", text=text)
    researcher = UserFactory(username="rita-thread", role="researcher")

    # In a block, the thread starts on commit, after the service's own writes: on the shared in-memory
    # SQLite of the tests two connections writing at once fail at once instead of waiting (a file
    # database, as in use, waits up to its 20 s timeout).
    with transaction.atomic():
        job = metric_job_create(project=project, user=researcher, metrics=["levenshtein"], variants=["plain"])
        assert job.status == MetricJob.QUEUED

    job = _wait_for(job)
    assert (job.status, job.total, job.done, job.error) == (MetricJob.DONE, 2, 2, "")
    values = sorted(MetricValue.objects.filter(metric="levenshtein").values_list("value", flat=True))
    # "This are a test." -> "This is a test.": a->i, r->s, drop e = 3; -> "This is the test.": 6.
    assert values == [3.0, 6.0]
    # One chunk, computed by the job's own thread (no db_worker, no heartbeat row).
    assert list(job.chunks.values_list("status", "size", "worker")) == [(MetricChunk.DONE, 2, None)]
    [share] = job_activity(job).workers
    assert (share.label, share.chunks, share.values, share.status) == ("the app process (no db_worker)", 1, 2, None)
    assert not TaskWorker.objects.exists()
