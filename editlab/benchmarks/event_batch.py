"""App CPU per editor event batch, measured in-process: what the load benchmark's batches cost the app.

    python -m editlab.benchmarks.event_batch --database-url postgres://... [--batches 400] [--events 20]
                                             [--breakdown] [--profile FILE] [--http WORKERS] [--output FILE]

Calls the WSGI application in this process with POST /api/post-edits/<id>/events/ bodies of --events
events of a consistent typing session (editlab.benchmarks.load.session, as the browser's logger sends
them): every middleware, the session and user, DRF's authentication, permission and parsing, the
events service and its statements, with DEBUG off. Measures the CPU time of this process per request
(time.process_time; PostgreSQL's own CPU is another process, reported beside it when the server runs
on this machine: its backend process's CPU time), median over --batches
requests after 50 unmeasured ones. CPU time is less sensitive than latency to other work on the
machine, not insensitive: the report gives the load average. --breakdown also times the main steps
(inclusive, each wrapped; the wrapping adds a little); --profile writes cProfile's statistics of the
measured requests to FILE (the profiler adds its own cost: read the shares, not the times); --http
WORKERS posts the same batches over HTTP, one after another, to gunicorn with that many sync workers
and reports the CPU of gunicorn's processes per batch: what HTTP, gunicorn and its access log add. Use an empty PostgreSQL database (migrated
here); SQLite needs EDITLAB_ALLOW_SQLITE=1 and measures another insert path.
"""

import argparse
import collections
import cProfile
import functools
import io
import json
import os
import platform
import random
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from editlab.benchmarks.load.harness import CpuMeter
from editlab.benchmarks.support import production_settings, result_file, write_section

WARM_UP = 50


def _environment(database_url: str) -> None:
    os.environ.update(production_settings(database_url))


class StepTimer:
    """CPU time spent inside chosen functions (inclusive), for --breakdown."""

    def __init__(self) -> None:
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.process_time() - started

        setattr(owner, name, timed)

    def install(self) -> None:
        """Wrap the steps a good batch goes through (the plain answer of PostEditEventsApi; PostgreSQL's
        one-statement lock and insert, SQLite's separate statements): a step not taken is not listed."""
        from annotations.api import views_editor
        from annotations.editing import event_store, locks
        from editlab import sessions

        self.wrap(sessions, "get_user", "session, user and roles (one statement)")
        self.wrap(views_editor, "csrf_passes", "CSRF check")
        self.wrap(views_editor, "owned_post_edit", "ownership check")
        self.wrap(views_editor, "validate_events", "events validated")
        self.wrap(views_editor, "post_edit_ingest_events", "events service (transaction)")
        self.wrap(locks, "lock_and_advance_visit", "  lock the post-edit, the page load seen")
        self.wrap(locks, "lock_for_events", "  lock the post-edit")
        self.wrap(event_store, "advance_visit", "  the page load seen, its clock")
        self.wrap(event_store, "insert_following_events", "  insert (a following batch)")
        self.wrap(event_store, "stored_seqs_and_top", "  stored seqs")
        self.wrap(event_store, "insert_events", "  insert")


def _session_batches(count: int, size: int, text: str) -> list[list[dict]]:
    from editlab.benchmarks.load.session import TypingSession

    session = TypingSession(text, next_seq=0, rng=random.Random(1))
    stream = session.load(5.0)
    while len(stream) < count * size:
        stream.extend(session.type_keys(keys=10, until_t=session.last_t + 3000))
    return [stream[start : start + size] for start in range(0, count * size, size)]


def measure(*, batches: int, events: int, breakdown: bool, profile: Path | None = None, http_workers: int = 0) -> dict:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from django.db import connection
    from django.middleware.csrf import _get_new_csrf_string
    from django.test import Client
    from django.urls import reverse

    from annotations.editing.lifecycle import post_edit_open
    from annotations.models import Assignment, Item, Project
    from annotations.roles import ANNOTATOR, set_role
    from editlab.benchmarks.load.session import item_text

    call_command("migrate", verbosity=0)
    name = "event-batch-" + secrets.token_hex(3)
    user = get_user_model().objects.create_user(name, password=secrets.token_urlsafe(16))
    set_role(user, ANNOTATOR)
    project = Project.objects.create(name=name)
    item = Item.objects.create(project=project, external_id="1", model_output=item_text(random.Random(1)))
    assignment = Assignment.objects.create(item=item, annotator=user)
    post_edit, visit = post_edit_open(assignment=assignment, user=user)
    client = Client()
    client.force_login(user)  # a real session row, as after the login page
    token = _get_new_csrf_string()
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={token}"
    path = reverse("api-post-edit-events", args=[post_edit.pk])
    bodies = [
        json.dumps({"page_id": str(visit.page_id), "events": chunk}).encode()
        for chunk in _session_batches(WARM_UP + batches, events, item.model_output)
    ]
    application = get_wsgi_application()

    def post(body: bytes) -> None:
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_COOKIE": cookie,
            "HTTP_X_CSRFTOKEN": token,
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.version": (1, 0),
        }
        status: list[str] = []

        def start_response(
            line: str, headers: list[tuple[str, str]], exc_info: object = None
        ) -> Callable[[bytes], None]:
            status.append(line)
            return lambda data: None  # Django returns the body; nothing writes through this

        response = application(environ, start_response)
        content = b"".join(response)
        response.close()
        if not status[0].startswith("200"):
            raise RuntimeError(f"POST {path}: {status[0]} {content[:300]!r}")

    if http_workers:
        return _measure_http(http_workers, path, cookie, token, bodies)
    for body in bodies[:WARM_UP]:
        post(body)
    timer = StepTimer()
    if breakdown:
        timer.install()
    backend = _local_backend_pid()
    meter = None if backend is None else CpuMeter({"PostgreSQL": [backend]}, alone=("PostgreSQL",))
    cpu_ms = []
    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()
    for body in bodies[WARM_UP:]:
        started = time.process_time()
        post(body)
        cpu_ms.append(1000 * (time.process_time() - started))
    if profiler is not None and profile is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    backend_seconds = None if meter is None else meter.stop()["PostgreSQL"]
    return {
        "vendor": connection.vendor,
        "cpu_ms": sorted(cpu_ms),
        "steps": {label: 1000 * seconds / batches for label, seconds in timer.seconds.items()},
        "backend_ms": None if backend_seconds is None else 1000 * backend_seconds / batches,
    }


def _measure_http(workers: int, path: str, cookie: str, token: str, bodies: list[bytes]) -> dict:
    """The same batches POSTed one after another over HTTP (a new connection each, as the load
    benchmark's client) to gunicorn with `workers` sync workers on this database: the app's CPU is
    the gunicorn tree's (HTTP parsing, the access log and the socket's system time included), and
    PostgreSQL's is its whole cluster's when it runs here."""
    import http.client
    import tempfile

    import psutil
    from django.core.management import call_command
    from django.db import connection
    from django.test import override_settings

    from editlab.benchmarks.load.harness import Gunicorn, server_environment

    with tempfile.TemporaryDirectory(prefix="event-batch-http-") as folder:
        static = Path(folder) / "static"
        with override_settings(STATIC_ROOT=str(static)):
            call_command("collectstatic", interactive=False, verbosity=0)
        env = server_environment({"STATIC_ROOT": str(static), "EDITLAB_ENV_FILE": "/dev/null"})
        server = Gunicorn(env=env, workers=workers, worker_class="sync", threads=1, folder=Path(folder))
        server.start()
        try:
            backend = _local_backend_pid()
            trees = {"app": [server.pid]}
            if backend is not None:
                trees["PostgreSQL"] = [psutil.Process(backend).ppid()]
            connection.close()  # this process's own backend stays out of the cluster's count

            def post(body: bytes) -> None:
                client = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                headers = {
                    "Content-Type": "application/json",
                    "Cookie": cookie,
                    "X-CSRFToken": token,
                    "Connection": "close",
                }
                client.request("POST", path, body=body, headers=headers)
                response = client.getresponse()
                content = response.read()
                client.close()
                if response.status != 200:
                    raise RuntimeError(f"POST {path}: {response.status} {content[:300]!r}")

            for body in bodies[:WARM_UP]:
                post(body)
            meter = CpuMeter(trees)
            started = time.monotonic()
            for body in bodies[WARM_UP:]:
                post(body)
            elapsed = time.monotonic() - started
            used = meter.stop()
        finally:
            server.stop()
    count = len(bodies) - WARM_UP
    return {
        "vendor": "postgresql" if "PostgreSQL" in trees else connection.vendor,
        "http": {"workers": workers, "app_ms": 1000 * used["app"] / count, "wall_ms": 1000 * elapsed / count},
        "cpu_ms": [],
        "steps": {},
        "backend_ms": 1000 * used["PostgreSQL"] / count if "PostgreSQL" in used else None,
    }


def _local_backend_pid() -> int | None:
    """The pid of the PostgreSQL backend serving this process's connection, when the server runs on
    this machine (None otherwise, and on SQLite): its CPU time is PostgreSQL's share of a batch."""
    import psutil
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        local = psutil.Process(pid).name().startswith("postgres")  # a pid of another machine may name a process here
    except psutil.Error:
        local = False
    return pid if local else None


def report(result: dict, *, batches: int, events: int) -> str:
    cpu = result["cpu_ms"]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    if "http" in result:
        http = result["http"]
        backend = result["backend_ms"]
        return (
            f"Measured with `python -m editlab.benchmarks.event_batch --http {http['workers']}` ({result['vendor']}, "
            f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {load} while it ran): "
            f"{batches} POSTs of {events}-event batches, one after another, each on a new connection, to gunicorn "
            f"with {http['workers']} sync worker(s), DEBUG off.\n\n"
            f"| per batch | app (gunicorn's processes) CPU | PostgreSQL CPU (the cluster) | wall |\n"
            f"|---|---:|---:|---:|\n"
            f"| ms (mean) | {http['app_ms']:.2f} | {'-' if backend is None else f'{backend:.2f}'} | "
            f"{http['wall_ms']:.2f} |"
        )
    lines = [
        f"Measured with `python -m editlab.benchmarks.event_batch` ({result['vendor']}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average {load} while it ran): "
        f"{batches} POSTs of {events}-event batches through the WSGI application in-process, DEBUG off.",
        "",
        "| app CPU per batch | median | mean | p10 | p90 |",
        "|---|---:|---:|---:|---:|",
        f"| ms | {statistics.median(cpu):.2f} | {statistics.fmean(cpu):.2f} | {cpu[len(cpu) // 10]:.2f} "
        f"| {cpu[9 * len(cpu) // 10]:.2f} |",
    ]
    if result["backend_ms"] is not None:
        lines += [
            "",
            f"PostgreSQL's CPU for the same batches (its backend process, 10 ms ticks): "
            f"{result['backend_ms']:.2f} ms per batch (mean).",
        ]
    if result["steps"]:
        lines += ["", "| step (inclusive, mean per batch) | ms |", "|---|---:|"]
        lines += [f"| {label} | {ms:.2f} |" for label, ms in result["steps"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="an empty PostgreSQL database (migrated here)")
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--breakdown", action="store_true", help="also time the main steps")
    parser.add_argument("--profile", type=Path, help="write cProfile's statistics of the measured requests here")
    parser.add_argument(
        "--http", type=int, default=0, metavar="WORKERS", help="POST over HTTP to gunicorn with WORKERS sync workers"
    )
    parser.add_argument("--output", type=Path, default=result_file("event_batch"))
    args = parser.parse_args(argv)
    _environment(args.database_url)
    result = measure(
        batches=args.batches, events=args.events, breakdown=args.breakdown, profile=args.profile, http_workers=args.http
    )
    text = report(result, batches=args.batches, events=args.events)
    print(text)
    vendor = result["vendor"] + ("-http" if args.http else "")
    write_section(
        args.output,
        f"<!-- benchmark:event_batch:{vendor}:start -->",
        f"<!-- benchmark:event_batch:{vendor}:end -->",
        text,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
