"""Erasing one participant's event log and texts on request: all of it goes, nobody else's does."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_submit
from annotations.models import Assignment, EditEvent, Participant, PostEdit, Visit
from annotations.services.erasure import participant_log_erase
from annotations.services.errors import ServiceError
from metrics.exports_events import EventExportSpec, event_rows
from metrics.models import MetricValue
from tests.annotations.editing_helpers import EDITED, edit_log, open_item, wire
from tests.factories import AssignmentFactory, MetricValueFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _participant(project, slot: int) -> Participant:
    user = UserFactory(username=f"p-{slot}", role="annotator")
    return Participant.objects.create(
        user=user, project=project, platform_id=f"PID{slot}", platform_key=f"pid{slot}", slot=slot
    )


def _submitted(participant: Participant, external_id: str) -> PostEdit:
    start = timezone.now() - timedelta(seconds=30)
    post_edit, visit = open_item(
        participant.user, now=start, item__project=participant.project, item__external_id=external_id
    )
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(edit_log()), now=start)
    post_edit_submit(
        post_edit=post_edit, page_id=visit.page_id, text=EDITED, version=0, last_seq=10,
        now=start + timedelta(seconds=5),
    )  # fmt: skip
    MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=3.0)
    return post_edit


@pytest.fixture
def study():
    project = ProjectFactory(name="crowd study")
    leaving, staying = _participant(project, 0), _participant(project, 1)
    _submitted(leaving, "d1-s1")
    open_item(leaving.user, item__project=project, item__external_id="d1-s2")  # opened, a draft on its way
    AssignmentFactory(annotator=leaving.user, item__project=project, item__external_id="d1-s3")  # not opened yet
    kept = _submitted(staying, "d1-s1-b")
    return project, leaving, staying, kept


def test_erasure_deletes_the_log_texts_and_derived_values_of_one_participant_only(study):
    project, leaving, staying, kept = study
    before = {
        "events": EditEvent.objects.filter(post_edit=kept).count(),
        "visits": Visit.objects.filter(post_edit=kept).count(),
    }
    now = timezone.now()
    erased = participant_log_erase(project=project, participant=leaving, now=now)
    assert (erased.post_edits, erased.events, erased.visits, erased.assignments_closed) == (2, 11, 2, 3)
    assert not PostEdit.objects.filter(assignment__annotator=leaving.user).exists()
    assert not EditEvent.objects.exclude(post_edit=kept).exists()
    assert not Visit.objects.exclude(post_edit=kept).exists()
    assert list(MetricValue.objects.values_list("post_edit_id", flat=True)) == [kept.pk]
    closed = Assignment.objects.filter(annotator=leaving.user)
    assert {a.status for a in closed} == {Assignment.SKIPPED}
    assert {a.skip_reason for a in closed} == {f"erased on the participant's request on {now:%Y-%m-%d %H:%M} UTC"}
    leaving.refresh_from_db()
    assert leaving.released_at == now and leaving.platform_id == "PID0"
    # The other participant's work is whole, and the event export holds only theirs.
    kept.refresh_from_db()
    assert kept.text == EDITED and kept.replay_ok is True
    assert EditEvent.objects.filter(post_edit=kept).count() == before["events"] == 11
    assert Visit.objects.filter(post_edit=kept).count() == before["visits"]
    rows = [row for rows in event_rows(EventExportSpec(project)) for row in rows]
    assert {row[0] for row in rows} == {kept.pk}
    staying.refresh_from_db()
    assert staying.released_at is None


def test_erasing_again_finds_nothing_and_another_projects_participant_is_refused(study):
    project, leaving, _, _ = study
    participant_log_erase(project=project, participant=leaving)
    again = participant_log_erase(project=project, participant=leaving)
    assert (again.post_edits, again.events, again.visits) == (0, 0, 0)
    with pytest.raises(ServiceError, match="is not a participant of 'elsewhere'"):
        participant_log_erase(project=ProjectFactory(name="elsewhere"), participant=leaving)


def test_the_participants_page_offers_erasure_to_admins_behind_a_confirm_page(study, client_as):
    project, leaving, _, _ = study
    page = reverse("manage-participation", kwargs={"project_id": project.pk})
    erase = reverse("manage-participant-erase", kwargs={"project_id": project.pk, "participant_id": leaving.pk})
    assert erase in client_as("admin").get(page).content.decode()
    assert erase not in client_as("researcher").get(page).content.decode()
    assert client_as("researcher").get(erase).status_code == 403
    assert client_as("researcher").post(erase).status_code == 403
    confirm = client_as("admin").get(erase)
    assert confirm.status_code == 200 and "PID0" in confirm.content.decode()
    assert PostEdit.objects.filter(assignment__annotator=leaving.user).count() == 2  # the GET erased nothing
    response = client_as("admin").post(erase, follow=True)
    assert response.redirect_chain[-1][0] == page
    assert "Erased the log and texts of participant PID0: 2 post-edits, 11 events" in response.content.decode()
    assert not PostEdit.objects.filter(assignment__annotator=leaving.user).exists()
    other = reverse(
        "manage-participant-erase", kwargs={"project_id": ProjectFactory().pk, "participant_id": leaving.pk}
    )
    assert client_as("admin").get(other).status_code == 404
