"""What a crowd participant sees (issue 20 §4), in a real browser: only the study. No lab
navigation, no account name, no item or document ids; segments by number and progress across the
study; "Your translation" above an empty box under translate-from-scratch; the pages pass axe-core.
A lab annotator's editor keeps the lab's navigation."""

from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import get_resolver

from annotations.models import Assignment, Participant, Project
from annotations.services.join_links import join_link_open
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page, open_editor, submit_with_keys, wait_ready
from tests.factories import ItemFactory, ProjectFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
RUN_AXE = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .map(v => `${v.impact} ${v.id} ${v.nodes.map(n => n.target.join(" ")).slice(0, 3)}`)"""
IDS = {"PROLIFIC_PID": "5f8e9a0b1c2d3e4f5a6b7c8d", "STUDY_ID": "65aa00bb11cc", "SESSION_ID": "sess-7"}
LAB_ITEMS = ("Home", "Annotate", "API", "My batches", "Log out")


def study() -> Project:
    """Two documents of two segments, one post-edited (sysA), one translated from scratch."""
    project = ProjectFactory(
        name="Cat study",
        conditions=[{"name": "mt", "output": "sysA", "highlights": False}, {"name": "ht", "output": None}],
        design=Project.DESIGN_LATIN_SQUARE,
        context=Project.CONTEXT_DOCUMENT,
        target_lang="en",
        idle_threshold_s=30,
    )
    for document in ("sha1-9b10beb632f9a5c0", "sha1-77aa00bb11cc22dd"):
        for position in range(2):
            ItemFactory(
                project=project,
                external_id=f"{document}-{position}",
                document=document,
                document_position=position,
                outputs={"sysA": f"Text {position}."},
            )
    return project


def axe_problems(page) -> list[str]:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run editlab/scripts/install test (npm ci in tests/js)")
    page.add_script_tag(path=str(AXE))
    return [line for line in page.evaluate(RUN_AXE) if line.split(" ")[0] in BLOCKING]


def shown(page) -> str:
    """Everything the page shows or reads out: its text and its title."""
    return page.locator("body").inner_text() + "\n" + page.title()


def test_a_participant_sees_only_the_study(context):
    get_resolver().url_patterns  # noqa: B018 - loaded before the browser asks (it imports the metrics libraries)
    with db_lock():
        link = join_link_open(project=study(), completion_code="C0DE")
    page = context.new_page()
    page.goto(f"/join/{link.token}/?{urlencode(IDS)}")
    with page.expect_navigation(url="**/edit/*/"):
        page.click("#start")
    with db_lock():
        participant = Participant.objects.select_related("user").get()
        queue = list(Assignment.objects.filter(annotator=participant.user).select_related("item"))
    assert [a.condition for a in queue] == ["mt", "mt", "ht", "ht"]

    for number, assignment in enumerate(queue, start=1):
        page.wait_for_url(f"**/edit/{assignment.pk}/")
        wait_ready(page)
        text = shown(page)
        assert page.locator("nav[aria-label=Main]").count() == 0
        for lab in LAB_ITEMS:
            assert page.get_by_role("link", name=lab, exact=True).count() == 0, lab
            assert page.get_by_role("button", name=lab, exact=True).count() == 0, lab
        assert participant.user.username not in text and "annotator" not in text
        assert "sha1-" not in text and "item " not in text
        assert page.locator("#segment-title").inner_text() == f"Cat study · Segment {number} of 4"
        assert page.locator("#progress-count").inner_text() == f"{number - 1} of 4 done"
        label = "Your post-edit" if assignment.condition == "mt" else "Your translation"
        assert page.locator("label[for=post-edit-text]").inner_text() == label
        if number == 2:
            assert page.locator("#segment-list li").all_inner_texts() == [
                "Segment 1 submitted",
                "Segment 2 this one · in progress",
            ]
            assert axe_problems(page) == []
            page.evaluate("() => document.activeElement.blur()")
            page.keyboard.press("?")
            assert axe_problems(page) == []  # with the shortcuts' dialog open
            page.keyboard.press("Escape")
            page.focus("#post-edit-text")
        if number == 3:
            page.keyboard.type("A cat.", delay=25)
        submit_with_keys(page, f"/edit/{queue[number].pk}/" if number < 4 else "/participant/done/")

    # The diff of a finished segment and the home page say nothing of the lab either.
    page.goto(f"/edit/{queue[2].pk}/diff/")
    assert page.locator("h1").inner_text() == "Your changes"
    assert "sha1-" not in shown(page) and page.locator("nav[aria-label=Main]").count() == 0
    assert page.get_by_role("link", name="My batches").count() == 0
    assert axe_problems(page) == []
    page.goto("/annotate/")
    page.wait_for_url("**/participant/done/")
    assert page.locator("#completion-code").text_content() == "C0DE"


def test_a_lab_annotator_keeps_the_lab_navigation(context, site, annotator, item_for):
    assignment = item_for("Lab text.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    nav = page.locator("nav[aria-label=Main]")
    assert [name.strip() for name in nav.locator("a").all_inner_texts()] == ["Home", "Annotate", "API"]
    assert page.locator(".who").inner_text() == "anna · annotator"
    assert page.get_by_role("link", name="My batches").count() == 1
    assert f"item {assignment.item.external_id}" in page.locator("#segment-title").inner_text()
    assert page.locator("#progress-count").inner_text() == "0 of 1 done"
    assert page.locator("label[for=post-edit-text]").inner_text() == "Your post-edit"
