"""The LLM client's libraries stay quiet unless asked (EDITLAB_HTTP_LOG_LEVEL)."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("httpx", "httpcore", "openai")


def test_http_loggers_warn_only_by_default() -> None:
    for name in NAMES:
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING


@pytest.mark.parametrize("asked", ["DEBUG", "INFO"])
def test_http_loggers_follow_the_setting(asked: str) -> None:
    env = {**os.environ, "EDITLAB_HTTP_LOG_LEVEL": asked, "DEBUG": "1", "EDITLAB_ENV_FILE": "/dev/null"}
    code = (
        f"import django, logging; django.setup(); print([logging.getLogger(n).getEffectiveLevel() for n in {NAMES!r}])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "editlab.settings"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    level = getattr(logging, asked)
    assert out == str([level] * 3)
