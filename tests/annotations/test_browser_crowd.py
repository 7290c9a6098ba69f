"""A crowd participant in a real browser (Playwright + Debian's Chromium): joins by the study's link
with Prolific's ids, edits the practice item first, then a document segment by segment with the
document shown around it, sees error highlights only in the highlight condition, finishes and gets
the completion code; the stored counts, conditions and Participant row are checked."""

from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pytest

from annotations.models import Assignment, Participant, Project
from annotations.services.join_links import join_link_open
from tests.browser_support import BROWSER_DB, assert_submitted, db_lock, submit_with_keys, text_of, wait_ready
from tests.factories import ItemFactory, ProjectFactory

if TYPE_CHECKING:  # imported by the browser fixture; collecting needs no Playwright
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, BROWSER_DB]

CONDITIONS = [
    {"name": "plain", "output": "sysA", "highlights": False},
    {"name": "marked", "output": "sysA", "highlights": True},
]
IDS = {"PROLIFIC_PID": "5f8e9a0b1c2d3e4f5a6b7c8d", "STUDY_ID": "65aa00bb11cc", "SESSION_ID": "sess-42"}


def marks(page: "Page") -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('#highlight-backdrop mark')].map(m => m.textContent)")


def context_rows(page: "Page") -> list[tuple[str, str]]:
    """The document shown around the segment: (state, text) per segment, in document order."""
    rows = page.evaluate(
        "() => [...document.querySelectorAll('.context-segment')].map(li => "
        "[li.className.replace('context-segment', '').trim(), li.querySelector('.context-text').textContent.trim()])"
    )
    return [tuple(row) for row in rows]


def study() -> Project:
    project = ProjectFactory(
        conditions=CONDITIONS,
        design=Project.DESIGN_LATIN_SQUARE,
        context=Project.CONTEXT_DOCUMENT,
        target_lang="en",
        idle_threshold_s=30,
        guidelines="Fix the errors.",
    )
    ItemFactory(project=project, external_id="practice", practice=True, model_output="Practise here.")
    texts = {"doc0": ["The cat sat.", "It slept."], "doc1": ["A dog ran.", "It barked."]}
    for document, segments in texts.items():
        for position, text in enumerate(segments):
            ItemFactory(
                project=project,
                external_id=f"{document}-{position}",
                document=document,
                document_position=position,
                outputs={"sysA": text},
                highlights={"sysA": [[0, 1, "minor"]]},
                model_output="not shown",
            )
    return project


def test_a_participant_joins_edits_a_document_in_context_and_gets_the_completion_code(context):
    with db_lock():
        link = join_link_open(project=study(), completion_code="C0DE1234")
    page = context.new_page()
    page.goto(f"/join/{link.token}/?{urlencode(IDS)}")
    assert page.locator("#participant-id").text_content() == IDS["PROLIFIC_PID"]
    with page.expect_navigation(url="**/edit/*/"):
        page.click("#start")
    with db_lock():
        participant = Participant.objects.select_related("user").get()
        queue = list(Assignment.objects.filter(annotator=participant.user).select_related("item"))
    # Slot 0's Latin-square row: doc0 under the first condition, doc1 under the second.
    assert [(a.item.external_id, a.condition) for a in queue] == [
        ("practice", ""),
        ("doc0-0", "plain"),
        ("doc0-1", "plain"),
        ("doc1-0", "marked"),
        ("doc1-1", "marked"),
    ]
    practice, d0s0, d0s1, d1s0, d1s1 = queue
    keys = page.keyboard

    # The practice item first, marked as practice.
    page.wait_for_url(f"**/edit/{practice.pk}/")
    wait_ready(page)
    assert page.locator("#practice-note").is_visible()
    keys.press("End")
    keys.type(" Ok")
    submit_with_keys(page, f"/edit/{d0s0.pk}/")

    # doc0, segment 0, condition "plain": no highlights; the document is shown around the segment.
    wait_ready(page)
    assert text_of(page) == "The cat sat."
    assert page.locator("#practice-note").count() == 0
    assert page.locator("#highlight-backdrop").is_hidden() and marks(page) == []
    assert context_rows(page) == [("current", "— this segment, below —"), ("todo", "It slept.")]
    keys.press("End")
    keys.press("Backspace")
    keys.type(" down.")
    assert text_of(page) == "The cat sat down."
    submit_with_keys(page, f"/edit/{d0s1.pk}/")

    # doc0, segment 1: the segment before shows the participant's own finished version.
    wait_ready(page)
    assert context_rows(page) == [("done", "The cat sat down."), ("current", "— this segment, below —")]
    submit_with_keys(page, f"/edit/{d1s0.pk}/")

    # doc1, condition "marked": the highlights are drawn.
    wait_ready(page)
    assert text_of(page) == "A dog ran."
    assert marks(page) == ["A"]
    assert context_rows(page)[1] == ("todo", "It barked.")
    submit_with_keys(page, f"/edit/{d1s1.pk}/")

    wait_ready(page)
    assert marks(page) == ["I"]
    keys.press("End")
    keys.type("!")
    submit_with_keys(page, "/participant/done/")
    assert page.locator("#completion-code").text_content() == "C0DE1234"

    with db_lock():
        participant.refresh_from_db()
        statuses = set(Assignment.objects.filter(annotator=participant.user).values_list("status", flat=True))
    assert (participant.platform_id, participant.study_id, participant.session_id) == tuple(IDS.values())
    assert participant.slot == 0 and participant.completed_at is not None and participant.join_link_id == link.pk
    assert statuses == {Assignment.SUBMITTED}
    texts = ["Practise here. Ok", "The cat sat down.", "It slept.", "A dog ran.", "It barked.!"]
    for assignment, text in zip(queue, texts, strict=True):
        post_edit, _ = assert_submitted(assignment, text)
        assert post_edit.condition == assignment.condition
    edited, _ = assert_submitted(d0s0, "The cat sat down.")
    counts = {name: getattr(edited, name) for name in ("letters", "spaces", "symbols", "erase", "navigation")}
    assert counts == {"letters": 4, "spaces": 1, "symbols": 1, "erase": 1, "navigation": 1}
    assert edited.start_override == "The cat sat."
    untouched, _ = assert_submitted(d1s0, "A dog ran.")
    assert untouched.keystrokes == 0
    assert [(e["label"], e["edited"]) for e in untouched.extra["highlight_edits"]] == [("minor", False)]
    assert "highlight_edits" not in edited.extra
