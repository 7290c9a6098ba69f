"""Generation runs as background work, on the engine the metric jobs use (metrics.jobs, metrics.tasks).

A run's life follows a metric job's:
1. `generation_run_enqueue` (from generation.services) queues the run's plan task.
2. `generation_run_plan` claims the run, leaves out the items it already answered (a resumed run calls
   nothing twice), and cuts the rest into GenerationChunks, each with a task of its own in the same
   transaction; with the database backend any `db_worker` takes them, with the in-process backends the
   plan task runs them itself.
3. `generation_chunk_run` claims a chunk and calls the endpoint for its items from `run.concurrency`
   threads (the calls; the database is written from the task's own thread). Each answer is stored as it
   comes, in a transaction that first checks the claim still holds, so a worker taken for dead stores
   nothing more, and nothing is stored twice. When `BREAKER_FAILURES` calls in a row fail (the endpoint
   is down), the chunk stops calling and fails the run; the same command resumes it later.
4. A worker stopped by a second signal gives its chunk back; one that vanished is found by the others'
   heartbeats (metrics.workers), and generation.reclaim queues its chunk again.

metrics.jobs.JobQueue is the shape of the engine's entry points; generation.tasks registers one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import timedelta

import openai
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotations.models import Item
from editlab.refusals import Refusal
from generation import client
from generation.models import GenerationChunk, GenerationRecord, GenerationRun
from generation.prompts import item_fields, prompt_render, prompt_sha256, template_parse
from generation.services import Answered, generation_records_store
from metrics.jobs import QueueSlot
from metrics.models import TaskWorker

logger = logging.getLogger(__name__)

CHUNK_ITEMS = 50  # items per chunk at least; CHUNK_PER_THREAD x the concurrency when that is more
CHUNK_PER_THREAD = 4
BREAKER_FAILURES = 8  # failed calls in a row (after their retries) that stop a chunk: the endpoint is down
RETRY = client.RetryPolicy()
_INTERRUPTED = (SystemExit, KeyboardInterrupt)

_slot = QueueSlot("generation.tasks")
use_queue = _slot.use
_the_queue = _slot.get


def _api_key() -> str:
    return settings.EDITLAB_LLM_API_KEY


@functools.lru_cache(maxsize=16)
def _client(endpoint: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """One client per endpoint in a process, shared by its chunks and their threads (the official client is
    thread-safe): its connection pool and TLS context are made once, not per chunk."""
    return client.make_client(endpoint, api_key=api_key, timeout_s=timeout_s)


# ------------------------------------------------------------------------------------- starting


def run_is_stalled(run: GenerationRun) -> bool:
    """Running, silent for EDITLAB_JOB_STALE_S, and no live worker holds a chunk of it."""
    if run.status != GenerationRun.RUNNING:
        return False
    now = timezone.now()
    last = run.heartbeat or run.started or run.created
    if (now - last).total_seconds() <= settings.EDITLAB_JOB_STALE_S:
        return False
    recent = now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)
    return not run.chunks.filter(
        status=GenerationChunk.RUNNING, worker__stopped__isnull=True, worker__heartbeat__gte=recent
    ).exists()


def generation_run_enqueue(run: GenerationRun) -> bool:
    """Queue (again) a run that is not going: new, done, failed or stalled. False when it is queued or
    running already (nothing to do)."""
    if run.pk is None:
        raise ValueError("save the run first")
    if run.status in (GenerationRun.QUEUED, GenerationRun.RUNNING) and run.task_id and not run_is_stalled(run):
        return False
    with transaction.atomic():
        run.chunks.all().delete()
        GenerationRun.objects.filter(pk=run.pk).update(
            status=GenerationRun.QUEUED,
            error="",
            started=None,
            finished=None,
            heartbeat=None,
            planned=None,
            planner=None,
            task_id="",
        )
    # Outside a transaction, as metrics.jobs does: the run is committed before a worker looks for it (and
    # the immediate backend, which runs the whole run here, holds no transaction open meanwhile).
    task_id = _the_queue().plan(run.pk)
    GenerationRun.objects.filter(pk=run.pk).update(task_id=task_id[:64])
    return True


# ------------------------------------------------------------------------------------- planning


def _items_todo(run: GenerationRun) -> tuple[list[int], int]:
    items = Item.objects.filter(project_id=run.project_id)
    if run.item_ids:
        items = items.filter(pk__in=run.item_ids)
    final = set(
        GenerationRecord.objects.filter(run=run, status__in=GenerationRecord.FINAL).values_list("item_id", flat=True)
    )
    ids = list(items.order_by("position", "id").values_list("pk", flat=True))
    return [pk for pk in ids if pk not in final], len(ids)


def generation_run_plan(*, run_id: int, worker: TaskWorker | None) -> dict | None:
    """Claim a queued run and cut what it has left to do into chunks; run them here unless workers take
    them. None when the run was not queued."""
    now = timezone.now()
    if not GenerationRun.objects.filter(pk=run_id, status=GenerationRun.QUEUED).update(
        status=GenerationRun.RUNNING, started=now, heartbeat=now, error="", planner=worker
    ):
        return None
    run = GenerationRun.objects.get(pk=run_id)
    queue = _the_queue()
    fans_out = queue.fans_out()
    try:
        todo, total = _items_todo(run)
        size = max(CHUNK_ITEMS, CHUNK_PER_THREAD * run.concurrency)
        with transaction.atomic():
            if (
                not GenerationRun.objects.select_for_update()
                .filter(pk=run.pk, status=GenerationRun.RUNNING, planner=worker, planned__isnull=True)
                .exists()
            ):
                return None
            chunks = GenerationChunk.objects.bulk_create(
                GenerationChunk(run=run, seq=seq, item_ids=todo[at : at + size], size=len(todo[at : at + size]))
                for seq, at in enumerate(range(0, len(todo), size))
            )
            if fans_out:
                for chunk in chunks:
                    chunk.task_id = queue.chunk(chunk.pk)[:64]
                GenerationChunk.objects.bulk_update(chunks, ["task_id"])
            records = GenerationRecord.objects.filter(run=run, status__in=GenerationRecord.FINAL)
            answered = records.count()
            updates: dict = {
                "total": total,
                "done": answered,
                "skipped": answered,
                "generated": records.filter(status=GenerationRecord.GENERATED).count(),
                "refused": records.exclude(status=GenerationRecord.GENERATED).count(),
                "failed": 0,
                "planned": now,
                "heartbeat": now,
            }
            if not chunks:
                updates |= {"status": GenerationRun.DONE, "finished": now}
            GenerationRun.objects.filter(pk=run.pk).update(**updates)
    except _INTERRUPTED:
        GenerationRun.objects.filter(pk=run.pk, status=GenerationRun.RUNNING, planned__isnull=True).update(
            status=GenerationRun.QUEUED, planner=None, started=None
        )
        raise
    except BaseException as exc:
        logger.exception("generation run %s failed while planning", run_id)
        _run_fail(run.pk, f"{type(exc).__name__}: {exc}")
        raise
    if not fans_out:
        for chunk in chunks:
            generation_chunk_run(chunk_id=chunk.pk, worker=worker)
    return {"total": total, "todo": len(todo), "chunks": len(chunks)}


def _run_fail(run_id: int, error: str) -> None:
    GenerationRun.objects.filter(pk=run_id, status__in=[GenerationRun.QUEUED, GenerationRun.RUNNING]).update(
        status=GenerationRun.FAILED, error=error[:5000], finished=timezone.now()
    )


# ---------------------------------------------------------------------------------------- chunks


def _held(chunk: GenerationChunk) -> bool:
    return (
        GenerationChunk.objects.select_for_update()
        .filter(pk=chunk.pk, status=GenerationChunk.RUNNING, attempts=chunk.attempts)
        .exists()
    )


class _Work:
    """One item ready to call: its messages and what the answer is stored with."""

    def __init__(self, item: Item, messages: list[dict[str, str]], start_text: str | None) -> None:
        self.item, self.messages, self.start_text = item, messages, start_text
        self.sha = prompt_sha256(messages)


def _prepare(run: GenerationRun, items: Sequence[Item]) -> tuple[list[_Work], list[tuple[Item, str]]]:
    template = template_parse(run.template, name=run.template_name, variables=run.variables)
    max_chars = int(run.params.get("max_prompt_chars") or 100_000)
    ready, refused = [], []
    for item in items:
        start_text: str | None = None
        answer: str | None = None
        if run.source_output:
            output = item.outputs.get(run.source_output) if isinstance(item.outputs, dict) else None
            if not isinstance(output, str):
                refused.append((item, f"item {item.external_id!r} has no output {run.source_output!r} to edit"))
                continue
            start_text = answer = output
        values = {**run.variables, **item_fields(item, answer=answer)}
        try:
            messages = prompt_render(template, values, max_chars=max_chars, item_name=f"item {item.external_id!r}")
        except Refusal as exc:
            refused.append((item, str(exc)))
            continue
        ready.append(_Work(item, messages, start_text))
    return ready, refused


def generation_chunk_run(*, chunk_id: int, worker: TaskWorker | None) -> int | None:
    """Claim a queued chunk of a running run and answer its items; the records stored, or None when there
    was nothing to do or the claim was lost."""
    now = timezone.now()
    if not GenerationChunk.objects.filter(
        pk=chunk_id, status=GenerationChunk.QUEUED, run__status=GenerationRun.RUNNING
    ).update(
        status=GenerationChunk.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker,
        claimed=now,
        progressed=now,
        done=0,
        error="",
    ):
        return None
    chunk = GenerationChunk.objects.select_related("run").get(pk=chunk_id)
    run = chunk.run
    try:
        return _chunk_answer(chunk, run)
    except _INTERRUPTED:
        if _the_queue().fans_out():
            _chunk_release(chunk)
        else:
            _chunk_fail(chunk, "interrupted")
        raise
    except BaseException as exc:
        logger.exception("chunk %s of generation run %s failed", chunk.seq, run.pk)
        _chunk_fail(chunk, f"{type(exc).__name__}: {exc}")
        raise


def _store(chunk: GenerationChunk, run: GenerationRun, answered: list[Answered]) -> bool:
    """Store answers in one transaction if the claim holds; False when it is lost."""
    with transaction.atomic():
        if not _held(chunk):
            return False
        generation_records_store(run=run, answered=answered)
        now = timezone.now()
        GenerationChunk.objects.filter(pk=chunk.pk).update(done=F("done") + len(answered), progressed=now)
        GenerationRun.objects.filter(pk=run.pk).update(heartbeat=now)
    return True


def _chunk_answer(chunk: GenerationChunk, run: GenerationRun) -> int | None:
    # A chunk claimed again (its worker stopped or died) skips what an earlier claim stored.
    answered = GenerationRecord.objects.filter(run=run, item_id__in=chunk.item_ids, status__in=GenerationRecord.FINAL)
    items = list(
        Item.objects.filter(pk__in=chunk.item_ids)
        .exclude(pk__in=answered.values("item_id"))
        .select_related("project")
        .order_by("position", "id")
    )
    ready, refused = _prepare(run, items)
    if refused:
        refusals = [
            Answered(
                item,
                client.Answer(
                    status=GenerationRecord.PROMPT_REFUSED, error=error, provenance={"endpoint": run.endpoint}
                ),
            )
            for item, error in refused
        ]
        if not _store(chunk, run, refusals):
            return None
    stored = len(refused)
    api = _client(run.endpoint, _api_key(), float(run.params.get("timeout_s") or 60))
    request_params = {
        "model": run.model,
        "temperature": run.params.get("temperature"),
        "max_tokens": run.params.get("max_tokens"),
        "seed": run.params.get("seed"),
        "timeout_s": float(run.params.get("timeout_s") or 60),
    }
    failures_in_a_row = 0
    broken = ""
    pending = list(reversed(ready))
    running: dict[Future, _Work] = {}
    pool = ThreadPoolExecutor(max_workers=run.concurrency, thread_name_prefix=f"gen-{run.pk}")

    def refill() -> None:
        while pending and not broken and len(running) < run.concurrency:
            work = pending.pop()
            request = client.ChatRequest(messages=work.messages, **request_params)
            running[pool.submit(client.chat_complete, api, request, retry=RETRY)] = work

    try:
        while pending or running:
            refill()
            if not running:
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            answers = [(running.pop(future), future.result()) for future in finished]
            for _work, answer in answers:
                failures_in_a_row = failures_in_a_row + 1 if answer.status == client.FAILED else 0
                if failures_in_a_row >= BREAKER_FAILURES and not broken:
                    broken = (
                        f"{failures_in_a_row} calls in a row failed, the last: {answer.error}; the run stopped "
                        f"calling {run.endpoint}. Run the same command again to resume: answered items are kept"
                    )
            refill()  # the next calls go out while these answers are stored
            if not _store(chunk, run, [Answered(w.item, a, w.sha, w.start_text) for w, a in answers]):
                logger.warning("chunk %s of generation run %s: claim lost", chunk.seq, run.pk)
                return None
            stored += len(answers)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if broken:
        _chunk_fail(chunk, broken)
        return stored
    _chunk_finish(chunk)
    return stored


def _chunk_finish(chunk: GenerationChunk) -> None:
    now = timezone.now()
    with transaction.atomic():
        if not _held(chunk):
            return
        GenerationChunk.objects.filter(pk=chunk.pk).update(status=GenerationChunk.DONE, finished=now, progressed=now)
        run = GenerationRun.objects.select_for_update().get(pk=chunk.run_id)
        if run.status != GenerationRun.RUNNING or run.chunks.exclude(status=GenerationChunk.DONE).exists():
            return
        failed = GenerationRecord.objects.filter(run=run, status=GenerationRecord.FAILED)
        first = failed.select_related("item").first()
        if first is None:
            GenerationRun.objects.filter(pk=run.pk).update(status=GenerationRun.DONE, finished=now, heartbeat=now)
        else:
            GenerationRun.objects.filter(pk=run.pk).update(
                status=GenerationRun.FAILED,
                finished=now,
                heartbeat=now,
                error=(
                    f"{failed.count()} call(s) failed, e.g. item {first.item.external_id!r}: {first.error}; "
                    "run the same command again to retry them"
                )[:5000],
            )


def _chunk_fail(chunk: GenerationChunk, error: str) -> None:
    with transaction.atomic():
        if GenerationChunk.objects.filter(pk=chunk.pk, status=GenerationChunk.RUNNING, attempts=chunk.attempts).update(
            status=GenerationChunk.FAILED, error=error[:5000], finished=timezone.now()
        ):
            _run_fail(chunk.run_id, error)


def _chunk_release(chunk: GenerationChunk) -> None:
    with transaction.atomic():
        if _held(chunk):
            task_id = _the_queue().chunk(chunk.pk)
            GenerationChunk.objects.filter(pk=chunk.pk).update(
                status=GenerationChunk.QUEUED, worker=None, done=0, task_id=task_id[:64]
            )


def fans_out() -> bool:
    """True when chunk tasks go to `db_worker` processes, False when this process runs them."""
    return _the_queue().fans_out()
