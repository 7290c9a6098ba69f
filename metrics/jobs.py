"""Metric jobs: a researcher's request to compute values, cut into chunks that any worker may compute.

A job's life:
1. `metric_job_create` stores the job (queued) and enqueues its plan task.
2. `metric_job_plan` (the plan task, on any worker) claims it, plans the run (no metric work) and cuts it
   into MetricChunks of EDITLAB_METRIC_CHUNK_SIZE post-edits, each with a task of its own in the same
   transaction. With the database backend those tasks go to every `db_worker` on every machine sharing
   the database; with the in-process backends (thread, immediate) the plan task runs them itself, one
   after the other.
3. `metric_chunk_run` (a chunk task) claims its chunk, scores it outside any transaction, then stores its
   values, marks it done and adds it to the job in one transaction; the chunk that completes the job
   marks it done. A chunk failing on a post-edit fails the job with that post-edit's id.
4. A worker stopped by a signal inside a chunk gives the chunk back to the queue (`db_worker` stops after
   the current task on the first SIGTERM, inside it on a second one); a worker that vanished (SIGKILL,
   out of memory, power cut) is found by the others' heartbeats (metrics.workers) and
   `metric_work_reclaim` queues what it held again. Only the latest claim of a chunk may store it, so a
   value is never stored twice, and a chunk's values are all stored or none.

Dependencies point one way: metrics.tasks (the task engine's entry points) calls these services, and
these call metrics.services (the computing). Enqueuing would point back at metrics.tasks; instead
metrics.tasks registers a `JobQueue` (`use_queue`) when the app is ready, and this module only uses it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations.models import Project
from editlab.db import refresh_planner_statistics
from metrics.models import MetricChunk, MetricJob, MetricValue, TaskWorker
from metrics.selectors import VARIANTS
from metrics.services import (
    ComputeError,
    ComputePlan,
    ScoredChunk,
    compute_prepare,
    metric_values_score,
    metric_values_store,
    resolve_metrics,
    resolve_variants,
)

logger = logging.getLogger(__name__)

_PROGRESS_EVERY_S = 0.5  # how often a running chunk's progress is written
_INTERRUPTED = (SystemExit, KeyboardInterrupt)  # db_worker's second SIGTERM (sys.exit) and Ctrl+C


@dataclass(frozen=True)
class JobQueue:
    """How jobs reach the task engine (registered by metrics.tasks)."""

    plan: Callable[[int], str]  # job id -> the engine's task id
    chunk: Callable[[int], str]  # chunk id -> the engine's task id
    fans_out: Callable[[], bool]  # True when chunk tasks run in worker processes, False when in this one


class QueueSlot:
    """Where an app's task module registers its JobQueue when the app is ready (metrics, generation)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.queue: JobQueue | None = None

    def use(self, queue: JobQueue) -> None:
        self.queue = queue

    def get(self) -> JobQueue:
        if self.queue is None:
            raise RuntimeError(f"no job queue registered: {self.owner} registers it when its app is ready")
        return self.queue


_slot = QueueSlot("metrics.tasks")
use_queue = _slot.use
_the_queue = _slot.get


def jobs_fan_out() -> bool:
    """True when chunk tasks go to `db_worker` processes (the database backend), False when the app process
    runs them (thread, immediate)."""
    return _the_queue().fans_out()


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# -------------------------------------------------------------------------------- start, retry


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
    _enqueue_plan(job.pk)
    job.refresh_from_db()
    return job


def metric_job_retry(*, job: MetricJob) -> MetricJob:
    """Run a failed or stalled job again: values it already stored are up to date and not redone."""
    if job.status != MetricJob.FAILED and not job.is_stalled:
        raise ComputeError(
            f"job #{job.pk} is {job.status}; only a failed job, or a running one whose worker stopped "
            f"showing progress for {settings.EDITLAB_JOB_STALE_S} s, can be retried"
        )
    with transaction.atomic():
        # Chunks first, then the job: the order in which a finishing chunk locks them.
        job.chunks.all().delete()
        MetricJob.objects.filter(pk=job.pk).update(
            status=MetricJob.QUEUED,
            error="",
            done=0,
            total=0,
            started=None,
            finished=None,
            heartbeat=None,
            planned=None,
            planner=None,
        )
    _enqueue_plan(job.pk)
    job.refresh_from_db()
    return job


def _enqueue_plan(job_id: int) -> None:
    # Outside a transaction the job row is committed before a database worker can look for it; inside
    # one (the database backend writes the task row in it), both are committed together.
    task_id = _the_queue().plan(job_id)
    MetricJob.objects.filter(pk=job_id).update(task_id=task_id[:64])


# ------------------------------------------------------------------------------------- planning


def metric_job_plan(*, job_id: int, worker: TaskWorker | None) -> dict | None:
    """Claim a queued job, plan it and cut it into chunks; run them here unless workers take them.

    Returns the plan's counts (and, when the chunks ran here, how many values were computed), or None
    when the job was not queued (already taken, or deleted)."""
    now = timezone.now()
    claimed = MetricJob.objects.filter(pk=job_id, status=MetricJob.QUEUED).update(
        status=MetricJob.RUNNING, started=now, heartbeat=now, error="", planner=worker
    )
    if not claimed:
        return None
    job = MetricJob.objects.select_related("project").get(pk=job_id)
    queue = _the_queue()
    fans_out = queue.fans_out()
    try:
        plan, report = compute_prepare(
            project=job.project, metrics=job.metrics or None, variants=job.variants or VARIANTS
        )
        chunk_ids = _chunks_create(job, plan, worker=worker, queue=queue if fans_out else None)
    except _INTERRUPTED as exc:
        if fans_out:
            _job_requeue(job, worker=worker, queue=queue)
        else:
            _job_fail(job.pk, _error_text(exc))
        raise
    except BaseException as exc:
        logger.exception("metric job %s failed while planning", job_id)
        _job_fail(job.pk, _error_text(exc))
        raise
    counts = report.as_dict() | {"chunks": len(chunk_ids or [])}
    if chunk_ids is None:  # taken for dead meanwhile: another worker plans it again
        return counts
    if not fans_out:
        for chunk_id in chunk_ids:
            report.computed += metric_chunk_run(chunk_id=chunk_id, worker=worker) or 0
        counts["computed"] = report.computed
    return counts


def _chunks_create(
    job: MetricJob, plan: ComputePlan, *, worker: TaskWorker | None, queue: JobQueue | None
) -> list[int] | None:
    """Store the job's chunks (and enqueue their tasks, when `queue`) in one transaction; None if the job
    is no longer this worker's to plan."""
    now = timezone.now()
    with transaction.atomic():
        mine = list(
            MetricJob.objects.select_for_update()
            .filter(pk=job.pk, status=MetricJob.RUNNING, planned__isnull=True, planner=worker)
            .values_list("pk", flat=True)
        )
        if not mine:
            return None
        chunks = MetricChunk.objects.bulk_create(
            MetricChunk(
                job=job,
                seq=seq,
                variant=variant,
                metrics=list(names),
                post_edit_ids=ids,
                size=len(ids),
                total=len(ids) * len(names),
            )
            for seq, (variant, names, ids) in enumerate(plan.batches(settings.EDITLAB_METRIC_CHUNK_SIZE))
        )
        if queue is not None:
            for chunk in chunks:
                chunk.task_id = queue.chunk(chunk.pk)[:64]
            MetricChunk.objects.bulk_update(chunks, ["task_id"])
        updates: dict = {"total": plan.total, "done": 0, "planned": now, "heartbeat": now}
        if not chunks:
            updates |= {"status": MetricJob.DONE, "finished": now}
        MetricJob.objects.filter(pk=job.pk).update(**updates)
    return [chunk.pk for chunk in chunks]


def _job_requeue(job: MetricJob, *, worker: TaskWorker | None, queue: JobQueue) -> None:
    """Give a job whose planning was interrupted back to the queue."""
    with transaction.atomic():
        if MetricJob.objects.filter(pk=job.pk, status=MetricJob.RUNNING, planned__isnull=True, planner=worker).update(
            status=MetricJob.QUEUED, planner=None, started=None
        ):
            _enqueue_plan(job.pk)


def _job_fail(job_id: int, error: str) -> None:
    MetricJob.objects.filter(pk=job_id, status__in=[MetricJob.QUEUED, MetricJob.RUNNING]).update(
        status=MetricJob.FAILED, error=error, finished=timezone.now()
    )


# ---------------------------------------------------------------------------------------- chunks


def metric_chunk_run(*, chunk_id: int, worker: TaskWorker | None) -> int | None:
    """Claim a queued chunk of a running job, compute and store it; returns the values stored, or None when
    there was nothing to do (done, held by another worker, its job failed or gone) or the claim was lost."""
    now = timezone.now()
    claimed = MetricChunk.objects.filter(pk=chunk_id, status=MetricChunk.QUEUED, job__status=MetricJob.RUNNING).update(
        status=MetricChunk.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker,
        claimed=now,
        progressed=now,
        done=0,
        error="",
    )
    if not claimed:
        return None
    chunk = MetricChunk.objects.get(pk=chunk_id)
    MetricJob.objects.filter(pk=chunk.job_id).update(heartbeat=now)
    try:
        scored = metric_values_score(
            post_edit_ids=chunk.post_edit_ids,
            variant=chunk.variant,
            names=chunk.metrics,
            progress=_ChunkProgress(chunk),
        )
        return _chunk_finish(chunk, scored)
    except _INTERRUPTED as exc:
        if _the_queue().fans_out():
            _chunk_release(chunk)
        else:
            _chunk_fail(chunk, _error_text(exc))
        raise
    except BaseException as exc:
        logger.exception("chunk %s of metric job %s failed", chunk.seq, chunk.job_id)
        _chunk_fail(chunk, _error_text(exc))
        raise


def _held(chunk: MetricChunk) -> bool:
    """Lock the chunk's row if this claim still holds it (inside a transaction)."""
    return bool(
        list(
            MetricChunk.objects.select_for_update()
            .filter(pk=chunk.pk, status=MetricChunk.RUNNING, attempts=chunk.attempts)
            .values_list("pk", flat=True)
        )
    )


def _chunk_finish(chunk: MetricChunk, scored: ScoredChunk) -> int | None:
    now = timezone.now()
    with transaction.atomic():
        if not _held(chunk):  # taken for dead and claimed again: that claim stores the values
            logger.warning(
                "chunk %s of metric job %s: claim lost, its values are left to the new claim", chunk.seq, chunk.job_id
            )
            return None
        stored = metric_values_store(scored=scored)
        MetricChunk.objects.filter(pk=chunk.pk).update(
            status=MetricChunk.DONE, done=chunk.total, finished=now, progressed=now
        )
        # Locking the job serializes the chunks finishing together: the last one sees the others done.
        job = MetricJob.objects.select_for_update().get(pk=chunk.job_id)
        updates: dict = {"done": F("done") + chunk.total, "heartbeat": now}
        finished = job.status == MetricJob.RUNNING and not job.chunks.exclude(status=MetricChunk.DONE).exists()
        if finished:
            updates |= {"status": MetricJob.DONE, "finished": now}
        MetricJob.objects.filter(pk=job.pk).update(**updates)
    if finished:
        refresh_planner_statistics(MetricValue._meta.db_table)
    return stored


def _chunk_fail(chunk: MetricChunk, error: str) -> None:
    with transaction.atomic():
        if MetricChunk.objects.filter(pk=chunk.pk, status=MetricChunk.RUNNING, attempts=chunk.attempts).update(
            status=MetricChunk.FAILED, error=error, finished=timezone.now()
        ):
            _job_fail(chunk.job_id, error)


def _chunk_release(chunk: MetricChunk) -> None:
    """Give a chunk back to the queue, with a new task (its worker is stopping)."""
    with transaction.atomic():
        if _held(chunk):
            task_id = _the_queue().chunk(chunk.pk)
            MetricChunk.objects.filter(pk=chunk.pk).update(
                status=MetricChunk.QUEUED, worker=None, done=0, task_id=task_id[:64]
            )


class _ChunkProgress:
    """score_pairs' progress callback: values scored in the chunk, written at most every 0.5 s."""

    def __init__(self, chunk: MetricChunk) -> None:
        self.chunk = chunk
        self.done = 0
        self.last_write = time.monotonic()

    def __call__(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self.last_write < _PROGRESS_EVERY_S:
            return
        now = timezone.now()
        MetricChunk.objects.filter(pk=self.chunk.pk, status=MetricChunk.RUNNING, attempts=self.chunk.attempts).update(
            done=min(self.done, self.chunk.total), progressed=now
        )
        MetricJob.objects.filter(pk=self.chunk.job_id).update(heartbeat=now)
        self.last_write = time.monotonic()


# ------------------------------------------------------------------------- after a dead worker


def metric_work_reclaim(*, dead: Sequence[TaskWorker]) -> dict[str, int]:
    """Queue again what dead workers held: their running chunks (a chunk that has lost its worker
    EDITLAB_CHUNK_MAX_ATTEMPTS times fails its job instead: it may be what kills them) and the jobs they
    were planning. Returns how many chunks were queued again, failed, and jobs queued again."""
    counts = {"chunks_requeued": 0, "chunks_failed": 0, "jobs_requeued": 0}
    if not dead:
        return counts
    queue = _the_queue()
    by_id = {worker.pk: worker for worker in dead}
    with transaction.atomic():
        # skip_locked: a chunk whose worker is storing it right now is alive enough.
        for chunk in MetricChunk.objects.select_for_update(skip_locked=True).filter(
            status=MetricChunk.RUNNING, worker__in=list(by_id)
        ):
            assert chunk.worker_id is not None  # filtered on worker__in
            worker = by_id[chunk.worker_id]
            if chunk.attempts >= settings.EDITLAB_CHUNK_MAX_ATTEMPTS:
                error = (
                    f"chunk {chunk.seq} ({chunk.size} post-edits, #{min(chunk.post_edit_ids)}–"
                    f"#{max(chunk.post_edit_ids)}, {chunk.variant}) lost its worker {chunk.attempts} times, last "
                    f"{worker} (killed? out of memory?); the values of the chunks that finished are stored"
                )
                MetricChunk.objects.filter(pk=chunk.pk).update(
                    status=MetricChunk.FAILED, error=error, finished=timezone.now()
                )
                _job_fail(chunk.job_id, error)
                counts["chunks_failed"] += 1
                continue
            job_running = MetricJob.objects.filter(pk=chunk.job_id, status=MetricJob.RUNNING).exists()
            task_id = queue.chunk(chunk.pk)[:64] if job_running else ""
            MetricChunk.objects.filter(pk=chunk.pk).update(
                status=MetricChunk.QUEUED, worker=None, done=0, task_id=task_id
            )
            logger.warning(
                "chunk %s of metric job %s: worker %s is dead, chunk queued again", chunk.seq, chunk.job_id, worker
            )
            counts["chunks_requeued"] += 1
        for job in MetricJob.objects.select_for_update(skip_locked=True).filter(
            status=MetricJob.RUNNING, planned__isnull=True, planner__in=list(by_id)
        ):
            MetricJob.objects.filter(pk=job.pk).update(status=MetricJob.QUEUED, planner=None, started=None)
            _enqueue_plan(job.pk)
            counts["jobs_requeued"] += 1
    return counts


def metric_work_requeue_orphans(*, live_tasks: set[str]) -> dict[str, int]:
    """Give a new task to queued work whose task is no longer to run: a queued chunk of a running job, or a
    job queued for longer than EDITLAB_WORKER_STALE_S. That happens when a worker is stopped after the task
    engine handed it a task and before the task began (the engine then never runs it)."""
    settled = timezone.now() - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)
    chunks = [
        pk
        for pk, task_id in MetricChunk.objects.filter(
            status=MetricChunk.QUEUED, job__status=MetricJob.RUNNING
        ).values_list("pk", "task_id")
        if task_id not in live_tasks
    ]
    queued_jobs = [
        pk
        for pk, task_id in MetricJob.objects.filter(status=MetricJob.QUEUED, created__lt=settled).values_list(
            "pk", "task_id"
        )
        if task_id not in live_tasks
    ]
    counts = {"chunks": 0, "jobs": 0}
    if not chunks and not queued_jobs:
        return counts
    queue = _the_queue()
    # A chunk given back to the queue while this runs may get a second task: the one that comes second
    # finds the chunk taken and does nothing.
    with transaction.atomic():
        for chunk in MetricChunk.objects.select_for_update(skip_locked=True).filter(
            pk__in=chunks, status=MetricChunk.QUEUED
        ):
            MetricChunk.objects.filter(pk=chunk.pk).update(task_id=queue.chunk(chunk.pk)[:64])
            counts["chunks"] += 1
        for job in MetricJob.objects.select_for_update(skip_locked=True).filter(
            pk__in=queued_jobs, status=MetricJob.QUEUED
        ):
            _enqueue_plan(job.pk)
            counts["jobs"] += 1
    if any(counts.values()):
        logger.warning("queued again, their tasks being gone: %s", counts)
    return counts
