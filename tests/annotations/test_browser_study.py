"""A designed study in a real browser (Playwright + Debian's Chromium): an Arabic segment edited
right to left with exact counts and replay; error highlights drawn only under the highlight
condition, following the edits, and recorded as edited on submit."""

from typing import TYPE_CHECKING

import pytest

from tests.browser_support import (
    BROWSER_DB,
    assert_submitted,
    db_lock,
    logged_in_page,
    open_editor,
    submit_with_keys,
    text_of,
)
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory

if TYPE_CHECKING:  # imported by the browser fixture; collecting needs no Playwright
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, BROWSER_DB]

CONDITIONS = [
    {"name": "mt", "output": "sysA", "highlights": False},
    {"name": "mt-qe", "output": "sysA", "highlights": True},
]


def marks(page: "Page") -> list[list[str]]:
    return page.evaluate(
        "() => [...document.querySelectorAll('#highlight-backdrop mark')].map(m => [m.textContent, m.className])"
    )


def type_on_layout(page: "Page", text: str) -> None:
    """Key presses of a keyboard layout that has these characters (an Arabic one here): each a
    keydown whose key is the character, then its text (Playwright's keyboard.type would insert
    characters its US layout lacks without any keydown)."""
    cdp = page.context.new_cdp_session(page)
    for char in text:
        cdp.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": char, "text": char, "unmodifiedText": char})
        cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})
    cdp.detach()


def test_an_arabic_segment_is_edited_right_to_left_with_exact_counts(context, site, annotator):
    with db_lock():
        project = ProjectFactory(source_lang="en", target_lang="ar", idle_threshold_s=30)
        item = ItemFactory(project=project, source="The cat sat on the mat.", model_output="جلس القط على")
        assignment = AssignmentFactory(item=item, annotator=annotator)
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    textarea = page.locator("#post-edit-text")
    assert textarea.get_attribute("dir") == "rtl" and textarea.get_attribute("lang") == "ar"
    assert page.evaluate("() => getComputedStyle(document.getElementById('post-edit-text')).direction") == "rtl"
    assert page.locator("#source").get_attribute("dir") == "ltr"

    keys = page.keyboard
    keys.press("End")  # navigation 1: the logical end of the text
    type_on_layout(page, " الحصير")  # spaces 1, letters 6
    keys.press("Backspace")  # erase 1
    type_on_layout(page, "ر.")  # letters 7, symbols 1
    assert text_of(page) == "جلس القط على الحصير."
    submit_with_keys(page)

    post_edit, _ = assert_submitted(assignment, "جلس القط على الحصير.")
    counts = {name: getattr(post_edit, name) for name in ("letters", "spaces", "symbols", "erase", "navigation")}
    assert counts == {"letters": 7, "spaces": 1, "symbols": 1, "erase": 1, "navigation": 1}
    assert post_edit.keystrokes == 10


@pytest.mark.parametrize(("condition", "shown"), [("mt", False), ("mt-qe", True)])
def test_highlights_appear_only_in_their_condition_and_follow_the_edits(context, site, annotator, condition, shown):
    with db_lock():
        project = ProjectFactory(conditions=CONDITIONS, idle_threshold_s=30)
        item = ItemFactory(
            project=project,
            model_output="unused",
            outputs={"sysA": "The cat sat on teh mat."},
            highlights={"sysA": [[4, 7, "minor"], [15, 18, "major"]]},
        )
        assignment = AssignmentFactory(item=item, annotator=annotator, condition=condition)
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    assert text_of(page) == "The cat sat on teh mat."
    if not shown:
        assert page.locator("#highlight-backdrop").is_hidden()
        assert marks(page) == []
        submit_with_keys(page)  # ends like every editor test: nothing left to send during teardown
        post_edit, _ = assert_submitted(assignment, "The cat sat on teh mat.")
        assert "highlight_edits" not in post_edit.extra
        return
    assert marks(page) == [["cat", ""], ["teh", ""]]
    keys = page.keyboard
    keys.press("Home")
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.type("A")  # "A cat sat on teh mat."
    for _ in range(12):
        keys.press("ArrowRight")  # caret before "teh"
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.type("the")
    assert text_of(page) == "A cat sat on the mat."
    # The backdrop is redrawn after each input event: wait for the redraw after the last key, not
    # for the first one in which the second mark is already "edited" (that one reads "th").
    page.wait_for_function(
        "() => [...document.querySelectorAll('#highlight-backdrop mark')]"
        ".map(m => m.textContent + '/' + m.className).join() === 'cat/,the/edited'"
    )
    assert marks(page) == [["cat", ""], ["the", "edited"]]
    submit_with_keys(page)
    post_edit, _ = assert_submitted(assignment, "A cat sat on the mat.")
    assert [(e["label"], e["edited"]) for e in post_edit.extra["highlight_edits"]] == [
        ("minor", False),
        ("major", True),
    ]
