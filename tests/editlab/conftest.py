"""Fixtures of the fault tests that run editlab in other processes (tests/editlab/app_process.py)."""

import os
from pathlib import Path

import pytest

from tests.editlab.app_process import make_template


@pytest.fixture(scope="session")
def process_db_template(tmp_path_factory) -> Path:
    """One migrated database file per test run; each test works on its own copy."""
    return make_template(tmp_path_factory.mktemp("process-db"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The deploy test brings its own PostgreSQL: it runs once, in the suite's PostgreSQL run (or
    when `-m deploy` asks for it), not again in the SQLite run."""
    if os.environ.get("DATABASE_URL", "").startswith("postgres") or "deploy" in (config.getoption("markexpr") or ""):
        return
    deselected = [item for item in items if item.get_closest_marker("deploy")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("deploy")]
