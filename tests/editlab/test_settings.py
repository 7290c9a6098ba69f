import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client, override_settings
from django.urls import include, path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "s3cr3t-" + "Kq8!zP2#" * 7, "ALLOWED_HOSTS": "editlab.example.org"}
_NO_ENV_FILE = "/dev/null"


def _example_names() -> set[str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return {line.split("=", 1)[0] for line in lines if "=" in line and not line.startswith(("#", " "))}


def _environment(env: dict[str, str]) -> dict[str, str]:
    """The caller's environment without editlab's variables (the suite's DEBUG, TASKS_BACKEND...),
    and no .env file unless given."""
    names = _example_names() | {"EDITLAB_ENV_FILE"}
    base = {k: v for k, v in os.environ.items() if k not in names}
    return {**base, "EDITLAB_ENV_FILE": _NO_ENV_FILE, **env}


def _check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=_environment(env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _settings_of(env: dict[str, str], *names: str) -> dict:
    """The named settings as the process started with `env` sees them."""
    code = (
        "import json, django\ndjango.setup()\nfrom django.conf import settings\n"
        f"print(json.dumps({{name: getattr(settings, name) for name in {list(names)!r}}}, default=str))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_environment({"DJANGO_SETTINGS_MODULE": "editlab.settings", **env}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_it_refuses_production_without_a_secret_key():
    result = _check({"DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DEBUG", "maybe"),
        ("EDITLAB_EVENTS_MAX_PER_BATCH", "lots"),
        ("EDITLAB_IMPORT_MAX_BYTES", "-5"),
        ("TASKS_BACKEND", "celery-ish"),
        ("DATABASE_URL", "nosuchdb://x"),
    ],
)
def test_it_names_the_malformed_variable(variable, value):
    env = {"DEBUG": "1", variable: value}
    result = _check(env)
    assert result.returncode != 0
    assert variable in result.stderr


def test_it_starts_in_production_with_a_secret_key_and_a_database():
    result = _check({**PRODUCTION, "DATABASE_URL": "postgres://editlab:pw@127.0.0.1:5432/editlab"})
    assert result.returncode == 0, result.stderr


def test_production_refuses_the_embedded_sqlite_default():
    result = _check({**PRODUCTION, "DATABASE_URL": ""})
    assert result.returncode != 0
    assert "DATABASE_URL is not set" in result.stderr and "EDITLAB_ALLOW_SQLITE" in result.stderr


def test_production_runs_on_sqlite_when_told_so():
    result = _check({**PRODUCTION, "EDITLAB_ALLOW_SQLITE": "1"})
    assert result.returncode == 0, result.stderr


def test_it_reads_a_dotenv_file_and_the_real_environment_wins(tmp_path):
    env_file = tmp_path / "editlab.env"
    env_file.write_text(
        "# production\nDEBUG=0\nSECRET_KEY=from-the-file-" + "x" * 40 + "\n"
        "DATABASE_URL=postgres://editlab:pw@127.0.0.1:5432/editlab\nTIME_ZONE=Europe/Paris\n"
    )
    seen = _settings_of({"EDITLAB_ENV_FILE": str(env_file), "TIME_ZONE": "Asia/Tokyo"}, "DEBUG", "TIME_ZONE")
    assert seen == {"DEBUG": False, "TIME_ZONE": "Asia/Tokyo"}


def test_the_env_file_named_must_exist(tmp_path):
    result = _check({"DEBUG": "1", "EDITLAB_ENV_FILE": str(tmp_path / "missing.env")})
    assert result.returncode != 0
    assert "EDITLAB_ENV_FILE" in result.stderr


def test_the_documented_env_example_is_a_working_production_configuration(tmp_path):
    """.env.example with its secret key filled passes the deploy check; the one warning left is
    HSTS, which is the operator's opt-in."""
    text = (ROOT / ".env.example").read_text()
    assert "\nSECRET_KEY=change-me" in text
    text = text.replace("\nSECRET_KEY=change-me", "\nSECRET_KEY=" + "Kq8!zP2#" * 8)
    env_file = tmp_path / "production.env"
    env_file.write_text(text)
    result = _check({"EDITLAB_ENV_FILE": str(env_file)}, "--deploy", "--fail-level", "ERROR")
    assert result.returncode == 0, result.stdout + result.stderr
    warnings = [line.split(":")[0] for line in result.stderr.splitlines() if line.startswith("?: (")]
    assert warnings == ["?"] and "security.W004" in result.stderr, result.stderr
    seen = _settings_of({"EDITLAB_ENV_FILE": str(env_file)}, "DEBUG", "DATABASES", "TASKS_BACKEND", "STORAGES")
    assert seen["DEBUG"] is False
    assert seen["DATABASES"]["default"]["ENGINE"] == "editlab.postgresql"
    assert seen["DATABASES"]["default"]["OPTIONS"] == {"server_side_binding": True, "prepare_threshold": 2}
    assert seen["TASKS_BACKEND"] == "database"
    assert seen["STORAGES"]["staticfiles"]["BACKEND"] == "editlab.storage.StaticFilesStorage"


def test_hsts_is_opt_in():
    default = _settings_of(
        {**PRODUCTION, "EDITLAB_ALLOW_SQLITE": "1"},
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
    )
    assert default == {"SECURE_HSTS_SECONDS": 0, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False, "SECURE_HSTS_PRELOAD": False}
    chosen = _settings_of(
        {**PRODUCTION, "EDITLAB_ALLOW_SQLITE": "1", "SECURE_HSTS_SECONDS": "86400"},
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    )
    assert chosen == {"SECURE_HSTS_SECONDS": 86400, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False}


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_HSTS_SECONDS=0)
def test_no_hsts_header_by_default_and_healthz_answers_plain_http(client, db):
    assert "Strict-Transport-Security" not in client.get("/login/", secure=True)
    assert client.get("/login/").status_code == 301  # plain HTTP goes to https://
    assert client.get("/healthz").status_code == 200  # except the health probe on loopback


@pytest.mark.parametrize(
    ("variable", "value"),
    [("TRUSTED_PROXIES", "10.0.0.0/8,not-an-address"), ("EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR", "0")],
)
def test_it_names_a_malformed_proxy_or_limit_variable(variable, value):
    result = _check({"DEBUG": "1", variable: value})
    assert result.returncode != 0
    assert variable in result.stderr


def test_behind_proxy_defaults_trust_a_proxy_on_this_machine():
    seen = _settings_of({"DEBUG": "1", "BEHIND_PROXY": "1"}, "TRUSTED_PROXIES", "SECURE_PROXY_SSL_HEADER")
    assert seen == {
        "TRUSTED_PROXIES": ["127.0.0.1", "::1"],
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_anonymous_users_are_sent_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_login_page_renders(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"Log in" in response.content


def test_the_roles_exist(db):
    from django.contrib.auth.models import Group

    assert set(Group.objects.values_list("name", flat=True)) >= {"admin", "annotator", "researcher"}


def test_the_deploy_check_is_clean_with_the_documented_production_settings():
    production = {
        **PRODUCTION,
        "DATABASE_URL": "postgres://editlab:pw@127.0.0.1:5432/editlab",
        "SECURE_HSTS_SECONDS": "31536000",  # the documented opt-in, once HTTPS is there to stay
    }
    result = _check(production, "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_suite_runs_on_the_database_named_by_DATABASE_URL(db):
    from django.db import connection

    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected


# --------------------------------------------------------------------------- health, logs, request ids


def test_healthz_answers_anyone_with_nothing_sensitive(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    assert response.json() == {"status": "ok", "database": "ok", "static": "ok", "worker": "in-process"}


@pytest.fixture
def db_workers(settings):
    """Metric jobs go to db_worker processes (TASKS_BACKEND=database); the workers' rows are the test's."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.EDITLAB_WORKER_STALE_S = 60


def _silent_worker(seconds: float, engine_id: str = "gone"):
    """A db_worker that never stopped and last beat `seconds` ago on the database's clock (killed, or hung)."""
    from datetime import timedelta

    from metrics.models import TaskWorker
    from metrics.selectors_jobs import database_now

    worker = TaskWorker.objects.create(engine_id=engine_id, host="worker-2.internal", pid=4242)
    TaskWorker.objects.filter(pk=worker.pk).update(heartbeat=database_now() - timedelta(seconds=seconds))
    return worker


def _healthz_worker(client) -> str:
    response = client.get("/healthz")
    assert response.status_code == 200  # a missing worker stops jobs, not the app: the check still passes
    body = response.json()
    assert body == {"status": "ok", "database": "ok", "static": "ok", "worker": body["worker"]}
    return body["worker"]


def test_healthz_says_none_when_no_db_worker_ever_ran(client, db, db_workers):
    assert _healthz_worker(client) == "none"


def test_healthz_says_alive_when_a_db_worker_has_just_beaten(client, db, db_workers):
    from metrics.workers import worker_register

    worker_register(engine_id="fresh")
    assert _healthz_worker(client) == "alive"


def test_healthz_says_stale_when_the_only_worker_is_silent_past_the_stale_time(client, db, db_workers):
    _silent_worker(seconds=61)
    assert _healthz_worker(client) == "stale"


def test_healthz_counts_a_worker_as_alive_until_the_stale_time(client, db, db_workers):
    _silent_worker(seconds=50)
    assert _healthz_worker(client) == "alive"


def test_healthz_says_alive_when_one_worker_beats_beside_a_dead_one(client, db, db_workers):
    from metrics.workers import worker_register

    _silent_worker(seconds=3600)
    worker_register(engine_id="fresh")
    assert _healthz_worker(client) == "alive"


def test_healthz_says_none_when_every_worker_stopped_cleanly(client, db, db_workers):
    from metrics.workers import worker_register, worker_stop

    worker_stop(worker_register(engine_id="stopped"))
    assert _healthz_worker(client) == "none"


def test_healthz_names_no_worker_host_pid_or_id(client, db, db_workers):
    _silent_worker(seconds=120, engine_id="bench-secret-id")
    content = client.get("/healthz").content
    assert b"worker-2.internal" not in content and b"4242" not in content and b"bench-secret-id" not in content


def test_healthz_says_in_process_when_the_app_runs_the_jobs_whatever_the_worker_rows(client, db):
    _silent_worker(seconds=120)
    assert _healthz_worker(client) == "in-process"


def test_healthz_worker_is_unknown_when_the_database_is_unreachable(client, db, db_workers):
    from django.db import connection

    def unreachable(*args, **kwargs):
        raise OperationalError("connection to server at 10.1.2.3 failed")

    with mock.patch.object(connection, "cursor", unreachable):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "failing", "database": "failing", "static": "ok", "worker": "unknown"}


def test_healthz_fails_with_503_when_the_database_is_unreachable(client, db):
    from django.db import connection

    def unreachable(*args, **kwargs):
        raise OperationalError("connection to server at 10.1.2.3 failed: password authentication failed")

    with mock.patch.object(connection, "cursor", unreachable):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "failing"
    assert b"10.1.2.3" not in response.content and b"password" not in response.content


def test_healthz_fails_when_collectstatic_has_not_run(client, db, tmp_path):
    storages = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "editlab.storage.StaticFilesStorage"},
    }
    with override_settings(STORAGES=storages, STATIC_ROOT=tmp_path / "empty"):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["static"] == "failing"


def test_healthz_refuses_other_methods(client, db):
    assert client.post("/healthz").status_code == 405


def _boom(request):
    raise RuntimeError("the traceback must reach the log")


urlpatterns = [path("boom/", _boom), path("", include("editlab.urls"))]
handler500 = "editlab.views.server_error"


@pytest.mark.urls("tests.editlab.test_settings")
def test_a_5xx_logs_its_traceback_with_the_request_id_the_page_and_header_name(db):
    handler = next(h for h in logging.getLogger().handlers if h.get_name() == "stderr")
    captured = io.StringIO()
    previous = handler.setStream(captured)
    try:
        response = Client(raise_request_exception=False).get("/boom/")
    finally:
        handler.setStream(previous)
    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    assert len(request_id) == 16
    assert request_id in response.content.decode()
    log = captured.getvalue()
    assert f"ERROR [{request_id}] django.request: Internal Server Error: /boom/" in log
    assert "RuntimeError: the traceback must reach the log" in log


def test_a_4xx_answer_is_logged_with_its_request_id(client, db):
    handler = next(h for h in logging.getLogger().handlers if h.get_name() == "stderr")
    captured = io.StringIO()
    previous = handler.setStream(captured)
    try:
        response = client.post("/healthz")
    finally:
        handler.setStream(previous)
    assert response.status_code == 405
    assert f"WARNING [{response['X-Request-ID']}] django.request: Method Not Allowed" in captured.getvalue()


def test_every_response_carries_a_fresh_request_id(client, db):
    first, second = client.get("/login/")["X-Request-ID"], client.get("/login/")["X-Request-ID"]
    assert first != second


@override_settings(TRUSTED_PROXIES=["127.0.0.1"])
def test_a_trusted_proxy_may_name_the_request_and_others_may_not(db):
    proxied = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REQUEST_ID="proxy-req-0001")
    assert proxied.get("/login/")["X-Request-ID"] == "proxy-req-0001"
    outsider = Client(REMOTE_ADDR="198.51.100.1", HTTP_X_REQUEST_ID="proxy-req-0001")
    assert outsider.get("/login/")["X-Request-ID"] != "proxy-req-0001"
    forged = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REQUEST_ID="bad id\nERROR forged line")
    assert "\n" not in forged.get("/login/")["X-Request-ID"]


# --------------------------------------------------------------------------- the API's schema and docs


def test_anonymous_visitors_get_neither_the_api_schema_nor_its_docs(client, db):
    assert client.get("/api/schema/").status_code == 403
    response = client.get("/api/docs/")
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=/api/docs/")


def test_logged_in_users_read_the_api_schema_and_docs(annotator_client):
    assert annotator_client.get("/api/schema/?format=json").json()["info"]["title"] == "editlab API"
    assert annotator_client.get("/api/docs/").status_code == 200


def test_prepared_statements_can_be_turned_off_for_a_transaction_pooler():
    environment = {**PRODUCTION, "DATABASE_URL": "postgres://editlab@db.example:5432/editlab"}
    on = _settings_of(environment, "DATABASES")["DATABASES"]["default"]
    off = _settings_of({**environment, "DATABASE_PREPARED_STATEMENTS": "0"}, "DATABASES")["DATABASES"]["default"]
    assert on["ENGINE"] == off["ENGINE"] == "editlab.postgresql"
    assert on["OPTIONS"] == {"server_side_binding": True, "prepare_threshold": 2}
    assert "server_side_binding" not in off.get("OPTIONS", {})
    result = _check({**environment, "DATABASE_PREPARED_STATEMENTS": "sometimes"})
    assert result.returncode != 0
    assert "DATABASE_PREPARED_STATEMENTS='sometimes' is not a boolean" in result.stderr


def test_server_side_cursors_can_be_turned_off_for_a_transaction_pooler():
    environment = {**PRODUCTION, "DATABASE_URL": "postgres://editlab@db.example:5432/editlab"}
    on = _settings_of(environment, "DATABASES")["DATABASES"]["default"]
    off = _settings_of({**environment, "DATABASE_SERVER_SIDE_CURSORS": "0"}, "DATABASES")["DATABASES"]["default"]
    assert on.get("DISABLE_SERVER_SIDE_CURSORS", False) is False
    assert off["DISABLE_SERVER_SIDE_CURSORS"] is True
    result = _check({**environment, "DATABASE_SERVER_SIDE_CURSORS": "often"})
    assert result.returncode != 0
    assert "DATABASE_SERVER_SIDE_CURSORS='often' is not a boolean" in result.stderr
