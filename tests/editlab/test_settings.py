import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


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


def test_it_starts_in_production_with_a_secret_key():
    result = _check({"DEBUG": "0", "SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "editlab.example.org"})
    assert result.returncode == 0, result.stderr


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
    base = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    production = {"DEBUG": "0", "SECRET_KEY": "s3cr3t-" + "Kq8!zP2#" * 7, "ALLOWED_HOSTS": "editlab.example.org"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**base, **production},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_suite_runs_on_the_database_named_by_DATABASE_URL(db):
    from django.db import connection

    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected
