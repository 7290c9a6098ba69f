"""The mixed models' df, t-based p, REML criterion and warnings where a researcher reads them: the report page,
its JSON, the analysis API, the analyze command's table, JSON and conditions CSV."""

import csv
import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from metrics.selection_data import clear_cache
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory
from tests.metrics.report_data import build_study

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "mt", "output": "sysA", "highlights": False},
    {"name": "ht", "output": None, "highlights": False},
]
FEW = "only 3 annotator levels (fewer than 5)"


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()


@pytest.fixture
def pilot():
    """3 annotators x 6 shared items, the condition alternating: 9 edits per condition."""
    rng = np.random.default_rng(2)
    project = ProjectFactory(name="pilot", conditions=CONDITIONS)
    items = [ItemFactory(project=project, external_id=f"s{i}") for i in range(6)]
    for a in range(3):
        person = UserFactory(username=f"e{a}", role="annotator")
        for i, item in enumerate(items):
            condition = ["mt", "ht"][(a + i) % 2]
            keys = int(40 + 30 * (condition == "ht") + 5 * a + rng.integers(0, 8))
            SubmittedPostEditFactory(
                assignment__item=item,
                assignment__annotator=person,
                assignment__condition=condition,
                condition=condition,
                keystrokes=keys,
                wall_ms=1500 * keys,
                text="a few words",
            )
    return project


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", *args, stdout=out)
    return out.getvalue()


def test_the_command_gives_df_p_and_the_warnings_beside_the_effect(pilot):
    data = json.loads(run("--project", pilot.name, "--target", "keystrokes", "--format", "json"))
    model = data["conditions"]["model"]
    effect = model["effects"][0]
    assert effect["condition"] == "ht" and effect["n"] == 9 and 0 < effect["df"] < 16
    assert effect["wald_p"] < effect["p"] and model["reml_criterion"] > 0 and model["intercept_df"] > 0
    assert any(FEW in warning for warning in model["warnings"])
    assert effect["warnings"] == [
        "condition 'ht' has 9 edits in the model (fewer than 10): its effect rests on few edits"
    ]
    rows = list(
        csv.DictReader(
            io.StringIO(run("--project", pilot.name, "--target", "keystrokes", "--format", "conditions-csv"))
        )
    )
    ht = next(r for r in rows if r["condition"] == "ht")
    assert float(ht["effect_df"]) == pytest.approx(effect["df"]) and FEW in ht["effect_warnings"]
    assert "fewer than 10" in ht["effect_warnings"]
    table = run("--project", pilot.name, "--target", "keystrokes")
    assert FEW in table and "ht: condition 'ht' has 9 edits in the model (fewer than 10)" in table


def test_the_report_page_and_the_api_show_them(pilot, researcher_client):
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": pilot.pk}) + "?target=keystrokes")
    body = page.content.decode()
    assert page.status_code == 200 and "Satterthwaite" in body and "REML criterion" in body
    assert FEW in body and "condition &#x27;ht&#x27; has 9 edits in the model (fewer than 10)" in body
    api = reverse("api-project-analysis", kwargs={"project_id": pilot.pk}) + "?target=keystrokes&mixed_models=true"
    data = researcher_client.get(api).json()
    effect = data["conditions"]["model"]["effects"][0]
    assert effect["df"] > 0 and effect["ci"][0] < effect["estimate"] < effect["ci"][1] and effect["warnings"]


def test_the_metric_models_show_df_p_criterion_and_warnings(researcher_client, annotator, other_annotator):
    project, _ = build_study(annotators=[annotator, other_annotator])
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}) + "?target=keystrokes")
    rows = page.context["mixed_rows"]
    assert rows and all(row["df"] > 0 and row["reml_criterion"] is not None for row in rows)
    assert all(any("only 2 annotator levels (fewer than 5)" in w for w in row["warnings"]) for row in rows)
    body = page.content.decode()
    assert '<th data-type="number">df</th>' in body and "only 2 annotator levels (fewer than 5)" in body
    data = reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "csv"}) + "?target=keystrokes"
    table = list(csv.DictReader(io.StringIO(researcher_client.get(data).content.decode())))
    assert all(float(row["mixed_df"]) > 0 and "fewer than 5" in row["mixed_warnings"] for row in table)
