"""Reads about background work: the database's clock, the `db_worker` processes alive, and what a
metric job's chunks are doing (for the job page, the job API and /healthz).

The workers' own writes (registering, heartbeats, cleaning up after dead ones) are metrics.workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from metrics.models import MetricChunk, MetricJob, TaskWorker


def database_now() -> datetime:
    """The database server's clock (the one every heartbeat is written with)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT now()")
            return cursor.fetchone()[0]
        cursor.execute("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
        return datetime.fromisoformat(cursor.fetchone()[0]).replace(tzinfo=UTC)


# ------------------------------------------------------------------------------------------ reads


@dataclass(frozen=True)
class WorkerStatus:
    """One db_worker process as the health endpoint and the job pages see it."""

    id: int
    engine_id: str
    host: str
    pid: int
    started: datetime
    heartbeat: datetime
    seconds_since_heartbeat: float
    alive: bool
    stopped: datetime | None
    running_chunk: int | None  # MetricChunk id it holds now

    @property
    def label(self) -> str:
        return f"{self.host} pid {self.pid}"


def _status(worker: TaskWorker, *, now: datetime, running: dict[int, int]) -> WorkerStatus:
    silent = max(0.0, (now - worker.heartbeat).total_seconds())
    return WorkerStatus(
        id=worker.pk,
        engine_id=worker.engine_id,
        host=worker.host,
        pid=worker.pid,
        started=worker.started,
        heartbeat=worker.heartbeat,
        seconds_since_heartbeat=round(silent, 1),
        alive=worker.stopped is None and silent <= settings.EDITLAB_WORKER_STALE_S,
        stopped=worker.stopped,
        running_chunk=running.get(worker.pk),
    )


def worker_status(*, include_stopped: bool = False) -> list[WorkerStatus]:
    """Every db_worker with its last heartbeat (newest first): the ones not stopped, plus those that
    stopped within EDITLAB_WORKER_STALE_S when `include_stopped`. For /healthz: a deployment with
    `TASKS_BACKEND=database` is healthy when at least one is `alive`."""
    now = database_now()
    workers = TaskWorker.objects.order_by("-heartbeat")
    if include_stopped:
        recent = now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)
        workers = workers.filter(Q(stopped__isnull=True) | Q(stopped__gte=recent))
    else:
        workers = workers.filter(stopped__isnull=True)
    listed = list(workers[:200])
    running = dict(
        MetricChunk.objects.filter(status=MetricChunk.RUNNING, worker__in=listed).values_list("worker_id", "pk")
    )
    return [_status(worker, now=now, running=running) for worker in listed]


@dataclass(frozen=True)
class WorkerShare:
    """What one worker did for one job."""

    label: str
    status: WorkerStatus | None  # None: the job ran in the app process (no db_worker)
    chunks: int
    post_edits: int
    values: int
    running: int  # chunks it holds now


@dataclass(frozen=True)
class JobActivity:
    """A job's chunks and workers, for its page and the API."""

    chunks: dict[str, int]  # status -> count, and "total"
    in_flight: int  # values scored in running chunks, not stored yet
    workers: list[WorkerShare] = field(default_factory=list)
    live_workers: int = 0  # db_workers alive now, whatever they work on
    waiting_s: float | None = None  # waiting for a worker that long (nobody works on it), else None
    waiting_since: datetime | None = None


def job_activity(job: MetricJob) -> JobActivity:
    now = database_now()  # heartbeats are the database's time; the job's own times are the app's
    counts = dict(job.chunks.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    chunks = {status: counts.get(status, 0) for status, _ in MetricChunk.STATUS_CHOICES}
    chunks["total"] = sum(counts.values())
    in_flight = job.chunks.filter(status=MetricChunk.RUNNING).aggregate(n=Sum("done"))["n"] or 0
    per_worker = (
        job.chunks.exclude(status=MetricChunk.QUEUED)
        .values("worker")
        .annotate(
            chunks=Count("pk", filter=Q(status=MetricChunk.DONE)),
            post_edits=Sum("size", filter=Q(status=MetricChunk.DONE)),
            values=Sum("total", filter=Q(status=MetricChunk.DONE)),
            running=Count("pk", filter=Q(status=MetricChunk.RUNNING)),
            last=Max("finished"),
        )
        .order_by("worker")
    )
    rows = list(per_worker)
    workers = {w.pk: w for w in TaskWorker.objects.filter(pk__in=[r["worker"] for r in rows if r["worker"]])}
    running = dict(
        MetricChunk.objects.filter(status=MetricChunk.RUNNING, worker__in=list(workers)).values_list("worker_id", "pk")
    )
    shares = []
    for row in rows:
        worker = workers.get(row["worker"])
        status = _status(worker, now=now, running=running) if worker is not None else None
        shares.append(
            WorkerShare(
                label=status.label if status else "the app process (no db_worker)",
                status=status,
                chunks=row["chunks"],
                post_edits=row["post_edits"] or 0,
                values=row["values"] or 0,
                running=row["running"],
            )
        )
    live = TaskWorker.objects.filter(
        stopped__isnull=True, heartbeat__gte=now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)
    ).count()
    waiting_since = _waiting_since(job, chunks)
    return JobActivity(
        chunks=chunks,
        in_flight=in_flight,
        workers=shares,
        live_workers=live,
        waiting_since=waiting_since,
        waiting_s=max(0.0, (timezone.now() - waiting_since).total_seconds()) if waiting_since else None,
    )


def _waiting_since(job: MetricJob, chunks: dict[str, int]) -> datetime | None:
    """Since when nobody has worked on an unfinished job, or None while somebody does."""
    if job.status == MetricJob.QUEUED:
        return job.created
    if job.status == MetricJob.RUNNING and job.planned and chunks[MetricChunk.RUNNING] == 0 and chunks["queued"]:
        return job.heartbeat or job.planned
    return None
