"""The whole crowd flow with Django's test client: Start → consent → pre questionnaire → items → post
questionnaire → the completion code; failing an attention check → the failed code; declining consent
→ no work and a clear page; lab annotators asked when the questionnaire says so."""

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotations.editing.lifecycle import post_edit_open, post_edit_skip, post_edit_submit
from annotations.models import Assignment, Participant, PostEdit, QuestionnaireAnswer
from annotations.services.join_links import join_link_open
from annotations.services.participants_checks import attention_check_set
from annotations.services.questionnaires import questionnaire_set
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory

pytestmark = pytest.mark.django_db

CHECK_TEXT = "The teh cat sat on the mat."
PRE = [
    {"id": "age", "type": "choice", "text": "Your age?", "choices": ["18-30", "31+"]},
    {"id": "native", "type": "scale", "text": "English level?", "min": 1, "max": 5},
]
POST = [{"id": "remarks", "type": "text", "text": "Anything else?", "required": False}]


@pytest.fixture
def study():
    project = ProjectFactory(overlap=3)
    ItemFactory(project=project, external_id="s1", model_output="First text to fix.", position=1)
    check = ItemFactory(project=project, external_id="check", model_output=CHECK_TEXT, position=2)
    ItemFactory(project=project, external_id="s3", model_output="Third text to fix.", position=3)
    attention_check_set(item=check, kind="planted", planted="teh")
    questionnaire_set(project=project, consent="You agree that we record **your edits**.", pre=PRE, post=POST)
    link = join_link_open(project=project, completion_code="OK-CODE", failed_code="FAIL-CODE")
    return project, link


def start(link, pid: str) -> tuple[Client, object, str]:
    client = Client()
    response = client.post(f"{reverse('join', args=[link.token])}?PROLIFIC_PID={pid}")
    assert response.status_code == 302
    user = get_user_model().objects.get(pk=client.session["_auth_user_id"])
    return client, user, response["Location"]


def submit_all(user, texts: dict[str, str]) -> str:
    """Submits every open item, with the text given for its external id (else unchanged)."""
    next_url = ""
    while (assignment := Assignment.objects.open_for(user).select_related("item").first()) is not None:
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        text = texts.get(assignment.item.external_id, post_edit.draft_text)
        next_url = post_edit_submit(
            post_edit=post_edit, page_id=visit.page_id, text=text, version=post_edit.version, last_seq=-1
        ).next_url
    return next_url


def through_consent_and_pre(client, project, first_item_url: str) -> None:
    consent = reverse("study-form", args=[project.pk, "consent"])
    pre = reverse("study-form", args=[project.pk, "pre"])
    assert client.get(first_item_url)["Location"] == consent  # the editor waits for consent
    page = client.get(consent)
    assert page.status_code == 200
    assert "<strong>your edits</strong>" in page.content.decode()
    assert client.post(consent, {"consent": "agree"})["Location"] == pre
    assert client.get(first_item_url)["Location"] == pre  # and for the pre questionnaire
    refused = client.post(pre, {"age": "18-30", "native": "9"})
    assert refused.status_code == 400
    assert "native: a whole number from 1 to 5" in refused.content.decode()
    assert not QuestionnaireAnswer.objects.filter(phase="pre").exists()
    assert client.post(pre, {"age": "18-30", "native": "4"})["Location"] == first_item_url
    assert client.get(first_item_url).status_code == 200  # the editor at last


def test_consent_pre_items_post_then_the_completion_code(study):
    project, link = study
    client, user, first = start(link, "walker-1")
    through_consent_and_pre(client, project, first)
    done = reverse("participant-done")
    post = reverse("study-form", args=[project.pk, "post"])
    assert submit_all(user, {"check": "The cat sat on the mat."}) == done
    assert client.get(done)["Location"] == post  # the post questionnaire before the code
    assert client.post(post, {"remarks": "Nice texts."})["Location"] == done
    page = client.get(done).content.decode()
    assert '<code id="completion-code">OK-CODE</code>' in page
    assert "FAIL-CODE" not in page
    assert Participant.objects.get(user=user).outcome == Participant.CODE
    answers = {a.phase: a.answers for a in QuestionnaireAnswer.objects.filter(user=user)}
    assert answers == {"consent": {}, "pre": {"age": "18-30", "native": 4}, "post": {"remarks": "Nice texts."}}
    # A phase answered is not shown again: its page sends the participant on.
    assert client.get(reverse("study-form", args=[project.pk, "pre"]))["Location"] == done


def test_failing_the_attention_check_gives_the_failed_code_not_the_completion_code(study, admin_client):
    project, link = study
    client, user, first = start(link, "walker-2")
    through_consent_and_pre(client, project, first)
    submit_all(user, {"s1": "First text, fixed."})  # the planted "teh" left as it was
    done = reverse("participant-done")
    post = reverse("study-form", args=[project.pk, "post"])
    assert client.get(done)["Location"] == post
    client.post(post, {})
    page = client.get(done).content.decode()
    assert '<code id="failed-code">FAIL-CODE</code>' in page
    assert "OK-CODE" not in page
    participant = Participant.objects.get(user=user)
    assert participant.outcome == Participant.FAILED
    assert participant.released_at is not None
    # The Participants page shows it, and the export carries checks, summary and answers.
    row = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "failed the attention checks" in row
    assert "0 passed, 1 failed" in row
    assert 'data-verdict="reject"' in row
    export = admin_client.get(reverse("manage-participation-export", args=[project.pk]))
    assert export.status_code == 200
    (record,) = csv.DictReader(io.StringIO(export.content.decode()))
    assert {k: record[k] for k in ("platform_id", "outcome", "checks_total", "checks_failed", "verdict")} == {
        "platform_id": "walker-2",
        "outcome": "failed_check",
        "checks_total": "1",
        "checks_failed": "1",
        "verdict": "reject",
    }
    assert (record["consent"], record["pre.age"], record["pre.native"], record["post.remarks"]) == (
        "agreed",
        "18-30",
        "4",
        "",
    )


def test_a_skipped_check_fails_and_without_a_failed_code_no_code_is_shown(study):
    project, link = study
    link.failed_code, link.max_skips = "", 1  # the skip alone would still earn the code
    link.save()
    client, user, first = start(link, "walker-3")
    through_consent_and_pre(client, project, first)
    check = Assignment.objects.get(annotator=user, item__external_id="check")
    post_edit, visit = post_edit_open(assignment=check, user=user)
    post_edit_skip(post_edit=post_edit, page_id=visit.page_id, reason="Cannot read it.")
    submit_all(user, {})
    client.post(reverse("study-form", args=[project.pk, "post"]), {})
    page = client.get(reverse("participant-done")).content.decode()
    assert "Attention checks not passed" in page
    assert "OK-CODE" not in page and "FAIL-CODE" not in page


def test_declining_consent_records_no_work_and_says_so(study):
    project, link = study
    client, user, first = start(link, "walker-4")
    consent = reverse("study-form", args=[project.pk, "consent"])
    declined = reverse("study-form", args=[project.pk, "declined"])
    assert client.post(consent, {"consent": "neither"}).status_code == 400
    assert client.post(consent, {"consent": "decline"})["Location"] == declined
    page = client.get(declined)
    assert page.status_code == 200
    assert "nothing of yours is recorded" in page.content.decode()
    assert not Assignment.objects.open_for(user).exists()
    assert not PostEdit.objects.filter(assignment__annotator=user).exists()
    assert Participant.objects.get(user=user).outcome == Participant.DECLINED
    assert client.get(reverse("participant-done"))["Location"] == declined
    assert client.get(first)["Location"] == reverse("editor_diff", args=[first.split("/")[2]])
    # Someone new takes the released slot.
    _, newcomer, _ = start(link, "walker-5")
    assert Participant.objects.get(user=newcomer).slot == Participant.objects.get(user=user).slot


def test_lab_annotators_are_asked_only_when_the_questionnaire_says_so(study, annotator_client, annotator):
    project, _ = study
    assignment = AssignmentFactory(item=project.items.get(external_id="s1"), annotator=annotator)
    editor = reverse("editor", args=[assignment.pk])
    assert annotator_client.get(editor).status_code == 200
    assert annotator_client.get(reverse("study-form", args=[project.pk, "consent"])).status_code == 404
    questionnaire_set(project=project, consent="Lab consent.", pre=PRE, for_lab=True)
    assert annotator_client.get(editor)["Location"] == reverse("study-form", args=[project.pk, "consent"])


def test_lab_annotators_find_the_post_questionnaire_on_their_home_page(study, annotator_client, annotator):
    project, _ = study
    assignment = AssignmentFactory(item=project.items.get(external_id="s1"), annotator=annotator)
    questionnaire_set(project=project, pre=PRE, post=POST, for_lab=True)
    pre = reverse("study-form", args=[project.pk, "pre"])
    post = reverse("study-form", args=[project.pk, "post"])
    annotator_client.post(pre, {"age": "31+", "native": "5"})
    assert post not in annotator_client.get(reverse("annotator_home")).content.decode()  # work still open
    assert annotator_client.get(post)["Location"] == reverse("editor", args=[assignment.pk])
    submit_all(annotator, {})
    assert post in annotator_client.get(reverse("annotator_home")).content.decode()
    assert annotator_client.post(post, {"remarks": "Done."})["Location"] == reverse("annotator_home")
    assert post not in annotator_client.get(reverse("annotator_home")).content.decode()
    answer = QuestionnaireAnswer.objects.get(user=annotator, phase="post")
    assert answer.answers == {"remarks": "Done."}


def test_hostile_answers_are_named_400s_and_others_get_404(study):
    project, link = study
    client, user, first = start(link, "walker-6")
    consent = reverse("study-form", args=[project.pk, "consent"])
    client.post(consent, {"consent": "agree"})
    pre = reverse("study-form", args=[project.pk, "pre"])
    for data, message in [
        ({"age": "x" * 100_000, "native": "3"}, "age: not one of the choices"),
        ({"age": ["18-30", "31+"], "native": "3"}, "age: one answer, not 2"),
        ({"age": "18-30", "native": "99999999999"}, "native: a whole number from 1 to 5"),
        ({"age": "18-30\x00", "native": "3"}, "age: not one of the choices"),
    ]:
        response = client.post(pre, data)
        assert response.status_code == 400
        assert message in response.content.decode()
    assert not QuestionnaireAnswer.objects.filter(user=user, phase="pre").exists()
    assert client.get(reverse("study-form", args=[project.pk, "during"])).status_code == 404
    # Someone with no work in the project is asked nothing there.
    elsewhere = ItemFactory(project=ProjectFactory()).project
    other, _, _ = start(join_link_open(project=elsewhere, completion_code="X"), "walker-7")
    assert other.get(consent).status_code == 404
    assert other.post(consent, {"consent": "decline"}).status_code == 404
    assert QuestionnaireAnswer.objects.filter(phase="consent").count() == 1
