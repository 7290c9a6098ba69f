"""What the worker-process scripts of the job tests share (tests/metrics/worker_process.py,
tests/generation/worker_process.py): a store function gated inside its transaction, and the
seed/worker command line."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import django

ROOT = Path(__file__).resolve().parents[1]
# Beat every 0.2 s, stale after 2 s: a killed worker's chunk is taken again within seconds.
HEARTBEAT = {"EDITLAB_WORKER_HEARTBEAT_S": "0.2", "EDITLAB_WORKER_STALE_S": "2"}


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
    script = ""  # the worker-process module, run with -m (its seed and worker commands: run_command)

    env_extra: dict[str, str] = {}  # what the subclass's workers need besides the shared database

    def env(self, **extra: str) -> dict[str, str]:
        """The workers' environment: the shared database, the database task backend, a fast heartbeat."""
        from tests.editlab.app_process import process_env

        return process_env(
            self.sqlite_file or Path("unused"),
            DATABASE_URL=self.url,
            TASKS_BACKEND="database",
            **HEARTBEAT,
            **self.env_extra,
            **extra,
        )

    def run_seed(self, options: dict) -> dict:
        """The script's `seed` in a process of its own; what it printed (it must have queued its work)."""
        result = subprocess.run(
            [sys.executable, "-m", self.script, "seed", json.dumps(options)],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=self.timeout_s,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        seeded = json.loads(result.stdout.strip().splitlines()[-1])
        assert seeded["status"] == "queued"
        return seeded

    def start_worker(self, name: str, spec: dict, *options: str, gate: int | None = None) -> subprocess.Popen:
        """A db_worker `name` running the script's `worker` with `spec` (and, gated, stopping at `gate`)."""
        spec = {**spec, "gate": gate, "marker": str(self.marker(name)), "hold": str(self.hold(name))}
        if gate is not None:
            self.hold(name).write_text("hold")
        log = (self.folder / f"{name}.log").open("w")
        process = subprocess.Popen(
            [sys.executable, "-m", self.script, "worker", json.dumps(spec), "--"]
            + ["--worker-id", name, "--no-reload", "--no-startup-delay", "--interval", "0.1", *options],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.started.append(process)
        return process

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

    def logs(self) -> str:
        """The last lines of every worker's log, for a failure's message."""
        parts = []
        for log in sorted(self.folder.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-40:]
            parts.append(f"--- {log.stem} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(parts)

    def wait(self, condition: Callable[[], bool], what: str, *, process: subprocess.Popen | None = None) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not condition():
            if process is not None and process.poll() is not None:
                raise AssertionError(f"the worker exited ({process.returncode}) before {what}")
            assert time.monotonic() < deadline, f"not within {self.timeout_s:.0f} s: {what}\n" + self.logs()
            time.sleep(0.1)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
