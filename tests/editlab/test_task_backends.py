import time

import pytest

from metrics.models import MetricJob, MetricValue
from metrics.services import metric_job_create
from tests.factories import ProjectFactory, SubmittedPostEditFactory, UserFactory

THREAD_TASKS = {"default": {"BACKEND": "editlab.task_backends.ThreadBackend"}}


def _wait_for(job: MetricJob, *, timeout_s: float = 60) -> MetricJob:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (MetricJob.DONE, MetricJob.FAILED):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job still {job.status} after {timeout_s} s")


# The job runs in another thread with its own connection: a transactional test, so that it
# sees the committed rows; serialized_rollback restores the role groups after the flush.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_thread_backend_returns_at_once_and_runs_the_job_in_the_background(settings):
    settings.TASKS = THREAD_TASKS
    project = ProjectFactory(name="threaded")
    for n, text in enumerate(["This is a test.", "This is the test."]):
        SubmittedPostEditFactory(
            assignment__item__project=project, assignment__item__external_id=f"t{n}", text=text
        )
    researcher = UserFactory(username="rita-thread", role="researcher")

    job = metric_job_create(project=project, user=researcher, metrics=["levenshtein"], variants=["plain"])

    assert job.status in (MetricJob.QUEUED, MetricJob.RUNNING, MetricJob.DONE)
    job = _wait_for(job)
    assert (job.status, job.total, job.done, job.error) == (MetricJob.DONE, 2, 2, "")
    values = sorted(MetricValue.objects.filter(metric="levenshtein").values_list("value", flat=True))
    # "This are a test." -> "This is a test.": a->i, r->s, drop e = 3; -> "This is the test.": 6.
    assert values == [3.0, 6.0]
