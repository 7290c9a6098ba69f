"""The per-document summary: the pure function on a hand-made frame, and the same numbers through the
report, the analyze command, the CSV/JSON download, the analysis API and the report page."""

import csv
import io
import json

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotations.models import PostEdit
from metrics.analysis import word_counts
from metrics.analysis.documents import document_columns, document_rows, document_summary
from metrics.analysis_options import selection_build
from metrics.reports import report_build
from metrics.selection_data import clear_cache
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

EFFORTS = ["wall_ms", "active_ms", "keystrokes", "allkeys"]


def frame(rows: list[tuple]) -> pd.DataFrame:
    columns = ["document", "external_id", "annotator", "condition", "practice", "edited_words", *EFFORTS]
    return pd.DataFrame.from_records(rows, columns=columns)


HAND = [
    ("d1", "d1-1", "anna", "pe", False, 3, 10000, 8000, 10, 12),
    ("d1", "d1-1", "bob", "ht", False, 2, 20000, 15000, 30, 33),
    ("d1", "d1-2", "anna", "pe", False, 4, 6000, 5000, 4, 4),
    ("d2", "d2-1", "bob", "ht", False, 1, None, None, 7, 9),
    ("", "loose", "anna", "", False, 5, 1000, 1000, 1, 1),
    ("warm", "p1", "anna", "", True, 2, 99000, 99000, 99, 99),
]

D1 = {
    "document": "d1",
    "segments": 2,
    "post_edits": 3,
    "annotators": 2,
    "conditions": "ht pe",
    "words": 9,
    "wall_ms_total": 36000.0,
    "wall_ms_mean": 12000.0,
    "wall_ms_n": 3,
    "active_ms_total": 28000.0,
    "active_ms_mean": 28000 / 3,
    "active_ms_n": 3,
    "keystrokes_total": 44.0,
    "keystrokes_mean": 44 / 3,
    "keystrokes_n": 3,
    "allkeys_total": 49.0,
    "allkeys_mean": 49 / 3,
    "allkeys_n": 3,
}
D2 = {
    "document": "d2",
    "segments": 1,
    "post_edits": 1,
    "annotators": 1,
    "conditions": "ht",
    "words": 1,
    "wall_ms_total": None,
    "wall_ms_mean": None,
    "wall_ms_n": 0,
    "active_ms_total": None,
    "active_ms_mean": None,
    "active_ms_n": 0,
    "keystrokes_total": 7.0,
    "keystrokes_mean": 7.0,
    "keystrokes_n": 1,
    "allkeys_total": 9.0,
    "allkeys_mean": 9.0,
    "allkeys_n": 1,
}


def test_the_summary_counts_each_document_by_hand():
    summary = document_summary(frame(HAND))
    assert document_rows(summary) == [pytest.approx(D1), pytest.approx(D2)]
    assert (summary.without_document, summary.practice_left_out) == (1, 1)
    assert summary.messages == [
        "1 post-edit of practice items left out",
        "1 post-edit of items without a document: in no row",
    ]
    assert document_columns(summary.efforts) == list(D1)


def test_practice_documents_come_back_when_asked():
    summary = document_summary(frame(HAND), include_practice=True)
    assert [d.document for d in summary.documents] == ["d1", "d2", "warm"]
    warm = summary.documents[2]
    assert (warm.segments, warm.post_edits, warm.words, warm.effort["wall_ms"].total) == (1, 1, 2, 99000.0)
    assert summary.practice_left_out == 0


def test_an_empty_or_documentless_frame_says_so():
    summary = document_summary(frame([("", "x", "anna", "", False, 1, 5, 5, 5, 5)]))
    assert summary.documents == []
    assert summary.messages[-1] == "no post-edit of this selection belongs to a document"
    assert document_summary(frame([])).documents == []
    with pytest.raises(ValueError, match="no column 'document'"):
        document_summary(frame([]).drop(columns=["document"]))


def test_words_are_the_edited_texts_whitespace_separated_words():
    texts = pd.Series(["a b\tc\nd", "  ", "", None, "مرحبا بالعالم", "一二三", "a\u3000b"])
    assert word_counts(texts).tolist() == [4, 0, 0, 0, 2, 1, 2]
    summary = document_summary(frame([("d", "x", "anna", "", False, 7, 1, 1, 1, 1)]))
    assert summary.documents[0].words == 7


# --- the same study through the ORM side ----------------------------------------------------------------------------


@pytest.fixture
def study(db):
    project = ProjectFactory(name="docs study")
    anna = UserFactory(username="anna", role="annotator")
    bob = UserFactory(username="bob", role="annotator")
    items = {
        "d1-1": ItemFactory(project=project, external_id="d1-1", document="d1", document_position=1),
        "d1-2": ItemFactory(project=project, external_id="d1-2", document="d1", document_position=2),
        "d2-1": ItemFactory(project=project, external_id="d2-1", document="d2", document_position=1),
        "loose": ItemFactory(project=project, external_id="loose"),
        "p1": ItemFactory(project=project, external_id="p1", document="warm", document_position=1, practice=True),
    }
    users = {"anna": anna, "bob": bob}
    for _document, external_id, who, condition, _, _, wall, active, keys, allkeys in HAND:
        text = {"d1-1": "one two three" if who == "anna" else "one two", "d1-2": "a b c d", "d2-1": "x"}
        SubmittedPostEditFactory(
            assignment__item=items[external_id],
            assignment__annotator=users[who],
            condition=condition,
            text=text.get(external_id, "v w x y z" if external_id == "loose" else "p q"),
            wall_ms=wall,
            active_ms=active,
            keystrokes=keys,
            allkeys=allkeys,
            origin=PostEdit.IMPORTED if wall is None else PostEdit.LIVE,
        )
    clear_cache()
    return project


@pytest.mark.django_db
def test_the_report_carries_the_documents_and_leaves_practice_out(study):
    report = report_build(selection=selection_build(project=study, target="keystrokes"), use_cache=False)
    assert document_rows(report.documents) == [pytest.approx(D1), pytest.approx(D2)]
    assert report.to_dict()["documents"]["documents"][0]["effort"]["wall_ms"] == {
        "total": 36000.0,
        "mean": 12000.0,
        "n": 3,
    }


@pytest.mark.django_db
def test_a_project_without_documents_has_no_documents_field():
    project = ProjectFactory(name="flat")
    SubmittedPostEditFactory(assignment__item__project=project)
    report = report_build(selection=selection_build(project=project, target="keystrokes"), use_cache=False)
    assert report.documents is None and report.to_dict()["documents"] is None


@pytest.mark.django_db
def test_analyze_by_document_prints_csv_json_and_a_table(study):
    out = io.StringIO()
    call_command(
        "analyze", "--project", "docs study", "--target", "keystrokes", "--by-document", "--format", "csv", stdout=out
    )
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["document"] for r in rows] == ["d1", "d2"]
    assert (rows[0]["words"], rows[0]["keystrokes_total"], rows[0]["conditions"], rows[1]["wall_ms_total"]) == (
        "9",
        "44.0",
        "ht pe",
        "",
    )
    out = io.StringIO()
    call_command(
        "analyze", "--project", "docs study", "--target", "wall_time", "--by-document", "--format", "json", stdout=out
    )
    data = json.loads(out.getvalue())
    assert data["documents"][1]["effort"]["keystrokes"] == {"total": 7.0, "mean": 7.0, "n": 1}
    assert (data["without_document"], data["practice_left_out"]) == (1, 1)
    out = io.StringIO()
    call_command("analyze", "--project", "docs study", "--target", "keystrokes", "--by-document", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["document", "segments", "post-edits", "annotators", "conditions", "words"] + [
        word for column in EFFORTS for word in (column, "total", column, "mean")
    ]
    assert lines[1].split() == [
        "d1",
        "2",
        "3",
        "2",
        "ht,pe",
        "9",
        "36000",
        "12000.0",
        "28000",
        "9333.3",
        "44",
        "14.7",
        "49",
        "16.3",
    ]
    assert "  - 1 post-edit of practice items left out" in lines


@pytest.mark.django_db
def test_analyze_by_document_needs_no_target(study):
    def printed(*target: str) -> str:
        out = io.StringIO()
        call_command("analyze", "--project", "docs study", *target, "--by-document", "--format", "csv", stdout=out)
        return out.getvalue()

    without = printed()
    assert without.splitlines()[1].startswith("d1,2,3,2,")
    assert without == printed("--target", "keystrokes") == printed("--target", "active_time")


@pytest.mark.django_db
def test_analyze_without_target_says_only_by_document_goes_without_it(study):
    with pytest.raises(
        CommandError, match=r"--target is required \(one of: wall_time, active_time, keystrokes, allkeys\)"
    ):
        call_command("analyze", "--project", "docs study")
    with pytest.raises(CommandError, match="target .* is not one of: wall_time, active_time, keystrokes, allkeys"):
        call_command("analyze", "--project", "docs study", "--target", "ke\u0301ystrokes", "--by-document")
    with pytest.raises(CommandError, match="active_time"):  # recomputing idle time needs the target that uses it
        call_command("analyze", "--project", "docs study", "--by-document", "--idle-threshold", "30")


@pytest.mark.django_db
def test_analyze_by_document_refuses_a_project_without_documents():
    ProjectFactory(name="flat")
    with pytest.raises(CommandError, match="no item of project 'flat' belongs to a document"):
        call_command("analyze", "--project", "flat", "--target", "keystrokes", "--by-document")


@pytest.mark.django_db
def test_the_download_gives_the_same_rows_as_csv_and_json(study, researcher_client):
    url = reverse("metrics-report-documents", kwargs={"project_id": study.pk, "fmt": "csv"})
    response = researcher_client.get(url, {"target": "keystrokes"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="docs_study-documents.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["document"], r["segments"], r["post_edits"], r["active_ms_total"]) for r in rows] == [
        ("d1", "2", "3", "28000.0"),
        ("d2", "1", "1", ""),
    ]
    url = reverse("metrics-report-documents", kwargs={"project_id": study.pk, "fmt": "json"})
    data = researcher_client.get(url, {"target": "keystrokes"}).json()
    assert data["selection"]["project"] == "docs study"
    assert [d["document"] for d in data["documents"]] == ["d1", "d2"]


@pytest.mark.django_db
def test_the_download_of_a_project_without_documents_is_a_header_and_a_message(researcher_client):
    project = ProjectFactory(name="flat")
    SubmittedPostEditFactory(assignment__item__project=project)
    url = reverse("metrics-report-documents", kwargs={"project_id": project.pk, "fmt": "csv"})
    body = researcher_client.get(url).content.decode()
    assert body.splitlines() == [",".join(document_columns(EFFORTS))]
    url = reverse("metrics-report-documents", kwargs={"project_id": project.pk, "fmt": "json"})
    assert researcher_client.get(url).json()["messages"] == [
        "1 post-edit of items without a document: in no row",
        "no post-edit of this selection belongs to a document",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "status", "fragment"),
    [
        ({"target": "nope"}, 400, "target 'nope' is not one of"),
        ({"target": "keystrokes", "annotators": "zoë\u202e"}, 400, "has no submitted post-edit"),
        ({"target": "keystrokes", "origin": "x" * 10000}, 400, "origin"),
        ({"target": "keystrokes", "annotators": "a\x00b"}, 400, "NUL"),
    ],
)
def test_the_download_refuses_bad_selections_clearly(study, researcher_client, query, status, fragment):
    url = reverse("metrics-report-documents", kwargs={"project_id": study.pk, "fmt": "csv"})
    response = researcher_client.get(url, query)
    assert response.status_code == status
    assert fragment in response.content.decode()


@pytest.mark.django_db
def test_the_download_of_unknown_projects_and_formats_is_404(study, researcher_client):
    assert researcher_client.get(f"/research/{study.pk + 1000}/report/documents.csv").status_code == 404
    assert researcher_client.get(f"/research/{study.pk}/report/documents.xlsx").status_code == 404
    assert researcher_client.get(f"/research/{2**70}/report/documents.csv").status_code == 404


@pytest.mark.django_db
def test_the_api_has_the_documents_field(study, researcher_client):
    url = reverse("api-project-analysis", kwargs={"project_id": study.pk})
    data = researcher_client.get(url, {"target": "allkeys", "mixed_models": "false"}).json()
    documents = data["documents"]
    assert [d["document"] for d in documents["documents"]] == ["d1", "d2"]
    assert documents["documents"][0]["effort"]["allkeys"] == {"total": 49.0, "mean": pytest.approx(49 / 3), "n": 3}
    assert documents["documents"][0]["conditions"] == ["ht", "pe"]
    assert (documents["without_document"], documents["practice_left_out"]) == (1, 1)


@pytest.mark.django_db
def test_the_report_page_shows_documents_only_for_projects_with_documents(study, researcher_client):
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": study.pk}), {"target": "keystrokes"})
    html = page.content.decode()
    assert page.status_code == 200
    assert '<h2 id="documents">Documents</h2>' in html
    assert '<th scope="row">d1</th>' in html and '<th scope="row">d2</th>' in html
    assert '<th scope="row">warm</th>' not in html
    assert f"/research/{study.pk}/report/documents.csv?" in html
    flat = ProjectFactory(name="flat")
    SubmittedPostEditFactory(assignment__item__project=flat)
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": flat.pk}), {"target": "keystrokes"})
    assert page.status_code == 200
    assert 'id="documents"' not in page.content.decode()


@pytest.mark.django_db
def test_document_names_are_escaped_on_the_page_and_neutralised_in_csv(researcher_client):
    project = ProjectFactory(name="hostile")
    SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__document="=1+1<script>",
        assignment__item__document_position=0,
    )
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}))
    assert "=1+1&lt;script&gt;" in page.content.decode() and "=1+1<script>" not in page.content.decode()
    url = reverse("metrics-report-documents", kwargs={"project_id": project.pk, "fmt": "csv"})
    rows = list(csv.DictReader(io.StringIO(researcher_client.get(url).content.decode())))
    assert rows[0]["document"] == "'=1+1<script>"


@pytest.mark.django_db
def test_practice_documents_come_back_with_include_practice(study, researcher_client):
    out = io.StringIO()
    call_command(
        "analyze",
        *("--project", "docs study", "--target", "keystrokes", "--by-document", "--format", "json"),
        "--include-practice",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert [d["document"] for d in data["documents"]] == ["d1", "d2", "warm"]
    assert data["practice_left_out"] == 0
    url = reverse("metrics-report-documents", kwargs={"project_id": study.pk, "fmt": "json"})
    data = researcher_client.get(url, {"target": "keystrokes", "include_practice": "1"}).json()
    assert data["documents"][2]["effort"]["wall_ms"] == {"total": 99000.0, "mean": 99000.0, "n": 1}
