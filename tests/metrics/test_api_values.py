import json

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from metrics.models import MetricJob, MetricValue
from tests.factories import MetricValueFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(annotator, other_annotator):
    project = ProjectFactory(name="study")
    first = SubmittedPostEditFactory(
        assignment__item__project=project, assignment__item__external_id="s1", assignment__annotator=annotator
    )
    second = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="s2",
        assignment__annotator=other_annotator,
        text="This is the test.",
    )
    MetricValueFactory(post_edit=first, metric="levenshtein", variant="plain", value=3.0, metric_version="1")
    MetricValueFactory(post_edit=first, metric="levenshtein", variant="with_references", value=1.0)
    MetricValueFactory(post_edit=second, metric="levenshtein", variant="plain", value=6.0)
    MetricValueFactory(post_edit=second, metric="bleu", variant="plain", value=0.5)
    MetricValueFactory(metric="levenshtein", value=99.0)  # another project
    return project


@pytest.fixture
def failed_job(project):
    return MetricJob.objects.create(
        project=project, metrics=["compression"], variants=["plain"], status=MetricJob.FAILED, error="RuntimeError: x"
    )


def api_client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def calls(project, job):
    return [
        ("get", reverse("api-metric-values") + f"?project={project.pk}", None),
        ("get", reverse("api-metric-job", kwargs={"job_id": job.pk}), None),
        ("get", reverse("api-project-export", kwargs={"project_id": project.pk}) + "?format=jsonl", None),
        ("post", reverse("api-metric-job-create", kwargs={"project_id": project.pk}), {"metrics": ["levenshtein"]}),
        ("post", reverse("api-metric-job-retry", kwargs={"job_id": job.pk}), None),
    ]


def test_anonymous_requests_are_refused(project, failed_job):
    for method, url, body in calls(project, failed_job):
        response = getattr(api_client(), method)(url, body, format="json")
        assert response.status_code in (401, 403), url
    assert MetricJob.objects.count() == 1


def test_annotators_are_refused_even_their_own_values(project, failed_job, annotator, other_annotator):
    for user in (annotator, other_annotator):
        for method, url, body in calls(project, failed_job):
            response = getattr(api_client(user), method)(url, body, format="json")
            assert response.status_code == 403, url
            assert response.json()["detail"] == "Only researchers and admins may use the metric-values API."
    assert MetricJob.objects.count() == 1


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_researchers_and_admins_may_use_every_endpoint(request, who, project, failed_job):
    client = api_client(request.getfixturevalue(who))
    expected = [200, 200, 200, 202, 202]
    for (method, url, body), code in zip(calls(project, failed_job), expected, strict=True):
        response = getattr(client, method)(url, body, format="json")
        assert response.status_code == code, url


def test_a_token_authenticates(project, researcher):
    token = Token.objects.create(user=researcher)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.get(reverse("api-metric-values"), {"project": project.pk})
    assert response.status_code == 200 and response.json()["count"] == 4
    client.credentials(HTTP_AUTHORIZATION="Token wrong")
    refused = client.get(reverse("api-metric-values"))
    assert refused.status_code in (401, 403) and refused.json() == {
        "detail": "Invalid token.",
        "code": "authentication_failed",
    }


def test_values_are_filtered_and_paginated(project, researcher):
    client = api_client(researcher)
    url = reverse("api-metric-values")
    body = client.get(url, {"project": project.pk, "metric": "levenshtein", "variant": "plain"}).json()
    assert body["count"] == 2
    first = body["results"][0]
    assert {k: first[k] for k in ("project", "external_id", "annotator", "metric", "variant", "value")} == {
        "project": project.pk,
        "external_id": "s1",
        "annotator": "anna",
        "metric": "levenshtein",
        "variant": "plain",
        "value": 3.0,
    }
    assert [r["value"] for r in body["results"]] == [3.0, 6.0]
    assert client.get(url, {"project": project.pk, "annotator": "bob"}).json()["count"] == 2
    page = client.get(url, {"project": project.pk, "page_size": 3, "page": 2}).json()
    assert page["count"] == 4 and len(page["results"]) == 1 and page["next"] is None
    assert client.get(url).json()["count"] == 5  # every project


def test_bad_filters_are_named(researcher):
    response = api_client(researcher).get(reverse("api-metric-values"), {"variant": "both", "project": "x"})
    assert response.status_code == 400
    assert response.json() == {
        "detail": "project: A valid integer is required.",
        "code": "invalid",
        "errors": {
            "project": ["A valid integer is required."],
            "variant": ["unknown variant 'both': choose one of plain, with_references"],
        },
    }


def test_starting_a_job_computes_and_reports_it(project, researcher):
    client = api_client(researcher)
    response = client.post(
        reverse("api-metric-job-create", kwargs={"project_id": project.pk}),
        {"metrics": ["compression"], "variants": ["plain"]},
        format="json",
    )
    body = response.json()
    assert response.status_code == 202
    assert {
        k: body[k] for k in ("project", "metrics", "variants", "status", "total", "done", "error", "created_by")
    } == {
        "project": project.pk,
        "metrics": ["compression"],
        "variants": ["plain"],
        "status": "done",
        "total": 2,
        "done": 2,
        "error": "",
        "created_by": "rita",
    }
    assert MetricValue.objects.filter(metric="compression").count() == 2
    status = client.get(reverse("api-metric-job", kwargs={"job_id": body["id"]})).json()
    assert status["status"] == "done" and status["finished"] is not None


def test_bad_job_requests_are_named(project, researcher):
    client = api_client(researcher)
    url = reverse("api-metric-job-create", kwargs={"project_id": project.pk})
    response = client.post(url, {"metrics": ["nope"]}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("unknown metric(s): nope; known metrics: compression")
    response = client.post(url, {"variants": ["both"]}, format="json")
    assert response.status_code == 400 and response.json()["detail"].startswith("unknown variant(s): both")
    missing = client.post(reverse("api-metric-job-create", kwargs={"project_id": 999999}), {}, format="json")
    assert missing.status_code == 404
    assert not MetricJob.objects.exists()


def test_only_failed_jobs_are_retried(project, researcher, failed_job):
    client = api_client(researcher)
    response = client.post(reverse("api-metric-job-retry", kwargs={"job_id": failed_job.pk}))
    assert response.status_code == 202 and response.json()["status"] == "done"
    again = client.post(reverse("api-metric-job-retry", kwargs={"job_id": failed_job.pk}))
    assert again.status_code == 400
    assert again.json()["detail"] == (
        f"job #{failed_job.pk} is done; only a failed job, or a running one whose worker stopped "
        "showing progress for 600 s, can be retried"
    )


def test_the_export_streams_in_the_asked_format(project, researcher):
    client = api_client(researcher)
    url = reverse("api-project-export", kwargs={"project_id": project.pk})
    response = client.get(url, {"format": "jsonl"})
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    rows = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [(r["external_id"], r["annotator"], r["levenshtein"], r["bleu"]) for r in rows] == [
        ("s1", "anna", 3.0, None),
        ("s2", "bob", 6.0, 0.5),
    ]
    assert rows[0]["levenshtein__with_references"] == 1.0
    bad = client.get(url, {"format": "xls"})
    assert bad.status_code == 400 and bad.json()["errors"] == {"format": ['"xls" is not a valid choice.']}


def test_the_endpoints_are_in_the_openapi_schema(researcher):
    schema = api_client(researcher).get(reverse("api-schema"), {"format": "json"}).json()
    for path in (
        "/api/metric-values/",
        "/api/projects/{project_id}/metric-jobs/create/",
        "/api/metric-jobs/{job_id}/",
        "/api/metric-jobs/{job_id}/retry/",
        "/api/projects/{project_id}/export/",
    ):
        assert path in schema["paths"], path
