"""The analysis by condition in the analyze command, the analysis API and the report page: options,
roles, downloads, practice items, and hostile baselines."""

import csv
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from metrics.selection_data import clear_cache
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "base", "output": "sysA", "highlights": False},
    {"name": "hl", "output": "sysA", "highlights": True},
    {"name": "scratch", "output": None, "highlights": False},
]
EFFECT = {"base": 0, "hl": 6, "scratch": 20}


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()


@pytest.fixture
def study():
    """4 annotators x 9 shared items, the condition rotating (Latin square), plus one practice edit each."""
    rng = np.random.default_rng(5)
    project = ProjectFactory(name="cond study", conditions=CONDITIONS)
    names = list(EFFECT)
    items = [ItemFactory(project=project, external_id=f"item{i}") for i in range(9)]
    for a in range(4):
        person = UserFactory(username=f"p{a}", role="annotator")
        for i in range(9):
            condition = names[(a + i) % 3]
            keys = int(10 + EFFECT[condition] + a + rng.integers(0, 3))
            SubmittedPostEditFactory(
                assignment__item=items[i],
                assignment__annotator=person,
                assignment__condition=condition,
                condition=condition,
                keystrokes=keys,
                wall_ms=2000 * keys,
                text="three words here",
            )
        SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=f"practice{a}",
            assignment__item__practice=True,
            assignment__annotator=person,
            keystrokes=500,
            wall_ms=1000,
        )
    return project


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_the_conditions_and_leaves_practice_out(study):
    table = run("--project", study.name, "--target", "keystrokes", "--no-mixed")
    assert "Conditions (target keystrokes; baseline base; mixed model no model;" in table
    assert "4 post-edits of practice items left out (include practice keeps them)" in table
    data = json.loads(run("--project", study.name, "--target", "wall_time", "--format", "json", "--log-time"))
    conditions = data["conditions"]
    assert data["n_rows"] == 36 and conditions["baseline"] == "base"
    summaries = {s["condition"]: s for s in conditions["summaries"]}
    assert summaries["hl"]["n"] == 12
    hl = summaries["hl"]
    assert hl["words"] == 36  # 12 edits of three words
    assert hl["hours"] == pytest.approx(12 * hl["mean"] / 3_600_000)  # the target is wall_ms here
    assert hl["words_per_hour"] == pytest.approx(36 / hl["hours"])
    assert conditions["log_model"]["formula"].startswith("log(wall_ms) ~ C(condition, Treatment('base'))")
    with_practice = json.loads(
        run("--project", study.name, "--target", "keystrokes", "--format", "json", "--include-practice")
    )
    assert with_practice["n_rows"] == 40 and with_practice["conditions"]["left_out"] == 4


def test_conditions_csv_has_one_row_per_condition(study):
    rows = list(
        csv.DictReader(
            io.StringIO(
                run("--project", study.name, "--target", "keystrokes", "--baseline", "hl", "--format", "conditions-csv")
            )
        )
    )
    assert [(r["condition"], r["baseline"]) for r in rows] == [("hl", "True"), ("base", "False"), ("scratch", "False")]
    assert rows[0]["effect"] == "" and float(rows[2]["effect"]) > 0


@pytest.mark.parametrize(
    ("baseline", "message"),
    [
        ("nope", "baseline 'nope' is not a condition of this selection; choose one of: base, hl, scratch"),
        ("x" * 5000, "baseline '" + "x" * 80 + "…' is not a condition"),
        ("b\u0301ase", "baseline 'b\u0301ase' is not a condition"),
        ("base\x00", "baseline contains a NUL character"),
    ],
)
def test_an_unknown_baseline_is_refused_by_the_command(study, baseline, message):
    with pytest.raises(CommandError) as error:
        run("--project", study.name, "--target", "keystrokes", "--baseline", baseline)
    assert message in str(error.value)


def api(project, query: str) -> str:
    return reverse("api-project-analysis", kwargs={"project_id": project.pk}) + "?target=keystrokes&" + query


def test_the_api_has_the_conditions_block_and_the_baseline_field(study, researcher_client):
    data = researcher_client.get(api(study, "baseline=scratch&mixed_models=true")).json()
    conditions = data["conditions"]
    assert conditions["conditions"] == ["scratch", "base", "hl"]
    assert conditions["model"]["groups"] == {"annotator": 4, "item": 9}
    effects = {e["condition"]: e["estimate"] for e in conditions["model"]["effects"]}
    assert effects["base"] == pytest.approx(-20, abs=2) and effects["hl"] == pytest.approx(-14, abs=2)
    assert data["practice"] == {"in_selection": 4, "excluded": True}
    assert data["selection"]["include_practice"] is False
    data = researcher_client.get(api(study, "include_practice=true")).json()
    assert data["n_rows"] == 40 and data["selection"]["include_practice"] is True


@pytest.mark.parametrize(
    ("query", "field", "text"),
    [
        (
            "baseline=nope",
            "detail",
            "baseline 'nope' is not a condition of this selection; choose one of: base, hl, scratch",
        ),
        ("baseline=" + "x" * 300, "baseline", "no more than 200 characters"),
        ("baseline=%E2%80%AE%F0%9F%98%80", "detail", "baseline '\\u202e😀' is not a condition"),
        ("baseline=%00", "baseline", "Null characters are not allowed"),
        ("include_practice=perhaps", "include_practice", "Must be a valid boolean"),
    ],
)
def test_hostile_api_input_answers_400_naming_it(study, researcher_client, query, field, text):
    response = researcher_client.get(api(study, query))
    assert response.status_code == 400
    body = response.json()
    assert "detail" in body and "code" in body
    where = body["detail"] if field == "detail" else json.dumps(body.get("errors", body), ensure_ascii=False)
    assert text in where


@pytest.mark.parametrize("who", ["annotator_client", "other_annotator_client"])
def test_annotators_cannot_read_the_conditions(request, who, study):
    client = request.getfixturevalue(who)
    assert client.get(api(study, "baseline=base")).status_code == 403
    plot = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "conditions", "fmt": "svg"})
    assert client.get(plot + "?target=keystrokes").status_code == 403


def test_anonymous_is_sent_to_login_for_the_plot(client, study):
    plot = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "conditions", "fmt": "csv"})
    response = client.get(plot + "?target=keystrokes")
    assert response.status_code == 302 and "/login" in response["Location"]


@pytest.mark.parametrize("who", ["researcher_client", "admin_client"])
def test_the_report_page_has_the_conditions_section_and_its_plot(request, who, study):
    client = request.getfixturevalue(who)
    page = client.get(reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=keystrokes&baseline=hl")
    body = page.content.decode()
    assert page.status_code == 200
    assert "<h2>Conditions</h2>" in body and "effect vs hl" in body
    assert "4 post-edits of practice items left out" in body
    assert '<option value="hl" selected>hl</option>' in body
    plot = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "conditions", "fmt": "FMT"})
    assert plot.replace("FMT", "svg") + "?target=keystrokes" in body.replace("&amp;", "&")
    svg = client.get(plot.replace("FMT", "svg") + "?target=keystrokes&baseline=hl")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert b"baseline hl" in svg.content and b"<script" not in svg.content
    png = client.get(plot.replace("FMT", "png") + "?target=keystrokes")
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    rows = list(
        csv.DictReader(io.StringIO(client.get(plot.replace("FMT", "csv") + "?target=keystrokes").content.decode()))
    )
    assert [r["condition"] for r in rows] == ["base", "hl", "scratch"] and [r["n"] for r in rows] == ["12"] * 3
    numbers = client.get(plot.replace("FMT", "json") + "?target=keystrokes").json()
    assert numbers["baseline"] == "base" and len(numbers["summaries"]) == 3
    whole = client.get(
        reverse("metrics-report-data", kwargs={"project_id": study.pk, "fmt": "json"}) + "?target=keystrokes"
    )
    assert whole.json()["conditions"]["conditions"] == ["base", "hl", "scratch"]


def test_the_report_page_refuses_an_unknown_baseline_in_place(researcher_client, study):
    base = reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=keystrokes&baseline="
    response = researcher_client.get(base + "%3Cscript%3Ealert(1)%3C/script%3E")
    assert response.status_code == 400
    assert "baseline &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27; is not a condition" in response.content.decode()
    response = researcher_client.get(base + "nope", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "is not a condition of this selection" in response.content.decode()
    plot = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "conditions", "fmt": "svg"})
    response = researcher_client.get(plot + "?target=keystrokes&baseline=nope")
    assert response.status_code == 400 and "baseline 'nope'" in response.content.decode()


def test_a_project_without_conditions_has_no_section_and_no_plot(researcher_client):
    project = ProjectFactory()
    for _ in range(3):
        SubmittedPostEditFactory(assignment__item__project=project)
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}) + "?target=keystrokes")
    assert page.status_code == 200 and "<h2>Conditions</h2>" not in page.content.decode()
    plot = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "conditions", "fmt": "svg"})
    response = researcher_client.get(plot + "?target=keystrokes")
    assert response.status_code == 400 and "two conditions or more" in response.content.decode()


def test_the_distribution_plot_draws_an_empty_condition_and_hostile_names_inertly():
    from metrics import plots

    svg = plots.condition_distributions(
        {"<b>&amp;$x$": np.array([1.0, 2.0, 3.0]), "empty": np.array([])},
        means={"<b>&amp;$x$": (1.5, 2.5), "empty": None},
        title="t <script>",
        ylabel="keystrokes",
    ).decode()
    assert "&lt;b&gt;&amp;amp;$x$" in svg and "<script>" not in svg and "(n = 0)" in svg
