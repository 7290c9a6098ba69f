"""The `natinst` importer: a Super-NaturalInstructions task file and the model's predictions.

The excerpts follow the real files (allenai/natural-instructions tasks/*.json): `Definition`
a list of one string, examples with input/output/explanation, instances with an id like
`task1557-<hash>` and a list of outputs; task922's third negative example has an empty output.
"""

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.importers import ImportDataError, import_items
from annotations.models import Item, Project
from tests.factories import ProjectFactory

DEFINITION = "Ask 'Where is <person_name>?' when the **location** is missing; keep C:\\temp\\ and *stars* as written."


def task(**overrides) -> dict:
    data = {
        "Contributors": ["Someone"],
        "Source": ["jfleg"],
        "URL": ["https://example.org/jfleg"],
        "Categories": ["Grammar Error Correction"],
        "Reasoning": [],
        "Definition": [DEFINITION],
        "Input_language": ["English"],
        "Output_language": ["English"],
        "Instruction_language": ["English"],
        "Domains": ["Miscellaneous"],
        "Positive Examples": [
            {"input": "He go home.", "output": "He goes home.", "explanation": "Subject-verb agreement."}
        ],
        "Negative Examples": [
            {"input": "He go home.", "output": "He went home.", "explanation": "Changes the tense."},
            {"input": "EventPersonX gives candy.", "output": "", "explanation": "There should be an output."},
        ],
        "Instances": [
            {"id": "task1557-0a1b", "input": "She like apples.", "output": ["She likes apples."]},
            {"id": "task1557-2c3d", "input": "They was late.", "output": ["They were late.", "They are late."]},
            {"id": "task1557-4e5f", "input": "It rain.", "output": ["It rains."]},
        ],
    }
    data.update(overrides)
    return data


def write(tmp_path, data, name: str = "task1557_jfleg_answer_generation.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=4), encoding="utf-8")
    return path


def predictions(tmp_path, rows, name: str = "predictions.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


PREDICTED = [
    {"id": "task1557-0a1b", "prediction": "She likes apple."},
    {"id": "task1557-2c3d", "prediction": "They were late"},
    {"id": "task1557-4e5f", "prediction": "It rains!"},
]


@pytest.mark.django_db
def test_an_instance_is_the_source_the_definition_its_instruction_and_the_prediction_the_text(tmp_path):
    report = import_items(
        project="gec",
        fmt="natinst",
        path=write(tmp_path, task()),
        predictions=predictions(tmp_path, PREDICTED),
        create_project=True,
    )

    assert report.project_created and report.items_created == 3
    assert report.files[1].endswith("predictions.jsonl")
    second = Item.objects.get(external_id="task1557-2c3d")
    assert second.source == "They was late."
    assert second.model_output == "They were late"
    assert second.instruction == DEFINITION
    assert second.effective_instruction == DEFINITION
    assert second.gold_edits == ["They were late.", "They are late."]
    assert (second.task_type, second.meta) == (
        "Grammar Error Correction",
        {"natinst_task": "task1557_jfleg_answer_generation"},
    )
    project = Project.objects.get(name="gec")
    assert project.guidelines == ""  # the admin's Markdown; the file's text is data, kept apart
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
        "definition": DEFINITION,
        "positive_examples": [
            {"input": "He go home.", "output": "He goes home.", "explanation": "Subject-verb agreement."}
        ],
        "negative_examples": [
            {"input": "He go home.", "output": "He went home.", "explanation": "Changes the tense."},
            {"input": "EventPersonX gives candy.", "output": "", "explanation": "There should be an output."},
        ],
    }


@pytest.mark.django_db
def test_a_definition_in_several_parts_is_joined_by_blank_lines(tmp_path):
    path = write(tmp_path, task(Definition=["Fix the grammar.", "Keep **its** meaning."]))

    import_items(project="p", fmt="natinst", path=path, post_edit_input=True, create_project=True)

    assert set(Item.objects.values_list("instruction", flat=True)) == {"Fix the grammar.\n\nKeep **its** meaning."}


@pytest.mark.django_db
def test_an_editing_task_can_post_edit_the_input_itself(tmp_path):
    instances = [{"input": "a b", "output": ["a, b"]}, {"input": "c d", "output": []}]
    path = write(tmp_path, task(Definition="Add commas.", Instances=instances), name="task9.json")

    import_items(project="p", fmt="natinst", path=path, post_edit_input=True, create_project=True)

    items = Item.objects.order_by("position")
    assert [(i.external_id, i.source, i.model_output, i.instruction) for i in items] == [
        ("task9-1", "", "a b", "Add commas."),
        ("task9-2", "", "c d", "Add commas."),
    ]
    assert items[0].meta == {"natinst_task": "task9", "text_to_edit": "input"}


@pytest.mark.django_db
def test_it_asks_for_predictions_or_the_input_option_and_not_both(tmp_path):
    path = write(tmp_path, task())

    with pytest.raises(ImportDataError, match=r"an instance's input is the task's input, not a text to post-edit"):
        import_items(project="p", fmt="natinst", path=path, create_project=True)
    with pytest.raises(ImportDataError, match=r"predictions.jsonl: give a predictions file or post-edit"):
        import_items(
            project="p",
            fmt="natinst",
            path=path,
            predictions=predictions(tmp_path, PREDICTED),
            post_edit_input=True,
            create_project=True,
        )
    with pytest.raises(ImportDataError, match=r"a predictions file applies to the natinst format only"):
        import_items(project="p", fmt="editeval", path=path, predictions=predictions(tmp_path, PREDICTED))
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_instances_without_a_prediction_are_left_out_and_counted(tmp_path):
    report = import_items(
        project="p",
        fmt="natinst",
        path=write(tmp_path, task()),
        predictions=predictions(tmp_path, [PREDICTED[1]]),
        create_project=True,
    )

    assert report.items_created == 1
    assert report.notes == [
        "2 of 3 instances have no prediction and were not imported: 'task1557-0a1b', 'task1557-4e5f'"
    ]
    assert list(Item.objects.values_list("external_id", flat=True)) == ["task1557-2c3d"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [PREDICTED[0], {"id": "task999-ffff", "prediction": "x"}],
            r"predictions.jsonl, line 2, field 'id': 'task999-ffff' matches no instance of "
            r"task1557_jfleg_answer_generation.json \(its ids look like 'task1557-0a1b'\); "
            r"is this the predictions file of another task\?",
        ),
        (
            [PREDICTED[0], PREDICTED[1], {"id": "task1557-0a1b", "prediction": "again"}],
            r"line 3, field 'id': a second prediction for 'task1557-0a1b' \(the first is on line 1\)",
        ),
        ([{"id": "task1557-0a1b", "output": "x"}], r"line 1, field 'prediction': required field is missing"),
        ([{"prediction": "x"}], r"line 1, field 'id': required field is missing"),
        ([{"id": "task1557-0a1b", "prediction": ["x"]}], r"line 1, field 'prediction': must be a string, got a list"),
        (
            [{"id": "task1557-0a1b", "prediction": "  "}],
            r"field 'prediction': the prediction for 'task1557-0a1b' is empty",
        ),
        (
            ['{"id": "task1557-0a1b", "prediction": NaN}'],
            r"line 1, field 'prediction': invalid JSON: NaN is not allowed",
        ),
        (['{"id": "task1557-0a1b", "prediction": "\\u0000"}'], r"line 1, field 'prediction': invalid JSON: .*NUL"),
        (
            ['{"id": "x", "prediction": ' + "[" * 1000 + "]" * 1000 + "}"],
            r"line 1, field 'prediction\[0\]\[0\]\[0\]…': invalid JSON: JSON nested more than 64 levels deep",
        ),
        ([], r"predictions.jsonl: the predictions file holds no predictions"),
    ],
)
@pytest.mark.django_db
def test_bad_predictions_are_refused_naming_file_line_and_field(tmp_path, rows, message):
    with pytest.raises(ImportDataError, match=message) as caught:
        import_items(
            project="p",
            fmt="natinst",
            path=write(tmp_path, task()),
            predictions=predictions(tmp_path, rows),
            create_project=True,
        )

    assert caught.value.file.endswith("predictions.jsonl")
    assert not Project.objects.exists() and not Item.objects.exists()


@pytest.mark.django_db
def test_an_empty_output_in_a_negative_example_imports(tmp_path):
    # task922_event2mind_word_generation: "This is an example of a bad output as there should be atleast one output".
    report = import_items(
        project="p", fmt="natinst", path=write(tmp_path, task()), post_edit_input=True, create_project=True
    )

    assert report.items_created == 3
    assert Project.objects.get().meta["natinst"]["negative_examples"][1]["output"] == ""


@pytest.mark.django_db
def test_it_keeps_the_metadata_the_project_already_has(tmp_path):
    project = ProjectFactory(name="typed", guidelines="Our own rules.", meta={"natinst": {"task": "other"}})

    report = import_items(project=project, fmt="natinst", path=write(tmp_path, task()), post_edit_input=True)

    project.refresh_from_db()
    assert project.guidelines == "Our own rules."
    assert project.meta == {"natinst": {"task": "other"}}
    assert report.notes == ["the project's metadata 'natinst' differs from the file's; kept the project's"]
    assert report.items_created == 3


@pytest.mark.django_db
def test_a_reimport_creates_nothing(tmp_path):
    path = write(tmp_path, task())
    preds = predictions(tmp_path, PREDICTED)
    import_items(project="gec", fmt="natinst", path=path, predictions=preds, create_project=True)

    again = import_items(project="gec", fmt="natinst", path=path, predictions=preds)

    assert (again.items_created, again.items_skipped, again.notes) == (0, 3, [])
    assert Item.objects.count() == 3


@pytest.mark.django_db
def test_the_command_line_takes_predictions_or_the_input_option(tmp_path, capsys):
    path = write(tmp_path, task())

    call_command(
        "import_items", str(path), "--project", "cli", "--format", "natinst", "--create-project",
        "--predictions", str(predictions(tmp_path, PREDICTED)),
    )  # fmt: skip
    assert "items created: 3" in capsys.readouterr().out
    call_command(
        "import_items", str(path), "--project", "cli2", "--format", "natinst", "--create-project", "--post-edit-input"
    )
    assert Item.objects.get(project__name="cli2", external_id="task1557-4e5f").model_output == "It rain."
    with pytest.raises(CommandError, match="--post-edit-input applies to --format natinst only"):
        call_command("import_items", str(path), "--project", "cli", "--format", "editeval", "--post-edit-input")
    with pytest.raises(CommandError, match=r"nothing imported: .*not a text to post-edit"):
        call_command("import_items", str(path), "--project", "cli", "--format", "natinst")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{\n  "Definition": ["x"],\n  "Instances": [,]\n}', r"line 3: invalid JSON: Expecting value"),
        ("[]", r"line 1: expected a JSON object \(one task\), got a list"),
        (
            '{"Definition": "x", "Instances": [{"input": "a", "output": [], "n": -Infinity}]}',
            r"json, line 1, field 'Instances\[0\].n': invalid JSON: -Infinity is not allowed",
        ),
        (task(Instances=[]), r"field 'Instances': required field must be a non-empty list"),
        ({k: v for k, v in task().items() if k != "Definition"}, r"field 'Definition': required field is missing"),
        (task(Definition=[1]), r"field 'Definition': entry 0 must be a string"),
        (task(Definition=[" "]), r"field 'Definition': must not be empty"),
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
        (
            json.dumps(
                task(Instances=[{"id": "a", "input": "x", "output": []}, {"id": "b", "input": "x", "output": [1.5]}]),
                indent=4,
            ).replace("1.5", "NaN"),
            r"line {nan}, field 'Instances\[1\].output\[0\]': invalid JSON: NaN is not allowed",
        ),
        (
            json.dumps(task(Instances=[{"id": "a", "input": "x\u0000", "output": []}]), indent=4),
            r"line {a}, field 'Instances\[0\].input': invalid JSON: the text holds a NUL character",
        ),
        (
            '{"Definition": "x", "Instances": ' + "[" * 1000 + "]" * 1000 + "}",
            r"line 1, field 'Instances\[0\]\[0\]\[0\]…': invalid JSON: JSON nested more than 64 levels deep",
        ),
    ],
)
@pytest.mark.django_db
def test_it_rejects_bad_task_files_and_imports_nothing(tmp_path, data, message):
    path = write(tmp_path, data)
    # An instance's line is the line of its opening brace, the one above its "id".
    lines = {}
    for n, text in enumerate(path.read_text().splitlines(), start=1):
        if text.strip() in ('"id": "a",', '"id": "b",'):
            key = text.strip()[7]
            lines[key if key not in lines else key + "2"] = n - 1
        if "NaN" in text:
            lines["nan"] = n
    for key, line in lines.items():
        message = message.replace("{" + key + "}", str(line))

    with pytest.raises(ImportDataError, match=message) as caught:
        import_items(project="gec", fmt="natinst", path=path, post_edit_input=True, create_project=True)

    assert caught.value.file == str(path)
    assert not Project.objects.exists()
    assert not Item.objects.exists()
