"""annotations.importers.detect: the format of an upload from its name and head, and the upload page using it."""

import csv
import gzip
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.importers import FORMATS
from annotations.importers.detect import HEAD_BYTES, NAMES, detect
from annotations.models import Item
from metrics.exports import export_spec, export_stream
from metrics.exports_events import EventExportSpec
from metrics.exports_idfx import post_edit_idfx, stream_idfx_zip
from tests.annotations.test_import_idfx import DATA as IDFX_DATA
from tests.annotations.test_import_page import NATINST_TASK
from tests.annotations.test_import_pet import HEADER, pet_row
from tests.factories import EditEventFactory, ProjectFactory, SubmittedPostEditFactory

PAGE = reverse("manage-import")
MAPPING = reverse("manage-import-mapping")
ITEMS20 = "id,source,mt_text,ref,note\n1,Der Hund.,The dog.,The dog.,x\n2,Die Katze.,The cat.,The cat.,y\n"
EDITEVAL_WRITER = '{"id": "0", "input": "a txt", "task_type": "fluency", "meta": []}\n'


def one(name: str, data: bytes | str):
    return detect([(name, data.encode() if isinstance(data, str) else data)])


# --------------------------------------------------------------------------- the pure function


@pytest.mark.parametrize(
    ("name", "data", "fmt", "label"),
    [
        ("items20.csv", ITEMS20, "table", "a CSV table (comma separated, 5 columns)"),
        ("items.tsv", "id\tmt\n1\tx\n", "table", "a TSV table (tab separated, 2 columns)"),
        ("items.txt", "id\tmt\n1\tx\n", "table", "a TSV table (tab separated, 2 columns); name it .tsv to import it"),
        ("ex.jsonl", EDITEVAL_WRITER, "editeval", "EditEval JSONL (4 keys on line 1)"),
        ("ex.jsonl", '{"id": 1, "input": "x", "edits": ["y"], "tasks": "t"}\n', "editeval", "EditEval JSONL (4 keys on line 1)"),
        ("rows.jsonl", '{"external_id": "a", "model_output": "b"}\n', "table", "a JSON Lines table (2 keys on line 1)"),
        ("task1.json", json.dumps(NATINST_TASK, indent=2), "natinst", "a Super-NaturalInstructions task file (JSON)"),
        ("task1.json", json.dumps(NATINST_TASK), "natinst", "a Super-NaturalInstructions task file (JSON)"),
        ("header", HEADER, "pet", "a PET study (a header file and 0 other files)"),
        ("a.tsv", "S\t<MT>\tPE\ttime\n", "pet", "a PET header (4 columns); select the post-editors' files too"),
        (
            "mqm_ted_ende.tsv",
            "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n",
            "mqm",
            "a WMT MQM TSV (10 columns: one row per error, spans in <v>)",
        ),
        ("log.idfx", gzip.decompress((IDFX_DATA / "J_il_1.idfx.gz").read_bytes()), "idfx", "an IDFX keystroke log (XML)"),
        ("x.parquet", b"PAR1\x15\x04", None, "a Parquet file (export it as CSV or JSON Lines to import it)"),
        ("x.zip", b"PK\x03\x04\x14\x00", None, "a ZIP archive (unpack it and import the files inside)"),
        ("p.jsonl", '{"id": "a", "prediction": "b"}\n', None, "a predictions file (id, prediction): give it as the Predictions of a natinst task file"),
        ("x.csv", b"\xff\xfe\x00a", None, "a binary file, not UTF-8 text"),
        ("x.csv", "  \n\n", None, "an empty file"),
        ("x.json", "[1, 2]", None, "a JSON array, not one object a line"),
        ("x.txt", "just words\n", None, "plain text with no columns (neither tabs nor commas on line 1)"),
        ("x.html", "<html><body>hi</body></html>", None, "an XML or HTML file that is not an IDFX log"),
    ],
)  # fmt: skip
def test_each_format_is_detected_and_labelled(name, data, fmt, label):
    detection = one(name, data)
    assert (detection.fmt, detection.label) == (fmt, label)


def test_a_pet_folder_is_its_header_among_the_files():
    files = [("README.md", b"# study"), ("header", HEADER.encode()), ("ann0", pet_row("d", 1, "a", "b").encode())]
    detection = detect(files)
    assert (detection.fmt, detection.label) == ("pet", "a PET study (a header file and 2 other files)")
    several = detect([("a.csv", b"x,y\n"), ("b.csv", b"x,y\n")])
    assert (several.fmt, several.label) == ("table", "2 files, the first a CSV table (comma separated, 2 columns)")


def test_the_hint_names_the_format_that_fits():
    detection = one("items20.csv", ITEMS20)
    assert detection.hint("editeval") == "this file looks like a CSV table (comma separated, 5 columns); choose 'Table'"
    assert detection.hint("table") == ""
    assert one("x.parquet", b"PAR1").hint("table") == (
        "this file looks like a Parquet file (export it as CSV or JSON Lines to import it)"
    )


def test_a_character_cut_at_the_head_is_no_reason_to_call_the_file_binary():
    text = ("id,text\n" + "1,é\n" * HEAD_BYTES).encode()
    assert text[HEAD_BYTES - 1 : HEAD_BYTES + 1] != b"\n"
    assert one("big.csv", text).fmt == "table"
    assert one(
        "deep.jsonl", '{"id": "a", "input": "x", "tasks": "t", "meta": ' + "[" * 5000 + "]" * 5000 + "}"
    ).fmt == ("editeval")


@settings(max_examples=300, deadline=None)
@given(
    files=st.lists(
        st.tuples(st.sampled_from(["a.csv", "a.tsv", "a.jsonl", "header", "x", "t.json", "l.idfx", ""]), st.binary()),
        max_size=3,
    )
)
def test_any_bytes_are_a_detection_never_an_error(files):
    detection = detect(files)
    assert detection.fmt is None or detection.fmt in FORMATS
    assert detection.label
    assert isinstance(detection.hint("editeval"), str)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.lists(
            st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=4,
    ).filter(lambda rows: all(len(row) == len(rows[0]) for row in rows)),
    kind=st.sampled_from(["csv", "tsv"]),
)
def test_a_table_written_by_csv_writer_is_detected_with_its_columns(rows, kind):
    header = [f"col{n}" for n in range(len(rows[0]))] if len(rows[0]) > 1 else ["a", "b"]
    rows = [row + [""] * (len(header) - len(row)) for row in rows]
    out = io.StringIO()
    csv.writer(out, dialect="excel-tab" if kind == "tsv" else "excel").writerows([header, *rows])
    detection = one(f"t.{kind}", out.getvalue())
    assert detection.fmt == "table"
    assert f"{len(header)} columns" in detection.label


# --------------------------------------------------------------------------- the exporters' files


@pytest.fixture
def exported(db):
    post_edit = SubmittedPostEditFactory(text="The dog.", assignment__item__model_output="The dgo.")
    EditEventFactory(post_edit=post_edit, seq=0, kind="keydown", key="x", t_ms=10)
    return post_edit.assignment.item.project


@pytest.mark.django_db
def test_the_exporters_files_are_detected_as_what_they_are(exported):
    def export(fmt):
        return b"".join(export_stream(export_spec(project=exported), fmt))

    csv_export, jsonl_export = one("p.csv", export("csv")), one("p.jsonl", export("jsonl"))
    assert csv_export.fmt == jsonl_export.fmt == "table"
    assert csv_export.label.startswith("a CSV table (comma separated, ")
    assert one("p.parquet", export("parquet")).fmt is None
    (name, document), *_ = post_edit_idfx(EventExportSpec(exported))
    assert (one(name, document).fmt, one(name, document).label) == ("idfx", "an IDFX keystroke log (XML)")
    assert one("logs.zip", b"".join(stream_idfx_zip(EventExportSpec(exported)))).label.startswith("a ZIP archive")


# --------------------------------------------------------------------------- the upload page


def upload(name: str, text: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text)


@pytest.mark.django_db
def test_the_page_preselects_detection_and_shows_the_guess_when_a_file_is_chosen(admin_client):
    page = admin_client.get(PAGE).content.decode()
    assert '<option value="auto" selected>Detect from the file</option>' in page

    partial = admin_client.post(MAPPING, {"fmt": "auto", "files": upload("items20.csv", ITEMS20)}).content.decode()

    assert "<strong>Detected:</strong> a CSV table (comma separated, 5 columns): it is read as Table" in partial
    assert "Column mapping for items20.csv" in partial
    assert '<option value="mt_text">mt_text</option>' in partial
    chosen = admin_client.post(MAPPING, {"fmt": "editeval", "files": upload("items20.csv", ITEMS20)}).content.decode()
    assert "not the format chosen: choose “Table” or “Detect from the file”" in chosen
    assert "Column mapping" not in chosen


@pytest.mark.django_db
def test_detection_imports_with_the_detected_format(admin_client):
    project = ProjectFactory()

    response = admin_client.post(
        PAGE,
        {"project": project.pk, "fmt": "auto", "files": upload("items20.csv", ITEMS20), "map_model_output": "mt_text"},
    )

    assert response.status_code == 200, response.context["form"].errors
    assert response.context["report"].items_created == 2
    assert (
        "Read as Table: the upload looked like a CSV table (comma separated, 5 columns)." in response.content.decode()
    )
    assert sorted(project.items.values_list("model_output", flat=True)) == ["The cat.", "The dog."]


@pytest.mark.django_db
def test_a_wrong_format_says_which_one_fits(admin_client):
    project = ProjectFactory()

    response = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "editeval", "files": upload("items20.csv", ITEMS20)}
    )

    assert response.status_code == 400
    (error,) = response.context["form"].errors["files"]
    assert error.startswith("Nothing was imported. items20.csv, line 1: invalid JSON")
    assert error.endswith(" - this file looks like a CSV table (comma separated, 5 columns); choose 'Table'.")
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_an_undetectable_file_under_auto_asks_for_a_format(admin_client):
    project = ProjectFactory()

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "auto", "files": upload("x.parquet", b"PAR1xx")})

    assert response.status_code == 400
    assert response.context["form"].errors["fmt"] == [
        "Cannot tell the format: this file looks like a Parquet file (export it as CSV or JSON Lines to import it); "
        "choose one."
    ]


@pytest.mark.django_db
def test_after_an_error_the_page_reoffers_the_upload_and_keeps_the_mapping(admin_client):
    project = ProjectFactory()
    fields = {"project": project.pk, "fmt": "auto", "files": upload("items20.csv", ITEMS20), "map_source": "source"}

    failed = admin_client.post(PAGE, fields)  # no model_output mapped

    html = failed.content.decode()
    assert failed.status_code == 400
    assert "Nothing was imported. The page cannot keep the file you chose" in html
    assert '<a href="#id_files">choose the file again</a>' in html
    assert "Column mapping for items20.csv" not in html  # no mapping that looks ready for a file that is gone
    assert "the columns of items20.csv as you uploaded it: choose the file again to import" in html
    assert '<option value="source" selected>source</option>' in html  # the choice made is kept
    assert "its row in the upload page&#x27;s Column mapping" in html
    again = admin_client.post(PAGE, {**fields, "files": upload("items20.csv", ITEMS20), "map_model_output": "mt_text"})
    assert again.status_code == 200
    assert again.context["report"].items_created == 2
    assert "The page cannot keep the file" not in again.content.decode()


def test_every_format_has_a_name_as_the_format_list_starts_it():
    assert set(NAMES) == set(FORMATS)
    assert all(FORMATS[fmt].lower().startswith(name.lower().split()[0]) for fmt, name in NAMES.items())
