"""The WMT MQM TSV: import as items and finished evaluations, scores as WMT publishes them, export back.

The expected scores are computed by hand from WMT's weights (major 5, minor 1, minor Fluency/Punctuation
0.1, Non-translation 25, critical as major) in the comments beside each row.
"""

import io

import pytest
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.importers import ImportDataError, import_items, mqm
from annotations.importers.base import InputFile
from annotations.models import ErrorSpan, Evaluation, Item, Project
from annotations.typology import MQM_CORE
from metrics.exports_mqm import avg_seg_score_rows, mqm_export_stream
from metrics.quality_report import mqm_summary

HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n"
ROWS = [
    # sysA seg 1, rater1: major 5 + minor punctuation 0.1 = 5.1; rater2: none, 0 -> segment 2.55
    "sysA\tdoc1\t1\t1\trater1\tThe cat sat.\tDie <v>Katze</v> saß.\tAccuracy/Mistranslation\tMajor\twrong animal",
    "sysA\tdoc1\t1\t1\trater1\tThe cat sat.\tDie Katze saß<v>.</v>\tFluency/Punctuation\tMinor\t",
    "sysA\tdoc1\t1\t1\trater2\tThe cat sat.\tDie Katze saß.\tNo-error\tNo-error\t",
    # sysB seg 1, rater1: Non-translation 25 (whatever its severity)
    "sysB\tdoc1\t1\t1\trater1\tThe cat sat.\tLe chat.\tNon-translation\tMajor\t",
    # sysA seg 2, rater1: an omission marked in the source, minor 1
    "sysA\tdoc1\t1\t2\trater1\tIt was <v>very</v> late.\tEs war spät.\tAccuracy/Omission\tMinor\t",
    # sysB seg 2, rater2: critical as major 5, plus overlapping minor style 1 -> 6
    "sysB\tdoc1\t1\t2\trater2\tIt was very late.\tEs war <v>sehr spät</v>.\tTerminology/Inappropriate for context"
    "\tCritical\t",
    "sysB\tdoc1\t1\t2\trater2\tIt was very late.\tEs war sehr <v>spät</v>.\tStyle/Awkward\tMinor\t",
]
TSV = HEADER + "\n".join(ROWS) + "\n"
EXPECTED = {("sysA", "1"): 2.55, ("sysB", "1"): 25.0, ("sysA", "2"): 1.0, ("sysB", "2"): 6.0}


def _import(tmp_path, text: str = TSV, project: str = "wmt", **kwargs):
    path = tmp_path / "mqm.tsv"
    path.write_text(text, encoding="utf-8")
    return import_items(project=project, fmt="mqm", path=path, create_project=True, **kwargs), path


@pytest.mark.django_db
def test_import_stores_items_outputs_evaluations_and_exact_spans(tmp_path):
    report, _ = _import(tmp_path)
    assert (report.items_created, report.evaluations_created, report.error_spans_created) == (2, 5, 6)
    first = Item.objects.get(external_id="1")
    assert (first.source, first.document, first.document_position) == ("The cat sat.", "doc1", 1)
    assert first.outputs == {"sysA": "Die Katze saß.", "sysB": "Le chat."}
    assert first.meta == {"doc_id": "1"}
    spans = list(
        ErrorSpan.objects.filter(evaluation__item=first, evaluation__system="sysA").values_list(
            "side", "start", "end", "category", "severity", "comment"
        )
    )
    assert spans == [
        ("target", 4, 9, "Accuracy/Mistranslation", "major", "wrong animal"),
        ("target", 13, 14, "Fluency/Punctuation", "minor", ""),
    ]
    assert "Die Katze saß."[4:9] == "Katze"
    omission = ErrorSpan.objects.get(category="Accuracy/Omission")
    assert (omission.side, omission.start, omission.end) == ("source", 7, 11)
    assert Item.objects.get(external_id="2").source[7:11] == "very"
    assert Evaluation.objects.filter(spans__isnull=True).count() == 1  # rater2's No-error
    assert set(Evaluation.objects.values_list("status", "origin").distinct()) == {("submitted", "imported")}


@pytest.mark.django_db
def test_segment_scores_are_wmt_s_in_its_sign_and_format(tmp_path):
    _import(tmp_path)
    rows = avg_seg_score_rows(Project.objects.get(name="wmt"))
    assert rows == [
        (system, f"{-EXPECTED[(system, seg)]:.6f}", seg) for system, seg in sorted(EXPECTED, key=lambda k: (k[0], k[1]))
    ]
    out = io.StringIO()
    call_command("analyze", "--project", "wmt", "--mqm", "--format", "tsv", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "system\tmqm_avg_score\tseg_id"
    assert lines[1:] == ["sysA\t-2.550000\t1", "sysA\t-1.000000\t2", "sysB\t-25.000000\t1", "sysB\t-6.000000\t2"]


@pytest.mark.django_db
def test_summary_means_per_system_and_rater(tmp_path):
    _import(tmp_path)
    summary = mqm_summary(Project.objects.get(name="wmt"))
    assert summary["systems"]["sysA"]["mean"] == pytest.approx((2.55 + 1.0) / 2)
    assert summary["systems"]["sysB"]["mean"] == pytest.approx((25 + 6) / 2)
    # rater1: 5.1, 25, 1 over three ratings; rater2: 0 and 6
    assert summary["raters"]["rater1"]["mean"] == pytest.approx((5.1 + 25 + 1) / 3)
    assert summary["raters"]["rater2"]["mean"] == pytest.approx(3.0)
    assert summary["raters"]["rater2"]["n"] == 2
    # sysA's segment 1 is the one output rated twice: rater1 marked 6 characters, rater2 none
    agreement = summary["agreement"]
    assert (agreement["units"], agreement["pairs"], agreement["char_f1"]) == (1, 1, 0.0)
    out = io.StringIO()
    call_command("analyze", "--project", "wmt", "--mqm", stdout=out)
    assert "sysA" in out.getvalue() and "character-level F1                 0.000" in out.getvalue()


@pytest.mark.django_db
def test_configured_weights_change_the_scores(tmp_path):
    Project.objects.create(name="wmt", quality={"weights": {"critical": 10, "categories": {}}})
    _import(tmp_path)
    scores = dict(((s, g), v) for s, v, g in avg_seg_score_rows(Project.objects.get(name="wmt")))
    assert scores[("sysA", "1")] == f"{-(5 + 1) / 2:.6f}"  # punctuation weighs 1 without its override
    assert scores[("sysB", "2")] == f"{-11:.6f}"


@pytest.mark.django_db
def test_export_round_trips_the_file_and_reimport_skips(tmp_path):
    _, path = _import(tmp_path)
    project = Project.objects.get(name="wmt")
    assert b"".join(mqm_export_stream(project)) == path.read_bytes()
    out = tmp_path / "out.tsv"
    call_command("export", "--project", "wmt", "--format", "mqm", "--output", str(out), stdout=io.StringIO())
    assert out.read_bytes() == path.read_bytes()
    again = import_items(project="wmt", fmt="mqm", path=out)
    assert (again.items_skipped, again.evaluations_created, again.evaluations_skipped) == (2, 0, 5)


@pytest.mark.django_db
def test_an_unclosed_final_mark_runs_to_the_end_and_exports_as_it_came(tmp_path):
    row = "sysA\tdoc1\t1\t1\trater1\tThe cat sat.\tDie Katze saß. <v>?\tFluency/Punctuation\tMinor\t"
    report, path = _import(tmp_path, HEADER + row + "\n")
    assert any("without </v>" in note and "line 2" in note for note in report.notes)
    span = ErrorSpan.objects.get()
    assert (span.start, span.end, span.open_end) == (15, 16, True)
    assert b"".join(mqm_export_stream(Project.objects.get(name="wmt"))) == path.read_bytes()


BAD = [
    ("sysA\tdoc1\t1\t1\tr1\ts\tt\tAccuracy/Mistranslation\tSevere\t", "severity", "is not one of"),
    ("sysA\tdoc1\t1\t1\tr1\ts\tt\tAccuracy/Made-up\tMajor\t", "category", "not in the project's typology"),
    ("sysA\tdoc1\t1\t1\tr1\ts\tt</v>\tOther\tMajor\t", "target", "without <v>"),
    ("sysA\tdoc1\t1\t1\tr1\ts\t</v>t<v>\tOther\tMajor\t", "target", "before <v>"),
    ("sysA\tdoc1\t1\t1\tr1\ts\t<v>a</v><v>b</v>\tOther\tMajor\t", "target", "at most one span"),
    ("sysA\tdoc1\t1\t1\tr1\t<v>s</v>\t<v>t</v>\tOther\tMajor\t", "target", "both source and target"),
    ("sysA\tdoc1\t1\t1\tr1\ts\tt\tNo-error\tMajor\t", "severity", "No-error"),
    ("sysA\tdoc1\t1\t1\t\ts\tt\tOther\tMajor\t", "rater", "must not be empty"),
    ("sysA\tdoc1\t1\t1\tr1\ts\tt\tOther\tMajor", None, "has 9 columns"),
    ("sysA\tdoc1\t1\t1\tr1\ts\tother text\tOther\tMajor\t", "target", "differs from line 2"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("row", "field", "message"), BAD)
def test_bad_rows_name_file_line_field_and_store_nothing(tmp_path, row, field, message):
    good = "sysA\tdoc1\t1\t1\tr1\ts\tt\tOther\tMajor\t"
    with pytest.raises(ImportDataError) as caught:
        _import(tmp_path, HEADER + good + "\n" + row + "\n")
    error = caught.value
    assert (error.file, error.line, error.field) == (str(tmp_path / "mqm.tsv"), 3, field)
    assert message in error.message
    assert (Project.objects.count(), Item.objects.count(), Evaluation.objects.count()) == (0, 0, 0)


@pytest.mark.django_db
def test_a_million_columns_are_refused_by_line(tmp_path):
    wide = "\t".join(["x"] * 1_000_000)
    with pytest.raises(ImportDataError) as header:
        _import(tmp_path, wide + "\n")
    assert header.value.line == 1 and "1,000,000 columns" not in header.value.message  # cut at 11
    assert "11 columns" in header.value.message
    with pytest.raises(ImportDataError) as row:
        _import(tmp_path, HEADER + wide + "\n")
    assert (row.value.line, row.value.message) == (2, "has 11 or more columns; the header has 10")
    assert Evaluation.objects.count() == 0


@pytest.mark.django_db
def test_a_category_the_project_adds_imports(tmp_path):
    Project.objects.create(name="wmt", quality={"categories": [*MQM_CORE, "Fluency/Display"]})
    report, _ = _import(tmp_path, HEADER + "sysA\tdoc1\t1\t1\tr1\ts\t<v>t</v>\tFluency/Display\tMinor\t\n")
    assert report.error_spans_created == 1


CELL = st.lists(st.sampled_from(["a", "ü", " ", "<v>", "</v>", '"', "\t", "\r", "<", ">"]), max_size=12).map("".join)


@settings(max_examples=200, deadline=None)
@given(cells=st.lists(CELL, min_size=10, max_size=12), severity=st.sampled_from(["Major", "minor", "x", "No-error"]))
def test_any_row_parses_or_is_refused_by_line(cells, severity):
    cells[8] = severity
    text = HEADER + "\t".join(cells) + "\n"
    try:
        plan = mqm.parse(InputFile(name="h.tsv", data=text.encode()))
    except ImportDataError as exc:
        assert exc.file == "h.tsv" and exc.line in (1, 2)
        return
    for rating in plan.evaluations:
        for error in rating.errors:
            text_of = rating.text if error.side == "target" else plan.items[0].source
            assert error.start is None or 0 <= error.start <= error.end <= len(text_of)


@pytest.mark.django_db
def test_the_import_page_imports_mqm_for_admins_only(admin_client, researcher_client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    project = Project.objects.create(name="page")

    def post(client, text):
        files = SimpleUploadedFile("mqm.tsv", text.encode(), content_type="text/tab-separated-values")
        return client.post(reverse("manage-import"), {"project": project.pk, "fmt": "mqm", "files": files})

    assert post(researcher_client, TSV).status_code == 403
    bad = post(admin_client, HEADER + "sysA\tdoc1\t1\t1\tr1\ts\tt\tOther\tSevere\t\n")
    assert bad.status_code == 400 and "mqm.tsv, line 2, field &#x27;severity&#x27;" in bad.content.decode()
    assert Evaluation.objects.count() == 0
    good = post(admin_client, TSV)
    assert good.status_code == 200 and "Evaluations created (error spans)</th><td>5 (6)" in good.content.decode()


@pytest.mark.django_db
def test_the_scores_api_answers_researchers(tmp_path, researcher_client, annotator_client):
    _import(tmp_path)
    project = Project.objects.get(name="wmt")
    url = f"/api/projects/{project.pk}/mqm/"
    assert annotator_client.get(url).status_code == 403
    answer = researcher_client.get(url).json()
    assert answer["systems"]["sysB"]["mean"] == pytest.approx(15.5)
    assert answer["agreement"]["pairs"] == 1
    Project.objects.filter(pk=project.pk).update(quality={"weights": {"major": "heavy"}})
    refused = researcher_client.get(url)
    assert refused.status_code == 400 and refused.json()["code"] == "typology_malformed"
