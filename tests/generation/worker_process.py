"""Run in processes of their own by tests/generation/test_generation_killed_worker.py, against the database
the test shares with them (DATABASE_URL, TASKS_BACKEND=database):

    python -m tests.generation.worker_process seed '{"items": 24, "endpoint": URL, ...}'  -> {"run": id, ...}
    python -m tests.generation.worker_process worker '{"chunk": 4, "gate": 3, ...}' -- db_worker options

`seed` makes a project of items and starts a generation run (its plan task waits for a worker). `worker`
is a real `manage.py db_worker` (call_command) with chunks of `chunk` items; with a gate, its n-th store
of answers stops inside the store transaction, after the records are written and before the commit: it
writes the file `marker` and waits there while the file `hold` exists (the test SIGKILLs it there).
"""

import json
import sys
import time
from pathlib import Path

import django

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
        real = jobs.generation_records_store
        calls = {"n": 0}

        def gated_store(**kwargs):
            stored = real(**kwargs)
            calls["n"] += 1
            if calls["n"] == gate:
                Path(marker).write_text("inside the store transaction")
                while Path(hold).exists():
                    time.sleep(0.05)
            return stored

        jobs.generation_records_store = gated_store
    call_command("db_worker", *argv)


def main(args: list[str]) -> None:
    django.setup()
    command, options = args[0], json.loads(args[1]) if len(args) > 1 else {}
    if command == "seed":
        print(json.dumps(seed(**options)))
    elif command == "worker":
        rest = args[args.index("--") + 1 :] if "--" in args else []
        worker(**options, argv=rest)
    else:
        raise SystemExit(f"unknown command {command!r}: seed or worker")


if __name__ == "__main__":
    main(sys.argv[1:])
