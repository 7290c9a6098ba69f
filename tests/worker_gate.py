"""What the worker-process scripts of the job tests share (tests/metrics/worker_process.py,
tests/generation/worker_process.py): a store function gated inside its transaction, and the
seed/worker command line."""

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import django


def gate_store(module: ModuleType, name: str, *, gate: int, marker: str, hold: str) -> None:
    """Replace `module.name` (a store function called inside its transaction) by one whose `gate`-th call,
    after storing and before the commit, writes the file `marker` and waits while the file `hold` exists."""
    real = getattr(module, name)
    calls = {"n": 0}

    def gated_store(**kwargs):
        stored = real(**kwargs)
        calls["n"] += 1
        if calls["n"] == gate:
            Path(marker).write_text("inside the store transaction")
            while Path(hold).exists():
                time.sleep(0.05)
        return stored

    setattr(module, name, gated_store)


def run_command(args: list[str], *, seed: Callable[..., dict], worker: Callable[..., None]) -> None:
    """`seed '{json}'` prints what `seed(**options)` returns; `worker '{json}' -- db_worker options` runs
    `worker(**options, argv=options after --)`."""
    django.setup()
    command, options = args[0], json.loads(args[1]) if len(args) > 1 else {}
    if command == "seed":
        print(json.dumps(seed(**options)))
    elif command == "worker":
        rest = args[args.index("--") + 1 :] if "--" in args else []
        worker(**options, argv=rest)
    else:
        raise SystemExit(f"unknown command {command!r}: seed or worker")


class WorkerProcesses:
    """Real db_worker processes and the test sharing one database: on PostgreSQL the test database itself
    (read through the test's connection), on SQLite a migrated file (`sqlite_file`, read with sqlite3).
    Each worker `name` logs to `<folder>/<name>.log`; a gated one signals `marker(name)` and holds on
    `hold(name)`."""

    timeout_s = 180.0  # generous: the machine may be shared; every wait ends as soon as its condition holds

    def __init__(self, url: str, sqlite_file: Path | None, folder: Path) -> None:
        self.url, self.sqlite_file, self.folder = url, sqlite_file, folder
        self.started: list[subprocess.Popen] = []

    def query(self, sql: str) -> list[tuple]:
        if self.sqlite_file is not None:
            with sqlite3.connect(self.sqlite_file, timeout=30) as db:
                return db.execute(sql).fetchall()
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def marker(self, name: str) -> Path:
        return self.folder / f"{name}.inside"

    def hold(self, name: str) -> Path:
        return self.folder / f"{name}.hold"

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()

    def wait(self, condition: Callable[[], bool], what: str, *, process: subprocess.Popen | None = None) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not condition():
            if process is not None and process.poll() is not None:
                raise AssertionError(f"the worker exited ({process.returncode}) before {what}")
            assert time.monotonic() < deadline, f"not within {self.timeout_s:.0f} s: {what}"
            time.sleep(0.1)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
