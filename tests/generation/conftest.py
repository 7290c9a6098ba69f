import pytest

from generation import client, jobs
from generation.fakeserver import FakeServer
from tests.factories import ItemFactory, ProjectFactory

FAST_RETRY = client.RetryPolicy(attempts=3, backoff_s=0.01, backoff_max_s=0.05, retry_after_max_s=0.5)


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch):
    monkeypatch.setattr(jobs, "RETRY", FAST_RETRY)


@pytest.fixture
def project(db):
    project = ProjectFactory(name="gen")
    for n in range(5):
        ItemFactory(
            project=project,
            external_id=f"q{n}",
            source=f"What is the rule number {n}?",
            model_output=f"The rule {n} is simple.",
            references=[{"title": f"Manual {n}", "text": f"Rule {n}: always balance the ledger."}],
        )
    return project


@pytest.fixture
def prompt_file(tmp_path):
    path = tmp_path / "answer.txt"
    path.write_text("system:\nYou answer questions.\n---\nQuestion: {question}\nAnswer briefly.\n", encoding="utf-8")
    return path
