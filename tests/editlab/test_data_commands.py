"""The data commands run the system checks but the URL configuration's, so a process that imports,
scores, analyses or exports a study does not load every view's libraries before its first row."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks
from django.core.management import call_command, load_command_class

from editlab.commands import DataCommand

ROOT = Path(__file__).resolve().parents[2]
DATA_COMMANDS = {"import_items": "annotations", "export": "metrics", "analyze": "metrics", "compute_metrics": "metrics"}
VIEW_LIBRARIES = ("sklearn", "scipy", "matplotlib", "nltk")


@pytest.mark.parametrize("name", sorted(DATA_COMMANDS))
def test_every_data_command_is_a_data_command(name):
    assert isinstance(load_command_class(DATA_COMMANDS[name], name), DataCommand)


@checks.register(checks.Tags.models)
def _failing_model_check(app_configs, **kwargs):
    return [checks.Error("a model check ran", id="tests.E001")] if _failing_model_check.armed else []


_failing_model_check.armed = False


def test_a_data_command_runs_every_check_but_the_urls(monkeypatch, tmp_path):
    seen: list[set[str]] = []
    original = checks.run_checks

    def recording(*args, tags=None, **kwargs):
        seen.append(set(tags or ()))
        return original(*args, tags=tags, **kwargs)

    monkeypatch.setattr(checks, "run_checks", recording)
    monkeypatch.setattr("django.core.management.base.checks.run_checks", recording)
    monkeypatch.setattr(_failing_model_check, "armed", True)
    with pytest.raises(Exception, match="a model check ran"):
        call_command(
            "import_items", str(tmp_path / "none.tsv"), "--project", "p", "--format", "table", skip_checks=False
        )
    assert seen and "urls" not in seen[0]
    assert {"models", "security", "templates", "staticfiles", "compatibility"} <= seen[0]


def test_a_data_command_process_starts_without_the_views_libraries(tmp_path):
    code = (
        "import json, sys, django\ndjango.setup()\n"
        "from django.core.management import call_command\n"
        "try:\n"
        f"    call_command('export', '--project', 'none', '--format', 'csv', '--output', {str(tmp_path / 'out.csv')!r}, skip_checks=False)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, file=sys.stderr)\n"
        f"print(json.dumps([name for name in {list(VIEW_LIBRARIES)!r} if name in sys.modules]))\n"
        "from django.core import checks\nchecks.run_checks(tags=['urls'])\n"
        f"print(json.dumps([name for name in {list(VIEW_LIBRARIES)!r} if name in sys.modules]))\n"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "editlab.settings",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        "EDITLAB_ENV_FILE": "/dev/null",
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    before, after = (json.loads(line) for line in result.stdout.strip().splitlines()[-2:])
    assert before == []  # the export ran its checks and started: no view's library loaded
    assert after == list(VIEW_LIBRARIES)  # the URL check (manage.py check, the server) loads them
