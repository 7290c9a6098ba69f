"""Synthetic edits stored by the service, read back and analysed: the selector, `analyze --scenarios`,
the report's section (page and API) and `export --include-simulated`."""

import csv
import io
import json

import numpy as np
import pytest
import statsmodels.api as sm
from django.core.management import CommandError, call_command
from django.urls import reverse
from scipy import stats

from annotations.models import Item
from annotations.services.simulated import post_edit_create_simulated
from metrics.models import MetricValue
from metrics.selectors_scenarios import simulated_edit_frame, simulated_scenarios
from metrics.services import metric_values_compute
from metrics.text.compression import compression_distance
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

WORDS = "the tax return for a company must be filed before the end of may each year with the annual accounts".split()
N_ITEMS = 8


def answer(i: int) -> str:
    return " ".join(WORDS[i % 5 :] + WORDS[: i % 5]) + f" item {i}."


def edited(i: int, scenario: str) -> str:
    """normal rewrites the most, similar less, fast the least (more words kept as they were)."""
    words = answer(i).split()
    keep = {"normal": 4, "similar": 9, "fast": 14}[scenario]
    rewritten = [w[::-1] + "x" * (j % 3) for j, w in enumerate(words[keep:])]
    return " ".join(words[:keep] + rewritten + ["see", "article", str(i * 7)])


@pytest.fixture
def study():
    project = ProjectFactory(name="seed")
    items = [
        ItemFactory(
            project=project,
            external_id=f"q{i}",
            source=f"question {i}?",
            model_output=answer(i),
            references=[f"knowledge {i}: filing deadlines"],
        )
        for i in range(N_ITEMS)
    ]
    for i, item in enumerate(items):
        SubmittedPostEditFactory(assignment__item=item, text=edited(i, "normal"), wall_ms=1000 * (10 + i * i))
        for scenario in ("normal", "similar", "fast"):
            post_edit_create_simulated(
                item=item, scenario=scenario, text=edited(i, scenario), provenance={"model": "m", "prompt": scenario}
            )
    metric_values_compute(project=project, metrics=["compression"])
    return project, items


def expected(scenario: str) -> np.ndarray:
    return np.array([compression_distance(answer(i), edited(i, scenario)) for i in range(N_ITEMS)], dtype=float)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", *args, stdout=out)
    return out.getvalue()


def test_selector_reads_each_synthetic_edit_with_its_distance(study):
    project, items = study
    assert simulated_scenarios(project=project) == ["normal", "similar", "fast"]
    frame = simulated_edit_frame(project=project)
    assert len(frame) == 3 * N_ITEMS
    fast = frame[frame["scenario"] == "fast"].set_index("external_id")
    assert fast.loc[[f"q{i}" for i in range(N_ITEMS)], "distance"].tolist() == expected("fast").tolist()
    assert fast.loc["q3", "length"] == len(edited(3, "fast"))
    knowledge = simulated_edit_frame(project=project, variant=MetricValue.WITH_REFERENCES)
    stored = dict(
        MetricValue.objects.filter(metric="compression", variant=MetricValue.WITH_REFERENCES).values_list(
            "post_edit_id", "value"
        )
    )
    assert knowledge["distance"].tolist() == [stored[pk] for pk in knowledge["post_edit_id"]]
    assert knowledge["distance"].tolist() != frame["distance"].tolist()


def test_analyze_scenarios_json_against_statsmodels_and_scipy(study):
    project, _ = study
    data = json.loads(run("--project", project.name, "--scenarios", "--format", "json"))
    assert data["reference"] == "normal" and data["scenarios"] == ["normal", "similar", "fast"]
    normal = expected("normal")
    for comparison in data["comparisons"]:
        y = expected(comparison["scenario"])
        fit = sm.OLS(y, sm.add_constant(normal)).fit()
        assert comparison["slope"] == pytest.approx(fit.params[1])
        assert comparison["slope_ci"] == pytest.approx(list(fit.conf_int()[1]))
        assert comparison["wilcoxon_p"] == pytest.approx(stats.wilcoxon(y, normal, alternative="less").pvalue)
        assert comparison["mean_difference"] == pytest.approx((y - normal).mean()) and comparison["ordered"] is True
    human = {h["scenario"]: h["correlation"] for h in data["human"]}
    wall = np.array([1000.0 * (10 + i * i) for i in range(N_ITEMS)])
    assert human["fast"]["pearson"] == pytest.approx(stats.pearsonr(expected("fast"), wall).statistic)
    assert data["human_target"] == "wall_ms" and data["selection"]["project"] == project.name


def test_analyze_scenarios_with_knowledge_reads_the_other_variant(study):
    project, _ = study
    data = json.loads(run("--project", project.name, "--scenarios", "--variant", "with_references", "--format", "json"))
    values = MetricValue.objects.filter(
        metric="compression", variant=MetricValue.WITH_REFERENCES, post_edit__condition="fast"
    ).values_list("value", flat=True)
    assert data["summaries"][2]["distance"]["mean"] == pytest.approx(np.mean(list(values)))


def test_analyze_scenarios_table_and_csv(study):
    project, _ = study
    table = run("--project", project.name, "--scenarios", "--reference", "fast")
    assert "against 'fast'" in table and "Wilcoxon" in table and "similar" in table
    rows = list(csv.DictReader(io.StringIO(run("--project", project.name, "--scenarios", "--format", "csv"))))
    assert [r["scenario"] for r in rows] == ["normal", "similar", "fast"]
    assert float(rows[2]["distance_mean"]) == pytest.approx(expected("fast").mean())
    assert rows[0]["slope"] == "" and rows[2]["ordered"] == "True"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--reference", "slow"], "unknown reference scenario 'slow'"),
        (["--reference", "x" * 5000], "unknown reference scenario"),
        (["--reference", "normal\x00"], "unknown reference scenario"),
        (["--format", "conditions-csv"], "does not apply to --scenarios"),
        (["--by-document"], "choose one of --scenarios and --by-document"),
    ],
)
def test_hostile_scenario_options_are_clear_messages(study, args, message):
    project, _ = study
    with pytest.raises(CommandError, match=message):
        run("--project", project.name, "--scenarios", *args)


def test_reference_without_scenarios_and_a_project_without_synthetic_edits():
    project = ProjectFactory(name="human only")
    SubmittedPostEditFactory(assignment__item__project=project)
    with pytest.raises(CommandError, match="--reference applies to --scenarios only"):
        run("--project", project.name, "--target", "wall_time", "--reference", "normal")
    with pytest.raises(CommandError, match="has no synthetic edits"):
        run("--project", project.name, "--scenarios")
    with pytest.raises(CommandError, match="has no synthetic edits"):
        run("--project", project.name, "--scenarios", "--reference", "normal")


def export(project, *flags: str) -> list[dict]:
    out = io.StringIO()
    call_command("export", "--project", project.name, "--format", "csv", "--output", "-", *flags, stdout=out)
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def test_export_leaves_synthetic_edits_out_unless_asked(study):
    project, _ = study
    human = export(project)
    assert len(human) == N_ITEMS and {r["origin"] for r in human} == {"live"}
    every = export(project, "--include-simulated")
    assert len(every) == 4 * N_ITEMS
    simulated = [r for r in every if r["origin"] == "simulated"]
    assert {r["condition"] for r in simulated} == {"normal", "similar", "fast"}
    fast = next(r for r in simulated if r["condition"] == "fast" and r["external_id"] == "q2")
    assert fast["edited"] == edited(2, "fast") and float(fast["compression"]) == expected("fast")[2]
    assert fast["wall_ms"] == "" and fast["keystrokes"] == ""


def test_practice_items_edits_are_left_out_of_the_scenarios(study):
    project, items = study
    Item.objects.filter(pk=items[0].pk).update(practice=True)
    assert len(simulated_edit_frame(project=project)) == 3 * (N_ITEMS - 1)


def test_report_page_shows_the_section_only_with_synthetic_edits(researcher_client, study):
    project, _ = study
    page = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(page, {"target": "wall_time"})
    body = response.content.decode()
    assert response.status_code == 200 and 'id="synthetic-edits"' in body
    assert "against" in body and '<th scope="row">fast</th>' in body
    fast_slope = sm.OLS(expected("fast"), sm.add_constant(expected("normal"))).fit().params[1]
    assert f"{fast_slope:.3f}" in body
    assert '<select name="reference">' in body and '<option value="similar">similar</option>' in body
    other = ProjectFactory(name="people only")
    SubmittedPostEditFactory(assignment__item__project=other)
    plain = researcher_client.get(reverse("metrics-report", kwargs={"project_id": other.pk}), {"target": "wall_time"})
    assert plain.status_code == 200 and "synthetic-edits" not in plain.content.decode()
    assert 'name="reference"' not in plain.content.decode()


def test_report_page_refuses_an_unknown_reference_in_place(researcher_client, study):
    project, _ = study
    page = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(page, {"target": "wall_time", "reference": "<b>slow</b>"})
    body = response.content.decode()
    assert response.status_code == 400
    assert "unknown reference scenario" in body and "<b>slow</b>" not in body
    assert researcher_client.get(page, {"target": "wall_time", "reference": "similar"}).status_code == 200


def test_analysis_api_and_json_download_carry_the_scenarios(researcher_client, study):
    project, _ = study
    api = reverse("api-project-analysis", kwargs={"project_id": project.pk})
    data = researcher_client.get(api, {"target": "wall_time", "reference": "similar"}).json()
    scenarios = data["scenarios"]
    assert scenarios["reference"] == "similar" and [c["scenario"] for c in scenarios["comparisons"]] == [
        "normal",
        "fast",
    ]
    fast = scenarios["comparisons"][1]
    fit = sm.OLS(expected("fast"), sm.add_constant(expected("similar"))).fit()
    assert fast["slope"] == pytest.approx(fit.params[1]) and len(fast["points"]) == N_ITEMS
    assert scenarios["human"][0]["correlation"]["spearman"] is not None
    refused = researcher_client.get(api, {"target": "wall_time", "reference": "slow"})
    assert refused.status_code == 400 and "unknown reference scenario 'slow'" in refused.json()["detail"]
    download = reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "json"})
    assert (
        json.loads(researcher_client.get(download, {"target": "wall_time"}).content)["scenarios"]["reference"]
        == "normal"
    )
    people = ProjectFactory(name="people only")
    SubmittedPostEditFactory(assignment__item__project=people)
    none = researcher_client.get(
        reverse("api-project-analysis", kwargs={"project_id": people.pk}), {"target": "wall_time"}
    )
    assert none.status_code == 200 and none.json()["scenarios"] is None


def test_export_download_takes_include_simulated(researcher_client, study):
    project, _ = study
    url = reverse("metrics-export", kwargs={"project_id": project.pk})

    def rows(**params) -> list[dict]:
        response = researcher_client.get(url, {"format": "csv", **params})
        assert response.status_code == 200
        return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    assert len(rows()) == N_ITEMS
    assert len(rows(include_simulated="1")) == 4 * N_ITEMS
    refused = researcher_client.get(url, {"format": "csv", "include_simulated": "maybe"})
    assert refused.status_code == 400 and "include_simulated" in refused.content.decode()


def test_scenario_plots_and_their_numbers(researcher_client, study):
    project, _ = study

    def plot(kind: str, fmt: str, **params):
        url = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": kind, "fmt": fmt})
        return researcher_client.get(url, {"target": "wall_time", **params})

    svg = plot("scenarios", "svg")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml" and b"x = y" in svg.content
    assert plot("scenarios", "png").content[:4] == b"\x89PNG"
    rows = list(csv.DictReader(io.StringIO(plot("scenarios", "csv", reference="fast").content.decode())))
    assert [r["scenario"] for r in rows] == ["normal", "similar", "fast"] and rows[0]["reference"] == "fast"
    distances = json.loads(plot("scenario_distances", "json").content)
    assert distances["summaries"][2]["distance"]["mean"] == pytest.approx(expected("fast").mean())
    assert plot("scenario_distances", "svg").status_code == 200
    by_item = list(csv.DictReader(io.StringIO(plot("scenario_distances", "csv").content.decode())))
    assert len(by_item) == 3 * N_ITEMS
    assert plot("scenarios", "svg", reference="slow").status_code == 400
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}), {"target": "wall_time"})
    assert "plots/scenarios.svg?" in page.content.decode()


def test_scenario_plots_of_a_project_without_synthetic_edits_are_refused(researcher_client):
    project = ProjectFactory(name="people only")
    SubmittedPostEditFactory(assignment__item__project=project)
    url = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "scenarios", "fmt": "svg"})
    response = researcher_client.get(url, {"target": "wall_time"})
    assert response.status_code == 400 and "has no synthetic edits" in response.content.decode()


def test_a_project_with_only_synthetic_edits_has_a_report(researcher_client):
    project = ProjectFactory(name="llm only")
    for i in range(4):
        item = ItemFactory(project=project, external_id=f"q{i}", model_output=answer(i))
        for scenario in ("normal", "fast"):
            post_edit_create_simulated(item=item, scenario=scenario, text=edited(i, scenario), provenance={"m": 1})
    metric_values_compute(project=project, metrics=["compression"])
    response = researcher_client.get(
        reverse("metrics-report", kwargs={"project_id": project.pk}), {"target": "wall_time"}
    )
    assert response.status_code == 200 and 'id="synthetic-edits"' in response.content.decode()
    data = json.loads(run("--project", project.name, "--scenarios", "--format", "json"))
    assert data["human"] == [] and data["comparisons"][0]["n"] == 4
