"""The `editeval` importer (EditEval core JSONL) and the bad inputs every format refuses."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.importers import ImportDataError, import_items
from annotations.models import Item
from tests.factories import ItemFactory, ProjectFactory


def example(n: int, **fields) -> dict:
    record = {
        "id": f"jfleg-test-{n}",
        "title": "",
        "input": f"New and new technology has been introduced {n}.",
        "edits": [f"New technology has been introduced {n}.", f"Newer technology was introduced {n}."],
        "tasks": "grammar",
        "retrieved_documents": [],
    }
    record.update(fields)
    return record


def write_jsonl(path, records: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def project(db):
    return ProjectFactory(name="editeval", instructions=["Fix grammar", "Make it fluent", "Simplify"])


@pytest.mark.django_db
def test_it_imports_examples_as_items_with_gold_edits_and_references(tmp_path, project):
    path = write_jsonl(
        tmp_path / "jfleg.jsonl",
        [
            example(0),
            example(1, title="Alan Turing", retrieved_documents=["Turing was born in 1912."], meta={"split": "test"}),
            example(2, id=17, tasks=["clarity", "coherence"]),
        ],
    )

    report = import_items(project=project, fmt="editeval", path=path)

    assert (report.items_created, report.items_skipped, report.post_edits_created) == (3, 0, 0)
    first, second, third = Item.objects.filter(project=project).order_by("position")
    assert first.external_id == "jfleg-test-0"
    assert first.model_output == "New and new technology has been introduced 0."
    assert first.gold_edits == ["New technology has been introduced 0.", "Newer technology was introduced 0."]
    assert (first.task_type, first.references, first.source) == ("grammar", [], "")
    assert second.references == ["Turing was born in 1912."]
    assert second.meta == {"split": "test", "title": "Alan Turing"}
    assert (third.external_id, third.task_type, third.meta) == (
        "17",
        "clarity,coherence",
        {"tasks": ["clarity", "coherence"]},
    )
    assert [i.position for i in (first, second, third)] == [0, 1, 2]


@pytest.mark.django_db
def test_it_draws_each_items_instruction_with_the_projects_seed(tmp_path, project):
    path = write_jsonl(tmp_path / "a.jsonl", [example(n) for n in range(12)])

    import_items(project=project, fmt="editeval", path=path)

    project.refresh_from_db()
    assert project.instruction_seed is not None
    drawn = list(Item.objects.filter(project=project).values_list("drawn_instruction", flat=True))
    assert set(drawn) <= set(project.instructions)
    assert len(set(drawn)) > 1


@pytest.mark.django_db
def test_a_reimport_skips_the_items_already_there(tmp_path, project):
    path = write_jsonl(tmp_path / "a.jsonl", [example(0), example(1)])
    import_items(project=project, fmt="editeval", path=path)
    write_jsonl(tmp_path / "a.jsonl", [example(0), example(1), example(2)])

    report = import_items(project=project, fmt="editeval", path=path)

    assert (report.items_created, report.items_skipped) == (1, 2)
    assert Item.objects.filter(project=project).count() == 3
    assert Item.objects.get(external_id="jfleg-test-2").position == 2


BAD_LINES = [
    ("{not json", r"line 2: invalid JSON: Expecting property name"),
    ("[1, 2]", r"line 2: expected a JSON object, got a list"),
    (
        json.dumps({k: v for k, v in example(5).items() if k != "input"}),
        r"line 2, field 'input': required field is missing",
    ),
    (json.dumps(example(5, input=["a"])), r"line 2, field 'input': must be a string, got a list"),
    (json.dumps(example(5, input="  ")), r"line 2, field 'input': must not be empty"),
    (json.dumps(example(5, edits="one edit")), r"line 2, field 'edits': must be a list of strings, got a string"),
    (json.dumps(example(5, edits=["ok", 3])), r"line 2, field 'edits': entry 1 must be a string, got a number"),
    (json.dumps(example(5, id=None)), r"line 2, field 'id': must be a string or a number, got null"),
    (json.dumps(example(5, retrieved_documents="doc")), r"line 2, field 'retrieved_documents': must be a list"),
    (json.dumps(example(5, meta="x")), r"line 2, field 'meta': must be an object or a list, got a string"),
    (json.dumps(example(0)), r"line 2, field 'external_id': duplicate id 'jfleg-test-0' \(first at .*, line 1\)"),
    (
        json.dumps(example(5, id="x" * 300)),
        r"line 2, field 'external_id': an item id is at most 255 characters, this one has 300",
    ),
    (
        json.dumps(example(5, meta={"score": 1})).replace("1}", "NaN}"),
        r"line 2, field 'meta.score': invalid JSON: NaN is not allowed",
    ),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
@pytest.mark.django_db
def test_it_rejects_bad_lines_naming_file_line_and_field_and_imports_nothing(tmp_path, project, line, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [example(0), line, example(9)])

    with pytest.raises(ImportDataError, match=message) as caught:
        import_items(project=project, fmt="editeval", path=path)

    assert caught.value.file == path
    assert str(caught.value).startswith(path)
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_it_rejects_an_id_the_project_has_with_other_text(tmp_path, project):
    ItemFactory(project=project, external_id="jfleg-test-1", model_output="Something else.")
    path = write_jsonl(tmp_path / "a.jsonl", [example(0), example(1)])

    with pytest.raises(
        ImportDataError, match=r"line 2, field 'external_id': duplicate id 'jfleg-test-1': .* different model_output"
    ):
        import_items(project=project, fmt="editeval", path=path)
    assert Item.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_it_rejects_bytes_that_are_not_utf8(tmp_path, project):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        json.dumps(example(0)).encode()
        + b"\n"
        + json.dumps(example(1), ensure_ascii=False).replace("New", "N\u00e9w").encode("latin-1")
    )

    with pytest.raises(ImportDataError, match=r"latin1.jsonl, line 2: byte 0xe9 at offset \d+ is not UTF-8"):
        import_items(project=project, fmt="editeval", path=str(path))
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_it_rejects_nul_characters(tmp_path, project):
    path = write_jsonl(tmp_path / "nul.jsonl", [example(0), json.dumps(example(1)).replace("New", "N\x00ew")])

    with pytest.raises(ImportDataError, match=r"line 2: contains a NUL character"):
        import_items(project=project, fmt="editeval", path=path)
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_file_over_the_size_limit(tmp_path, project, settings):
    settings.EDITLAB_IMPORT_MAX_BYTES = 1024
    path = write_jsonl(tmp_path / "big.jsonl", [example(n) for n in range(20)])

    with pytest.raises(ImportDataError, match=r"big.jsonl: file is [\d,]+ bytes, over the import limit of 1,024 bytes"):
        import_items(project=project, fmt="editeval", path=path)
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_the_command_exits_nonzero_with_the_message(tmp_path, project):
    path = write_jsonl(tmp_path / "bad.jsonl", [example(0), "{oops"])

    with pytest.raises(CommandError, match=r"nothing imported: .*bad.jsonl, line 2: invalid JSON"):
        call_command("import_items", path, "--project", project.name, "--format", "editeval")
    assert not Item.objects.exists()


def test_the_command_exits_with_status_1_on_bad_input(tmp_path, project):
    """Run as a process: argparse errors and CommandErrors both end with a non-zero status."""
    path = write_jsonl(tmp_path / "bad.jsonl", ["{oops"])
    done = subprocess.run(
        [sys.executable, "manage.py", "import_items", path, "--project", "none", "--format", "editeval"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={"DEBUG": "1", "PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
        check=False,
    )
    assert done.returncode == 1
    assert "bad.jsonl, line 1: invalid JSON" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.django_db
def test_it_reads_what_editevals_own_jsonl_writer_emits(tmp_path, project):
    # main.py output_inputs_to_file: id, input, retrieved_documents, title, task_type, meta ([] when none); no edits.
    written = [
        {
            "id": "wafer-test-0",
            "input": "Paris is a city.",
            "retrieved_documents": [],
            "title": "",
            "task_type": "fluency",
            "meta": [],
        },
        {
            "id": "wafer-test-1",
            "input": "The tower is tall.",
            "retrieved_documents": [
                {
                    "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
                    "title": "Eiffel Tower",
                    "text": "It is 330 m tall.",
                }
            ],
            "title": "Eiffel Tower",
            "task_type": "updating",
            "meta": {"claim": "It is 330 m tall."},
        },
        {
            "id": "wafer-test-2",
            "input": "x",
            "retrieved_documents": [],
            "title": "",
            "task_type": "updating",
            "meta": ["note"],
        },
    ]
    path = write_jsonl(tmp_path / "wafer_insert_input.jsonl", written)

    report = import_items(project=project, fmt="editeval", path=path)

    assert report.items_created == 3
    first, second, third = Item.objects.filter(project=project).order_by("position")
    assert (first.model_output, first.task_type, first.gold_edits, first.meta) == (
        "Paris is a city.",
        "fluency",
        [],
        {},
    )
    assert second.references == written[1]["retrieved_documents"]
    assert second.meta == {"claim": "It is 330 m tall.", "title": "Eiffel Tower"}
    assert third.meta == {"meta": ["note"]}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tasks": None}, r"field 'tasks': must be a list of strings, got null"),
        ({"tasks": "a", "task_type": "b"}, r"field 'task_type': tasks and task_type disagree"),
        ({"task_type": 3}, r"field 'task_type': must be a list of strings, got a number"),
    ],
)
@pytest.mark.django_db
def test_task_type_is_checked_like_tasks(tmp_path, project, fields, message):
    record = {k: v for k, v in example(1).items() if k != "tasks"}
    record.update(fields)
    path = write_jsonl(tmp_path / "a.jsonl", [example(0), record])

    with pytest.raises(ImportDataError, match=r"line 2, " + message):
        import_items(project=project, fmt="editeval", path=path)

    assert not Item.objects.exists()


@pytest.mark.django_db
def test_a_line_without_tasks_or_task_type_names_both(tmp_path, project):
    record = {k: v for k, v in example(1).items() if k != "tasks"}
    path = write_jsonl(tmp_path / "a.jsonl", [record])

    with pytest.raises(ImportDataError, match=r"line 1, field 'tasks': required field is missing \(or task_type"):
        import_items(project=project, fmt="editeval", path=path)
