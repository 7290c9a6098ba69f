"""Re-running a published study live: an imported study's items go to live annotators (batches and
overlap, or a Latin square), or are copied into a new project in one step (service, command, page,
API), the imported post-edits staying for comparison."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.editing.lifecycle import post_edit_open
from annotations.importers import import_items
from annotations.models import Assignment, Batch, Item, PostEdit, Project
from annotations.services.copying import project_copy_items
from annotations.services.errors import ServiceError
from tests.annotations.test_import_design import DIVEMT, DIVEMT_MAPPING, PET_HEADER
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

# Two documents, shuffled across them in every post-editor's file alike (as in iwslt2019).
PET_ROWS = [
    ("doc-A", 2, "x", 5000, "A two.", "A dos.", "A dos!"),
    ("doc-B", 1, "x", 4000, "B one.", "B uno.", "B uno."),
    ("doc-A", 3, "x", 3000, "A three.", "A tres.", "A tres."),
    ("doc-A", 1, "x", 6000, "A one.", "A uno.", "A uno!"),
    ("doc-B", 2, "x", 2000, "B two.", "B dos.", "B dos."),
]


def imported_pet_study(tmp_path: Path) -> Project:
    folder = tmp_path / "pet"
    folder.mkdir()
    (folder / "header").write_text(PET_HEADER, encoding="utf-8")
    text = "".join("\t".join(map(str, row)) + "\n" for row in PET_ROWS)
    for editor in ("ann0", "ann1"):
        (folder / editor).write_text(text, encoding="utf-8")
    import_items(project="PET study", fmt="pet", path=folder, create_project=True, annotator_prefix="pet-")
    return Project.objects.get(name="PET study")


@pytest.fixture
def live_annotators(db):
    return [UserFactory(username=name, role="annotator") for name in ("lena", "max", "zoe")]


def test_make_batches_and_assign_give_an_imported_pet_study_to_live_annotators(tmp_path, live_annotators, capsys):
    project = imported_pet_study(tmp_path)
    assert not project.batches.exists()  # the importer makes no batch: imported work needs none

    call_command("make_batches", project="PET study", size=2)
    call_command("assign", project="PET study", annotators="lena,max", overlap=2)

    out = capsys.readouterr().out
    assert "Created 10 assignments over 2 batches (overlap 2): lena +5, max +5." in out
    assert "Skipped 0 items" in out
    # Whole documents per batch (doc-A has 3 segments, more than the size: a batch of its own),
    # each in document order although the study's files had them shuffled.
    batches = {
        batch.name: list(batch.items.order_by("batch_position").values_list("external_id", flat=True))
        for batch in Batch.objects.filter(project=project)
    }
    assert batches == {"batch 001": ["doc-A:1", "doc-A:2", "doc-A:3"], "batch 002": ["doc-B:1", "doc-B:2"]}
    queue = list(Assignment.objects.filter(annotator__username="lena").values_list("item__external_id", flat=True))
    assert queue == ["doc-A:1", "doc-A:2", "doc-A:3", "doc-B:1", "doc-B:2"]
    # The imported post-edits stay, untouched, for comparison.
    imported = PostEdit.objects.filter(origin=PostEdit.IMPORTED)
    assert imported.count() == 10 and set(imported.values_list("text", flat=True)) >= {"A dos!", "A uno!"}

    call_command("assign", project="PET study", annotators="lena,max", overlap=2)
    assert "Created 0 assignments" in capsys.readouterr().out

    lena = live_annotators[0]
    with transaction.atomic():
        post_edit, _ = post_edit_open(assignment=Assignment.objects.filter(annotator=lena).first(), user=lena)
    assert (post_edit.draft_text, post_edit.origin, post_edit.condition) == ("A uno.", PostEdit.LIVE, "")


def test_a_latin_square_runs_over_an_imported_multi_condition_study(live_annotators, capsys):
    import_items(project="DivEMT", fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING, create_project=True)

    call_command(
        "assign",
        project="DivEMT",
        annotators="lena,max,zoe",
        design="latin-square",
        conditions="ht,pe1,pe2",
        apply=True,
    )

    assert "Created 18 assignments." in capsys.readouterr().out
    live = Assignment.objects.live().filter(item__project__name="DivEMT")
    shares = {}
    for name, condition in live.values_list("annotator__username", "condition"):
        shares.setdefault(name, []).append(condition)
    assert {n: sorted(c) for n, c in shares.items()} == {
        n: ["ht", "ht", "pe1", "pe1", "pe2", "pe2"] for n in ("lena", "max", "zoe")
    }
    assert PostEdit.objects.filter(origin=PostEdit.IMPORTED).count() == 18
    lena = live_annotators[0]
    starts = {}
    with transaction.atomic():
        for assignment in live.filter(annotator=lena).select_related("item"):
            post_edit, _ = post_edit_open(assignment=assignment, user=lena)
            starts[assignment.condition] = (post_edit.draft_text, assignment.item)
    assert starts["ht"][0] == ""
    assert starts["pe1"][0] == starts["pe1"][1].outputs["pe1"]
    assert starts["pe2"][0] == starts["pe2"][1].outputs["pe2"]


# --------------------------------------------------------------------------- copying


def _study_to_copy() -> Project:
    project = ProjectFactory(
        name="QE4PE-like",
        guidelines="Fix **only** real errors.",
        instructions=["Fix the errors.", "Keep the style."],
        instruction_seed=42,
        source_lang="en",
        target_lang="ar",
        context=Project.CONTEXT_WINDOW,
        context_window=3,
        conditions=[{"name": "hl", "output": "sysA", "highlights": True}],
        overlap=2,
        meta={"batching": [{"size": 5}], "designs": [{"design": "latin-square"}], "origin": "qe4pe"},
    )
    ItemFactory(project=project, external_id="warm", practice=True, position=0, model_output="Warm-up.")
    ItemFactory(
        project=project,
        external_id="d1:1",
        position=1,
        document="d1",
        document_position=1,
        outputs={"sysA": "مرحبا بالعالم", "sysB": "أهلا"},
        highlights={"sysA": [[0, 5, "major"]]},
        references=[{"url": "https://example.org", "title": "Ref", "text": "Hello world"}],
        gold_edits=["مرحبا يا عالم"],
        drawn_instruction="Keep the style.",
        meta={"domain": "news"},
        batch=None,
    )
    ItemFactory(project=project, external_id="d1:2", position=2, document="d1", document_position=2, instruction="Own.")
    return project


def test_the_copy_has_the_items_and_settings_and_no_work(tmp_path):
    source = _study_to_copy()
    SubmittedPostEditFactory(assignment__item=source.items.get(external_id="d1:1"))

    result = project_copy_items(source=source, target_name="QE4PE-like (live)")

    copy = result.project
    assert (result.items, result.practice_items) == (3, 1)
    settings = ("guidelines", "instructions", "instruction_seed", "source_lang", "target_lang", "context")
    settings += ("context_window", "conditions", "overlap", "idle_threshold_s", "task_type")
    assert {f: getattr(copy, f) for f in settings} == {f: getattr(source, f) for f in settings}
    assert copy.design == Project.DESIGN_SIMPLE
    assert copy.meta["origin"] == "qe4pe" and "batching" not in copy.meta and "designs" not in copy.meta
    assert copy.meta["copied_from"]["project"] == "QE4PE-like" and copy.meta["copied_from"]["items"] == 3
    fields = ("external_id", "source", "model_output", "instruction", "drawn_instruction", "references")
    fields += ("gold_edits", "task_type", "meta", "position", "document", "document_position", "outputs")
    fields += ("highlights", "practice")
    assert list(copy.items.order_by("position").values(*fields)) == list(
        source.items.order_by("position").values(*fields)
    )
    assert copy.items.get(external_id="d1:1").effective_instruction == "Keep the style."
    assert not Assignment.objects.filter(item__project=copy).exists()
    assert not copy.items.filter(batch__isnull=False).exists()
    assert Assignment.objects.filter(item__project=source).count() == 1  # the source keeps its work


def test_practice_items_can_be_left_out_of_the_copy():
    source = _study_to_copy()

    result = project_copy_items(source=source, target_name="no warm-up", include_practice=False)

    assert (result.items, result.practice_items) == (2, 0)
    assert list(result.project.items.values_list("external_id", flat=True)) == ["d1:1", "d1:2"]
    assert result.project.meta["copied_from"]["practice_left_out"] is True


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("QE4PE-like", "name: a project called 'QE4PE-like' already exists"),
        ("   ", "name: must not be empty"),
        ("x" * 201, "name: at most 200 characters"),
    ],
)
def test_a_copy_needs_a_new_name(name, message):
    source = _study_to_copy()

    with pytest.raises(ServiceError, match=message):
        project_copy_items(source=source, target_name=name)

    assert Project.objects.count() == 1


def test_an_odd_unicode_name_is_kept_as_written():
    source = _study_to_copy()
    name = "دراسة \u202eevil\u202c 👩\u200d🔬"

    result = project_copy_items(source=source, target_name=f"  {name} ")

    assert result.project.name == name


def test_the_copy_project_command(capsys):
    _study_to_copy()

    call_command("copy_project", "--from", "QE4PE-like", "--to", "Live run", "--no-practice")

    assert (
        "Copied 2 items from 'QE4PE-like' into the new project 'Live run' (no post-edits)." in capsys.readouterr().out
    )
    with pytest.raises(CommandError, match=r"--from: no project called 'nope'"):
        call_command("copy_project", "--from", "nope", "--to", "x")
    with pytest.raises(CommandError, match=r"--to: a project called 'Live run' already exists"):
        call_command("copy_project", "--from", "QE4PE-like", "--to", "Live run")


def test_a_copied_imported_study_runs_live_and_compares_item_by_item(live_annotators, capsys):
    import_items(project="DivEMT", fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING, create_project=True)
    call_command("copy_project", "--from", "DivEMT", "--to", "DivEMT live")

    call_command(
        "assign",
        project="DivEMT live",
        annotators="lena,max,zoe",
        design="latin-square",
        conditions="ht,pe1,pe2",
        apply=True,
    )

    assert "Created 18 assignments." in capsys.readouterr().out
    copy = Project.objects.get(name="DivEMT live")
    assert not PostEdit.objects.filter(assignment__item__project=copy).exists()
    pairs = {
        external_id: (document, position)
        for external_id, document, position in Item.objects.filter(project__name="DivEMT").values_list(
            "external_id", "document", "document_position"
        )
    }
    assert (
        dict((e, (d, p)) for e, d, p in copy.items.values_list("external_id", "document", "document_position")) == pairs
    )


# --------------------------------------------------------------------------- the page


def test_admins_copy_from_the_page_and_land_on_the_new_projects_batches(admin_client):
    source = _study_to_copy()
    url = reverse("manage-project-copy", args=[source.pk])

    page = admin_client.get(url)
    response = admin_client.post(url, {"name": "From the page"})

    assert page.status_code == 200 and 'value="QE4PE-like (live)"' in page.content.decode()
    assert "3 items in 1 document" in page.content.decode()
    copy = Project.objects.get(name="From the page")
    assert response.status_code == 302 and response["Location"] == reverse("manage-batches", args=[copy.pk])
    assert list(copy.items.values_list("external_id", flat=True)) == ["d1:1", "d1:2"]  # the box unticked


def test_a_taken_name_is_a_form_error(admin_client):
    source = _study_to_copy()

    response = admin_client.post(reverse("manage-project-copy", args=[source.pk]), {"name": "QE4PE-like"})

    assert response.status_code == 400
    assert "a project called &#x27;QE4PE-like&#x27; already exists" in response.content.decode()
    assert Project.objects.count() == 1


@pytest.mark.parametrize(
    ("who", "status"), [("annotator_client", 403), ("other_annotator_client", 403), ("researcher_client", 403)]
)
def test_only_admins_may_copy_on_the_page(request, who, status):
    source = _study_to_copy()
    client = request.getfixturevalue(who)
    url = reverse("manage-project-copy", args=[source.pk])

    assert client.get(url).status_code == status
    assert client.post(url, {"name": "sneaky"}).status_code == status
    assert Project.objects.count() == 1


def test_anonymous_visitors_are_sent_to_log_in(client):
    source = _study_to_copy()
    url = reverse("manage-project-copy", args=[source.pk])

    response = client.post(url, {"name": "sneaky"})

    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    assert Project.objects.count() == 1


def test_a_missing_project_is_a_404_on_the_page(admin_client):
    assert admin_client.get(reverse("manage-project-copy", args=[987654])).status_code == 404


# --------------------------------------------------------------------------- the API


def _api(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_admins_copy_through_the_api(admin_user):
    source = _study_to_copy()

    response = _api(admin_user).post(reverse("api-project-copy", args=[source.pk]), {"name": "API copy"}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["items"], body["practice_items"]) == (3, 1)
    assert (body["project"]["name"], body["project"]["item_count"], body["project"]["batch_count"]) == (
        "API copy",
        3,
        0,
    )
    assert body["project"]["meta"]["copied_from"]["project_id"] == source.pk


@pytest.mark.parametrize("who", ["anonymous", "annotator", "other_annotator", "researcher"])
def test_everyone_but_admins_is_refused_by_the_api(request, who):
    source = _study_to_copy()
    user = None if who == "anonymous" else request.getfixturevalue(who)

    response = _api(user).post(reverse("api-project-copy", args=[source.pk]), {"name": "sneaky"}, format="json")

    assert response.status_code == 403
    assert set(response.json()) >= {"detail", "code"}
    assert Project.objects.count() == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "QE4PE-like"}, "name"),
        ({}, "name"),
        ({"name": {"deep": [[[[[]]]]]}}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "ok", "include_practice": "perhaps"}, "include_practice"),
        ({"name": "ok", "include_practice": 10**30}, "include_practice"),
    ],
)
def test_bad_api_input_is_a_400_naming_the_field(admin_user, payload, field):
    source = _study_to_copy()

    response = _api(admin_user).post(reverse("api-project-copy", args=[source.pk]), payload, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert Project.objects.count() == 1


def test_deep_json_is_a_400_and_a_missing_or_huge_id_a_404(admin_user):
    source = _study_to_copy()
    client = _api(admin_user)
    deep = "[" * 100 + "]" * 100

    too_deep = client.post(
        reverse("api-project-copy", args=[source.pk]), f'{{"name": {deep}}}', content_type="application/json"
    )
    missing = client.post(reverse("api-project-copy", args=[source.pk + 1000]), {"name": "x"}, format="json")
    huge = client.post(f"/api/projects/{10**30}/copy/", {"name": "x"}, format="json")

    assert too_deep.status_code == 400 and too_deep.json()["code"] == "too_deep"
    assert missing.status_code == huge.status_code == 404
    assert Project.objects.count() == 1
