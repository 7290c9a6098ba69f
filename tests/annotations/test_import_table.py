"""The `table` importer: CSV/TSV/JSONL with a column mapping, plain items or a finished study."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotations.importers import ImportDataError, import_items
from annotations.importers.base import InputFile
from annotations.importers.table import read_header
from annotations.models import Assignment, Item, PostEdit
from annotations.roles import is_annotator
from tests.factories import ProjectFactory


@pytest.fixture
def project(db):
    return ProjectFactory(name="table")


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def nothing_stored() -> bool:
    return not Item.objects.exists() and not PostEdit.objects.exists()


CSV = (
    "id,src_text,mt_text,refs,system,score\n"
    'a1,Das Haus.,The house.,"[""Ref one."", ""Ref two.""]",sys-A,0.5\n'
    '007,"Er sagte ""ja"".","He said\n""yes"".",A single reference.,sys-B,\n'
)


@pytest.mark.django_db
def test_it_imports_csv_rows_as_items_through_the_mapping(tmp_path, project):
    path = write(tmp_path, "items.csv", CSV)

    report = import_items(
        project=project,
        fmt="table",
        path=path,
        mapping={"external_id": "id", "source": "src_text", "model_output": "mt_text", "references": "refs"},
    )

    assert (report.items_created, report.post_edits_created) == (2, 0)
    first, second = Item.objects.filter(project=project).order_by("position")
    assert (first.external_id, first.source, first.model_output) == ("a1", "Das Haus.", "The house.")
    assert first.references == ["Ref one.", "Ref two."]
    assert first.meta == {"system": "sys-A", "score": 0.5}
    assert second.external_id == "007"  # ids stay text, leading zeros included
    assert (second.source, second.model_output) == ('Er sagte "ja".', 'He said\n"yes".')
    assert second.references == ["A single reference."]
    assert second.meta == {"system": "sys-B", "score": ""}


@pytest.mark.django_db
def test_columns_named_like_targets_need_no_mapping_and_ids_come_from_the_text(tmp_path, project):
    path = write(tmp_path, "plain.tsv", 'source\tmodel_output\tgold_edits\nQ1\tA one\t["A 1"]\nQ2\tA two\t\n')

    import_items(project=project, fmt="table", path=path)

    items = list(Item.objects.filter(project=project).order_by("position"))
    assert [(i.source, i.model_output, i.gold_edits) for i in items] == [("Q1", "A one", ["A 1"]), ("Q2", "A two", [])]
    assert all(i.external_id.startswith("sha1-") and len(i.external_id) == 21 for i in items)
    assert items[0].external_id != items[1].external_id


STUDY_TSV = (
    "src\tmt\tpe\twho\tseconds\tletters\tkeystrokes\tallkeys\tDA\n"
    "Hallo Welt.\tHello world.\tHello, world.\tlena\t12.5\t0\t1\t3\t71\n"
    "Hallo Welt.\tHello world.\tHello world!\tmax\t8\t0\t2\t2\t80\n"
    "Guten Tag.\tGood day.\tGood afternoon.\tlena\t20.25\t9\t13\t20\t55.5\n"
)
STUDY_MAP = {"source": "src", "model_output": "mt", "edited": "pe", "annotator": "who", "wall_s": "seconds"}


@pytest.mark.django_db
def test_a_finished_study_becomes_items_with_several_annotators_post_edits(tmp_path, project):
    path = write(tmp_path, "study.tsv", STUDY_TSV)

    report = import_items(project=project, fmt="table", path=path, mapping=STUDY_MAP)

    assert (report.items_created, report.post_edits_created) == (2, 3)
    assert sorted(report.annotators_created) == ["lena", "max"]
    hello = Item.objects.get(project=project, model_output="Hello world.")
    edits = {pe.assignment.annotator.username: pe for pe in PostEdit.objects.filter(assignment__item=hello)}
    assert edits["lena"].text == "Hello, world."
    assert (edits["lena"].wall_ms, edits["lena"].letters, edits["lena"].keystrokes, edits["lena"].allkeys) == (
        12500,
        0,
        1,
        3,
    )
    assert edits["max"].wall_ms == 8000
    assert edits["lena"].extra == {"DA": 71}
    assert edits["lena"].origin == PostEdit.IMPORTED
    assert edits["lena"].origin_detail == {"format": "table", "file": path, "line": 2}
    assert edits["lena"].definition_version == "table"
    assert edits["lena"].assignment.status == Assignment.SUBMITTED
    assert PostEdit.objects.get(text="Good afternoon.").wall_ms == 20250
    for name in ("lena", "max"):
        user = get_user_model().objects.get(username=name)
        assert not user.is_active and not user.has_usable_password() and is_annotator(user)
    assert not Item.objects.filter(batch__isnull=False).exists()


@pytest.mark.django_db
def test_a_jsonl_study_groups_rows_by_external_id(tmp_path, project):
    rows = [
        {"id": 1, "output": "Teh cat.", "fix": "The cat.", "by": "ann", "wall_ms": 900, "erase": 2, "refs": ["doc"]},
        {"id": 1, "output": "Teh cat.", "fix": "The cat!", "by": "bo", "wall_ms": 1200, "erase": None, "refs": ["doc"]},
    ]
    path = write(tmp_path, "study.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    mapping = {"external_id": "id", "model_output": "output", "edited": "fix", "annotator": "by", "references": "refs"}

    report = import_items(project=project, fmt="table", path=path, mapping=mapping)

    assert (report.items_created, report.post_edits_created) == (1, 2)
    item = Item.objects.get(project=project)
    assert (item.external_id, item.references) == ("1", ["doc"])
    by_name = {pe.assignment.annotator.username: pe for pe in PostEdit.objects.all()}
    assert (by_name["ann"].wall_ms, by_name["ann"].erase) == (900, 2)
    assert (by_name["bo"].wall_ms, by_name["bo"].erase) == (1200, None)


@pytest.mark.django_db
def test_a_reimported_study_creates_no_duplicates(tmp_path, project):
    path = write(tmp_path, "study.tsv", STUDY_TSV)
    import_items(project=project, fmt="table", path=path, mapping=STUDY_MAP)

    again = import_items(project=project, fmt="table", path=path, mapping=STUDY_MAP)

    assert (again.items_created, again.items_skipped) == (0, 2)
    assert (again.post_edits_created, again.post_edits_skipped) == (0, 3)
    assert (Item.objects.count(), PostEdit.objects.count(), Assignment.objects.count()) == (2, 3, 3)


@pytest.mark.django_db
def test_the_command_takes_the_mapping(tmp_path, project, capsys):
    path = write(tmp_path, "study.tsv", STUDY_TSV)

    call_command(
        "import_items",
        path,
        "--project",
        project.name,
        "--format",
        "table",
        "--map",
        "source=src,model_output=mt,edited=pe,annotator=who,wall_s=seconds",
    )

    assert "post-edits created: 3" in capsys.readouterr().out
    assert PostEdit.objects.count() == 3


@pytest.mark.django_db
def test_the_command_rejects_a_malformed_mapping(tmp_path, project):
    path = write(tmp_path, "a.csv", CSV)
    with pytest.raises(CommandError, match=r"--map: 'model_output' is not TARGET=COLUMN"):
        call_command("import_items", path, "--project", project.name, "--format", "table", "--map", "model_output")


@pytest.mark.django_db
def test_an_empty_mapping_entry_leaves_a_same_named_column_unmapped(tmp_path, project):
    path = write(tmp_path, "a.csv", "model_output,edited,annotator\nx,y,zed\n")

    report = import_items(project=project, fmt="table", path=path, mapping={"edited": "", "annotator": ""})

    assert (report.items_created, report.post_edits_created) == (1, 0)
    assert Item.objects.get().meta == {"edited": "y", "annotator": "zed"}


@pytest.mark.django_db
def test_unmapped_cells_become_numbers_only_when_plainly_numeric(tmp_path, project):
    path = write(tmp_path, "a.csv", "model_output,a,b,c,d,e,f\nx,12,-0.5,1_000,nan,1e999, 7\n")

    import_items(project=project, fmt="table", path=path)

    assert Item.objects.get().meta == {"a": 12, "b": -0.5, "c": "1_000", "d": "nan", "e": "1e999", "f": " 7"}


def test_read_header_offers_the_columns_for_the_mapping():
    assert read_header(InputFile("a.csv", b"id,mt text,pe\n1,2,3\n")) == ["id", "mt text", "pe"]
    assert read_header(InputFile("a.jsonl", b'\n{"x": 1, "y": 2}\n')) == ["x", "y"]


BAD = [
    (
        "a.csv",
        CSV,
        {"model_output": "mt_text", "colour": "refs"},
        r"a.csv, line 1, field 'colour': unknown mapping target",
    ),
    ("a.csv", CSV, {"model_output": "mt"}, r"a.csv, line 1, field 'model_output': column 'mt' .* is not in the header"),
    ("a.csv", CSV, {}, r"a.csv, line 1, field 'model_output': map a column to model_output"),
    (
        "s.tsv",
        STUDY_TSV,
        {**STUDY_MAP, "annotator": ""},
        r"s.tsv, line 1, field 'annotator': a finished study .* needs both edited and annotator",
    ),
    ("s.tsv", STUDY_TSV, {**STUDY_MAP, "wall_ms": "letters"}, r"s.tsv, line 1, field 'wall_s': map wall_ms or wall_s"),
    ("a.csv", "model_output,x\nok,1\nbad\n", {}, r"a.csv, line 3: 1 fields, but the header names 2 columns"),
    ("a.csv", "model_output,x\nok,1\nnot,2,3\n", {}, r"a.csv, line 3: 3 fields, but the header names 2 columns"),
    ("a.csv", "model_output,model_output\nx,y\n", {}, r"a.csv, line 1, field 'model_output': column named twice"),
    ("a.csv", "model_output,x\nfine,1\n,2\n", {}, r"a.csv, line 3, field 'model_output': must not be empty"),
    ("a.csv", 'model_output,x\n"two\nlines",1\n,2\n', {}, r"a.csv, line 4, field 'model_output': must not be empty"),
    (
        "a.csv",
        "external_id,model_output\nk,one\nk,two\n",
        {},
        r"a.csv, line 3, field 'external_id': duplicate id 'k' \(first at .*a.csv, line 2\)",
    ),
    (
        "a.csv",
        'model_output,gold_edits\nx,"[""a"", 1]"\n',
        {},
        r"line 2, field 'gold_edits': must be a string or a list of strings",
    ),
    ("a.csv", "model_output,gold_edits\nx,[NaN]\n", {}, r"line 2, field 'gold_edits': .* NaN is not allowed"),
    (
        "a.csv",
        "model_output,gold_edits\nx,[oops\n",
        {},
        r"line 2, field 'gold_edits': starts with '\[' but is not a JSON list",
    ),
    (
        "s.tsv",
        STUDY_TSV.replace("\t8\t", "\teight\t"),
        STUDY_MAP,
        r"s.tsv, line 3, field 'wall_s': 'eight' is not a number",
    ),
    (
        "s.tsv",
        STUDY_TSV.replace("\t0\t2\t2\t", "\t0\t-2\t2\t"),
        STUDY_MAP,
        r"s.tsv, line 3, field 'keystrokes': -2 is negative",
    ),
    (
        "s.tsv",
        STUDY_TSV.replace("\t0\t2\t2\t", "\t0\t2.5\t2\t"),
        STUDY_MAP,
        r"s.tsv, line 3, field 'keystrokes': 2.5 is not a whole number",
    ),
    (
        "s.tsv",
        STUDY_TSV.replace("\tmax\t", "\tlena\t"),
        STUDY_MAP,
        r"s.tsv, line 3, field 'annotator': annotator 'lena' edits item 'sha1-\w+' twice \(first at .*, line 2\)",
    ),
    (
        "s.tsv",
        STUDY_TSV.replace("\tmax\t", "\tMax Power\t"),
        STUDY_MAP,
        r"s.tsv, line 3, field 'annotator': annotator name 'Max Power' is not a valid username",
    ),
    ("s.tsv", STUDY_TSV.replace("\tmax\t", "\t \t"), STUDY_MAP, r"s.tsv, line 3, field 'annotator': must not be empty"),
    (
        "s.jsonl",
        '{"id": "a", "mt": "x", "pe": "y", "who": "w"}\n{"id": "a", "mt": "z", "pe": "y", "who": "v"}\n',
        {"external_id": "id", "model_output": "mt", "edited": "pe", "annotator": "who"},
        r"s.jsonl, line 2, field 'mt': item 'a' has a different model_output than at line 1",
    ),
    (
        "s.jsonl",
        '{"mt": "x", "pe": "y", "who": "w"}\n{"mt": "z", "who": "v"}\n',
        {"model_output": "mt", "edited": "pe", "annotator": "who"},
        r"s.jsonl, line 2, field 'pe': this row has no 'pe' \(mapped to edited\)",
    ),
    (
        "s.jsonl",
        '{"mt": ["x"]}\n',
        {"model_output": "mt"},
        r"s.jsonl, line 1, field 'model_output': must be text, got a list",
    ),
    ("s.jsonl", '{"mt": "x"}\n{"mt": "y"\n', {"model_output": "mt"}, r"s.jsonl, line 2: invalid JSON"),
    ("a.xlsx", "whatever", {}, r"a.xlsx: cannot tell the table's kind from its name"),
    ("a.csv", "\n\n", {}, r"a.csv, line 1: the file is empty"),
    ("a.csv", "model_output\n", {}, r"a.csv: no rows under the header"),
    ("a.csv", 'model_output,x\n"unterminated,1\n', {}, r"a.csv, line 2: unreadable row: unexpected end of data"),
]


@pytest.mark.parametrize(("name", "text", "mapping", "message"), BAD)
@pytest.mark.django_db
def test_it_rejects_bad_tables_naming_file_line_and_field(tmp_path, project, name, text, mapping, message):
    path = write(tmp_path, name, text)

    with pytest.raises(ImportDataError, match=message):
        import_items(project=project, fmt="table", path=path, mapping=mapping)

    assert nothing_stored()
    assert not get_user_model().objects.filter(username__in=["lena", "max", "w", "v"]).exists()
