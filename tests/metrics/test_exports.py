import csv
import io
import json
import types

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from annotations.models import EFFORT_FIELDS, PostEdit
from generation.selectors import PROVENANCE_COLUMNS
from metrics.exports import export_spec, export_stream, neutralise_formula
from tests.factories import MetricValueFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

TEXT_COLUMNS = ["external_id", "annotator", "original", "edited", "source", "task_type", "instruction", "origin"]
DESIGN_COLUMNS = ["document", "document_position", "condition", "practice"]
QUALITY_COLUMNS = ["uncorroborated_keys", "flags", "definition_version"]
PROVENANCE = list(
    PROVENANCE_COLUMNS
)  # empty here: no LLM made these texts (tests/generation/test_export_provenance.py)
METRIC_COLUMNS = ["compression", "compression__with_references", "levenshtein", "levenshtein__with_references"]


@pytest.fixture
def project():
    project = ProjectFactory(name="study", instructions=["Fix grammar errors"])
    anna = UserFactory(username="anna", role="annotator")
    first = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="s1",
        assignment__item__source="Das ist ein Test.",
        assignment__item__task_type="mt",
        assignment__annotator=anna,
        text="This is a test.",
        wall_ms=12000,
        active_ms=10000,
        keystrokes=6,
        allkeys=9,
        uncorroborated_keys=3,
        flags=["wall_clipped", "keys_uncorroborated"],
        definition_version="2",
    )
    second = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="=HYPERLINK(1)",
        assignment__item__model_output="-5 degrees",
        assignment__item__instruction="Shorten it",
        assignment__annotator=anna,
        origin=PostEdit.IMPORTED,
        text="@cmd",
        wall_ms=None,
        keystrokes=None,
        allkeys=None,
    )
    MetricValueFactory(post_edit=first, metric="levenshtein", variant="plain", value=3.0)
    MetricValueFactory(post_edit=first, metric="compression", variant="plain", value=4.0)
    MetricValueFactory(post_edit=first, metric="compression", variant="with_references", value=2.5)
    MetricValueFactory(post_edit=second, metric="compression", variant="plain", value=-1.5)
    SubmittedPostEditFactory()  # another project: never exported
    return project


def read(project, fmt: str) -> bytes:
    return b"".join(export_stream(export_spec(project=project), fmt, page_size=1))


def test_columns_are_item_fields_texts_effort_and_one_per_metric_and_variant(project):
    assert (
        export_spec(project=project).columns
        == TEXT_COLUMNS + DESIGN_COLUMNS + list(EFFORT_FIELDS) + QUALITY_COLUMNS + PROVENANCE + METRIC_COLUMNS
    )


def test_jsonl_rows_carry_exact_values(project):
    lines = read(project, "jsonl").decode().splitlines()
    first, second = (json.loads(line) for line in lines)
    assert (
        list(first)
        == TEXT_COLUMNS + DESIGN_COLUMNS + list(EFFORT_FIELDS) + QUALITY_COLUMNS + PROVENANCE + METRIC_COLUMNS
    )
    assert {k: first[k] for k in TEXT_COLUMNS} == {
        "external_id": "s1",
        "annotator": "anna",
        "original": "This are a test.",
        "edited": "This is a test.",
        "source": "Das ist ein Test.",
        "task_type": "mt",
        "instruction": "Fix grammar errors",
        "origin": "live",
    }
    assert (first["wall_ms"], first["active_ms"], first["keystrokes"], first["allkeys"], first["letters"]) == (
        12000,
        10000,
        6,
        9,
        None,
    )
    assert [first[c] for c in METRIC_COLUMNS] == [4.0, 2.5, 3.0, None]
    assert [first[c] for c in QUALITY_COLUMNS] == [3, "wall_clipped keys_uncorroborated", "2"]
    assert [second[c] for c in QUALITY_COLUMNS] == [None, "", ""]
    assert [first[c] for c in PROVENANCE] == [second[c] for c in PROVENANCE] == [None] * 16
    # Raw text in JSON: no apostrophes added outside CSV.
    assert (second["external_id"], second["edited"], second["instruction"], second["origin"]) == (
        "=HYPERLINK(1)",
        "@cmd",
        "Shorten it",
        "imported",
    )
    assert [second[c] for c in METRIC_COLUMNS] == [-1.5, None, None, None]


def test_csv_neutralises_formulas_in_text_but_not_numbers(project):
    rows = list(csv.DictReader(io.StringIO(read(project, "csv").decode())))
    assert [r["external_id"] for r in rows] == ["s1", "'=HYPERLINK(1)"]
    assert rows[1]["original"] == "'-5 degrees"
    assert rows[1]["edited"] == "'@cmd"
    assert rows[1]["compression"] == "-1.5"  # numeric column, left alone
    assert rows[1]["wall_ms"] == "" and rows[1]["levenshtein"] == ""
    assert (rows[0]["wall_ms"], rows[0]["compression"], rows[0]["compression__with_references"]) == (
        "12000",
        "4.0",
        "2.5",
    )
    assert [neutralise_formula(t) for t in ["+1", "\tx", "\rx", "ok", "a=b"]] == ["'+1", "'\tx", "'\rx", "ok", "a=b"]


def test_parquet_has_typed_columns_and_one_row_group_per_page(project):
    data = read(project, "parquet")
    parquet = pq.ParquetFile(io.BytesIO(data))
    assert parquet.num_row_groups == 2  # page_size=1
    table = parquet.read()
    assert (
        table.column_names
        == TEXT_COLUMNS + DESIGN_COLUMNS + list(EFFORT_FIELDS) + QUALITY_COLUMNS + PROVENANCE + METRIC_COLUMNS
    )
    assert table.column("flags").to_pylist() == ["wall_clipped keys_uncorroborated", ""]
    assert table.column("uncorroborated_keys").to_pylist() == [3, None]
    assert str(table.schema.field("wall_ms").type) == "int64"
    assert str(table.schema.field("compression").type) == "double"
    assert table.column("external_id").to_pylist() == ["s1", "=HYPERLINK(1)"]
    assert table.column("compression").to_pylist() == [4.0, -1.5]
    assert table.column("wall_ms").to_pylist() == [12000, None]


def test_export_is_a_generator_of_pages(project):
    stream = export_stream(export_spec(project=project), "csv", page_size=1)
    assert isinstance(stream, types.GeneratorType)
    chunks = list(stream)
    assert len(chunks) == 2  # one chunk per page (the header rides with the first)
    assert chunks[1].startswith(b"'=HYPERLINK(1),anna,'-5 degrees,'@cmd,")
    assert chunks[0].startswith(
        b"external_id,annotator,original,edited,source,task_type,instruction,origin,document,document_position,condition,practice,wall_ms"
    )


def test_the_command_writes_the_file(project, tmp_path):
    target = tmp_path / "out.jsonl"
    out = io.StringIO()
    call_command("export", "--project", "study", "--format", "jsonl", "--output", str(target), stdout=out)
    assert (
        out.getvalue().strip()
        == f"wrote 2 rows, {len(TEXT_COLUMNS) + 4 + len(EFFORT_FIELDS) + 3 + 16 + 4} columns to {target}"
    )
    assert [json.loads(line)["external_id"] for line in target.read_text().splitlines()] == ["s1", "=HYPERLINK(1)"]
    assert not list(tmp_path.glob(".*partial"))

    parquet_target = tmp_path / "out.parquet"
    call_command("export", "--project", "study", "--format", "parquet", "--output", str(parquet_target), stdout=out)
    assert pq.read_table(parquet_target).num_rows == 2


def test_the_command_names_what_is_wrong(project, tmp_path):
    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("export", "--project", "nope", "--format", "csv", "--output", str(tmp_path / "x.csv"))
    with pytest.raises(CommandError, match="folder .*missing does not exist"):
        call_command("export", "--project", "study", "--format", "csv", "--output", str(tmp_path / "missing" / "x.csv"))
    with pytest.raises(CommandError, match="invalid choice: 'xls'"):
        call_command("export", "--project", "study", "--format", "xls", "--output", str(tmp_path / "x.xls"))
