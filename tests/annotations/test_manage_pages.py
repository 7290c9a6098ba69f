import re

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotations.models import Assignment, Batch, Item, Project
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    ItemFactory,
    PostEditFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)


def _project_post(**overrides):
    data = {
        "name": "Clarity study",
        "guidelines": "Keep the **meaning**.",
        "task_type": "clarity",
        "instructions": "Make it clearer\n\nSimplify",
        "idle_threshold_s": "30",
        "overlap": "2",
    }
    data.update(overrides)
    return data


def test_admin_creates_a_project_with_typed_instructions(admin_client):
    response = admin_client.post(reverse("manage-project-create"), _project_post())
    project = Project.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("manage-project-edit", args=[project.pk])
    assert project.instructions == ["Make it clearer", "Simplify"]
    assert (project.overlap, project.idle_threshold_s, project.task_type) == (2, 30.0, "clarity")


def test_admin_loads_instructions_from_the_editeval_file(admin_client, shared_data):
    upload = SimpleUploadedFile("editeval_instructions.json", (shared_data / "editeval_instructions.json").read_bytes())
    admin_client.post(
        reverse("manage-project-create"), {**_project_post(task_type="updating"), "instructions_file": upload}
    )
    project = Project.objects.get()
    assert project.task_type == "updating"
    assert len(project.instructions) == 3


def test_a_bad_instructions_file_is_a_form_error_naming_the_file(admin_client):
    upload = SimpleUploadedFile("broken.json", b'{"clarity": [\n "a",\n')
    response = admin_client.post(reverse("manage-project-create"), {**_project_post(), "instructions_file": upload})
    assert response.status_code == 200
    assert "broken.json: invalid JSON on line 3" in response.content.decode()
    assert not Project.objects.exists()


def test_edit_page_renders_guidelines_safely(admin_client):
    project = ProjectFactory(guidelines="**bold** <script>alert(1)</script> [x](javascript:alert(2))")
    body = admin_client.get(reverse("manage-project-edit", args=[project.pk])).content.decode()
    preview = body[body.index('class="guidelines"') :]
    assert "<strong>bold</strong>" in preview
    assert "<script>" not in preview and "javascript:" not in preview


def test_admin_edits_a_project(admin_client):
    project = ProjectFactory(name="old", instructions=["a"])
    admin_client.post(
        reverse("manage-project-edit", args=[project.pk]), _project_post(name="new", instructions="b\nc", overlap="1")
    )
    project.refresh_from_db()
    assert (project.name, project.instructions, project.overlap) == ("new", ["b", "c"], 1)


def test_admin_makes_batches_assigns_and_withdraws_from_the_batches_page(admin_client, annotator, other_annotator):
    project = ProjectFactory()
    for k in range(6):
        ItemFactory(project=project, external_id=f"e{k}", position=k)
    response = admin_client.post(reverse("manage-batches-make", args=[project.pk]), {"size": "4", "shuffle_seed": ""})
    assert response.status_code == 302
    assert list(project.batches.values_list("name", flat=True)) == ["batch 001", "batch 002"]

    response = admin_client.post(
        reverse("manage-batches-assign", args=[project.pk]),
        {"annotators": [annotator.pk, other_annotator.pk], "overlap": "2"},
    )
    assert response.status_code == 302
    assert Assignment.objects.filter(annotator=annotator).count() == 6
    assert Assignment.objects.filter(annotator=other_annotator).count() == 6
    page = admin_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    assert "Created 12 assignments" in page
    assert "anna, bob" in page

    response = admin_client.post(
        reverse("manage-assignments-move", args=[project.pk]),
        {
            "action": "withdraw",
            "from_annotator": other_annotator.pk,
            "batches": [Batch.objects.get(name="batch 002").pk],
        },
    )
    assert response.status_code == 302
    assert Assignment.objects.filter(annotator=other_annotator).count() == 4


def test_overlap_above_selected_annotators_is_a_form_error(admin_client, annotator):
    project = ProjectFactory()
    ItemFactory(project=project)
    admin_client.post(reverse("manage-batches-make", args=[project.pk]), {"size": "4"})
    response = admin_client.post(
        reverse("manage-batches-assign", args=[project.pk]), {"annotators": [annotator.pk], "overlap": "2"}
    )
    assert response.status_code == 400
    assert "needs 2 distinct annotators but only 1 are selected" in response.content.decode()
    assert not Assignment.objects.exists()


def test_reassign_moves_pending_and_keeps_submitted(admin_client, annotator, other_annotator):
    project = ProjectFactory()
    pending = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    done = SubmittedPostEditFactory(assignment__item=ItemFactory(project=project), assignment__annotator=annotator)
    admin_client.post(
        reverse("manage-assignments-move", args=[project.pk]),
        {"action": "reassign", "from_annotator": annotator.pk, "to_annotator": other_annotator.pk},
    )
    assert (
        Assignment.objects.filter(annotator=other_annotator).values_list("item_id", flat=True).get() == pending.item_id
    )
    assert Assignment.objects.get(pk=done.assignment_id).annotator == annotator


def test_progress_page_counts_per_annotator_and_batch_and_polls_a_partial(admin_client, annotator, other_annotator):
    project = ProjectFactory()
    batch = Batch.objects.create(project=project, name="batch 001")
    items = [ItemFactory(project=project, batch=batch, batch_position=k) for k in range(3)]
    SubmittedPostEditFactory(assignment__item=items[0], assignment__annotator=annotator, active_ms=10000)
    SubmittedPostEditFactory(assignment__item=items[1], assignment__annotator=annotator, active_ms=20000)
    PostEditFactory(
        assignment__item=items[2], assignment__annotator=annotator, assignment__status=Assignment.IN_PROGRESS
    )
    AssignmentFactory(item=items[0], annotator=other_annotator)

    url = reverse("manage-progress", args=[project.pk])
    page = admin_client.get(url).content.decode()
    assert "<html" in page and 'hx-trigger="every 5s"' in page and f'href="{url}"' in page
    anna_row = page[page.index("<td>anna</td>") :].split("</tr>")[0]
    assert "<td>2</td><td>1</td><td>0</td>" in anna_row
    assert "15.0 s" in anna_row  # median of 10 s and 20 s
    bob_row = page[page.index("<td>bob</td>") :].split("</tr>")[0]
    assert "<td>0</td><td>0</td><td>1</td>" in bob_row

    partial = admin_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial
    assert partial.lstrip().startswith('<div id="progress"')
    assert "<td>batch 001</td><td>2</td><td>1</td><td>1</td>" in partial


def test_progress_page_shows_flagged_post_edits_and_uncorroborated_keys(admin_client, annotator):
    project = ProjectFactory()
    items = [ItemFactory(project=project) for _ in range(3)]
    flags = ["wall_clipped", "keys_uncorroborated"]
    SubmittedPostEditFactory(
        assignment__item=items[0], assignment__annotator=annotator, flags=flags, uncorroborated_keys=1999
    )
    SubmittedPostEditFactory(assignment__item=items[1], assignment__annotator=annotator, flags=["wall_clipped"])
    SubmittedPostEditFactory(assignment__item=items[2], assignment__annotator=annotator, uncorroborated_keys=0)

    page = admin_client.get(reverse("manage-progress", args=[project.pk])).content.decode()
    assert "<th" in page and "Flagged</th>" in page and "Uncorroborated keys</th>" in page
    anna_row = page[page.index("<td>anna</td>") :].split("</tr>")[0]
    assert (
        '<td class="flags">2 <small>(<code>wall_clipped</code> 2, <code>keys_uncorroborated</code> 1)</small></td>'
        "<td>1999</td>"
    ) in anna_row


def test_project_list_shows_counts(admin_client):
    project = ProjectFactory(name="Listed")
    ItemFactory(project=project)
    page = admin_client.get(reverse("manage-projects")).content.decode()
    assert "Listed" in page and reverse("manage-progress", args=[project.pk]) in page


def test_researcher_sees_pages_without_forms(researcher_client):
    project = ProjectFactory()
    page = researcher_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    assert "Read-only" in page and '<form method="post" action' not in page
    assert reverse("manage-project-create") not in researcher_client.get(reverse("manage-projects")).content.decode()


def test_assign_form_lists_only_active_annotators(admin_client, annotator, researcher):
    inactive = UserFactory(username="imported-ed", role="annotator")
    inactive.is_active = False
    inactive.save()
    project = ProjectFactory()
    page = admin_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    assign = page[page.index('class="assign"') :]
    assign = assign[: assign.index("</form>")]
    assert "anna" in assign and "rita" not in assign and "imported-ed" not in assign
    assert Item.objects.count() == 0


def test_every_field_of_the_batches_page_has_one_id_and_a_label_pointing_at_it(admin_client):
    project = ProjectFactory()
    BatchFactory(project=project, name="b1")
    html = admin_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    ids = re.findall(r'<(?:select|input|textarea)[^>]*\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert 'id="id_batches"' in html and 'id="id_move_batches"' in html  # the two "Batches" lists
    assert '<label for="id_move_batches">Batches:</label>' in html
    assert 'name="batches"' in html.split('id="id_move_batches"')[0].rsplit("<select", 1)[1]  # names unchanged
