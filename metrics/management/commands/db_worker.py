"""`manage.py db_worker`: django-tasks' database worker, plus a heartbeat and the cleanup after dead workers.

This command shadows django_tasks_db's own (metrics comes first in INSTALLED_APPS) and runs it unchanged,
with every option, after registering the process (metrics.workers.worker_register). A thread then beats
every EDITLAB_WORKER_HEARTBEAT_S, busy or idle, and after each beat queues again the chunks of workers
silent for EDITLAB_WORKER_STALE_S and marks FAILED the engine's result rows they left RUNNING.

Stopping: the first SIGTERM (or Ctrl+C) lets the current task finish, then the worker exits; metric jobs
are cut into chunk tasks, so that is one chunk, not a whole job, and the job's other chunks stay queued
for the next worker. A second signal ends the chunk at once and gives it back to the queue.
"""

import os
from datetime import datetime

from django.conf import settings
from django.db import connections
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands import db_worker as engine

from metrics import workers
from metrics.jobs import metric_work_reclaim, metric_work_requeue_orphans
from metrics.models import TaskWorker


def sweep(me: TaskWorker, now: datetime) -> None:
    """What every live worker does after its heartbeat: clean up after the dead ones."""
    dead = workers.dead_workers(now=now, exclude=me)
    if dead:
        metric_work_reclaim(dead=dead)
        for other in workers.other_work():
            other.reclaim(dead)
        workers.task_results_fail_lost(dead=dead, now=now)
    # Queued work whose task is gone: a worker stopped between the engine's claim and the task's start.
    live = workers.live_task_ids()
    metric_work_requeue_orphans(live_tasks=live)
    for other in workers.other_work():
        other.requeue_orphans(live)
    workers.workers_prune(now=now)


class Command(engine.Command):
    help = engine.Command.help + " (with editlab's heartbeat; see metrics/workers.py)"

    def handle(self, *args, **options) -> None:
        # With --reload the command runs twice: in a watching parent, and in the child that runs tasks.
        if options["reload"] and not options["batch"] and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true":
            return super().handle(*args, **options)
        me = workers.worker_register(engine_id=options["worker_id"])
        workers.this_process_is(me)
        heartbeat = workers.Heartbeat(me, every_s=settings.EDITLAB_WORKER_HEARTBEAT_S, sweep=sweep)
        try:
            sweep(me, workers.worker_beat(me))  # a restarted worker cleans up after its predecessor at once
            heartbeat.start()
            super().handle(*args, **options)
        finally:
            workers.this_process_is(None)
            # A signal may have cut this thread's connection anywhere (even inside a commit): drop it.
            connections.close_all()
            if heartbeat.is_alive():
                heartbeat.stop()  # writes `stopped` on its own connection
            else:
                workers.worker_stop(me)
