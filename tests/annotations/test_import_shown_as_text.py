"""Text that came from a data file reaches every page exactly as the file had it.

A Super-NaturalInstructions Definition such as `Ask 'Where is <person_name>?'` once reached
annotators as `Ask 'Where is ?'` (the Markdown sanitiser dropped the "tag"), and Markdown ate
`**` and `\\`. Imported text is data: each page shows it escaped, character for character;
only the guidelines an admin writes are Markdown. Every page that shows imported text is
read back here: the editor, the diff, the replay, the project page, batches and the import
report.
"""

import html
import json
import re

import pytest
from django.urls import reverse

from annotations.importers import import_items
from annotations.models import Assignment, Item, Project
from tests.factories import AssignmentFactory, BatchFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

DEFINITION = (
    "Ask 'Where is <person_name>?' when the **location** is missing.\n"
    "Keep C:\\temp\\ and \\*stars\\* as written; <b>tags</b> & &amp; entities are text too."
)
SOURCE = "<person_name> left **early**, via C:\\temp\\ & <i>home</i>."
PREDICTION = "Where is <person_name>? **Now** \\ & &lt;"
EXAMPLE = {"input": "Bob <left>.", "output": "Where is **Bob**?", "explanation": "A \\ backslash & <tag> stay."}
EMPTY_NEGATIVE = {"input": "Ann <left>.", "output": "", "explanation": "An empty output is wrong."}
REFERENCE = {
    "url": "https://example.org/?a=<1>&b=2",
    "title": "Doc <b>one</b> **x**",
    "text": "Body \\ **b** <x> &amp;",
}


def inner(content: str, element_id: str, tag: str) -> str:
    """The text of the element with this id, as a browser shows it (entities decoded, no markup inside)."""
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</{tag}>', content, re.S)
    assert match, f"no #{element_id} on the page"
    assert "<" not in match.group(1), f"markup inside #{element_id}: {match.group(1)!r}"
    return html.unescape(match.group(1))


def texts(content: str, css_class: str, tag: str = "pre") -> list[str]:
    return [html.unescape(t) for t in re.findall(rf'<{tag} class="{css_class}">(.*?)</{tag}>', content, re.S)]


@pytest.fixture
def natinst_item(tmp_path) -> Item:
    task = {
        "Definition": [DEFINITION],
        "Categories": ["Question Generation"],
        "Positive Examples": [EXAMPLE],
        "Negative Examples": [EMPTY_NEGATIVE],
        "Instances": [{"id": "task1-<a>", "input": SOURCE, "output": ["Where is Sam?"]}],
    }
    task_path = tmp_path / "task1_where.json"
    task_path.write_text(json.dumps(task, indent=4), encoding="utf-8")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"id": "task1-<a>", "prediction": PREDICTION}) + "\n", encoding="utf-8")
    import_items(project="where", fmt="natinst", path=task_path, predictions=predictions, create_project=True)
    return Item.objects.get(external_id="task1-<a>")


@pytest.fixture
def open_assignment(natinst_item, annotator) -> Assignment:
    natinst_item.batch = BatchFactory(project=natinst_item.project, name="b <1>")
    natinst_item.batch_position = 0
    natinst_item.save()
    return AssignmentFactory(item=natinst_item, annotator=annotator)


def test_the_editor_shows_source_instruction_text_and_examples_character_for_character(
    annotator_client, open_assignment
):
    content = annotator_client.get(reverse("editor", args=[open_assignment.pk])).content.decode()

    assert inner(content, "instruction", "span") == DEFINITION
    assert inner(content, "source", "pre") == SOURCE
    assert inner(content, "post-edit-text", "textarea") == PREDICTION
    assert texts(content, "text") == [EXAMPLE["input"], EXAMPLE["output"], EMPTY_NEGATIVE["input"]]
    assert html.unescape(re.search(r'<p class="text">(.*?)</p>', content, re.S).group(1)) == EXAMPLE["explanation"]
    assert "(empty)" in content  # the negative example's empty output, said so
    assert 'id="task-examples"' in content


def test_the_editor_shows_reference_documents_as_title_text_and_address(annotator_client, annotator, tmp_path):
    path = tmp_path / "items.jsonl"
    row = {"id": "r1", "model_output": "Text **to** fix \\", "references": [REFERENCE, "Plain <ref> **two**"]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    import_items(project="refs", fmt="table", path=path, mapping={"external_id": "id"}, create_project=True)
    item = Item.objects.get(external_id="r1")
    item.batch = BatchFactory(project=item.project)
    item.save()
    assignment = AssignmentFactory(item=item, annotator=annotator)

    content = annotator_client.get(reverse("editor", args=[assignment.pk])).content.decode()

    headings = [html.unescape(h) for h in re.findall(r"<h3>(.*?)</h3>", content, re.S)]
    assert headings[:2] == [REFERENCE["title"], "Reference 2"]
    assert texts(content, "text reference-text") == [REFERENCE["text"], "Plain <ref> **two**"]
    assert texts(content, "muted reference-url", "p") == [REFERENCE["url"]]
    assert 'href="https://example.org' not in content  # an address from a file is text, not a link


def test_the_diff_and_the_replay_show_the_imported_and_edited_texts_as_written(
    annotator_client, admin_client, annotator, natinst_item
):
    assignment = AssignmentFactory(item=natinst_item, annotator=annotator, status=Assignment.SUBMITTED)
    post_edit = SubmittedPostEditFactory(assignment=assignment, text=PREDICTION + " <ok> **done**")

    diff = annotator_client.get(reverse("editor_diff", args=[assignment.pk])).content.decode()
    replay = admin_client.get(reverse("manage-post-edit-replay", args=[post_edit.pk])).content.decode()

    assert inner(diff, "original", "pre") == PREDICTION
    assert inner(diff, "edited", "pre") == PREDICTION + " <ok> **done**"
    diff_body = re.search(r'id="diff"[^>]*>(.*?)</div>', diff, re.S).group(1)
    shown = re.sub(r'<span class="visually-hidden">[^<]*</span>', "", diff_body)  # the screen readers' labels
    assert re.findall(r"<ins>(.*?)</ins>", shown) == [html.escape(" <ok> **done**", quote=True).replace("&#x27;", "'")]
    assert html.unescape(re.sub(r"</?ins>", "", shown)) == PREDICTION + " <ok> **done**"
    assert inner(replay, "replay-text", "pre") == PREDICTION
    assert texts(replay, "text")[-1] == PREDICTION + " <ok> **done**"
    data = json.loads(re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', replay, re.S)[1])
    assert data["original"] == PREDICTION


def test_the_project_page_shows_the_task_file_as_text_and_only_the_admins_guidelines_as_markdown(
    admin_client, natinst_item
):
    project = Project.objects.get(name="where")
    project.guidelines = "Admin **rules** <person_name>"
    project.save()

    content = admin_client.get(reverse("manage-project-edit", args=[project.pk])).content.decode()

    assert "Admin <strong>rules</strong>" in content  # the admin's Markdown (nh3 drops the unknown tag)
    assert inner(content, "task-definition", "pre") == DEFINITION
    assert texts(content, "text") == [EXAMPLE["input"], EXAMPLE["output"], EMPTY_NEGATIVE["input"]]


def test_batch_pages_and_the_import_report_show_ids_names_and_notes_as_text(
    admin_client, annotator_client, open_assignment
):
    project = open_assignment.item.project

    batches = admin_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    home = annotator_client.get(reverse("annotator_home")).content.decode()
    task = {
        "Definition": "x",
        "Instances": [{"id": "<i>1</i>", "input": "a", "output": []}, {"id": "2", "input": "b", "output": []}],
    }
    upload = {
        "project": project.pk,
        "fmt": "natinst",
        "files": _file("task1_<b>.json", json.dumps(task)),
        "predictions": _file("p.jsonl", '{"id": "2", "prediction": "B"}\n'),
    }
    report = admin_client.post(reverse("manage-import"), upload).content.decode()

    assert "b &lt;1&gt;" in batches and "b <1>" not in batches
    assert "task1-&lt;a&gt;" in home and "task1-<a>" not in home
    assert "1 of 2 instances have no prediction and were not imported: &#x27;&lt;i&gt;1&lt;/i&gt;&#x27;" in report


def _file(name: str, text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, text.encode())
