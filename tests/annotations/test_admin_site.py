from django.contrib.auth import get_user_model
from django.urls import reverse

from annotations.models import Assignment, EditEvent, PostEdit
from annotations.roles import is_researcher
from tests.factories import (
    AssignmentFactory,
    EditEventFactory,
    ItemFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    VisitFactory,
)

User = get_user_model()

CHANGELISTS = ["project", "item", "batch", "assignment", "postedit", "visit", "editevent"]


def test_an_admin_role_user_opens_every_annotations_changelist(admin_client):
    EditEventFactory()
    VisitFactory()
    for model in CHANGELISTS:
        response = admin_client.get(reverse(f"admin:annotations_{model}_changelist"))
        assert response.status_code == 200, model
    assert admin_client.get(reverse("admin:annotations_project_changelist") + "?q=project").status_code == 200
    assert admin_client.get(reverse("admin:auth_user_changelist") + "?role=annotator").status_code == 200


def test_an_annotator_and_a_researcher_cannot_open_the_admin_site(annotator_client, researcher_client, client):
    url = reverse("admin:annotations_project_changelist")
    for c in (annotator_client, researcher_client, client):
        response = c.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("admin:login"))


def test_the_event_log_visits_and_post_edits_are_read_only(admin_client):
    event = EditEventFactory()
    assert admin_client.get(reverse("admin:annotations_editevent_add")).status_code == 403
    detail = admin_client.get(reverse("admin:annotations_editevent_change", args=[event.pk]))
    assert detail.status_code == 200  # viewable
    posted = admin_client.post(reverse("admin:annotations_editevent_change", args=[event.pk]), {"key": "b"})
    assert posted.status_code == 403
    assert (
        admin_client.post(reverse("admin:annotations_editevent_delete", args=[event.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert EditEvent.objects.get().key == "a"
    assert admin_client.get(reverse("admin:annotations_postedit_add")).status_code == 403
    assert admin_client.get(reverse("admin:annotations_visit_add")).status_code == 403


def test_post_edit_page_links_to_its_events(admin_client):
    event = EditEventFactory()
    page = admin_client.get(reverse("admin:annotations_postedit_change", args=[event.post_edit_id])).content.decode()
    assert f"?post_edit__id__exact={event.post_edit_id}" in page and "1 events" in page
    EditEventFactory()  # another post-edit's event, filtered out
    url = reverse("admin:annotations_editevent_changelist") + f"?post_edit__id__exact={event.post_edit_id}"
    response = admin_client.get(url)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 1


def test_withdraw_action_keeps_submitted_work_and_bulk_delete_is_gone(admin_client, annotator):
    project = ProjectFactory()
    pending = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    done = SubmittedPostEditFactory(assignment__item=ItemFactory(project=project), assignment__annotator=annotator)
    url = reverse("admin:annotations_assignment_changelist")
    page = admin_client.get(url).content.decode()
    assert "withdraw_pending" in page and "delete_selected" not in page
    admin_client.post(url, {"action": "withdraw_pending", "_selected_action": [pending.pk, done.assignment_id]})
    assert list(Assignment.objects.values_list("pk", flat=True)) == [done.assignment_id]
    assert PostEdit.objects.count() == 1
    assert (
        admin_client.get(reverse("admin:annotations_assignment_delete", args=[done.assignment_id])).status_code == 403
    )


def test_admin_sets_roles_with_an_action_and_on_the_user_form(admin_client, annotator):
    url = reverse("admin:auth_user_changelist")
    admin_client.post(url, {"action": "make_researcher", "_selected_action": [annotator.pk]})
    assert is_researcher(User.objects.get(pk=annotator.pk))
    page = admin_client.get(url).content.decode()
    assert "researcher" in page

    response = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "newadmin",
            "role": "admin",
            "password1": "long-enough-pw",
            "password2": "long-enough-pw",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    new = User.objects.get(username="newadmin")
    assert new.is_staff and list(new.groups.values_list("name", flat=True)) == ["admin"]


def test_batch_page_links_to_its_items_and_assignments(admin_client):
    from annotations.models import Batch

    project = ProjectFactory()
    batch = Batch.objects.create(project=project, name="batch 001")
    ItemFactory(project=project, batch=batch, batch_position=0)
    page = admin_client.get(reverse("admin:annotations_batch_change", args=[batch.pk])).content.decode()
    assert f"?batch__id__exact={batch.pk}" in page and "1 items" in page
    assert (
        admin_client.get(reverse("admin:annotations_item_changelist") + f"?batch__id__exact={batch.pk}").status_code
        == 200
    )
    url = reverse("admin:annotations_assignment_changelist") + f"?item__batch__id__exact={batch.pk}"
    assert admin_client.get(url).status_code == 200
