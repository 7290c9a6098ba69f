"""A generation run shared by real `db_worker` processes: one SIGKILLed inside a chunk, another finishes the
run. Every item is generated exactly once: nothing stored before the kill is asked again, nothing is lost,
one provenance record per item.

The workers and the test share one database as in tests/metrics/test_job_workers.py: on the PostgreSQL
suite run the test database itself (a transactional test), on the SQLite run a migrated database file. The
loopback OpenAI-compatible server (generation.fakeserver) runs in this process, with a latency.
"""

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from generation.fakeserver import FakeServer, default_answer
from tests.editlab.app_process import copy_of, make_template
from tests.generation.worker_process import question
from tests.worker_gate import WorkerProcesses

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ITEMS = 24
CHUNK = 4  # 6 chunks
CONCURRENCY = 2
GATE = 3  # worker A dies inside its third store of answers
TIMEOUT_S = 180  # generous: the machine is shared; every wait ends as soon as its condition holds


class Shared(WorkerProcesses):
    timeout_s = TIMEOUT_S
    script = "tests.generation.worker_process"

    def seed(self, endpoint: str) -> int:
        return self.run_seed({"items": ITEMS, "endpoint": endpoint, "concurrency": CONCURRENCY})["run"]

    def worker(self, name: str, gate: int | None = None) -> subprocess.Popen:
        return self.start_worker(name, {"chunk": CHUNK}, gate=gate)

    def run(self, run: int) -> tuple:
        [row] = self.query(
            "SELECT status, total, done, generated, refused, failed, error FROM generation_generationrun "
            f"WHERE id = {int(run)}"
        )
        return row

    def records(self, run: int) -> list[tuple]:
        """(item position, status, text) per record."""
        return self.query(
            "SELECT i.position, r.status, r.text FROM generation_generationrecord r "
            f"JOIN annotations_item i ON i.id = r.item_id WHERE r.run_id = {int(run)} ORDER BY i.position"
        )

    def outputs(self) -> dict[int, str | None]:
        rows = self.query("SELECT position, outputs FROM annotations_item ORDER BY position")
        return {n: (o if isinstance(o, dict) else json.loads(o)).get("llm") for n, o in rows}

    def chunks(self, run: int) -> list[tuple]:
        """(seq, status, attempts, worker's engine id) per chunk."""
        return self.query(
            "SELECT c.seq, c.status, c.attempts, w.engine_id FROM generation_generationchunk c "
            "LEFT JOIN metrics_taskworker w ON w.id = c.worker_id "
            f"WHERE c.run_id = {int(run)} ORDER BY c.seq"
        )


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory) -> Path:
    return make_template(tmp_path_factory.mktemp("generation-workers"))


@pytest.fixture
def shared(request, tmp_path):
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
        database = Shared(f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}", None, tmp_path)
    else:
        file = copy_of(request.getfixturevalue("sqlite_template"), tmp_path, "shared.sqlite3")
        database = Shared(f"sqlite:///{file}", file, tmp_path)
    yield database
    database.stop_all()


def position_of(body) -> int:
    content = body["messages"][-1]["content"]
    return next(n for n in range(ITEMS) if content == f"Question: {question(n)}")


def test_a_worker_killed_mid_run_loses_nothing_and_another_finishes_it_generating_each_item_once(shared):
    with FakeServer(latency_s=0.05) as server:
        run = shared.seed(server.base_url)
        a = shared.worker("worker-a", gate=GATE)
        shared.wait(shared.marker("worker-a").exists, "worker A is inside its third store", process=a)
        os.killpg(a.pid, signal.SIGKILL)  # no handler runs: the worker simply vanishes
        a.wait(timeout=30)
        asked_before = Counter(position_of(body) for body in list(server.requests))

        before = shared.records(run)
        stored_before = {n for n, _, _ in before}
        assert 0 < len(stored_before) < ITEMS
        assert shared.run(run)[0] == "running"
        assert [status for _, status, _, _ in shared.chunks(run)].count("running") == 1  # A's, for all it knows

        b = shared.worker("worker-b")
        shared.wait(lambda: shared.run(run)[0] not in ("queued", "running"), "the run is finished", process=b)
        asked = Counter(position_of(body) for body in list(server.requests))

    assert shared.run(run) == ("done", ITEMS, ITEMS, ITEMS, 0, 0, "")
    records = shared.records(run)
    # One provenance record per item, each generated, each the answer of its own question, stored where it goes.
    assert [(n, status) for n, status, _ in records] == [(n, "generated") for n in range(ITEMS)]
    expected = {n: default_answer({"messages": [{"content": f"Question: {question(n)}"}]}) for n in range(ITEMS)}
    assert {n: text for n, _, text in records} == expected
    assert shared.outputs() == expected
    assert [(n, status, text) for n, status, text in records if n in stored_before] == before  # kept as they were
    # Nothing stored before the kill was asked again; every item was asked; only answers the kill lost
    # (the gated store's, the calls in flight beside it) were asked twice, and never more.
    assert sorted(asked) == list(range(ITEMS))
    assert {n: asked[n] for n in stored_before} == dict.fromkeys(stored_before, 1)
    twice = {n for n, times in asked.items() if times > 1}
    assert twice and twice <= set(asked_before) - stored_before
    assert set(asked.values()) == {1, 2}
    chunks = shared.chunks(run)
    assert [(seq, status) for seq, status, _, _ in chunks] == [(n, "done") for n in range(ITEMS // CHUNK)]
    taken_again = [(attempts, worker) for _, _, attempts, worker in chunks if attempts > 1]
    assert taken_again == [(2, "worker-b")]  # the chunk A died in, claimed once more, by B

    b.send_signal(signal.SIGTERM)
    assert b.wait(timeout=TIMEOUT_S) == 0, shared.log("worker-b")
