"""The consent page and the questionnaires in Chromium: each passes axe-core and fits an 800 px window, and a
lab annotator's answers typed in the browser are stored as given. (The accessibility walk over the URL matrix
cannot reach them: nobody in its world is asked anything.)"""

import pytest
from django.urls import get_resolver, reverse

from annotations.models import QuestionnaireAnswer
from annotations.services.questionnaires import questionnaire_set
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.editlab.test_accessibility import AXE, BLOCKING, RUN_AXE
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

PAGE_TIMEOUT_MS = 60000  # how long a step may wait for the page (a busy machine); no time is asserted
PRE = [
    {"id": "age", "type": "choice", "text": "Your age?", "choices": ["18-30", "31+"]},
    {"id": "level", "type": "scale", "text": "English level?", "min": 1, "max": 5},
    {"id": "notes", "type": "text", "text": "Anything we should know?", "required": False},
]


def _blocking(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    found = [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]
    page.set_viewport_size({"width": 800, "height": 900})
    found += [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
    page.set_viewport_size({"width": 1366, "height": 900})
    return found


def test_consent_and_the_pre_questionnaire_pass_axe_and_store_what_was_typed(context, site, annotator):
    get_resolver().url_patterns  # noqa: B018 - the URL conf loaded before the browser asks
    with db_lock():
        project = ProjectFactory()
        assignment = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
        questionnaire_set(project=project, consent="You agree that we record **your edits**.", pre=PRE, for_lab=True)
    page = logged_in_page(context, site, annotator)
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.set_viewport_size({"width": 1366, "height": 900})

    page.goto(reverse("editor", kwargs={"assignment_id": assignment.pk}))
    page.wait_for_url(f"**{reverse('study-form', kwargs={'project_id': project.pk, 'phase': 'consent'})}")
    assert _blocking(page) == []
    page.get_by_role("button", name="I agree").click()

    page.wait_for_url(f"**{reverse('study-form', kwargs={'project_id': project.pk, 'phase': 'pre'})}")
    assert _blocking(page) == []
    page.get_by_label("31+").check()
    page.get_by_label("4", exact=True).check()
    page.get_by_label("Anything we should know?").fill("Left-handed <b>typist</b>")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url(f"**/edit/{assignment.pk}/")

    with db_lock():
        answers = {a.phase: a.answers for a in QuestionnaireAnswer.objects.filter(user=annotator, project=project)}
    assert answers["pre"] == {"age": "31+", "level": 4, "notes": "Left-handed <b>typist</b>"}
    assert set(answers) == {"consent", "pre"}
