"""Fixtures shared by the metrics tests."""

from collections.abc import Callable
from typing import Any

import pytest

from metrics.text import METRICS, Metric


@pytest.fixture
def register_test_metric(monkeypatch) -> Callable[..., Metric]:
    """Registers a made-up effort metric for one test (METRICS is restored after it): its name, function
    and description, and any other Metric field (batch=...) that the test is about."""

    def register(name: str, func: Callable[..., float], *, description: str, **fields: Any) -> Metric:
        metric = Metric(
            name=name,
            func=func,
            family="edit distance",
            direction="effort",
            needs=frozenset(),
            library="test",
            version="1",
            description=description,
            **fields,
        )
        monkeypatch.setitem(METRICS, name, metric)
        return metric

    return register
