"""The README's Deploy section, followed on this machine: PostgreSQL with password authentication,
the production .env (DEBUG off), `migrate` (nothing else), `collectstatic`, gunicorn alone (no proxy)
serving the app and its static files over plain HTTP on loopback, one `db_worker`; Chromium logs in
as an annotator and submits an edit, a researcher's metric job completes on the worker, /healthz
answers; then gunicorn and the worker are stopped with SIGTERM mid-job, started again, and the job
completes.

It brings its own PostgreSQL cluster (editlab/scripts/postgres with a password), so it runs once:
in the suite's PostgreSQL run (tests/editlab/conftest.py deselects it in the SQLite run unless it
is asked for with `-m deploy`).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Page

from tests.browser_support import log_in, submit_with_keys, wait_ready
from tests.editlab.app_process import free_port
from tests.factories import PASSWORD

pytestmark = [pytest.mark.deploy, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SUPERUSER_PASSWORD = "pg-super-7Qx2"
APP_PASSWORD = "app-db-pw-4Rt9"
STUDY_SIZE = 1200


def _example_names() -> set[str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return {line.split("=", 1)[0] for line in lines if "=" in line and not line.startswith(("#", " "))}


def _env_file(text: str, values: dict[str, str]) -> str:
    """.env.example with the named variables set as the Deploy section says."""
    lines, seen = [], set()
    for line in text.splitlines():
        name = line.split("=", 1)[0] if "=" in line and not line.startswith(("#", " ")) else None
        if name in values:
            line = f"{name}={values[name]}"
            seen.add(name)
        lines.append(line)
    lines += [f"{name}={value}" for name, value in values.items() if name not in seen]
    return "\n".join(lines) + "\n"


def _wait_for(what: str, check: Callable[[], object], timeout: float, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s")


class Deployment:
    def __init__(self, folder: Path, database_url: str, port: int) -> None:
        self.folder, self.database_url, self.port = folder, database_url, port
        self.url = f"http://127.0.0.1:{port}"
        self.web: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        env = {k: v for k, v in os.environ.items() if k not in _example_names() | {"DJANGO_SETTINGS_MODULE"}}
        self.env = {
            **env,
            "EDITLAB_ENV_FILE": str(folder / "editlab.env"),
            "DJANGO_SETTINGS_MODULE": "editlab.settings",
        }

    def admin(self, *args: str, timeout: float = 300) -> str:
        """`django-admin ARGS` as the README runs it (python -m django: the same program)."""
        result = subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, f"django-admin {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def _start(self, argv: list[str], log: str) -> subprocess.Popen:
        with (self.folder / log).open("a") as out:
            return subprocess.Popen(
                argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def start_web(self) -> None:
        # The systemd unit's command line, logging to files instead of journald.
        self.web = self._start(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "editlab.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--error-logfile",
                str(self.folder / "gunicorn-error.log"),
                "--capture-output",
                "--access-logfile",
                str(self.folder / "gunicorn-access.log"),
                "--access-logformat",
                '%(h)s "%(r)s" %(s)s %(b)s id=%({x-request-id}o)s',
            ],
            "gunicorn-stdout.log",
        )
        try:
            _wait_for("gunicorn answers /healthz", lambda: self._healthz_status() == 200, timeout=180)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.log_tail('gunicorn-error.log')}") from None

    def start_worker(self) -> None:
        self.worker = self._start([sys.executable, "-m", "django", "db_worker"], "worker.log")

    def log_tail(self, name: str) -> str:
        path = self.folder / name
        return f"--- {name}:\n" + (path.read_text()[-3000:] if path.exists() else "(none)")

    def _healthz_status(self) -> int | None:
        assert self.web is not None
        if self.web.poll() is not None:
            raise AssertionError("gunicorn exited:\n" + self.log_tail("gunicorn-error.log"))
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def stop(self, process: subprocess.Popen | None, timeout: float = 90) -> int | None:
        """SIGTERM, as systemd's KillSignal, and wait for the process to exit."""
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        os.killpg(process.pid, signal.SIGTERM)
        return process.wait(timeout=timeout)

    def kill_all(self) -> None:
        for process in (self.web, self.worker):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)

    def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(f"{self.url}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with psycopg.connect(self.database_url) as connection:
            return connection.execute(sql, params).fetchall()


def _postgres(action: str, *args: str) -> str:
    result = subprocess.run(
        [str(ROOT / "editlab/scripts/postgres"), action, *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _psql(superuser_url: str, sql: str) -> None:
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
    result = subprocess.run(
        [str(bindir / "psql"), superuser_url.rsplit("/", 1)[0] + "/postgres", "-v", "ON_ERROR_STOP=1", "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    cluster = Path(tempfile.mkdtemp(prefix="editlab-deploy-pg."))
    folder = Path(tempfile.mkdtemp(prefix="editlab-deploy."))
    pg_port, port = free_port(), free_port()
    superuser_url = _postgres("start", str(cluster), str(pg_port), SUPERUSER_PASSWORD)
    deployment = None
    try:
        # Deploy, step 1: a role and a database with a password (the statements the README gives).
        _psql(superuser_url, f"CREATE ROLE editlab_app LOGIN PASSWORD '{APP_PASSWORD}'")
        _psql(superuser_url, "CREATE DATABASE editlab_app OWNER editlab_app")
        database_url = f"postgres://editlab_app:{APP_PASSWORD}@127.0.0.1:{pg_port}/editlab_app"
        # Step 4: .env.example filled in for gunicorn alone on plain HTTP (loopback, no proxy).
        (folder / "editlab.env").write_text(
            _env_file(
                (ROOT / ".env.example").read_text(),
                {
                    "SECRET_KEY": "deploy-test-" + "Kq8!zP2#" * 7,
                    "DATABASE_URL": database_url,
                    "ALLOWED_HOSTS": "127.0.0.1",
                    "CSRF_TRUSTED_ORIGINS": f"http://127.0.0.1:{port}",
                    "BEHIND_PROXY": "0",
                    "TRUSTED_PROXIES": "",
                    "SESSION_COOKIE_SECURE": "0",
                    "CSRF_COOKIE_SECURE": "0",
                    "SECURE_SSL_REDIRECT": "0",
                    "STATIC_ROOT": str(folder / "static"),
                    "EDITLAB_CACHE_DIR": str(folder / "cache"),
                    "EDITLAB_METRIC_PROCESSES": "1",
                    "EDITLAB_METRIC_CHUNK_SIZE": "100",
                },
            )
        )
        deployment = Deployment(folder, database_url, port)
        # Steps 5-7: migrate (nothing else), collectstatic, accounts, then the two services. The
        # stages' seconds are printed (pytest -s) for the README's figures.
        stages = [
            ("migrate", lambda: deployment.admin("migrate", "--noinput")),
            ("collectstatic", lambda: deployment.admin("collectstatic", "--noinput")),
            ("accounts", lambda: _accounts(deployment)),
            ("imports", lambda: _seed(deployment)),
            ("gunicorn", deployment.start_web),
            ("db_worker", deployment.start_worker),
        ]
        for name, stage in stages:
            started = time.monotonic()
            stage()
            print(f"deploy stage {name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield deployment
    finally:
        if deployment is not None:
            deployment.kill_all()
        _postgres("stop", str(cluster))
        shutil.rmtree(folder, ignore_errors=True)


def _accounts(deployment: Deployment) -> None:
    deployment.admin("add_user", "anna", "--role", "annotator", "--password", PASSWORD)
    deployment.admin("add_user", "rita", "--role", "researcher", "--password", PASSWORD)


def _seed(deployment: Deployment) -> None:
    """An admin's imports: one live item for anna, and a finished study for the metric jobs."""
    live = deployment.folder / "live.csv"
    live.write_text("external_id,model_output\nlive-1,The cat sat on the mat.\n")
    deployment.admin("import_items", str(live), "--project", "Live study", "--format", "table", "--create-project")
    deployment.admin("make_batches", "--project", "Live study", "--size", "10")
    deployment.admin("assign", "--project", "Live study", "--annotators", "anna")
    study = deployment.folder / "study.csv"
    with study.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["external_id", "model_output", "edited", "annotator"])
        for n in range(STUDY_SIZE):
            words = [f"w{(n * 7 + k * 13) % 97}" for k in range(24)]
            edited = list(words)
            edited[n % 24], edited[(n + 5) % 24] = edited[(n + 5) % 24], "fixed"
            writer.writerow([f"s-{n}", " ".join(words), " ".join(edited), "study-ann"])
    deployment.admin("import_items", str(study), "--project", "Study", "--format", "table", "--create-project")


# --------------------------------------------------------------------------- the checks


def test_the_database_asks_for_a_password(deployment):
    wrong = re.sub(r":[^:@/]+@", ":not-the-password@", deployment.database_url)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong).close()
    assert deployment.query("SELECT count(*) FROM logins_logincounter") == [(0,)]  # made by migrate


def _healthz(deployment: Deployment) -> dict:
    status, _, body = deployment.get("/healthz")
    assert status == 200
    return json.loads(body)


def test_healthz_answers_anonymous_probes(deployment):
    # The worker was started last: its first heartbeat (at registration) may still be on its way.
    _wait_for("/healthz sees the worker", lambda: _healthz(deployment)["worker"] == "alive", timeout=60)
    status, headers, body = deployment.get("/healthz")
    assert status == 200
    assert json.loads(body) == {"status": "ok", "database": "ok", "static": "ok", "worker": "alive"}
    assert re.fullmatch(r"[0-9a-f]{16}", headers["x-request-id"])


def test_gunicorn_alone_serves_the_static_files_compressed_under_hashed_names(deployment):
    status, _, page = deployment.get("/login/")
    assert status == 200
    css = re.search(r'href="(/static/editlab/base\.[0-9a-f]{12}\.css)"', page.decode()).group(1)
    status, headers, body = deployment.get(css, **{"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["content-encoding"] == "gzip"
    assert "immutable" in headers["cache-control"] and "max-age=315360000" in headers["cache-control"]
    assert b"body" in gzip.decompress(body)
    # The editor's modules import each other under their hashed names too (no stale mix after an upgrade).
    manifest = json.loads((deployment.folder / "static" / "staticfiles.json").read_text())["paths"]
    status, _, main = deployment.get("/static/" + manifest["annotations/editor/main.js"])
    assert status == 200
    assert manifest["annotations/editor/editor.js"].rsplit("/", 1)[1].encode() in main
    assert deployment.get("/static/no-such-file.js")[0] == 404


def _logged_in(browser, deployment: Deployment, username: str) -> Page:
    context = browser.new_context(base_url=deployment.url)
    context.set_default_timeout(20000)
    page = context.new_page()
    page.goto("/login/")
    log_in(page, username)
    page.wait_for_url(re.compile(r"^http://[^/]+/(annotate/)?$"))
    return page


def test_an_annotator_edits_in_chromium_and_the_counts_are_exact(deployment, browser):
    page = _logged_in(browser, deployment, "anna")
    [(assignment_id,)] = deployment.query(
        "SELECT a.id FROM annotations_assignment a JOIN auth_user u ON u.id = a.annotator_id WHERE u.username = 'anna'"
    )
    page.goto(f"/edit/{assignment_id}/")
    wait_ready(page)  # logger.js and its modules loaded from gunicorn: the editor left "Starting…"
    page.keyboard.press("End")
    page.keyboard.type("!!")
    submit_with_keys(page)
    [(text, symbols, letters, keystrokes, erase, navigation, replay_ok, flags)] = deployment.query(
        "SELECT p.text, p.symbols, p.letters, p.keystrokes, p.erase, p.navigation, p.replay_ok, p.flags "
        "FROM annotations_postedit p WHERE p.assignment_id = %s",
        (assignment_id,),
    )
    assert text == "The cat sat on the mat.!!"
    assert (symbols, letters, keystrokes, erase, navigation) == (2, 0, 2, 0, 1)
    assert replay_ok is True and flags == []
    page.context.close()


def _job(deployment: Deployment, job_id: int) -> tuple[str, int, int, str]:
    [row] = deployment.query("SELECT status, done, total, error FROM metrics_metricjob WHERE id = %s", (job_id,))
    return row


def _start_job(browser, deployment: Deployment, metrics: list[str]) -> tuple[Page, int]:
    """The researcher starts a job from the project's metrics page."""
    [(project_id,)] = deployment.query("SELECT id FROM annotations_project WHERE name = 'Study'")
    page = _logged_in(browser, deployment, "rita")
    page.goto(f"/research/{project_id}/metrics/")
    page.locator("input[name=metrics]").evaluate_all("boxes => boxes.forEach(box => { box.checked = false; })")
    for name in metrics:
        page.check(f"input[name=metrics][value={name}]")
    page.uncheck("input[name=variants][value=with_references]")
    with page.expect_navigation(url=re.compile(r".*/metrics/jobs/\d+/$")):
        page.click("form button[type=submit].primary")
    return page, int(page.url.rstrip("/").rsplit("/", 1)[1])


def test_a_researchers_metric_job_completes_on_the_worker(deployment, browser):
    page, job_id = _start_job(browser, deployment, ["levenshtein"])
    status, done, total, error = _wait_for(
        "the job is done", lambda: (row := _job(deployment, job_id))[0] in ("done", "failed") and row, timeout=60
    )
    assert (status, error) == ("done", "")
    assert done == total == STUDY_SIZE
    values = deployment.query(
        "SELECT count(*) FROM metrics_metricvalue WHERE metric = 'levenshtein' AND variant = 'plain'"
    )
    assert values == [(STUDY_SIZE,)]
    page.context.close()


def _chunks(deployment: Deployment, job_id: int) -> dict[int, tuple[str, int, int, str | None]]:
    """The job's chunks: seq -> (status, attempts, values, finished)."""
    rows = deployment.query(
        "SELECT seq, status, attempts, total, finished::text FROM metrics_metricchunk WHERE job_id = %s", (job_id,)
    )
    return {seq: (status, attempts, total, finished) for seq, status, attempts, total, finished in rows}


def _ter_values(deployment: Deployment) -> list[tuple[int, int, str]]:
    return deployment.query(
        "SELECT id, post_edit_id, computed_at::text FROM metrics_metricvalue "
        "WHERE metric = 'ter' AND variant = 'plain' ORDER BY post_edit_id"
    )


def test_restarting_gunicorn_and_the_worker_with_sigterm_mid_job_loses_nothing(deployment, browser):
    page, job_id = _start_job(browser, deployment, ["ter"])
    # Mid-job: a chunk of the job is stored and others are still to come (12 chunks of 100 post-edits).
    _wait_for(
        "the worker has stored a chunk of the job",
        lambda: any(status == "done" for status, *_ in _chunks(deployment, job_id).values()),
        timeout=60,
        interval=0.02,
    )
    # systemd's stop: SIGTERM to both services, each waited for (the worker within its stop timeout).
    assert deployment.stop(deployment.worker) == 0
    # The worker finished the chunk it held, then exited: the job stopped part-way, resumable, not failed.
    at_stop = _chunks(deployment, job_id)
    done_at_stop = {seq for seq, (status, *_) in at_stop.items() if status == "done"}
    assert len(at_stop) == STUDY_SIZE // 100
    assert 0 < len(done_at_stop) < len(at_stop)
    assert {status for seq, (status, *_) in at_stop.items() if seq not in done_at_stop} == {"queued"}
    status, done, total, error = _job(deployment, job_id)
    assert (status, error, total) == ("running", "", STUDY_SIZE)
    stored_at_stop = _ter_values(deployment)
    assert done == len(stored_at_stop) == sum(at_stop[seq][2] for seq in done_at_stop) < STUDY_SIZE
    assert _healthz(deployment)["worker"] == "none"  # the worker stopped cleanly: no live one, no stale one
    assert deployment.stop(deployment.web) == 0
    deployment.start_web()
    deployment.start_worker()
    status, done, total, error = _wait_for(
        "the job completes after the restart",
        lambda: (row := _job(deployment, job_id))[0] in ("done", "failed") and row,
        timeout=120,
    )
    assert (status, error) == ("done", "")
    assert done == total == STUDY_SIZE
    # Every value stored exactly once: one row per post-edit, and the rows stored before the stop untouched
    # (same id, same time: the restarted worker computed only the chunks still queued).
    stored = _ter_values(deployment)
    assert len(stored) == len({post_edit for _, post_edit, _ in stored}) == STUDY_SIZE
    assert set(stored_at_stop) <= set(stored)
    after = _chunks(deployment, job_id)
    assert {status for status, *_ in after.values()} == {"done"}
    assert {seq: after[seq] for seq in done_at_stop} == {seq: at_stop[seq] for seq in done_at_stop}
    assert {attempts for seq, (_, attempts, *_) in after.items() if seq not in done_at_stop} == {1}
    assert _healthz(deployment)["worker"] == "alive"
    # The researcher's session outlived the restart (sessions live in the database).
    page.reload()
    assert f"/metrics/jobs/{job_id}/" in page.url
    assert "done" in page.locator("body").inner_text().lower()
    page.context.close()


def test_errors_reach_gunicorns_error_log_with_their_request_id(deployment):
    # A request Django refuses (a host not in ALLOWED_HOSTS) is logged by django.security.
    request = urllib.request.Request(f"{deployment.url}/login/", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    request_id = refused.value.headers["X-Request-ID"]
    log = _wait_for(
        "the log line",
        lambda: request_id in (text := (deployment.folder / "gunicorn-error.log").read_text()) and text,
        timeout=10,
    )
    assert re.search(
        rf"(ERROR|WARNING) \[{request_id}\] django\.security\.DisallowedHost: Invalid HTTP_HOST header", log
    )
    # The access log line is written once the response has gone out: wait for it too.
    _wait_for(
        "the access log line", lambda: f"id={request_id}" in (deployment.folder / "gunicorn-access.log").read_text(), 10
    )
