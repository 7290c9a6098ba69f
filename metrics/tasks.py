"""Background tasks (django-tasks): in-process by default, `manage.py db_worker` with TASKS_BACKEND=database.

The only module that knows the task engine: its tasks call metrics.jobs, and it registers with
metrics.jobs how jobs and chunks are enqueued (imported by MetricsConfig.ready, so every process has the
queue before it serves a request or runs a task).
"""

from django_tasks import task, task_backends

from editlab.task_backends import runs_in_this_process
from metrics import jobs
from metrics.workers import this_worker


@task()
def metric_job_plan_task(job_id: int) -> dict | None:
    """Plan a MetricJob and cut it into chunks (with the in-process backends, compute them too)."""
    return jobs.metric_job_plan(job_id=job_id, worker=this_worker())


@task()
def metric_chunk_run_task(chunk_id: int) -> int | None:
    """Compute and store one chunk of a MetricJob; the values stored, or None if there was nothing to do."""
    return jobs.metric_chunk_run(chunk_id=chunk_id, worker=this_worker())


def _enqueue_plan(job_id: int) -> str:
    return str(metric_job_plan_task.enqueue(job_id).id)


def _enqueue_chunk(chunk_id: int) -> str:
    return str(metric_chunk_run_task.enqueue(chunk_id).id)


def _fans_out() -> bool:
    return not runs_in_this_process(task_backends[metric_chunk_run_task.backend])


jobs.use_queue(jobs.JobQueue(plan=_enqueue_plan, chunk=_enqueue_chunk, fans_out=_fans_out))
