"""The annotator's editor in a real browser (issue 20 §4): a submit made offline says it is queued
and completes once the connection returns; the keyboard shortcuts (next, previous, skip, the list)
and the segment list, with and without JavaScript; what each logged key counts; the diff's
deletions and insertions kept apart."""

import pytest
from django.urls import get_resolver

from annotations.models import Assignment, EditEvent
from tests.browser_support import (
    BROWSER_DB,
    assert_submitted,
    db_lock,
    flush,
    logged_in_page,
    open_editor,
    submit_with_keys,
    text_of,
    wait_ready,
)
from tests.factories import AssignmentFactory, ItemFactory, PostEditFactory, ProjectFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

KEY_DELAY_MS = 25  # at most 40 keys/s: within the effort definition's rate bound
STATUS = "() => document.getElementById('save-status').textContent"


def document_for(annotator, texts: list[str]) -> list[Assignment]:
    """One document of `texts`, every segment assigned to `annotator` in document order."""
    with db_lock():
        project = ProjectFactory(guidelines="Fix it.", idle_threshold_s=30)
        return [
            AssignmentFactory(
                item=ItemFactory(
                    project=project, external_id=f"d-{k}", document="d", document_position=k, model_output=text
                ),
                annotator=annotator,
                queue_position=k,
            )
            for k, text in enumerate(texts)
        ]


def test_a_submit_made_offline_says_it_is_queued_and_completes_when_back_online(context, site, annotator, item_for):
    get_resolver().url_patterns  # noqa: B018 - loaded before the browser asks (it imports the metrics libraries)
    assignment = item_for("Queued text.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    page.keyboard.type(" Offline.", delay=KEY_DELAY_MS)
    flush(page)

    context.set_offline(True)
    page.keyboard.type(" More", delay=KEY_DELAY_MS)
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => ({STATUS})().includes('queued')")
    status = page.locator("#save-status")
    assert status.text_content() == (
        "You are offline: your submit is queued and will complete when the connection returns. "
        "Your work is kept in this browser; keep this page open."
    )
    assert (status.get_attribute("role"), status.get_attribute("aria-live")) == ("status", "polite")
    button = page.locator("#submit-button")
    assert (button.text_content(), button.is_disabled(), button.get_attribute("data-state")) == (
        "Submit queued",
        True,
        "queued",
    )
    with db_lock():
        assert Assignment.objects.get(pk=assignment.pk).status == Assignment.IN_PROGRESS

    with page.expect_navigation(url="**/annotate/"):
        context.set_offline(False)
    assert_submitted(assignment, "Queued text. Offline. More")


def test_the_shortcuts_move_between_segments_skip_and_list_themselves(context, site, annotator):
    first, middle, last = document_for(annotator, ["One.", "Two.", "Three."])
    page = logged_in_page(context, site, annotator)
    open_editor(page, middle)

    # The segment list: every segment of the document, its status, links to each.
    items = page.locator("#segment-list ol.segments li")
    assert items.all_inner_texts() == [
        "Segment 1 (d-0) pending",
        "Segment 2 (d-1) this one · in progress",
        "Segment 3 (d-2) pending",
    ]
    assert page.locator("#segment-list [aria-current=page]").text_content() == "Segment 2 (d-1)"
    assert page.locator("#segment-previous").get_attribute("href") == f"/edit/{first.pk}/"
    assert page.locator("#segment-next").get_attribute("href") == f"/edit/{last.pk}/"

    # Alt+Right: the next segment; the text typed here is kept (draft and log).
    page.keyboard.press("End")
    page.keyboard.type(" X", delay=KEY_DELAY_MS)
    flush(page)
    with page.expect_navigation(url=f"**/edit/{last.pk}/"):
        page.keyboard.press("Alt+ArrowRight")
    wait_ready(page)
    assert page.locator("#segment-next").count() == 0
    with page.expect_navigation(url=f"**/edit/{middle.pk}/"):
        page.keyboard.press("Alt+ArrowLeft")
    wait_ready(page)
    assert text_of(page) == "Two. X"

    # ? in the text is a character; outside it, the list of shortcuts (a modal dialog).
    page.keyboard.press("End")
    page.keyboard.type("?", delay=KEY_DELAY_MS)
    assert text_of(page) == "Two. X?" and not page.locator("#shortcuts-dialog").is_visible()
    page.keyboard.press("Backspace")
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    assert dialog.is_visible()
    rows = dialog.locator("tbody tr td:first-child").all_inner_texts()
    assert rows[:4] == ["Ctrl+Enter (⌘+Enter on a Mac)", "Alt+→", "Alt+←", "Ctrl+Shift+S"]
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    page.click("#shortcuts-button")  # the same list from a visible button
    assert dialog.is_visible()
    page.click("[data-shortcuts-close]")
    assert not dialog.is_visible()

    # Ctrl+Shift+S opens Skip (it asks why); Esc leaves it and nothing was skipped.
    page.focus("#post-edit-text")
    page.keyboard.press("Control+Shift+S")
    assert page.locator("#skip-dialog").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#skip-dialog").is_visible()
    page.focus("#post-edit-text")
    submit_with_keys(page, f"/edit/{first.pk}/")

    # The log holds every shortcut's keydown; none counts as typing, and nothing is flagged.
    post_edit, _ = assert_submitted(middle, "Two. X")
    with db_lock():
        keys = list(
            EditEvent.objects.filter(post_edit=post_edit, kind="keydown")
            .order_by("seq")
            .values_list("key", "modifiers")
        )
    assert ("ArrowRight", 4) in keys and ("S", 3) in keys and ("Enter", 1) in keys
    assert post_edit.uncorroborated_keys == 0
    # End twice, Alt+Right (a navigation key, as any arrow); "?" typed, then erased.
    assert (post_edit.navigation, post_edit.letters, post_edit.symbols, post_edit.erase) == (3, 1, 1, 1)


def test_the_segment_list_works_without_javascript(browser, site, annotator):
    first, second = document_for(annotator, ["One.", "Two."])
    with db_lock():
        first.status = Assignment.SUBMITTED
        first.save()
        PostEditFactory(assignment=first, text="One!")
    context = browser.new_context(base_url=site, java_script_enabled=False)
    try:
        page = logged_in_page(context, site, annotator)
        page.goto(f"/edit/{second.pk}/")
        assert page.locator("#segment-list li").all_inner_texts() == [
            "Segment 1 (d-0) submitted",
            "Segment 2 (d-1) this one · in progress",
        ]
        with page.expect_navigation(url=f"**/edit/{first.pk}/diff/"):
            page.click("#segment-previous")
        assert page.locator("h1").text_content() == "Changes to item d-0"
    finally:
        context.close()


def test_the_diff_keeps_a_deletion_apart_from_the_insertion_after_it(context, site, annotator):
    with db_lock():
        assignment = AssignmentFactory(
            item=ItemFactory(model_output="The system works well."), annotator=annotator, status=Assignment.SUBMITTED
        )
        PostEditFactory(assignment=assignment, text="The system has worked well.")
    page = logged_in_page(context, site, annotator)
    page.goto(f"/edit/{assignment.pk}/diff/")
    gap = page.evaluate(
        "() => { const d = document.querySelector('#diff del'), i = d.nextElementSibling;"
        " return i.getBoundingClientRect().left - d.getBoundingClientRect().right; }"
    )
    assert gap > 3  # pixels of white between the struck deletion and the insertion
    assert page.locator("#diff").text_content() == "The system [deleted: works][inserted: has worked] well."
