"""The `table` importer: CSV/TSV/JSONL with a column mapping, plain items or a finished study."""

import csv
import io
import json

import pandas
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from hypothesis import given
from hypothesis import strategies as st

from annotations.importers import ImportDataError, import_items, table_read
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
    ("a.csv", "model_output,gold_edits\nx,[NaN]\n", {}, r"line 2, field 'gold_edits\[0\]': .* NaN is not allowed"),
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
    (
        "a.csv",
        'model_output,x\n"unterminated,1\n',
        {},
        r"a.csv, line 2: unreadable row: a quoted field that starts in this record is never closed",
    ),
]


@pytest.mark.parametrize(("name", "text", "mapping", "message"), BAD)
@pytest.mark.django_db
def test_it_rejects_bad_tables_naming_file_line_and_field(tmp_path, project, name, text, mapping, message):
    path = write(tmp_path, name, text)

    with pytest.raises(ImportDataError, match=message):
        import_items(project=project, fmt="table", path=path, mapping=mapping)

    assert nothing_stored()
    assert not get_user_model().objects.filter(username__in=["lena", "max", "w", "v"]).exists()


# --------------------------------------------------------------------------- TSV as csv and pandas write it

TRICKY = [
    ("a\tb", "tab\tinside", 'He said "yes".'),
    ("two\nlines", '"Quoted," she said.', 'ends with a quote"'),
    ("crlf\r\nline", "\u202eRTL override\u202c and \u200fmark", "plain"),
    ("", "only\\backslash **and** <person_name>", "'single'"),
]


@pytest.mark.django_db
def test_tsv_written_by_the_csv_module_reads_back_exactly(tmp_path, project):
    path = tmp_path / "items.tsv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, dialect="excel-tab")
        writer.writerow(["source", "model_output", "note"])
        writer.writerows(TRICKY)

    import_items(project=project, fmt="table", path=str(path))

    items = Item.objects.filter(project=project).order_by("position")
    # Exactly, but for line endings: a text's CRLF is stored as LF (the editor's textarea gives LF).
    expected = [(source.replace("\r\n", "\n"), output, note) for source, output, note in TRICKY]
    assert [(i.source, i.model_output, i.meta["note"]) for i in items] == expected


@pytest.mark.parametrize("index", [True, False])
@pytest.mark.django_db
def test_a_study_written_by_pandas_to_csv_reads_back_exactly(tmp_path, project, index):
    frame = pandas.DataFrame(
        {
            "src": ["Hallo\tWelt.", 'Er sagte:\n"Ja".', 'Er sagte:\n"Ja".'],
            "mt": ["Hello\tworld.", 'He said:\n"Yes".', 'He said:\n"Yes".'],
            "pe": ['"Hello", world.', 'He said: "yes"\n(twice)', "He said yes."],
            "who": ["lena", "lena", "max"],
            "seconds": [12.5, 8.0, None],  # pandas writes the missing value as an empty cell
            "keystrokes": [3, 14, 0],
        }
    )
    path = tmp_path / "study.tsv"
    frame.to_csv(path, sep="\t", index=index)
    mapping = {"source": "src", "model_output": "mt", "edited": "pe", "annotator": "who", "wall_s": "seconds"}

    report = import_items(project=project, fmt="table", path=str(path), mapping=mapping)

    assert (report.items_created, report.post_edits_created) == (2, 3)
    stored = PostEdit.objects.order_by("origin_detail__line")
    assert [(p.assignment.item.source, p.assignment.item.model_output, p.text) for p in stored] == list(
        zip(frame.src, frame.mt, frame.pe, strict=True)
    )
    assert [(p.wall_ms, p.keystrokes) for p in stored] == [(12500, 3), (8000, 14), (None, 0)]
    assert [p.origin_detail["line"] for p in stored] == [2, 3, 7]  # where each record starts
    assert all(p.extra == {} for p in stored)  # pandas' unnamed index column is not data


@pytest.mark.django_db
def test_errors_after_a_multi_line_record_name_the_line_the_bad_record_starts_on(tmp_path, project):
    text = 'model_output\tkeystrokes\tedited\tannotator\n"one\ntwo\nthree"\t1\tx\tlena\n"four\nfive"\tmany\ty\tmax\n'
    path = write(tmp_path, "s.tsv", text)

    with pytest.raises(ImportDataError, match=r"s.tsv, line 5, field 'keystrokes': 'many' is not a number"):
        import_items(project=project, fmt="table", path=path)

    assert nothing_stored()


def test_a_tsv_field_that_merely_starts_with_a_quote_says_how_to_quote_it(tmp_path):
    path = write(tmp_path, "s.tsv", 'model_output\tnote\n"Hi," she said.\tx\n')

    with pytest.raises(ImportDataError, match=r"s.tsv, line 2: unreadable row: .*must be quoted as a whole"):
        import_items(project="p", fmt="table", path=path, create_project=True)


@pytest.mark.parametrize("name", ["big.csv", "big.tsv", "big.jsonl"])
@pytest.mark.django_db
def test_cells_longer_than_csvs_default_field_limit_import(tmp_path, project, name):
    # 300,000 characters; csv refuses over 131,072 by default. A source: the texts the editor edits
    # have a limit of their own (EDITLAB_TEXT_MAX_BYTES, tests/annotations/test_import_limits.py).
    long_text = "word " * 60_000
    if name.endswith("jsonl"):
        text = json.dumps({"source": long_text, "model_output": "Hi."}) + "\n"
    else:
        sep = "\t" if name.endswith("tsv") else ","
        text = f'source{sep}model_output\n"{long_text}"{sep}Hi.\n'
    path = write(tmp_path, name, text)

    import_items(project=project, fmt="table", path=path)

    assert Item.objects.get(project=project).source == long_text


# --------------------------------------------------------------------------- hostile input

HOSTILE_STUDY = [
    ("letters", "1e29", r"field 'letters': 1e29 is out of range: letters must be between 0 and 2,147,483,647"),
    ("keystrokes", "2147483648", r"field 'keystrokes': 2147483648 is out of range: keystrokes must be between 0"),
    ("keystrokes", "9" * 5000, r"field 'keystrokes': 9{59}… is out of range: keystrokes must be between 0 and"),
    (
        "wall_s",
        "1e300",
        r"field 'wall_s': 1e300 is out of range: wall_s must be between 0 and 9,223,372,036,854,775 seconds",
    ),
    ("wall_ms", "9223372036854775808", r"field 'wall_ms': 9223372036854775808 is out of range: wall_ms must be"),
    ("wall_s", "NaN", r"field 'wall_s': 'NaN' is not a finite number"),
    ("wall_s", "-inf", r"field 'wall_s': '-inf' is not a finite number"),
    ("wall_s", "1e400", r"field 'wall_s': 1e400 is not a finite number"),
    ("letters", "1_000", r"field 'letters': '1_000' is not a number"),
]


@pytest.mark.parametrize(("column", "value", "message"), HOSTILE_STUDY)
@pytest.mark.django_db
def test_effort_numbers_beyond_their_columns_are_refused_with_the_range(tmp_path, project, column, value, message):
    path = write(tmp_path, "s.csv", f"model_output,edited,annotator,{column}\nx,y,lena,5\nz,w,lena,{value}\n")

    with pytest.raises(ImportDataError, match=r"s.csv, line 3, " + message):
        import_items(project=project, fmt="table", path=path)

    assert nothing_stored()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ('{"mt": "x", "pe": "y", "who": "w", "letters": 1e29}', r"field 'letters': 1e\+29 is out of range"),
        ('{"mt": "x", "pe": "y", "who": "w", "wall_s": 1e300}', r"field 'wall_s': 1e\+300 is out of range"),
        ('{"mt": "x", "pe": "y", "who": "w", "wall_s": 1e400}', r"field 'wall_s': invalid JSON: 1e400 is out of range"),
        ('{"mt": "x", "pe": "y", "who": "w", "wall_s": NaN}', r"field 'wall_s': invalid JSON: NaN is not allowed"),
        ('{"mt": "x", "pe": "y", "who": "w", "letters": true}', r"field 'letters': True is not a number"),
        (
            '{"mt": "x", "pe": "y", "who": "w", "extra": ' + "[" * 1000 + "]" * 1000 + "}",
            r"field 'extra\[0\]\[0\]\[0\]…': invalid JSON: JSON nested more than 64 levels deep \(the limit is 64\)",
        ),
        (
            '{"mt": "x\\ud800", "pe": "y", "who": "w"}',
            r"field 'mt': invalid JSON: the text holds a lone UTF-16 surrogate \(\\ud800\)",
        ),
        ('{"mt": "x", "pe": "y\\u0000", "who": "w"}', r"field 'pe': invalid JSON: the text holds a NUL character"),
    ],
)
@pytest.mark.django_db
def test_hostile_jsonl_rows_are_refused_naming_line_and_field(tmp_path, project, record, message):
    path = write(tmp_path, "s.jsonl", "\n" + record + "\n")
    mapping = {"model_output": "mt", "edited": "pe", "annotator": "who"}

    with pytest.raises(ImportDataError, match=r"s.jsonl, line 2, " + message):
        import_items(project=project, fmt="table", path=path, mapping=mapping)

    assert nothing_stored()


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            "[" * 1000 + "]" * 1000,
            r"field 'references\[0\]\[0\]\[0\]\[0\]…': starts with '\[' but is not a JSON list: JSON nested more than 64",
        ),
        ('["fine", "\\ud800"]', r"field 'references\[1\]': starts with '\[' .*lone UTF-16 surrogate"),
        ('["a", 1e400]', r"field 'references\[1\]': starts with '\[' .*1e400 is out of range for a number"),
    ],
)
@pytest.mark.django_db
def test_hostile_json_cells_are_refused_naming_line_and_field(tmp_path, project, cell, message):
    path = tmp_path / "a.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([["model_output", "references"], ["fine", "[]"], ["x", cell]])

    with pytest.raises(ImportDataError, match=r"a.csv, line 3, " + message):
        import_items(project=project, fmt="table", path=str(path))

    assert nothing_stored()


@pytest.mark.django_db
def test_odd_but_valid_unicode_is_stored_as_it_was_written(tmp_path, project):
    texts = [
        "\u202eevil\u202c",
        "\u200f\u05e9\u05dc\u05d5\u05dd",
        "e\u0301 \U0001f600 \ufeffzero\u200bwidth",
        "\u0007bell",
    ]
    path = write(
        tmp_path,
        "odd.jsonl",
        "".join(json.dumps({"id": f"u{n}", "model_output": t}) + "\n" for n, t in enumerate(texts)),
    )

    import_items(project=project, fmt="table", path=path, mapping={"external_id": "id"})

    assert (
        list(Item.objects.filter(project=project).order_by("position").values_list("model_output", flat=True)) == texts
    )


def test_a_nul_in_a_csv_is_refused_by_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"model_output\nfine\nnul\x00here\n")

    with pytest.raises(ImportDataError, match=r"a.csv, line 3: contains a NUL character"):
        import_items(project="p", fmt="table", path=str(path), create_project=True)


@pytest.mark.django_db
def test_another_projects_ids_are_its_own_and_stay_untouched(tmp_path, project):
    other = ProjectFactory(name="other")
    import_items(project=other, fmt="table", path=write(tmp_path, "a.csv", "external_id,model_output\nk,Other text.\n"))

    report = import_items(
        project=project, fmt="table", path=write(tmp_path, "b.csv", "external_id,model_output\nk,Mine.\n")
    )

    assert report.items_created == 1
    assert Item.objects.get(project=other, external_id="k").model_output == "Other text."
    assert Item.objects.get(project=project, external_id="k").model_output == "Mine."


@pytest.mark.django_db
def test_a_refused_import_keeps_everything_already_stored(tmp_path, project):
    import_items(project=project, fmt="table", path=write(tmp_path, "s.tsv", STUDY_TSV), mapping=STUDY_MAP)
    before = list(PostEdit.objects.order_by("pk").values_list("pk", "text", "wall_ms", "keystrokes"))
    items = list(Item.objects.order_by("pk").values_list("pk", "external_id", "model_output"))
    bad = STUDY_TSV + "Neu.\tNew.\tNew!\tnora\t1e300\t0\t1\t1\t50\n"

    with pytest.raises(ImportDataError, match=r"line 5, field 'wall_s': 1e300 is out of range"):
        import_items(project=project, fmt="table", path=write(tmp_path, "s2.tsv", bad), mapping=STUDY_MAP)

    assert list(PostEdit.objects.order_by("pk").values_list("pk", "text", "wall_ms", "keystrokes")) == before
    assert list(Item.objects.order_by("pk").values_list("pk", "external_id", "model_output")) == items
    assert not get_user_model().objects.filter(username="nora").exists()


@pytest.mark.django_db
def test_an_unnamed_first_column_that_is_not_a_row_index_is_refused_not_dropped(tmp_path, project):
    path = write(tmp_path, "a.tsv", "\tmodel_output\n0\tx\nkeep me\ty\n")

    with pytest.raises(ImportDataError, match=r"a.tsv, line 3: column 1 of the header has no name and holds 'keep me'"):
        import_items(project=project, fmt="table", path=path)

    assert nothing_stored()


@pytest.mark.django_db
def test_reference_documents_import_from_jsonl_and_from_csv_cells(tmp_path, project):
    document = {"url": "https://example.org/a", "title": "A", "text": "Text of A."}
    jsonl = write(tmp_path, "a.jsonl", json.dumps({"model_output": "x", "references": [document, "plain"]}) + "\n")
    path = tmp_path / "b.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([["model_output", "references"], ["y", json.dumps([document])]])

    import_items(project=project, fmt="table", path=jsonl)
    import_items(project=project, fmt="table", path=str(path))

    assert [i.references for i in Item.objects.filter(project=project).order_by("position")] == [
        [document, "plain"],
        [document],
    ]
    bad = write(tmp_path, "c.jsonl", json.dumps({"model_output": "z", "references": [{"text": 5}]}) + "\n")
    with pytest.raises(
        ImportDataError, match=r"field 'references': must be a string or a list of strings or documents"
    ):
        import_items(project=project, fmt="table", path=bad)


@given(
    st.lists(st.sampled_from(["a", "é", "\r", "\n", "\r\n", '"', "\t", ",", "\u2028", "\x0b"]), max_size=40).map(
        "".join
    )
)
def test_the_table_is_cut_into_lines_as_a_file_opened_with_newline_empty(text):
    assert list(table_read._lines(text)) == list(io.StringIO(text, newline=""))
