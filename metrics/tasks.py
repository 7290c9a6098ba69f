"""Background tasks (django-tasks): in-process by default, `manage.py db_worker` with TASKS_BACKEND=database."""

from django_tasks import task

from metrics.services import metric_job_run


@task()
def compute_metric_job(job_id: int) -> dict | None:
    """Compute the values a MetricJob asks for; the job row carries progress and errors."""
    report = metric_job_run(job_id=job_id)
    return report.as_dict() if report is not None else None
