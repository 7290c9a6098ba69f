"""After a dead worker: the generation chunks and runs it held, queued again (called by every db_worker's
sweep through metrics.workers.other_work, registered by generation.tasks)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from generation.jobs import _the_queue
from generation.models import GenerationChunk, GenerationRecord, GenerationRun
from metrics.models import TaskWorker


def generation_work_holders() -> Q:
    """The workers holding generation work: a running chunk, or a run they are planning. A dead one stays
    dead to the sweep (metrics.workers.dead_workers) until this work is queued again, even after the task
    engine's row for its task is marked failed."""
    chunk = GenerationChunk.objects.filter(worker=OuterRef("pk"), status=GenerationChunk.RUNNING)
    plan = GenerationRun.objects.filter(planner=OuterRef("pk"), status=GenerationRun.RUNNING, planned__isnull=True)
    return Q(Exists(chunk)) | Q(Exists(plan))


def generation_work_reclaim(*, dead: Sequence[TaskWorker]) -> dict[str, int]:
    """Queue again the running chunks and the runs being planned that dead workers held (what a chunk had
    stored stays: its items are not called again)."""
    counts = {"chunks_requeued": 0, "runs_requeued": 0}
    if not dead:
        return counts
    queue = _the_queue()
    ids = [w.pk for w in dead]
    with transaction.atomic():
        for chunk in GenerationChunk.objects.select_for_update(skip_locked=True).filter(
            status=GenerationChunk.RUNNING, worker__in=ids
        ):
            stored = set(
                GenerationRecord.objects.filter(
                    run_id=chunk.run_id, item_id__in=chunk.item_ids, status__in=GenerationRecord.FINAL
                ).values_list("item_id", flat=True)
            )
            left = [pk for pk in chunk.item_ids if pk not in stored]
            running = GenerationRun.objects.filter(pk=chunk.run_id, status=GenerationRun.RUNNING).exists()
            GenerationChunk.objects.filter(pk=chunk.pk).update(
                status=GenerationChunk.QUEUED,
                worker=None,
                done=0,
                item_ids=left,
                size=len(left),
                task_id=queue.chunk(chunk.pk)[:64] if running else "",
            )
            counts["chunks_requeued"] += 1
        for run in GenerationRun.objects.select_for_update(skip_locked=True).filter(
            status=GenerationRun.RUNNING, planned__isnull=True, planner__in=ids
        ):
            GenerationRun.objects.filter(pk=run.pk).update(status=GenerationRun.QUEUED, planner=None, started=None)
            GenerationRun.objects.filter(pk=run.pk).update(task_id=queue.plan(run.pk)[:64])
            counts["runs_requeued"] += 1
    return counts


def generation_work_requeue_orphans(*, live_tasks: set[str]) -> int:
    """Give a new task to queued chunks of running runs whose task is gone (a worker stopped between the
    engine's claim and the task's start)."""
    orphans = [
        pk
        for pk, task_id in GenerationChunk.objects.filter(
            status=GenerationChunk.QUEUED, run__status=GenerationRun.RUNNING
        ).values_list("pk", "task_id")
        if task_id not in live_tasks
    ]
    if not orphans:
        return 0
    queue = _the_queue()
    n = 0
    with transaction.atomic():
        for chunk in GenerationChunk.objects.select_for_update(skip_locked=True).filter(
            pk__in=orphans, status=GenerationChunk.QUEUED
        ):
            GenerationChunk.objects.filter(pk=chunk.pk).update(task_id=queue.chunk(chunk.pk)[:64])
            n += 1
    return n
