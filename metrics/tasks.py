"""Background tasks (django-tasks): in-process by default, `manage.py db_worker` with TASKS_BACKEND=database.

The only module that knows the task engine: it calls metrics.jobs, and registers with it how a job is
enqueued (imported by MetricsConfig.ready, so the web process has the queue before any request).
"""

from django_tasks import task

from metrics import jobs


@task()
def compute_metric_job(job_id: int) -> dict | None:
    """Compute the values a MetricJob asks for; the job row carries progress and errors."""
    report = jobs.metric_job_run(job_id=job_id)
    return report.as_dict() if report is not None else None


def _enqueue_run(job_id: int) -> str:
    return str(compute_metric_job.enqueue(job_id).id)


jobs.use_queue(jobs.JobQueue(run=_enqueue_run))
