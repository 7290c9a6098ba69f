"""The `natinst` importer: one Super-NaturalInstructions task file."""

import json
from pathlib import Path

import pytest

from annotations.importers import ImportDataError, import_items
from annotations.models import Item, Project
from tests.factories import ProjectFactory


def task(**overrides) -> dict:
    data = {
        "Contributors": ["Someone"],
        "Source": ["jfleg"],
        "URL": ["https://example.org/jfleg"],
        "Categories": ["Grammar Error Correction"],
        "Reasoning": [],
        "Definition": ["Fix the grammar of the sentence.", "Keep its meaning."],
        "Input_language": ["English"],
        "Output_language": ["English"],
        "Instruction_language": ["English"],
        "Domains": ["Miscellaneous"],
        "Positive Examples": [
            {"input": "He go home.", "output": "He goes home.", "explanation": "Subject-verb agreement."}
        ],
        "Negative Examples": [{"input": "He go home.", "output": "He went home.", "explanation": "Changes the tense."}],
        "Instances": [
            {"id": "task1557-1", "input": "She like apples.", "output": ["She likes apples."]},
            {"id": "task1557-2", "input": "They was late.", "output": ["They were late.", "They are late."]},
        ],
    }
    data.update(overrides)
    return data


def write(tmp_path, data, name: str = "task1557_jfleg_answer_generation.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return str(path)


@pytest.mark.django_db
def test_it_imports_instances_and_fills_guidelines_and_metadata(tmp_path):
    path = write(tmp_path, task())

    report = import_items(project="gec", fmt="natinst", path=path, create_project=True)

    assert report.project_created and report.items_created == 2
    project = Project.objects.get(name="gec")
    assert project.guidelines.startswith("## Definition\n\nFix the grammar of the sentence.\n\nKeep its meaning.")
    assert "## Positive examples" in project.guidelines and "## Negative examples" in project.guidelines
    assert "~~~~\nHe goes home.\n~~~~" in project.guidelines
    assert "Explanation: Changes the tense." in project.guidelines
    assert project.task_type == "Grammar Error Correction"
    assert project.meta["natinst"] == {
        "task": "task1557_jfleg_answer_generation",
        "categories": ["Grammar Error Correction"],
        "domains": ["Miscellaneous"],
        "input_language": ["English"],
        "output_language": ["English"],
        "instruction_language": ["English"],
        "reasoning": [],
        "source": ["jfleg"],
        "url": ["https://example.org/jfleg"],
    }
    second = Item.objects.get(project=project, external_id="task1557-2")
    assert second.model_output == "They was late."
    assert second.gold_edits == ["They were late.", "They are late."]
    assert second.task_type == "Grammar Error Correction"


@pytest.mark.django_db
def test_a_string_definition_and_instances_without_ids_work(tmp_path):
    instances = [{"input": "a b", "output": ["a, b"]}, {"input": "c d", "output": []}]
    path = write(tmp_path, task(Definition="Add commas.", Instances=instances), name="task9.json")

    import_items(project="p", fmt="natinst", path=path, create_project=True)

    assert list(Item.objects.values_list("external_id", flat=True).order_by("position")) == ["task9-1", "task9-2"]
    assert Project.objects.get(name="p").guidelines.startswith("## Definition\n\nAdd commas.\n\n")


@pytest.mark.django_db
def test_it_keeps_guidelines_the_project_already_has(tmp_path):
    project = ProjectFactory(name="typed", guidelines="Our own rules.", meta={"natinst": {"task": "other"}})

    report = import_items(project=project, fmt="natinst", path=write(tmp_path, task()))

    project.refresh_from_db()
    assert project.guidelines == "Our own rules."
    assert project.meta == {"natinst": {"task": "other"}}
    assert len(report.notes) == 2
    assert report.items_created == 2


@pytest.mark.django_db
def test_a_reimport_creates_nothing(tmp_path):
    path = write(tmp_path, task())
    import_items(project="gec", fmt="natinst", path=path, create_project=True)

    again = import_items(project="gec", fmt="natinst", path=path)

    assert (again.items_created, again.items_skipped, again.notes) == (0, 2, [])
    assert Item.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{\n  "Definition": ["x"],\n  "Instances": [,]\n}', r"line 3: invalid JSON: Expecting value"),
        ("[]", r"line 1: expected a JSON object \(one task\), got a list"),
        (
            '{"Definition": "x", "Instances": [{"input": "a", "output": [], "n": -Infinity}]}',
            r"json: invalid JSON: -Infinity is not allowed",
        ),
        (task(Instances=[]), r"field 'Instances': required field must be a non-empty list"),
        ({k: v for k, v in task().items() if k != "Definition"}, r"field 'Definition': required field is missing"),
        (task(Definition=[1]), r"field 'Definition': entry 0 must be a string"),
        (
            task(**{"Positive Examples": [{"input": "x", "output": 2}]}),
            r"line \d+, field 'Positive Examples\[0\].output': must be a string, got a number",
        ),
        (
            task(Instances=[{"id": "a", "input": "x", "output": []}, {"id": "b", "input": "x"}]),
            r"line {b}, field 'Instances\[1\].output': required field is missing",
        ),
        (
            task(Instances=[{"id": "a", "input": "x", "output": []}, {"id": "b", "input": "x", "output": "y"}]),
            r"line {b}, field 'Instances\[1\].output': must be a list of strings, got a string",
        ),
        (
            task(Instances=[{"id": "a", "input": "x", "output": []}, {"id": "b", "input": "x", "output": [None]}]),
            r"line {b}, field 'Instances\[1\].output': entry 0 must be a string, got null",
        ),
        (
            task(Instances=[{"id": "a", "input": "x", "output": []}, {"id": "a", "input": "x", "output": []}]),
            r"line {a2}, field 'external_id': duplicate id 'a' \(first at .*, line {a}\)",
        ),
    ],
)
@pytest.mark.django_db
def test_it_rejects_bad_task_files_and_imports_nothing(tmp_path, data, message):
    path = write(tmp_path, data)
    # An instance's line is the line of its opening brace, the one above its "id".
    ids = {}
    for n, text in enumerate(Path(path).read_text().splitlines(), start=1):
        if text.strip() in ('"id": "a",', '"id": "b",'):
            key = text.strip()[7]
            ids[key if key not in ids else key + "2"] = n - 1
    message = (
        message.replace("{b}", str(ids.get("b"))).replace("{a2}", str(ids.get("a2"))).replace("{a}", str(ids.get("a")))
    )

    with pytest.raises(ImportDataError, match=message) as caught:
        import_items(project="gec", fmt="natinst", path=path, create_project=True)

    assert caught.value.file == path
    assert not Project.objects.exists()
    assert not Item.objects.exists()
