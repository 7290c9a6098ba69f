"""editlab in separate processes, for the fault tests: a throwaway SQLite database file, scripts run
against it, and an app server that can be killed and started again.

The processes never touch the test run's database (in-memory SQLite or the suite's PostgreSQL): each
test gets a copy of one migrated database file, so the same tests run unchanged in both suite runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from editlab.benchmarks.support import free_port as free_port  # the fault tests take it from here
from editlab.benchmarks.support import wait_for_login_page
from tests.factories import PASSWORD

ROOT = Path(__file__).resolve().parents[2]

# Users every copy starts with, with the factories' password (the login page is how the browser
# tests get in, through tests/browser_support.py's log_in).
SEED = f"""
from django.contrib.auth import get_user_model
from annotations.roles import set_role
User = get_user_model()
for name, role in (("anna", "annotator"), ("rita", "researcher")):
    user = User.objects.create_user(name, password={PASSWORD!r})
    set_role(user, role)
"""


def process_env(database: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TASKS_BACKEND", "SECRET_KEY"}}
    env.update(
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="editlab.settings",
        EDITLAB_METRIC_PROCESSES="1",  # no worker pool: a killed process leaves no orphans
        PYTHONUNBUFFERED="1",
        TASKS_BACKEND="immediate",  # a script's job runs before the script exits
    )
    env.update(extra)
    return env


def _python(database: Path, argv: list[str], failure: str, *, timeout: float, env: dict[str, str]) -> str:
    """Runs `python argv...` in the repository against `database`: its output, or `failure` and the output."""
    result = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=process_env(database, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(f"{failure}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def manage(database: Path, *args: str, timeout: float = 180, **env: str) -> str:
    return _python(database, ["manage.py", *args], f"manage.py {' '.join(args)} failed:", timeout=timeout, env=env)


def run_script(database: Path, code: str, *, timeout: float = 180, **env: str):
    """Runs Python code with Django set up against `database`; returns what it printed as JSON (or None)."""
    argv = ["-c", "import django\ndjango.setup()\n" + code]
    out = _python(database, argv, f"script failed:\n{code}", timeout=timeout, env=env).strip().splitlines()
    return json.loads(out[-1]) if out else None


def make_template(folder: Path) -> Path:
    """A migrated database (`migrate` alone: nothing else is needed) with the seed users."""
    database = folder / "template.sqlite3"
    manage(database, "migrate", "--noinput")
    run_script(database, SEED)
    return database


def copy_of(template: Path, folder: Path, name: str) -> Path:
    target = folder / name
    shutil.copyfile(template, target)
    return target


def query(database: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Reads the database file directly (a killed writer's unfinished transaction is rolled back here)."""
    with sqlite3.connect(database, timeout=30) as connection:
        return connection.execute(sql, params).fetchall()


class AppServer:
    """`manage.py runserver` in its own process group, on a fixed port so that it can come back
    at the same address (the page's origin, hence its localStorage, must not change)."""

    def __init__(self, database: Path, port: int, log: Path) -> None:
        self.database, self.port, self.log = database, port, log
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
                cwd=ROOT,
                env=process_env(self.database),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        problem = wait_for_login_page(self.url, self.process, timeout)
        if problem is not None:
            raise AssertionError(f"the app server {problem}: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, requests in flight are cut."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None
