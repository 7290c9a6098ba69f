"""The generation runs' tasks on the engine the metric jobs use (django-tasks; see metrics.tasks).

Registers with generation.jobs how runs and chunks are enqueued (imported by GenerationConfig.ready).
"""

from django_tasks import task, task_backends

from editlab.task_backends import runs_in_this_process
from generation import jobs, reclaim
from metrics import workers
from metrics.jobs import JobQueue
from metrics.workers import this_worker


@task()
def plan_generation_run(run_id: int) -> dict | None:
    """Plan a GenerationRun into chunks (with the in-process backends, answer them too)."""
    return jobs.generation_run_plan(run_id=run_id, worker=this_worker())


@task()
def answer_generation_chunk(chunk_id: int) -> int | None:
    """Call the endpoint for one chunk of a GenerationRun and store the answers."""
    return jobs.generation_chunk_run(chunk_id=chunk_id, worker=this_worker())


def _enqueue_plan(run_id: int) -> str:
    return str(plan_generation_run.enqueue(run_id).id)


def _enqueue_chunk(chunk_id: int) -> str:
    return str(answer_generation_chunk.enqueue(chunk_id).id)


def _fans_out() -> bool:
    return not runs_in_this_process(task_backends[answer_generation_chunk.backend])


jobs.use_queue(JobQueue(plan=_enqueue_plan, chunk=_enqueue_chunk, fans_out=_fans_out))
workers.other_work_register(
    workers.OtherWork(
        reclaim=lambda dead: reclaim.generation_work_reclaim(dead=dead),
        requeue_orphans=lambda live: reclaim.generation_work_requeue_orphans(live_tasks=live),
        holding=reclaim.generation_work_holders,
    )
)
