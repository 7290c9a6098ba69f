"""An in-process task backend that runs each task in a background thread.

The embedded default (SQLite, one `runserver` process) has no worker process, but a metric
job over a whole study takes minutes: run inline (django-tasks' ImmediateBackend) the
"Compute" request would block until the end and its progress could never be polled. Here
the request returns at once and the job reports progress through its row, as it would with
`TASKS_BACKEND=database` and `manage.py db_worker`.
"""

import logging
import threading
from typing import Any, TypeVar

from django.db import close_old_connections, connections, transaction
from django_tasks.backends.base import BaseTaskBackend
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import Task, TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ThreadBackend(ImmediateBackend):
    def enqueue(self, task: Task[..., T], args: Any, kwargs: Any) -> TaskResult[T]:
        self.validate_task(task)
        task_result: TaskResult[T] = TaskResult(
            task=task,
            id=get_random_id(),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        # Start only once the caller's transaction has committed what the task will read.
        transaction.on_commit(lambda: self._start(task_result))
        return task_result

    def _start(self, task_result: TaskResult[Any]) -> None:
        thread = threading.Thread(target=self._run, args=(task_result,), name=f"task-{task_result.id}", daemon=True)
        thread.start()

    def _run(self, task_result: TaskResult[Any]) -> None:
        close_old_connections()
        try:
            self._execute_task(task_result)
        except BaseException:  # the task records its own failure; never kill the server
            logger.exception("task %s failed", task_result.id)
        finally:
            connections.close_all()


def runs_in_this_process(backend: BaseTaskBackend) -> bool:
    """True for the backends that run a task in the process that enqueues it (immediate, thread): a task
    enqueued there never reaches another worker, so work cannot be spread over several."""
    return isinstance(backend, ImmediateBackend)
