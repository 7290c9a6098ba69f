"""Run in processes of their own by tests/generation/test_generation_killed_worker.py, against the database
the test shares with them (DATABASE_URL, TASKS_BACKEND=database):

    python -m tests.generation.worker_process seed '{"items": 24, "endpoint": URL, ...}'  -> {"run": id, ...}
    python -m tests.generation.worker_process worker '{"chunk": 4, "gate": 3, ...}' -- db_worker options

`seed` makes a project of items and starts a generation run (its plan task waits for a worker). `worker`
is a real `manage.py db_worker` (call_command) with chunks of `chunk` items; with a gate, its n-th store
of answers stops inside the store transaction, after the records are written and before the commit: it
writes the file `marker` and waits there while the file `hold` exists (the test SIGKILLs it there).
"""

import sys

from tests.worker_gate import gate_store, run_command

TEMPLATE = "Question: {question}"


def question(n: int) -> str:
    return f"What does rule {n} of the ledger say?"


def seed(*, items: int, endpoint: str, concurrency: int) -> dict:
    from annotations.models import Item, Project
    from generation.services import generation_run_start

    project = Project.objects.create(name="Killed worker")
    Item.objects.bulk_create(
        Item(project=project, external_id=f"q{n}", position=n, source=question(n), model_output=f"Rule {n}.")
        for n in range(items)
    )
    run = generation_run_start(
        project=project,
        kind="output",
        name="llm",
        endpoint=endpoint,
        model="m",
        template_text=TEMPLATE,
        template_name="t.txt",
        seed=1,
        concurrency=concurrency,
    )
    return {"run": run.pk, "status": run.status}


def worker(*, chunk: int, gate: int | None = None, marker: str = "", hold: str = "", argv: list[str]) -> None:
    from django.core.management import call_command

    from generation import jobs

    jobs.CHUNK_ITEMS, jobs.CHUNK_PER_THREAD = chunk, 1
    if gate is not None:
        gate_store(jobs, "generation_records_store", gate=gate, marker=marker, hold=hold)
    call_command("db_worker", *argv)


if __name__ == "__main__":
    run_command(sys.argv[1:], seed=seed, worker=worker)
