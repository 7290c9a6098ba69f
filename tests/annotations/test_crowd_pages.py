"""The Participants page's crowd quality settings (consent, questionnaires, attention checks: admins
only, named 400s), the failed code on the link, and the quality summary with agreement in the page
and the export."""

import csv
import io
import json

import pytest
from django.urls import reverse

from annotations.models import AttentionCheck, JoinLink, Participant, Questionnaire
from annotations.selectors_crowd import quality_summaries
from annotations.services.participants_checks import attention_check_set
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

QUESTIONS = [{"id": "age", "type": "choice", "text": "Your age?", "choices": ["18-30", "31+"]}]


def settings_url(project, what: str) -> str:
    return reverse(f"manage-participation-{what}", args=[project.pk])


def test_admins_save_consent_and_questionnaires_and_see_them(admin_client):
    project = ProjectFactory()
    data = {"consent": "Agree?", "pre": json.dumps(QUESTIONS), "post": "", "for_lab": "on"}
    assert admin_client.post(settings_url(project, "questionnaire"), data).status_code == 302
    stored = Questionnaire.objects.get(project=project)
    assert (stored.consent, stored.pre[0]["choices"], stored.post, stored.for_lab) == (
        "Agree?",
        ["18-30", "31+"],
        [],
        True,
    )
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "A consent page;" in page and "1 question before the items" in page and "asked of lab annotators too" in page


@pytest.mark.parametrize(
    ("pre", "message"),
    [
        ("[{", "not valid JSON"),
        (json.dumps([{**QUESTIONS[0], "type": "ranking"}]), "pre[0].type: &#x27;ranking&#x27; is not a question type"),
        (json.dumps([{**QUESTIONS[0], "choices": ["a"] * 60}]), "pre[0].choices: a list of 2 to 50 texts"),
        ("[" * 50 + "]" * 50, "not valid JSON: JSON nested more than 5 levels deep"),
    ],
)
def test_a_bad_questionnaire_is_a_400_naming_the_field_and_stores_nothing(admin_client, pre, message):
    project = ProjectFactory()
    response = admin_client.post(settings_url(project, "questionnaire"), {"consent": "", "pre": pre, "post": ""})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Questionnaire.objects.exists()


def test_only_admins_change_the_settings(researcher_client, annotator_client):
    project = ProjectFactory()
    item = ItemFactory(project=project, model_output="The teh cat.")
    for client in (researcher_client, annotator_client):
        assert client.post(settings_url(project, "questionnaire"), {"consent": "x"}).status_code == 403
        data = {"external_id": item.external_id, "kind": "planted", "planted": "teh"}
        assert client.post(settings_url(project, "attention"), data).status_code == 403
    assert not Questionnaire.objects.exists() and not AttentionCheck.objects.exists()
    assert researcher_client.get(settings_url(project, "export")).status_code == 200
    assert annotator_client.get(settings_url(project, "export")).status_code == 403


def test_admins_mark_attention_checks_with_named_refusals(admin_client):
    project = ProjectFactory()
    item = ItemFactory(project=project, external_id="chk", model_output="The teh cat.")
    url = settings_url(project, "attention")
    missing = admin_client.post(url, {"external_id": "nope", "kind": "planted", "planted": "teh"})
    assert missing.status_code == 400 and "no item of this project has this id" in missing.content.decode()
    absent = admin_client.post(url, {"external_id": "chk", "kind": "planted", "planted": "dog"})
    assert absent.status_code == 400 and "the planted error does not occur" in absent.content.decode()
    bad_kind = admin_client.post(url, {"external_id": "chk", "kind": "quiz"})
    assert bad_kind.status_code == 400
    assert not AttentionCheck.objects.exists()
    assert admin_client.post(url, {"external_id": "chk", "kind": "planted", "planted": "teh"}).status_code == 302
    check = AttentionCheck.objects.get(item=item)
    assert (check.start, check.end) == (4, 7)
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "characters 4–7 are changed" in page


def test_the_link_takes_a_failed_code_and_url_checked_like_the_completion_ones(admin_client):
    project = ProjectFactory()
    ItemFactory(project=project)
    url = reverse("manage-participation-open", args=[project.pk])
    base = {"completion_code": "OK", "participant_param": "PROLIFIC_PID", "max_failed_checks": "1"}
    bad = admin_client.post(url, {**base, "failed_url": "javascript:alert(1)"})
    assert bad.status_code == 400
    assert "must be a full http:// or https:// address" in bad.content.decode()
    assert not JoinLink.objects.exists()
    admin_client.post(url, {**base, "failed_code": "FAIL-1", "failed_url": "https://example.org/f?c={code}"})
    link = JoinLink.objects.get()
    assert (link.failed_code, link.failed_url, link.max_failed_checks) == (
        "FAIL-1",
        "https://example.org/f?c={code}",
        1,
    )
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "at most 1 may fail" in page


def test_the_summary_counts_flags_and_agreement_with_the_others(admin_client):
    project = ProjectFactory()
    items = [ItemFactory(project=project, model_output=f"Sentence number {n} to fix.") for n in range(3)]
    people = []
    for slot in range(4):
        user = UserFactory(role="annotator")
        people.append(
            Participant.objects.create(
                user=user, project=project, platform_id=f"w{slot}", platform_key=f"w{slot}", slot=slot
            )
        )
        for n, item in enumerate(items):
            far = slot == 3
            text = f"Entirely different words, {n}, written by someone careless." if far else item.model_output
            SubmittedPostEditFactory(
                assignment__item=item,
                assignment__annotator=user,
                text=text,
                flags=["key_rate"] if far and n == 0 else [],
            )
    attention_check_set(item=items[0], kind="gold", gold=items[0].model_output, max_distance=0)
    summaries = quality_summaries(project=project, participants=people)
    careful, careless = summaries[people[0].pk], summaries[people[3].pk]
    assert (careful.checks.passed, careful.flagged_edits, careful.agreement_pairs) == (1, 0, 9)
    assert (careless.checks.failed, careless.flagged_edits, careless.flags) == (1, 1, {"key_rate": 1})
    assert careless.agreement_mean > careful.agreement_mean
    assert (careful.verdict, careless.verdict) == ("approve", "reject")
    export = admin_client.get(settings_url(project, "export")).content.decode()
    rows = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(export))}
    assert rows["w3"]["flags"] == "key_rate=1"
    assert rows["w0"]["agreement_pairs"] == "9"
    assert float(rows["w3"]["agreement_mean_distance"]) == pytest.approx(careless.agreement_mean, abs=1e-6)
    assert rows["w0"]["verdict"] == "approve"


def test_the_api_gives_the_failed_code_and_each_participants_summary_and_answers(admin_client, researcher_client):
    from annotations.services.questionnaires import consent_give, questionnaire_answer, questionnaire_set

    project = ProjectFactory()
    item = ItemFactory(project=project, model_output="The teh cat.")
    opened = admin_client.post(
        reverse("api-join-link-open", args=[project.pk]),
        {"completion_code": "OK", "failed_code": "FAIL", "max_failed_checks": 2},
        content_type="application/json",
    )
    assert opened.status_code == 201, opened.content
    assert (opened.json()["failed_code"], opened.json()["max_failed_checks"]) == ("FAIL", 2)
    bad = admin_client.post(
        reverse("api-join-link-open", args=[ProjectFactory().pk]),
        {"completion_code": "OK", "failed_url": "ftp://x"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["detail"].startswith("failed_url: must be a full http")
    user = UserFactory(role="annotator")
    Participant.objects.create(user=user, project=project, platform_id="w1", platform_key="w1", slot=0)
    SubmittedPostEditFactory(assignment__item=item, assignment__annotator=user, text="The cat.")
    attention_check_set(item=item, kind="planted", planted="teh")
    questionnaire_set(project=project, consent="Agree?", pre=QUESTIONS)
    consent_give(project=project, user=user, agree=True)
    questionnaire_answer(project=project, user=user, phase="pre", answers={"age": "31+"})
    (row,) = researcher_client.get(reverse("api-participants", args=[project.pk])).json()["results"]
    assert row["answers"] == {"consent": "agreed", "pre": {"age": "31+"}, "post": None}
    quality = row["quality"]
    assert (quality["checks_passed"], quality["checks_failed"], quality["verdict"]) == (1, 0, "approve")
