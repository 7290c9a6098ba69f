"""The gold-metric table (metrics.gold_figures): on the report page and at GET /api/projects/<pk>/gold/.

The study's texts are tests/metrics/data/editeval_cases.json's JFLEG-like corpus, so EditEval's figures are the
numbers EditEval's own code gave (tests/metrics/editeval_expected.py); the per-example values are computed by
the metric service, as in a live study.
"""

import json
from pathlib import Path

import pytest
import yaml
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from metrics.analysis_options import selection_build
from metrics.gold_figures import _figures, gold_table_build
from metrics.models import MetricValue
from metrics.selection_data import clear_cache
from metrics.services import metric_values_compute
from metrics.text.editeval import Example, editeval_scores
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory
from tests.metrics.editeval_expected import EXPECTED

CASES = json.loads((Path(__file__).parent / "data" / "editeval_cases.json").read_text("utf-8"))
GOLD_METRICS = ["sari", "gleu", "ibleu", "exact_match", "em_diff", "update_rouge"]


@pytest.fixture(autouse=True)
def fresh_caches():
    clear_cache()
    _figures.cache_clear()


@pytest.fixture
def study(annotator, other_annotator):
    """The 10 JFLEG-like cases (anna the first 6, bob the last 4), then 2 items without gold edits."""
    project = ProjectFactory(name="gec study")
    for i, case in enumerate(CASES["jfleg_like"]):
        item = ItemFactory(project=project, model_output=case["original"], gold_edits=case["gold"], task_type="gec")
        SubmittedPostEditFactory(
            assignment__item=item, assignment__annotator=annotator if i < 6 else other_annotator, text=case["edited"]
        )
    for text in ("No gold here .", "Nor here ."):
        SubmittedPostEditFactory(
            assignment__item=ItemFactory(project=project, model_output=text), assignment__annotator=annotator, text=text
        )
    metric_values_compute(project=project, metrics=GOLD_METRICS, variants=["plain"], processes=1)
    return project


def selection(project, **params):
    return selection_build(project=project, target="keystrokes", **params)


def stored_mean(project, metric):
    values = MetricValue.objects.filter(post_edit__assignment__item__project=project, metric=metric)
    return sum(v.value for v in values) / len(values)


def test_the_table_puts_editlabs_means_beside_editevals_figures(study):
    table = gold_table_build(selection=selection(study))
    assert table.n == 10 and table.messages == []
    rows = {row.metric: row for row in table.rows}
    assert list(rows) == GOLD_METRICS
    for metric, row in rows.items():
        assert row.n == row.n_values == 10 and row.stale == 0
        assert row.editeval == pytest.approx(EXPECTED["jfleg_like"]["corpus"][metric], rel=1e-12)
        assert row.mean == pytest.approx(stored_mean(study, metric), rel=1e-9)
    assert rows["exact_match"].editeval_name == "em"
    assert rows["update_rouge"].editeval_name == "update_rougeLsum"


def test_a_selection_narrows_the_examples(study):
    table = gold_table_build(selection=selection(study, annotators="bob"))
    cases = CASES["jfleg_like"][6:]
    expected = editeval_scores([Example(c["original"], c["edited"], tuple(c["gold"])) for c in cases])
    assert table.n == 4
    assert {row.metric: row.editeval for row in table.rows} == pytest.approx(expected, rel=1e-12)


def test_no_gold_edits_means_no_table(study):
    assert gold_table_build(selection=selection(study, task_type="qa")) is None
    assert gold_table_build(selection=selection(ProjectFactory())) is None


def test_stale_and_missing_values_are_left_out_of_the_mean_and_said(study):
    em_diff = MetricValue.objects.filter(metric="em_diff").order_by("post_edit_id")
    em_diff.filter(pk=em_diff[0].pk).update(metric_version="1", value=99.0)  # computed by the old extraction
    MetricValue.objects.filter(metric="sari").order_by("post_edit_id").first().delete()
    clear_cache()
    rows = {row.metric: row for row in gold_table_build(selection=selection(study)).rows}
    assert rows["em_diff"].stale == 1 and rows["em_diff"].n_values == 9
    assert rows["em_diff"].mean == pytest.approx(sum(v.value for v in em_diff.filter(metric_version="2")) / 9, rel=1e-9)
    assert rows["sari"].n_values == 9 and rows["sari"].n == 10
    table = gold_table_build(selection=selection(study))
    assert any("1 stored em_diff value(s) of an older version" in m for m in table.messages)
    assert any("missing for some post-edits (sari, em_diff)" in m for m in table.messages)


# --- the report page ---------------------------------------------------------------------------------------


def report_url(project, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("metrics-report", kwargs={"project_id": project.pk}) + (f"?{query}" if query else "")


def test_the_report_shows_the_table_when_the_selection_has_gold(researcher_client, study):
    page = researcher_client.get(report_url(study)).content.decode()
    assert "Gold-based metrics (EditEval)" in page
    assert f"{EXPECTED['jfleg_like']['corpus']['sari']:.4f}" in page  # the editeval column, 4 decimals
    assert "10 post-edits with gold edits" in page
    assert "editeval on 0-1, as EditEval reports it" in page
    partial = researcher_client.get(report_url(study, target="wall_time"), HTTP_HX_REQUEST="true").content.decode()
    assert "Gold-based metrics (EditEval)" in partial and "<html" not in partial
    without = researcher_client.get(report_url(study, task_type="qa")).content.decode()
    assert "Gold-based metrics" not in without


def test_the_report_stays_closed_to_annotators_and_anonymous(client, annotator_client, study):
    assert annotator_client.get(report_url(study)).status_code == 403
    assert client.get(report_url(study)).status_code == 302


# --- the API -----------------------------------------------------------------------------------------------


def api_url(project_id, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("api-project-gold", kwargs={"project_id": project_id}) + (f"?{query}" if query else "")


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_anonymous_is_refused(client, study):
    assert client.get(api_url(study.pk)).status_code in (401, 403)


@pytest.mark.parametrize("who", ["annotator", "other_annotator"])
def test_annotators_are_refused_even_their_own_edits(request, who, study):
    response = token_client(request.getfixturevalue(who)).get(api_url(study.pk))
    assert response.status_code == 403
    assert "researchers" in response.json()["detail"]


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_researchers_and_admins_read_editevals_figures(request, who, study):
    data = token_client(request.getfixturevalue(who)).get(api_url(study.pk)).json()
    assert data["n"] == 10 and data["order"] == "post-edit id"
    assert data["selection"] == {
        "project": "gec study",
        "project_id": study.pk,
        "annotators": [],
        "task_type": None,
        "origin": None,
    }
    figures = {row["metric"]: row for row in data["metrics"]}
    for metric in GOLD_METRICS:
        assert figures[metric]["editeval"] == pytest.approx(EXPECTED["jfleg_like"]["corpus"][metric], rel=1e-12)
        assert figures[metric]["mean"] == pytest.approx(stored_mean(study, metric), rel=1e-9)
    assert set(figures["sari"]) == {
        "metric",
        "editeval_name",
        "n",
        "n_values",
        "stale",
        "mean",
        "editeval",
        "editeval_undefined",
        "note",
    }
    assert figures["ibleu"]["note"].startswith("mean on 0-100") and figures["sari"]["note"] == ""


def test_session_authentication_works_and_the_report_agrees(researcher_client, study):
    data = researcher_client.get(api_url(study.pk, annotators="anna")).json()
    table = gold_table_build(selection=selection(study, annotators="anna"))
    assert data["n"] == table.n == 6
    assert [row["editeval"] for row in data["metrics"]] == [row.editeval for row in table.rows]


@pytest.mark.parametrize(("who", "status"), [("researcher", 403), ("admin_user", 405)])
def test_it_is_read_only(request, who, status, study):
    client = token_client(request.getfixturevalue(who))
    for method in ("post", "put", "patch", "delete"):
        assert getattr(client, method)(api_url(study.pk)).status_code == status


def test_a_selection_without_gold_answers_with_a_message(researcher, study):
    data = token_client(researcher).get(api_url(study.pk, task_type="qa")).json()
    assert data["n"] == 0 and data["metrics"] == []
    assert data["messages"] == ["no submitted post-edit in this selection has gold edits"]


def test_figures_editeval_cannot_compute_come_with_the_reason(researcher, annotator):
    project = ProjectFactory()
    for case in CASES["fewer_golds_later"]:
        item = ItemFactory(project=project, model_output=case["original"], gold_edits=case["gold"])
        SubmittedPostEditFactory(assignment__item=item, assignment__annotator=annotator, text=case["edited"])
    figures = {row["metric"]: row for row in token_client(researcher).get(api_url(project.pk)).json()["metrics"]}
    assert figures["gleu"]["editeval"] is None
    assert "fewer than the first example's 3" in figures["gleu"]["editeval_undefined"]
    assert figures["sari"]["editeval"] == pytest.approx(EXPECTED["fewer_golds_later"]["corpus"]["sari"], rel=1e-12)
    assert figures["sari"]["mean"] is None and figures["sari"]["n_values"] == 0  # nothing computed yet


@pytest.mark.parametrize(
    ("params", "status", "code", "detail"),
    [
        ({"annotators": "anna,zed"}, 400, "invalid", "annotator 'zed' has no submitted post-edit"),
        ({"annotators": "\u202eanna\u0301,\U0001f600"}, 400, "invalid", "has no submitted post-edit"),
        ({"task_type": "a%00b"}, 400, "invalid", "task_type: Null characters are not allowed."),
        ({"origin": "elsewhere"}, 400, "invalid", "origin: "),
        ({"task_type": "x" * 101}, 400, "invalid", "task_type: "),
        ({"annotators": "a" * 10_001}, 400, "invalid", "annotators: "),
    ],
)
def test_bad_parameters_answer_400_naming_them(researcher, study, params, status, code, detail):
    response = token_client(researcher).get(api_url(study.pk, **params))
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code and detail in body["detail"]


@pytest.mark.parametrize("project_id", [999_999, 10**20])
def test_unknown_and_impossible_projects_are_404(researcher, project_id):
    response = token_client(researcher).get(api_url(project_id))
    assert response.status_code == 404
    assert response.json() == {"detail": "No such project.", "code": "not_found"}


def test_the_endpoint_is_in_the_openapi_schema(researcher_client):
    schema = yaml.safe_load(researcher_client.get(reverse("api-schema")).content)
    operation = schema["paths"]["/api/projects/{project_id}/gold/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"project_id", "annotators", "task_type", "origin"}
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/GoldOutput")
