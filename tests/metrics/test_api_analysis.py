"""GET /api/projects/<pk>/analysis/: permissions, token auth, values, bad input, OpenAPI schema."""

import io
import json

import numpy as np
import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from scipy import stats

from metrics.selection_data import clear_cache
from tests.metrics.report_data import build_study


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()


@pytest.fixture
def study(annotator, other_annotator):
    project, post_edits = build_study(annotators=[annotator, other_annotator])
    return project, post_edits


def url(project, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"target": "keystrokes", **params}.items())
    return reverse("api-project-analysis", kwargs={"project_id": project.pk}) + "?" + query


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_anonymous_is_refused(client, study):
    assert client.get(url(study[0])).status_code in (401, 403)


@pytest.mark.parametrize("who", ["annotator", "other_annotator"])
def test_annotators_are_refused_even_with_a_token(request, who, study):
    user = request.getfixturevalue(who)
    response = token_client(user).get(url(study[0]))
    assert response.status_code == 403
    assert "researchers" in response.json()["detail"]


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_researchers_and_admins_read_it_with_a_token(request, who, study):
    response = token_client(request.getfixturevalue(who)).get(url(study[0]))
    assert response.status_code == 200
    assert response.json()["best_metric"] == "compression"


def test_session_authentication_works_too(researcher_client, study):
    assert researcher_client.get(url(study[0])).status_code == 200


@pytest.mark.parametrize("who, status", [("researcher", 403), ("admin_user", 405)])
def test_it_is_read_only(request, who, status, study):
    client = token_client(request.getfixturevalue(who))
    for method in ("post", "put", "patch", "delete"):
        assert getattr(client, method)(url(study[0])).status_code == status


def test_values_match_scipy_and_the_command(researcher, study):
    project, post_edits = study
    data = token_client(researcher).get(url(project, target="wall_time", annotators="anna,bob")).json()
    ordered = sorted(post_edits, key=lambda pe: pe.pk)
    x = np.array([pe.metric_values.get(metric="bleu", variant="plain").value for pe in ordered])
    y = np.array([pe.wall_ms for pe in ordered], dtype=float)
    assert data["metrics"]["bleu"]["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert data["metrics"]["bleu"]["direction"] == "similarity"
    assert data["selection"]["annotators"] == ["anna", "bob"]
    out = io.StringIO()
    call_command(
        "analyze",
        "--project",
        project.name,
        "--target",
        "wall_time",
        "--annotators",
        "anna,bob",
        "--format",
        "json",
        stdout=out,
    )
    assert data == json.loads(out.getvalue())


def test_protocol_parameters_are_used(researcher, study):
    data = token_client(researcher).get(url(study[0], cv_repeats=3, k=3, seed=1)).json()
    assert data["settings"]["cv_repeats"] == 3 and data["settings"]["k"] == 3 and data["settings"]["seed"] == 1
    assert len(data["metrics"]["levenshtein"]["knn_r2_cv"]["repeats"]) == 3


def test_bad_parameters_answer_400_naming_them(researcher, study):
    client = token_client(researcher)
    response = client.get(url(study[0], target="minutes"))
    assert response.status_code == 400 and "target" in response.json()["errors"]
    response = client.get(url(study[0], annotators="anna,zed"))
    assert response.status_code == 400
    assert response.json()["detail"] == "annotator 'zed' has no submitted post-edit in project 'study'"
    response = client.get(url(study[0], cv_repeats=0))
    assert response.status_code == 400 and "cv_repeats" in response.json()["errors"]
    assert (
        client.get(reverse("api-project-analysis", kwargs={"project_id": 999999}) + "?target=keystrokes").status_code
        == 404
    )


def test_a_selection_without_edits_answers_with_messages(researcher, study):
    data = token_client(researcher).get(url(study[0], origin="imported")).json()
    assert data["n_rows"] == 0 and data["best_metric"] is None
    assert any("only 0 edits" in m for m in data["messages"])


def test_the_endpoint_is_in_the_openapi_schema(researcher_client):
    schema = yaml.safe_load(researcher_client.get(reverse("api-schema")).content)
    operation = schema["paths"]["/api/projects/{project_id}/analysis/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {
        "project_id",
        "target",
        "variant",
        "annotators",
        "cv_repeats",
    }
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/AnalysisOutput")
    assert "MetricResultOutput" in schema["components"]["schemas"]


def test_an_id_beyond_any_database_column_is_404(researcher):
    response = token_client(researcher).get(f"/api/projects/{10**20}/analysis/?target=keystrokes")
    assert response.status_code == 404


def test_the_new_options_and_their_hostile_values(researcher_client, study):
    project, post_edits = study
    post_edits[0].flags = ["keys_uncorroborated"]
    post_edits[0].save(update_fields=["flags"])
    base = reverse("api-project-analysis", kwargs={"project_id": project.pk})
    data = researcher_client.get(base + "?target=wall_time&exclude_flagged=true&log_time=true").json()
    assert data["n_rows"] == 29 and data["flagged"] == {"in_selection": 1, "excluded": True}
    assert data["metrics"]["bleu"]["mixed"]["formula"].startswith("z(log(wall_ms))")
    assert (
        researcher_client.get(base + "?target=wall_time&mixed_models=false").json()["metrics"]["bleu"]["mixed"] is None
    )
    for query, field in (
        ("target=keystrokes&log_time=true", "log time applies to the time targets"),
        ("target=keystrokes&exclude_flagged=maybe", "exclude_flagged"),
        ("target=wall_time&log_time=%C2%B2", "log_time"),
        ("target=active_time&idle_threshold=nan", "idle_threshold"),
        ("target=active_time&idle_threshold=-1", "idle_threshold"),
    ):
        response = researcher_client.get(f"{base}?{query}")
        assert response.status_code == 400, query
        assert field in json.dumps(response.json()), query
