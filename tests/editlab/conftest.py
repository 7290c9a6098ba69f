"""Fixtures of the fault tests that run editlab in other processes (tests/editlab/app_process.py)."""

from pathlib import Path

import pytest

from tests.editlab.app_process import make_template


@pytest.fixture(scope="session")
def process_db_template(tmp_path_factory) -> Path:
    """One migrated database file per test run; each test works on its own copy."""
    return make_template(tmp_path_factory.mktemp("process-db"))
