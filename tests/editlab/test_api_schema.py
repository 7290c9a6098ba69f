"""Schemathesis against the OpenAPI schema at /api/schema/: no 5xx, no answer the schema does not describe.

Every operation is fuzzed in-process (the WSGI app, inside the test's transaction) as an admin and
as an annotator, both with token authentication. Each operation gets generated requests with random
ids and, where the path has an id, requests aimed at a real object of the right kind, so that the
validation and business paths are reached, not only the 404s. The number of examples is bounded
(EXAMPLES per operation and role) to keep the run well under a minute.

Checked on every response: not a server error, a documented status code, a documented content
type, headers and body matching the documented response schema.
"""

import re
from collections import Counter
from collections.abc import Callable

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotations.editing.lifecycle import post_edit_open
from annotations.models import Evaluation
from metrics.models import MetricJob
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    ItemFactory,
    MetricValueFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
)

pytestmark = pytest.mark.django_db

EXAMPLES = 12
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def wsgi_app():
    # As Django's test client does: a request's end must not close the test's connection
    # (it is inside the test's transaction).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def world(annotator, other_annotator, admin_user) -> dict[str, int]:
    """One object of every kind the API's paths name, all owned by annotator A (anna)."""
    project = ProjectFactory(name="schema study", instructions=["Fix it"])
    batch = BatchFactory(project=project, name="b1")
    item = ItemFactory(project=project, batch=batch, batch_position=0, model_output="This are a test.")
    assignment = AssignmentFactory(item=item, annotator=annotator)
    post_edit, _ = post_edit_open(assignment=assignment, user=annotator)
    for n in range(3):
        done = SubmittedPostEditFactory(
            assignment__item__project=project, assignment__annotator=annotator, text=f"This is test {n}."
        )
        MetricValueFactory(post_edit=done, metric="levenshtein", value=float(n + 1))
    ItemFactory(project=project, external_id="unbatched")
    job = MetricJob.objects.create(
        project=project, metrics=["levenshtein"], variants=["plain"], status=MetricJob.FAILED
    )
    evaluation = Evaluation.objects.create(
        item=ItemFactory(project=project, external_id="rated", outputs={"sysA": "This are rated."}),
        rater=annotator,
        system="sysA",
        text="This are rated.",
    )
    return {
        "evaluations": evaluation.pk,
        "projects": project.pk,
        "assignments": assignment.pk,
        "post-edits": post_edit.pk,
        "metric-jobs": job.pk,
        "users": other_annotator.pk,
        "generation-runs": _generation_run(project).pk,
    }


def _generation_run(project):
    from generation.models import GenerationRun

    return GenerationRun.objects.create(
        project=project, kind="output", name="llm", endpoint="http://127.0.0.1:9/v1", model="m", settings_key="k"
    )


def _real_id(path: str, world: dict[str, int]) -> dict[str, int] | None:
    """The path's first parameter (`{id}`, `{project_id}`...) set to a real object of its kind."""
    parameter = re.search(r"\{(\w+)\}", path)
    if parameter is None:
        return None
    return {parameter.group(1): world[path.split("/")[2]]}


def _fuzz(
    operation,
    *,
    headers: dict[str, str],
    cookies: dict[str, str],
    real_id: dict[str, int] | None,
    record: Callable[[str], None],
    statuses: Counter,
) -> None:
    strategy = operation.as_strategy()
    if real_id is not None:
        strategy = st.one_of(strategy, operation.as_strategy(path_parameters=real_id))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def check(case) -> None:
        response = case.call(headers=headers, cookies=cookies)
        statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS)

    try:
        check()
    except (AssertionError, FailureGroup) as exc:  # every operation's failures are collected, then reported
        record(f"{operation.label}: {exc}")


def _session(user) -> tuple[dict[str, str], dict[str, str]]:
    """(headers, cookies) of a logged-in session with its CSRF token: the editor's endpoints take only these."""
    client = Client()
    client.force_login(user)
    secret = get_random_string(32)
    return {"X-CSRFToken": secret}, {"sessionid": client.cookies["sessionid"].value, "csrftoken": secret}


@pytest.mark.parametrize(
    ("role", "auth"),
    [("admin", "token"), ("annotator", "token"), ("annotator", "session")],
)
def test_the_api_answers_as_its_schema_says(role, auth, wsgi_app, world, annotator, admin_user):
    user = {"admin": admin_user, "annotator": annotator}[role]
    reader = {"Authorization": f"Token {Token.objects.get_or_create(user=admin_user)[0].key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app, headers=reader)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 27, [op.label for op in operations]
    if auth == "token":
        headers, cookies = {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}, {}
    else:
        # Token runs reach the editor's and the span task's endpoints only up to their 403; this run goes past it.
        headers, cookies = _session(user)
        operations = [op for op in operations if op.path.startswith(("/api/post-edits/", "/api/evaluations/"))]
        assert len(operations) == 6
    failures: list[str] = []
    statuses: Counter = Counter()
    for operation in operations:
        _fuzz(
            operation,
            headers=headers,
            cookies=cookies,
            real_id=_real_id(operation.path, world),
            record=failures.append,
            statuses=statuses,
        )
    print(f"{role} ({auth}): {sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}")
    assert not failures, "\n\n".join(failures)
