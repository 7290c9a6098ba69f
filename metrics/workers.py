"""The `db_worker` processes: their heartbeats, who is alive, and what a dead one leaves behind.

Each `manage.py db_worker` (metrics/management/commands/db_worker.py) registers a TaskWorker row and
beats from a thread of its own every EDITLAB_WORKER_HEARTBEAT_S, busy or idle. Times are the database's
clock (`Now()`), so workers on machines whose clocks disagree still judge each other rightly. On each
beat a worker also looks for dead ones (silent for EDITLAB_WORKER_STALE_S, or stopped) and cleans up
after them: the chunks they held go back to the queue (metrics.jobs.metric_work_reclaim) and the task
engine's result rows they left RUNNING (django-tasks never changes those after a SIGKILL) are marked
FAILED.

The reads (who is alive, what a job's chunks are doing) are metrics.selectors_jobs.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Now
from django.utils import timezone
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from metrics.models import MetricChunk, MetricJob, TaskWorker

logger = logging.getLogger(__name__)

# The TaskWorker of this process, when it is a db_worker (None in the app process and in scripts).
_this_worker: TaskWorker | None = None

LOST_EXCEPTION = "metrics.workers.WorkerLost"


class WorkerLost(Exception):
    """Names, in the task engine's result rows, a task whose worker died while running it."""


def this_worker() -> TaskWorker | None:
    return _this_worker


@dataclass(frozen=True)
class OtherWork:
    """Work of another app on the same engine (generation runs): how the sweep cleans up after it."""

    reclaim: Callable[[list[TaskWorker]], object]  # queue again what these dead workers held
    requeue_orphans: Callable[[set[str]], object]  # new tasks for queued work whose task is gone (live task ids)
    holding: Callable[[], Q]  # the workers (a filter on TaskWorker) that still hold some of this work


_other_work: list[OtherWork] = []


def other_work_register(work: OtherWork) -> None:
    """Have every worker's sweep (db_worker) clean up after `work` too (called by the app when it is ready)."""
    _other_work.append(work)


def other_work() -> tuple[OtherWork, ...]:
    return tuple(_other_work)


# ------------------------------------------------------------------------------------ one worker


def worker_register(*, engine_id: str) -> TaskWorker:
    """Record a starting worker process. An earlier process of the same engine id on this host is over
    (a restart with a fixed --worker-id): it is marked stopped, so what it held is cleaned up now."""
    host = socket.gethostname()[:255]
    TaskWorker.objects.filter(engine_id=engine_id, host=host, stopped__isnull=True).update(stopped=Now())
    worker = TaskWorker.objects.create(engine_id=engine_id, host=host, pid=os.getpid())
    TaskWorker.objects.filter(pk=worker.pk).update(started=Now(), heartbeat=Now())
    worker.refresh_from_db()
    return worker


def this_process_is(worker: TaskWorker | None) -> None:
    """Name the worker the tasks of this process run as (the db_worker command; None when it ends)."""
    global _this_worker
    _this_worker = worker


def worker_beat(worker: TaskWorker) -> datetime:
    """One heartbeat; returns the database's time of it."""
    TaskWorker.objects.filter(pk=worker.pk).update(heartbeat=Now())
    return TaskWorker.objects.values_list("heartbeat", flat=True).get(pk=worker.pk)


def worker_stop(worker: TaskWorker) -> None:
    TaskWorker.objects.filter(pk=worker.pk).update(stopped=Now(), heartbeat=Now())


class Heartbeat(threading.Thread):
    """Beats for `worker` every `every_s` seconds and then runs `sweep(worker, now)`, until stop()."""

    def __init__(
        self, worker: TaskWorker, *, every_s: float, sweep: Callable[[TaskWorker, datetime], None] | None = None
    ) -> None:
        super().__init__(name=f"heartbeat-{worker.pk}", daemon=True)
        self.worker, self.every_s, self.sweep = worker, every_s, sweep
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopping.wait(self.every_s):
                close_old_connections()
                try:
                    now = worker_beat(self.worker)
                    if self.sweep is not None:
                        self.sweep(self.worker, now)
                except Exception:  # a database hiccup must not end the beating: the next beat tries again
                    logger.exception("worker %s: heartbeat failed", self.worker.pk)
            # The last word is this thread's: the main thread's connection may be unusable (a signal can
            # interrupt it anywhere, even between a commit and the return to autocommit).
            worker_stop(self.worker)
        finally:
            connections.close_all()

    def stop(self) -> None:
        """Stop beating and mark the worker stopped; returns when that is written."""
        self._stopping.set()
        self.join()


# ----------------------------------------------------------------------------- the dead ones


def metric_work_holders() -> Q:
    """The workers (a filter on TaskWorker) holding metric work: a running chunk, or a job they are planning."""
    return Q(Exists(MetricChunk.objects.filter(worker=OuterRef("pk"), status=MetricChunk.RUNNING))) | Q(
        Exists(MetricJob.objects.filter(planner=OuterRef("pk"), status=MetricJob.RUNNING, planned__isnull=True))
    )


def dead_workers(*, now: datetime, exclude: TaskWorker | None = None) -> list[TaskWorker]:
    """Workers silent for EDITLAB_WORKER_STALE_S or stopped that still hold something: a running chunk,
    a job they were planning, or a RUNNING result row of the task engine."""
    stale = Q(heartbeat__lt=now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)) | Q(stopped__isnull=False)
    holding = metric_work_holders()
    for other in other_work():
        holding |= other.holding()
    candidates = TaskWorker.objects.filter(stale)
    if exclude is not None:
        candidates = candidates.exclude(pk=exclude.pk)
    holders = list(candidates.filter(holding))
    running_engine_ids = {ids[-1] for ids in DBTaskResult.objects.running().values_list("worker_ids", flat=True) if ids}
    known = {w.pk for w in holders}
    holders += [w for w in candidates.filter(engine_id__in=running_engine_ids) if w.pk not in known]
    return holders


def task_results_fail_lost(*, dead: list[TaskWorker], now: datetime) -> int:
    """Mark FAILED the engine's RUNNING result rows last claimed by a dead worker, so the engine's own view
    (the admin, prune_db_task_results) is true too. A live worker with the same engine id (restarted with
    a fixed --worker-id) owns only the rows it claimed after it started."""
    dead_ids = {w.engine_id: w for w in dead}
    if not dead_ids:
        return 0
    live_since: dict[str, datetime] = {}
    for engine_id, started in TaskWorker.objects.filter(
        engine_id__in=dead_ids,
        stopped__isnull=True,
        heartbeat__gte=now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S),
    ).values_list("engine_id", "started"):
        live_since[engine_id] = min(started, live_since.get(engine_id, started))
    failed = 0
    with transaction.atomic():
        for result in DBTaskResult.objects.running().select_for_update(skip_locked=True):
            last = result.worker_ids[-1] if result.worker_ids else None
            if last not in dead_ids:
                continue
            if last in live_since and result.started_at is not None and result.started_at >= live_since[last]:
                continue
            worker = dead_ids[last]
            result.status = TaskResultStatus.FAILED
            result.finished_at = timezone.now()
            result.exception_class_path = LOST_EXCEPTION
            result.traceback = (
                f"{LOST_EXCEPTION}: worker {last} ({worker.host} pid {worker.pid}) stopped sending heartbeats "
                f"at {worker.heartbeat.isoformat()} while running this task; editlab queued its work again.\n"
            )
            result.save(update_fields=["status", "finished_at", "exception_class_path", "traceback"])
            failed += 1
    return failed


def live_task_ids() -> set[str]:
    """Ids of the engine's tasks that are still to run or running."""
    ready_or_running = [TaskResultStatus.READY, TaskResultStatus.RUNNING]
    return {str(pk) for pk in DBTaskResult.objects.filter(status__in=ready_or_running).values_list("id", flat=True)}


def workers_prune(*, now: datetime, older_than_days: int = 30) -> int:
    """Forget workers silent for a month (chunks keep their counts; they lose the worker's name)."""
    return TaskWorker.objects.filter(heartbeat__lt=now - timedelta(days=older_than_days)).delete()[0]
