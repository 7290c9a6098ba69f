"""editlab/scripts/start: a checkout it set up answers the README's `python manage.py ...` as printed.

The script runs in a copy of its folder layout whose `install` does nothing and whose `.venv/bin/python`
records the commands start gives it (and runs the real interpreter for `-c`), so that the test needs no
network, installs nothing and serves nothing; the .env it writes is then read by the real settings.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from dotenv import dotenv_values

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    scripts = tmp_path / "editlab" / "scripts"
    scripts.mkdir(parents=True)
    shutil.copy(ROOT / "editlab/scripts/start", scripts / "start")
    _executable(scripts / "install", "#!/bin/sh\nexit 0\n")
    _executable(
        tmp_path / ".venv/bin/python",
        f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\necho "$@" >> "$(dirname "$0")/calls"\n',
    )
    return tmp_path


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _start(checkout: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "EDITLAB_ENV_FILE")}
    return subprocess.run(
        [str(checkout / "editlab/scripts/start"), "127.0.0.1:8765"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_start_writes_a_development_env_once_and_serves_on_the_given_port(checkout):
    first = _start(checkout)
    env_file = checkout / ".env"
    values = dotenv_values(env_file)
    assert values["DEBUG"] == "1"
    assert len(values["SECRET_KEY"]) >= 50
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "wrote a development .env" in first.stdout
    calls = (checkout / ".venv/bin/calls").read_text().splitlines()
    assert calls == ["manage.py migrate --noinput", "manage.py demo", "manage.py runserver 127.0.0.1:8765"]

    env_file.write_text("DEBUG=1\nSECRET_KEY=kept-as-the-developer-wrote-it\n")
    second = _start(checkout)
    assert dotenv_values(env_file)["SECRET_KEY"] == "kept-as-the-developer-wrote-it"
    assert "wrote a development .env" not in second.stdout


def test_the_written_env_lets_manage_py_run_without_debug_in_the_environment(checkout):
    _start(checkout)
    env = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    env["EDITLAB_ENV_FILE"] = str(checkout / ".env")  # the file settings read as <project>/.env
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", "from django.conf import settings; print(settings.DEBUG)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"
