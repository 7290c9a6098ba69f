"""The report's agreement downloads (research/<id>/report/agreement.<csv|json>): the Agreement section for
the report's selection query, with its definitions (JSON) or as rows with the values behind it (CSV),
against agreement_section and the krippendorff package on the overlap study of test_agreement_wiring."""

from __future__ import annotations

import csv
import io

import krippendorff
import numpy as np
import pytest
from django.urls import reverse

from metrics.agreement_downloads import CSV_COLUMNS
from metrics.agreement_report import DEFINITIONS, agreement_rows, agreement_section
from metrics.analysis_options import selection_build
from tests.metrics.test_agreement_wiring import EDITORS, ITEMS, keystrokes_of, package_alpha, study  # noqa: F401

pytestmark = pytest.mark.django_db


def url(project_id: int, fmt: str, query: str = "target=keystrokes") -> str:
    return reverse("metrics-report-agreement", kwargs={"project_id": project_id, "fmt": fmt}) + f"?{query}"


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_json_is_the_report_s_agreement_section_with_its_definitions(study, researcher_client):  # noqa: F811
    response = researcher_client.get(url(study.pk, "json"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="Overlap-keystrokes-agreement.json"'
    data = response.json()
    section = agreement_section(selection=selection_build(project=study, target="keystrokes"))
    assert data == section
    assert data["definitions"] == DEFINITIONS
    assert data["effort"]["alpha"]["alpha"] == pytest.approx(package_alpha(), abs=1e-12)
    assert (data["post_edits"], data["items"], data["annotators"]) == (ITEMS * 5 - 1, ITEMS, EDITORS)


def test_csv_has_the_figures_then_one_value_row_per_overlapping_post_edit(study, researcher_client):  # noqa: F811
    response = researcher_client.get(url(study.pk, "csv"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="Overlap-keystrokes-agreement.csv"'
    rows = _csv(response)
    assert list(rows[0]) == CSV_COLUMNS
    agreement = agreement_section(selection=selection_build(project=study, target="keystrokes"))
    figures = agreement_rows(agreement)
    assert [(r["figure"], r["of"], r["annotator"]) for r in rows[: len(figures)]] == [
        (f["figure"], f["of"], f.get("annotator", "")) for f in figures
    ]
    assert float(rows[0]["value"]) == pytest.approx(agreement["effort"]["alpha"]["alpha"], abs=1e-12)
    values = rows[len(figures) :]
    expected = [
        (f"s{i}", EDITORS[e], float(keystrokes_of(i, e))) for i in range(ITEMS) for e in range(5) if (i, e) != (5, 3)
    ]
    assert [(r["figure"], r["of"]) for r in values] == [("value", "keystrokes")] * len(expected)
    assert [(r["item"], r["annotator"], float(r["value"])) for r in values] == expected
    # The value rows are the reliability data: pivoted, the package gives the section's alpha.
    matrix = np.full((len(EDITORS), ITEMS), np.nan)
    for r in values:
        matrix[EDITORS.index(r["annotator"]), int(r["item"][1:])] = float(r["value"])
    alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert alpha == pytest.approx(agreement["effort"]["alpha"]["alpha"], abs=1e-12)


def test_the_download_reads_the_same_selection_query_as_the_report(study, researcher_client):  # noqa: F811
    query = "target=keystrokes&annotators=ed0&annotators=ed1"
    data = researcher_client.get(url(study.pk, "json", query)).json()
    assert (data["post_edits"], data["annotators"]) == (2 * ITEMS, ["ed0", "ed1"])
    section = agreement_section(
        selection=selection_build(project=study, target="keystrokes", annotators=["ed0", "ed1"])
    )
    assert data == section
    with_practice = researcher_client.get(url(study.pk, "json", "target=keystrokes&include_practice=1")).json()
    assert with_practice["items"] == ITEMS + 1
    # With no target the report's first one, as on the page.
    assert researcher_client.get(url(study.pk, "json", "")).json()["effort"]["target"] == "keystrokes"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("target=nope", "target"),
        ("target=active_time&idle_threshold=5", "an idle threshold does not apply"),
        ("target=keystrokes&annotators=nobody", "has no submitted post-edit in project"),
    ],
)
def test_a_bad_query_is_a_400_naming_it(study, researcher_client, query, message):  # noqa: F811
    for fmt in ("csv", "json"):
        response = researcher_client.get(url(study.pk, fmt, query))
        assert response.status_code == 400
        assert message in response.content.decode()


def test_readers_only_and_an_unknown_format_is_404(study, client, annotator_client, admin_client):  # noqa: F811
    assert annotator_client.get(url(study.pk, "json")).status_code == 403
    assert client.get(url(study.pk, "json")).status_code == 302
    assert admin_client.get(url(study.pk, "csv")).status_code == 200
    assert admin_client.get(url(study.pk, "xml")).status_code == 404
    assert admin_client.get(url(10**6, "json")).status_code == 404


def test_the_report_s_agreement_section_links_to_both(study, researcher_client):  # noqa: F811
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=keystrokes")
    body = page.content.decode()
    query = page.context["query"].replace("&", "&amp;")
    for fmt in ("json", "csv"):
        assert f'href="/research/{study.pk}/report/agreement.{fmt}?{query}" download' in body
