"""Run in processes of their own by tests/metrics/test_job_workers.py, against the database the test shares
with them (DATABASE_URL):

    python -m tests.metrics.worker_process seed '{"post_edits": 40, ...}'   -> prints {"job": id, ...}
    python -m tests.metrics.worker_process worker '{"gate": 2, ...}' -- db_worker options

`worker` is a real `manage.py db_worker` (call_command, every option passed on). With a gate, the worker's
n-th chunk stops inside its store transaction, after its values are written and before the commit: it
writes the file `marker` and waits there while the file `hold` exists (a test kills it there, or sends
SIGTERM and then removes `hold`).
"""

import sys

from tests.worker_gate import gate_store, run_command


def seed(*, post_edits: int, metrics: list[str]) -> dict:
    """A project of submitted post-edits and a queued metric job (TASKS_BACKEND=database: its plan task
    waits for a worker)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotations.models import Assignment, Item, PostEdit, Project
    from annotations.roles import set_role
    from metrics.jobs import metric_job_create

    user_model = get_user_model()
    annotator = user_model.objects.create_user("anna-workers", password="not-used-here")
    set_role(annotator, "annotator")
    researcher = user_model.objects.create_user("rita-workers", password="not-used-here")
    set_role(researcher, "researcher")
    project = Project.objects.create(name="Shared job", instructions=["Fix it"])
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"i{n}", position=n, model_output=original(n)) for n in range(post_edits)
    )
    assignments = Assignment.objects.bulk_create(
        Assignment(item=item, annotator=annotator, status=Assignment.SUBMITTED) for item in items
    )
    now = timezone.now()
    PostEdit.objects.bulk_create(
        PostEdit(assignment=a, text=edited(n), submitted_at=now, wall_ms=1000 + n, keystrokes=n)
        for n, a in enumerate(assignments)
    )
    job = metric_job_create(project=project, user=researcher, metrics=metrics, variants=["plain"])
    return {"job": job.pk, "status": job.status}


def original(n: int) -> str:
    return f"This are test number {n}, with {'some ' * (n % 7)}words."


def edited(n: int) -> str:
    return f"This is test {n} indeed, with {'more ' * (n % 5)}words."


def worker(*, gate: int | None = None, marker: str = "", hold: str = "", argv: list[str]) -> None:
    from django.core.management import call_command

    from metrics import jobs

    if gate is not None:
        gate_store(jobs, "metric_values_store", gate=gate, marker=marker, hold=hold)
    call_command("db_worker", *argv)


if __name__ == "__main__":
    run_command(sys.argv[1:], seed=seed, worker=worker)
