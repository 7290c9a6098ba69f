"""What several benchmarks share: a throwaway database, the IWSLT2019 study, Chromium's flags,
the production settings a measured server runs with, starting such a server, and result sections
kept between markers.

Imports nothing from Django at module level: a benchmark must point the environment at its
throwaway database before Django's settings are read.
"""

import os
import re
import secrets
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

IWSLT2019 = Path(__file__).resolve().parents[3] / "shared" / "data" / "iwslt2019"

# Each benchmark writes its latest figures here (one markdown file per benchmark, sections
# between markers so re-runs replace them); the README links these files and keeps the summary.
RESULTS = Path(__file__).resolve().parent / "results"


def result_file(name: str) -> Path:
    return RESULTS / f"{name}.md"


# Headless Chromium in a container: no sandbox (we may run as root), no GPU, and nothing that
# phones home or updates itself while a test or a measurement runs.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]


def production_settings(database_url: str) -> dict[str, str]:
    """The environment of a measured process: production settings (DEBUG off: it records every
    query, several times the cost being measured) on plain HTTP over loopback, tasks run inline."""
    return {
        "DJANGO_SETTINGS_MODULE": "editlab.settings",
        "DATABASE_URL": database_url,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "TASKS_BACKEND": "immediate",
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_login_page(base_url: str, process: subprocess.Popen, timeout: float) -> str | None:
    """Poll the server's login page until it answers 200: None then, or why it did not (the
    process exited, or `timeout` seconds passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"exited ({process.returncode})"
        try:
            with urllib.request.urlopen(f"{base_url}/login/", timeout=2) as response:
                if response.status == 200:
                    return None
        except OSError:  # not listening yet (URLError, a refused or reset connection, a timeout)
            time.sleep(0.2)
    return f"did not answer within {timeout:g} s"


def setup_django(database_url: str | None, folder: Path) -> str:
    """Point Django at `database_url` (an empty database) or at a new SQLite file in `folder`,
    never at the project's own database; migrate it and return its vendor ("sqlite", "postgresql")."""
    os.environ.setdefault("DEBUG", "1")
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{folder / 'benchmark.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "editlab.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    return connection.vendor


def timed(fn: Callable[[], T]) -> tuple[float, float, T]:
    """(wall seconds, CPU seconds of this process, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def timing_line(label: str, rows: list[tuple[float, float]]) -> str:
    """One report line for repeated (wall, CPU) timings in seconds."""
    walls = [wall * 1000 for wall, _ in rows]
    cpus = [cpu * 1000 for _, cpu in rows]
    return (
        f"{label}: median {statistics.median(walls):.0f} ms, best {min(walls):.0f} ms, "
        f"median CPU {statistics.median(cpus):.0f} ms"
    )


def print_run(database_url: str | None, run: Callable[..., list[str]], **options) -> None:
    """Run a benchmark's `run(**options)` on a throwaway database and print its report lines."""
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(database_url, Path(folder))
        lines = run(**options)
    print(f"database: {vendor}")
    for text in lines:
        print(text)


def write_section(path: Path, start: str, end: str, body: str) -> None:
    """Write `body` between the markers `start` and `end` in `path`, replacing what stood there
    before, so re-runs update their numbers; append the section if the markers are not there yet."""
    body = body.strip().removeprefix(start).removesuffix(end).strip()
    block = f"{start}\n{body}\n{end}"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if start in text and end in text:
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    path.write_text(text, encoding="utf-8")
