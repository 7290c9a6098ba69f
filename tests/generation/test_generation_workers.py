"""A generation run on the database backend: chunk tasks any db_worker claims, a worker stopped inside a
chunk, the cleanup after a dead worker (metrics' sweep), a claim lost to another worker."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from annotations.models import Item
from generation import jobs
from generation.models import GenerationChunk, GenerationRecord, GenerationRun
from generation.services import generation_run_start
from metrics.management.commands.db_worker import sweep
from metrics.models import TaskWorker
from metrics.selectors_jobs import database_now
from metrics.workers import dead_workers, worker_register, worker_stop

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

TEMPLATE = "Question: {question}"


@pytest.fixture
def database_backend(settings, monkeypatch):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    monkeypatch.setattr(jobs, "CHUNK_ITEMS", 2)
    monkeypatch.setattr(jobs, "CHUNK_PER_THREAD", 1)


def work(*options: str) -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", *options, verbosity=0, stdout=StringIO())


def start(project, server, **kw) -> GenerationRun:
    return generation_run_start(
        project=project,
        kind="output",
        name="llm",
        endpoint=server.base_url,
        model="m",
        template_text=TEMPLATE,
        template_name="t.txt",
        seed=1,
        **kw,
    )


def generated() -> dict[str, str]:
    return {i.external_id: i.outputs.get("llm") for i in Item.objects.order_by("position")}


def test_a_run_fans_out_into_chunks_the_workers_answer(database_backend, project, server):
    run = start(project, server)
    assert run.status == "queued" and DBTaskResult.objects.filter(id=run.task_id, status="READY").exists()
    work("--max-tasks", "1")
    run.refresh_from_db()
    assert (run.status, run.total) == ("running", 5)
    assert [(c.seq, c.size, c.status) for c in run.chunks.all()] == [
        (0, 2, "queued"),
        (1, 2, "queued"),
        (2, 1, "queued"),
    ]
    work()
    run.refresh_from_db()
    assert (run.status, run.done, run.generated, run.error) == ("done", 5, 5, "")
    assert all(text and text.startswith("ANSWER:") for text in generated().values())
    assert len(server.requests) == 5
    assert {c.worker.engine_id if c.worker else None for c in run.chunks.all()} != {None}


def test_a_worker_stopped_inside_a_chunk_gives_it_back(database_backend, project, server, monkeypatch):
    run = start(project, server)
    work("--max-tasks", "1")
    real, calls = jobs.generation_records_store, {"n": 0}

    def stopped_at_the_third_answer(**kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise SystemExit(1)  # db_worker's second SIGTERM inside the running task
        return real(**kw)

    monkeypatch.setattr(jobs, "generation_records_store", stopped_at_the_third_answer)
    work()
    run.refresh_from_db()
    assert (run.status, run.generated) == ("done", 5)
    # The answer being stored was lost, and the call in flight beside it when it had begun: asked again.
    assert len(server.requests) in (6, 7)
    assert sorted(run.chunks.values_list("attempts", flat=True)) == [1, 1, 2]


def test_the_chunk_of_a_dead_worker_is_queued_again_without_its_answered_items(database_backend, project, server):
    run = start(project, server)
    work("--max-tasks", "1")
    chunk = run.chunks.get(seq=0)
    planned = list(chunk.item_ids)
    gone = TaskWorker.objects.create(engine_id="gone", host="elsewhere", pid=4242)
    TaskWorker.objects.filter(pk=gone.pk).update(heartbeat=database_now() - timedelta(seconds=600))
    GenerationChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=1, worker=gone)
    DBTaskResult.objects.filter(id=chunk.task_id).update(status="RUNNING", worker_ids=["gone"])
    # The dead worker had stored its first item's answer before it died.
    first = Item.objects.get(pk=planned[0])
    GenerationRecord.objects.create(run=run, item=first, status="generated", text="kept")
    first.outputs = {"llm": "kept"}
    first.save()

    me = worker_register(engine_id="me")
    try:
        sweep(me, database_now())
    finally:
        worker_stop(me)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.worker, chunk.item_ids) == ("queued", None, planned[1:])
    assert DBTaskResult.objects.get(id=chunk.task_id).status == "READY"

    work()
    run.refresh_from_db()
    assert run.status == "done" and len(server.requests) == 4  # nothing generated twice
    assert generated()[first.external_id] == "kept"


def test_a_lost_claim_stores_nothing(database_backend, project, server, monkeypatch):
    run = start(project, server)
    work("--max-tasks", "1")
    real = jobs._store

    def claim_taken(chunk, *args, **kw):
        GenerationChunk.objects.filter(pk=chunk.pk).update(attempts=chunk.attempts + 1)
        return real(chunk, *args, **kw)

    monkeypatch.setattr(jobs, "_store", claim_taken)
    work("--max-tasks", "1")
    assert GenerationRecord.objects.count() == 0 and not any(generated().values())
    run.refresh_from_db()
    assert (run.status, run.done) == ("running", 0)


def test_queued_chunks_whose_task_is_gone_get_a_new_one(database_backend, project, server):
    run = start(project, server)
    work("--max-tasks", "1")
    chunk = run.chunks.get(seq=1)
    DBTaskResult.objects.filter(id=chunk.task_id).update(status="FAILED")
    me = worker_register(engine_id="me")
    try:
        sweep(me, database_now())
    finally:
        worker_stop(me)
    chunk.refresh_from_db()
    assert DBTaskResult.objects.get(id=chunk.task_id).status == "READY"
    work()
    run.refresh_from_db()
    assert (run.status, run.generated) == ("done", 5)


@pytest.mark.parametrize("engine_row", ["FAILED", "SUCCESSFUL", "gone"])
def test_a_dead_workers_chunk_is_queued_again_whatever_the_engine_says_of_its_task(
    database_backend, project, server, engine_row
):
    """The chunk itself says who holds it: a sweep that missed it (it was locked then, or the sweep failed
    midway) after the engine's row was already marked failed still finds the worker dead and the chunk held."""
    run = start(project, server)
    work("--max-tasks", "1")
    chunk = run.chunks.get(seq=0)
    gone = TaskWorker.objects.create(engine_id="gone", host="elsewhere", pid=4242)
    TaskWorker.objects.filter(pk=gone.pk).update(heartbeat=database_now() - timedelta(seconds=600))
    GenerationChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=1, worker=gone)
    rows = DBTaskResult.objects.filter(id=chunk.task_id)
    if engine_row == "gone":
        rows.delete()
    else:
        rows.update(status=engine_row, worker_ids=["gone"])

    me = worker_register(engine_id="me")
    try:
        assert [w.engine_id for w in dead_workers(now=database_now(), exclude=me)] == ["gone"]
        sweep(me, database_now())
        assert dead_workers(now=database_now(), exclude=me) == []  # nothing held any more
    finally:
        worker_stop(me)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.worker) == ("queued", None)
    work()
    run.refresh_from_db()
    assert (run.status, run.generated) == ("done", 5)
    assert len(server.requests) == 5  # each item asked once


def test_a_dead_planner_of_a_run_is_found_by_the_run_it_was_planning(database_backend, project, server):
    run = start(project, server)
    gone = TaskWorker.objects.create(engine_id="gone", host="elsewhere", pid=4242)
    TaskWorker.objects.filter(pk=gone.pk).update(heartbeat=database_now() - timedelta(seconds=600))
    GenerationRun.objects.filter(pk=run.pk).update(status="running", planner=gone, planned=None)
    DBTaskResult.objects.filter(id=run.task_id).update(status="FAILED", worker_ids=["gone"])
    me = worker_register(engine_id="me")
    try:
        assert [w.engine_id for w in dead_workers(now=database_now(), exclude=me)] == ["gone"]
        sweep(me, database_now())
    finally:
        worker_stop(me)
    run.refresh_from_db()
    assert (run.status, run.planner) == ("queued", None)
    work()
    run.refresh_from_db()
    assert (run.status, run.generated) == ("done", 5)
