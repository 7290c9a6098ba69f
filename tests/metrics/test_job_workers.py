"""One metric job shared by real `db_worker` processes: killed (SIGKILL) or stopped (SIGTERM) mid-chunk.

The workers and the test share one database: on the PostgreSQL suite run the test database itself (a
transactional test, so the workers see what is committed and the flush cleans up after them), on the
SQLite run a migrated database file (the suite's in-memory database cannot be shared between
processes). The processes run tests/metrics/worker_process.py; the test reads the database directly.
"""

import os
import signal
import subprocess
from pathlib import Path

import pytest
from django.db import connection

from metrics import text as engine
from tests.editlab.app_process import copy_of, make_template
from tests.metrics.worker_process import edited, original
from tests.worker_gate import WorkerProcesses

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

METRICS = ["levenshtein", "levenshtein_words"]
POST_EDITS = 40
CHUNK = 10  # 4 chunks of 10 post-edits x 2 metrics
TIMEOUT_S = 180  # generous: the machine is shared; every wait below ends as soon as its condition holds


class SharedDatabase(WorkerProcesses):
    timeout_s = TIMEOUT_S
    script = "tests.metrics.worker_process"
    env_extra = {"EDITLAB_METRIC_CHUNK_SIZE": str(CHUNK)}

    def seed(self) -> int:
        return self.run_seed({"post_edits": POST_EDITS, "metrics": METRICS})["job"]

    def worker(self, name: str, *options: str, gate: int | None = None) -> subprocess.Popen:
        return self.start_worker(name, {}, *options, gate=gate)

    def running(self, name: str) -> bool:
        """The worker's loop has started (its signal handlers are in place: SIGTERM stops it cleanly)."""
        return f"Starting worker worker_id={name}" in self.log(name)

    def chunks(self, job: int) -> list[tuple]:
        """(seq, status, attempts, worker's engine id) per chunk."""
        return self.query(
            "SELECT c.seq, c.status, c.attempts, w.engine_id FROM metrics_metricchunk c "
            f"LEFT JOIN metrics_taskworker w ON w.id = c.worker_id WHERE c.job_id = {int(job)} ORDER BY c.seq"
        )

    def job(self, job: int) -> tuple:
        [row] = self.query(f"SELECT status, total, done, error FROM metrics_metricjob WHERE id = {int(job)}")
        return row

    def values(self) -> dict[tuple[int, str], float]:
        rows = self.query(
            "SELECT i.position, v.metric, v.value FROM metrics_metricvalue v "
            "JOIN annotations_postedit p ON p.id = v.post_edit_id "
            "JOIN annotations_assignment a ON a.id = p.assignment_id "
            "JOIN annotations_item i ON i.id = a.item_id"
        )
        assert len(rows) == len({(n, metric) for n, metric, _ in rows}), "a value is stored twice"
        return {(n, metric): value for n, metric, value in rows}

    def task_results(self) -> list[tuple[str, str]]:
        return sorted(self.query("SELECT status, exception_class_path FROM django_tasks_database_dbtaskresult"))


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory) -> Path:
    return make_template(tmp_path_factory.mktemp("job-workers"))


@pytest.fixture
def shared(request, tmp_path) -> SharedDatabase:
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
        url = f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        database = SharedDatabase(url=url, sqlite_file=None, folder=tmp_path)
    else:
        template = request.getfixturevalue("sqlite_template")
        file = copy_of(template, tmp_path, "shared.sqlite3")
        database = SharedDatabase(url=f"sqlite:///{file}", sqlite_file=file, folder=tmp_path)
    yield database
    database.stop_all()


def expected_values() -> dict[tuple[int, str], float]:
    return {
        (n, metric): engine.METRICS[metric](original(n), edited(n)) for n in range(POST_EDITS) for metric in METRICS
    }


def test_a_worker_killed_mid_chunk_loses_nothing_and_the_other_workers_finish_the_job_storing_each_value_once(
    shared,
):
    job = shared.seed()
    # Worker A plans the job, stores its first chunk, and dies inside the second one's store transaction.
    a = shared.worker("worker-a", gate=2)
    shared.wait(shared.marker("worker-a").exists, "worker A is inside its second chunk's store", process=a)
    os.killpg(a.pid, signal.SIGKILL)  # no handler runs: the worker simply vanishes
    a.wait(timeout=30)

    assert [(seq, status, attempts, worker) for seq, status, attempts, worker in shared.chunks(job)] == [
        (0, "done", 1, "worker-a"),
        (1, "running", 1, "worker-a"),  # the dead worker could not say otherwise
        (2, "queued", 0, None),
        (3, "queued", 0, None),
    ]
    assert len(shared.values()) == 20  # the first chunk's 10 post-edits x 2 metrics; the second's rows are gone
    assert ("RUNNING", "") in shared.task_results()

    # Two workers share what is left; once A's heartbeat is stale, one of them takes its chunk again.
    b = shared.worker("worker-b")
    c = shared.worker("worker-c")
    shared.wait(lambda: shared.running("worker-b"), "worker B has started", process=b)
    shared.wait(lambda: shared.running("worker-c"), "worker C has started", process=c)
    shared.wait(lambda: shared.job(job)[0] != "running", "the job is finished")

    assert shared.job(job) == ("done", 80, 80, "")
    assert shared.values() == expected_values()
    chunks = shared.chunks(job)
    assert [(seq, status) for seq, status, _, _ in chunks] == [(n, "done") for n in range(4)]
    assert chunks[0][2:] == (1, "worker-a")
    assert chunks[1][2] == 2 and chunks[1][3] in {"worker-b", "worker-c"}  # claimed a second time, stored once
    assert {worker for _, _, _, worker in chunks[1:]} <= {"worker-b", "worker-c"}
    # The task engine's row of the killed task does not stay RUNNING: it is failed, with the reason. The engine
    # marks a finished task's row SUCCESSFUL after the task's own transaction (that completed the job) commits.
    shared.wait(
        lambda: "RUNNING" not in {status for status, _ in shared.task_results()}, "every engine row says how it ended"
    )
    results = shared.task_results()
    assert ("FAILED", "metrics.workers.WorkerLost") in results
    assert {status for status, _ in results} == {"SUCCESSFUL", "FAILED"}
    assert [status for status, _ in results].count("FAILED") == 1

    for worker in (b, c):
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=TIMEOUT_S) == 0
    stopped = shared.query("SELECT engine_id, stopped IS NOT NULL FROM metrics_taskworker ORDER BY engine_id")
    assert stopped == [("worker-a", False), ("worker-b", True), ("worker-c", True)]


def test_one_sigterm_stops_a_worker_after_its_current_chunk_and_leaves_the_rest_queued_for_the_next_worker(
    shared,
):
    job = shared.seed()
    a = shared.worker("worker-a", gate=1)
    shared.wait(shared.marker("worker-a").exists, "worker A is inside its first chunk's store", process=a)
    a.send_signal(signal.SIGTERM)
    shared.wait(lambda: "shutting down gracefully" in shared.log("worker-a"), "worker A acknowledges SIGTERM")
    shared.hold("worker-a").unlink()  # the chunk goes on to its commit

    assert a.wait(timeout=TIMEOUT_S) == 0, shared.log("worker-a")
    assert [(seq, status, worker) for seq, status, _, worker in shared.chunks(job)] == [
        (0, "done", "worker-a"),
        (1, "queued", None),
        (2, "queued", None),
        (3, "queued", None),
    ]
    assert shared.job(job) == ("running", 80, 20, "")  # resumable, not failed
    assert len(shared.values()) == 20
    assert [status for status, _ in shared.task_results()] == ["READY"] * 3 + ["SUCCESSFUL"] * 2

    b = shared.worker("worker-b", "--batch")  # runs what is queued, then exits
    assert b.wait(timeout=TIMEOUT_S) == 0, shared.log("worker-b")
    assert shared.job(job) == ("done", 80, 80, "")
    assert shared.values() == expected_values()
    assert [(seq, worker) for seq, _, _, worker in shared.chunks(job)] == [
        (0, "worker-a"),
        (1, "worker-b"),
        (2, "worker-b"),
        (3, "worker-b"),
    ]
