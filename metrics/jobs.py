"""Metric jobs: a researcher's request to compute values, run in the background by the task engine.

Dependencies point one way: metrics.tasks (the task engine's entry points) calls these services, and
these services call metrics.services (the computing). Starting a job must put a task on the engine's
queue, which would point back at metrics.tasks; instead metrics.tasks registers how to enqueue
(`use_queue`) when the app is ready, and this module only knows the `JobQueue` it was given.
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from annotations.models import Project
from metrics.models import MetricJob
from metrics.selectors import VARIANTS
from metrics.services import ComputeError, ComputeReport, metric_values_compute, resolve_metrics, resolve_variants

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobQueue:
    """How a job reaches the task engine: `run(job_id)` enqueues it and returns the engine's task id."""

    run: Callable[[int], str]


_queue: JobQueue | None = None


def use_queue(queue: JobQueue) -> None:
    global _queue
    _queue = queue


def _enqueue(job: MetricJob) -> None:
    if _queue is None:
        raise RuntimeError("no job queue registered: metrics.tasks registers it when the metrics app is ready")
    # Outside any transaction the job row is committed before a database worker can look for it.
    task_id = _queue.run(job.pk)
    MetricJob.objects.filter(pk=job.pk).update(task_id=task_id[:64])


def metric_job_create(
    *, project: Project, user, metrics: Sequence[str] | None = None, variants: Sequence[str] = VARIANTS
) -> MetricJob:
    """Validate the request and queue a job for it."""
    metric_names = resolve_metrics(metrics) if metrics else []
    variant_names = resolve_variants(variants)
    job = MetricJob.objects.create(
        project=project,
        metrics=metric_names,
        variants=variant_names,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    _enqueue(job)
    job.refresh_from_db()
    return job


def metric_job_retry(*, job: MetricJob) -> MetricJob:
    """Run a failed or stalled job again: values it already stored are up to date and not redone."""
    if job.status != MetricJob.FAILED and not job.is_stalled:
        raise ComputeError(
            f"job #{job.pk} is {job.status}; only a failed job, or a running one whose worker stopped "
            f"showing progress for {settings.EDITLAB_JOB_STALE_S} s, can be retried"
        )
    MetricJob.objects.filter(pk=job.pk).update(
        status=MetricJob.QUEUED, error="", done=0, total=0, started=None, finished=None, heartbeat=None
    )
    _enqueue(job)
    job.refresh_from_db()
    return job


def metric_job_run(*, job_id: int) -> ComputeReport | None:
    """Run one job to the end, recording status, progress and any error on the row."""
    now = timezone.now()
    claimed = MetricJob.objects.filter(pk=job_id, status=MetricJob.QUEUED).update(
        status=MetricJob.RUNNING, started=now, heartbeat=now, error=""
    )
    if not claimed:  # already run, running elsewhere, or deleted
        return None
    job = MetricJob.objects.select_related("project").get(pk=job_id)
    try:
        report = metric_values_compute(
            project=job.project, metrics=job.metrics or None, variants=job.variants or VARIANTS, job=job
        )
    except BaseException as exc:
        # BaseException too: a worker stopped by a signal (db_worker exits on a second SIGTERM or
        # Ctrl+C) would otherwise leave the job "running" for ever, and only failed jobs can be retried.
        logger.exception("metric job %s failed", job_id)
        MetricJob.objects.filter(pk=job_id).update(
            status=MetricJob.FAILED, error=f"{type(exc).__name__}: {exc}", finished=timezone.now()
        )
        raise
    MetricJob.objects.filter(pk=job_id).update(status=MetricJob.DONE, done=F("total"), finished=timezone.now())
    return report
