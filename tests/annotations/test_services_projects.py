import json

import pytest

from annotations.models import Project
from annotations.services.errors import ServiceError
from annotations.services.projects import instructions_from_json, project_create, project_update
from tests.factories import ProjectFactory


def test_it_creates_a_project_with_typed_instructions(db):
    project = project_create(
        name="  Fluency study ",
        guidelines="# Rules",
        task_type="fluency",
        instructions=["Fix grammar", "", "  Fix grammar  ", "Fix spelling"],
        idle_threshold_s=20,
        overlap=2,
    )
    project.refresh_from_db()
    assert project.name == "Fluency study"
    assert project.instructions == ["Fix grammar", "Fix spelling"]
    assert (project.idle_threshold_s, project.overlap, project.task_type) == (20.0, 2, "fluency")


def test_default_idle_threshold_is_30_seconds(db):
    assert project_create(name="p").idle_threshold_s == 30.0


def test_it_loads_the_editeval_instruction_file_for_the_task_type(db, shared_data):
    path = shared_data / "editeval_instructions.json"
    expected = json.loads(path.read_text())["instructions"]["clarity"]
    project = project_create(name="clarity", task_type="clarity", instructions_file=path)
    project.refresh_from_db()
    assert project.instructions == expected
    assert len(project.instructions) == 9
    assert project.meta["instructions_source"].startswith("EditEval benchmark")


def test_it_names_the_task_types_when_the_file_has_several_and_none_was_chosen(db, shared_data):
    data = (shared_data / "editeval_instructions.json").read_bytes()
    with pytest.raises(ServiceError, match="several task types .*clarity.*fluency"):
        project_create(name="x", instructions_file=data)
    with pytest.raises(ServiceError, match="no instructions for task type 'poetry'"):
        project_create(name="x", task_type="poetry", instructions_file=data)
    assert not Project.objects.exists()


def test_a_single_task_file_sets_the_task_type():
    instructions, task_type, source = instructions_from_json(data='{"updating": ["Update the article"]}')
    assert (instructions, task_type, source) == (["Update the article"], "updating", "")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{\n  "a": [1,\n', "invalid JSON on line 3"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"fluency": "Fix it"}', "fluency must be a list of strings"),
        (b"42", "expected a list of instructions"),
    ],
)
def test_bad_instruction_files_get_a_clear_message(data, message):
    with pytest.raises(ServiceError, match=message):
        instructions_from_json(data=data, task_type="fluency", filename="my.json")


def test_it_refuses_duplicate_names_and_bad_numbers(db):
    ProjectFactory(name="taken")
    with pytest.raises(ServiceError, match="already exists"):
        project_create(name="taken")
    with pytest.raises(ServiceError, match="overlap: must be at least 1"):
        project_create(name="new", overlap=0)
    with pytest.raises(ServiceError, match="idle_threshold_s"):
        project_create(name="new", idle_threshold_s=-1)
    assert list(Project.objects.values_list("name", flat=True)) == ["taken"]


def test_update_changes_only_what_is_given(db):
    project = ProjectFactory(name="p", guidelines="old", instructions=["a"], overlap=1)
    project_update(project=project, guidelines="new", overlap=3)
    project.refresh_from_db()
    assert (project.name, project.guidelines, project.instructions, project.overlap) == ("p", "new", ["a"], 3)
    project_update(project=project, instructions=["b", "c"])
    project.refresh_from_db()
    assert project.instructions == ["b", "c"]


def test_an_instructions_file_nested_too_deep_or_holding_nul_is_refused_by_name(db):
    deep = "[" * 1000 + "]" * 1000
    with pytest.raises(ServiceError, match=r"^deep.json: JSON nested more than 64 levels deep"):
        project_create(name="deep", instructions_file=deep.encode(), instructions_filename="deep.json")
    with pytest.raises(ServiceError, match=r"^nul.json: the text holds a NUL character"):
        project_create(name="nul", instructions_file=b'["a\\u0000b"]', instructions_filename="nul.json")
