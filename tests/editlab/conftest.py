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
    """Tests of PostgreSQL's own behaviour, and the deploy test (which brings its own PostgreSQL), run
    in the suite's PostgreSQL run (or when `-m deploy` asks for the deploy test), not in the SQLite run."""
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        return
    wanted = config.getoption("markexpr") or ""
    markers = ("postgresql",) if "deploy" in wanted else ("postgresql", "deploy")
    deselected = [item for item in items if any(item.get_closest_marker(name) for name in markers)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]
