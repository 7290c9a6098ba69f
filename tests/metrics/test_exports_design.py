"""Exports carry the study design (document, position, condition, practice, origin) and leave practice out
unless asked, at every entry point: the function, the command, the metrics page's download and the API."""

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotations.models import PostEdit
from metrics.exports import ExportError, export_spec, export_stream, parse_flag
from tests.factories import ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

DESIGN = ["origin", "document", "document_position", "condition", "practice"]


@pytest.fixture
def study():
    project = ProjectFactory(name="designed")
    anna = UserFactory(username="anna", role="annotator")
    SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="warm-up",
        assignment__item__practice=True,
        assignment__annotator=anna,
        condition="pe",
    )
    SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="d1-1",
        assignment__item__document="=doc «1»",
        assignment__item__document_position=1,
        assignment__annotator=anna,
        condition="-ht",
    )
    SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="loose",
        assignment__annotator=anna,
        origin=PostEdit.IMPORTED,
    )
    return project


def rows(project, fmt: str, **options) -> list[dict]:
    data = b"".join(export_stream(export_spec(project=project, **options), fmt)).decode()
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data)))
    return [json.loads(line) for line in data.splitlines()]


def test_jsonl_carries_the_design_columns_and_leaves_practice_out(study):
    out = rows(study, "jsonl")
    assert [r["external_id"] for r in out] == ["d1-1", "loose"]
    assert [[r[c] for c in DESIGN] for r in out] == [
        ["live", "=doc «1»", 1, "-ht", False],
        ["imported", "", None, "", False],
    ]


def test_jsonl_includes_practice_when_asked(study):
    out = rows(study, "jsonl", include_practice=True)
    assert [r["external_id"] for r in out] == ["warm-up", "d1-1", "loose"]
    assert [out[0][c] for c in DESIGN] == ["live", "", None, "pe", True]


def test_csv_has_the_design_columns_after_origin_with_formulas_neutralised(study):
    out = rows(study, "csv", include_practice=True)
    header = list(out[0])
    assert header[header.index("origin") : header.index("origin") + 5] == DESIGN
    assert [[r[c] for c in DESIGN] for r in out] == [
        ["live", "", "", "pe", "true"],
        ["live", "'=doc «1»", "1", "'-ht", "false"],
        ["imported", "", "", "", "false"],
    ]


def test_parquet_types_the_design_columns(study):
    data = b"".join(export_stream(export_spec(project=study, include_practice=True), "parquet"))
    table = pq.read_table(io.BytesIO(data))
    assert {c: str(table.schema.field(c).type) for c in DESIGN} == {
        "origin": "string",
        "document": "string",
        "document_position": "int64",
        "condition": "string",
        "practice": "bool",
    }
    assert table.column("practice").to_pylist() == [True, False, False]
    assert table.column("document_position").to_pylist() == [None, 1, None]


def test_the_command_leaves_practice_out_unless_asked(study, tmp_path):
    target = tmp_path / "out.jsonl"
    out = io.StringIO()
    call_command("export", "--project", "designed", "--format", "jsonl", "--output", str(target), stdout=out)
    assert out.getvalue().startswith("wrote 2 rows")
    assert [json.loads(line)["external_id"] for line in target.read_text().splitlines()] == ["d1-1", "loose"]
    out = io.StringIO()
    call_command(
        "export",
        "--project",
        "designed",
        "--format",
        "jsonl",
        "--output",
        str(target),
        "--include-practice",
        stdout=out,
    )
    assert out.getvalue().startswith("wrote 3 rows")
    assert json.loads(target.read_text().splitlines()[0])["practice"] is True


def _downloaded_ids(response) -> list[str]:
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line)["external_id"] for line in body.splitlines()]


def test_the_page_download_takes_include_practice(study, researcher_client):
    url = reverse("metrics-export", kwargs={"project_id": study.pk})
    assert _downloaded_ids(researcher_client.get(url + "?format=jsonl")) == ["d1-1", "loose"]
    assert _downloaded_ids(researcher_client.get(url + "?format=jsonl&include_practice=1")) == [
        "warm-up",
        "d1-1",
        "loose",
    ]
    assert _downloaded_ids(researcher_client.get(url + "?format=jsonl&include_practice=false")) == ["d1-1", "loose"]


@pytest.mark.parametrize("value", ["yes please", "2", "\u202etrue", "t\x00rue", "1" * 5000, "[]"])
def test_the_page_download_refuses_odd_include_practice(study, researcher_client, value):
    url = reverse("metrics-export", kwargs={"project_id": study.pk})
    response = researcher_client.get(url, {"format": "csv", "include_practice": value})
    assert response.status_code == 400
    assert "include_practice: " in response.content.decode()  # the message, on a page
    assert "is not one of 1, 0, true, false, on, off" in response.content.decode()


def test_the_api_export_takes_include_practice(study, researcher_client):
    url = reverse("api-project-export", kwargs={"project_id": study.pk})
    assert _downloaded_ids(researcher_client.get(url + "?format=jsonl")) == ["d1-1", "loose"]
    assert _downloaded_ids(researcher_client.get(url + "?format=jsonl&include_practice=true")) == [
        "warm-up",
        "d1-1",
        "loose",
    ]


@pytest.mark.parametrize("value", ["maybe", "2", "\ufeff1", "\x00"])
def test_the_api_export_refuses_odd_include_practice(study, researcher_client, value):
    url = reverse("api-project-export", kwargs={"project_id": study.pk})
    response = researcher_client.get(url, {"format": "csv", "include_practice": value})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert "include_practice" in json.dumps(body)


def test_the_api_export_of_an_unknown_project_is_404(researcher_client):
    response = researcher_client.get(reverse("api-project-export", kwargs={"project_id": 987654}) + "?format=csv")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_parse_flag_names_the_parameter():
    assert [parse_flag(v, name="x") for v in ["", "0", "off", "FALSE", "1", " on ", "True"]] == [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    with pytest.raises(ExportError, match=r"^include_practice: 'y' is not one of"):
        parse_flag("y", name="include_practice")
