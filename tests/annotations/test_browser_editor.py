"""The whole editor chain in a real browser: Playwright (PyPI) driving Debian's Chromium.

Keys are real key presses (CDP input events), so the page sees exactly what an annotator's
keyboard produces; the server's stored counts, replay and event log are then checked
against the keys pressed.
"""

from typing import TYPE_CHECKING

import pytest

from annotations.models import Assignment, EditEvent, PostEdit, Visit
from tests.browser_support import (
    BROWSER_DB,
    assert_complete_log,
    assert_submitted,
    db_lock,
    flush,
    log_in,
    logged_in_page,
    open_editor,
    post_edit_of,
    stored_seqs,
    submit_with_keys,
    text_of,
    wait_ready,
)

if TYPE_CHECKING:  # imported by the browser fixture; collecting needs no Playwright
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, BROWSER_DB]

KEY_DELAY_MS = 25  # between a key's down and up: long runs of keys typed at most 40 keys/s


def compose(page: "Page", steps: list[str]) -> None:
    """An IME composition through CDP: each step is the composition string, the last is committed."""
    cdp = page.context.new_cdp_session(page)
    for text in steps:
        cdp.send("Input.imeSetComposition", {"text": text, "selectionStart": len(text), "selectionEnd": len(text)})
    cdp.send("Input.insertText", {"text": steps[-1]})
    cdp.detach()


# ---------------------------------------------------------------- tests


def test_typed_keys_are_counted_and_replayed(context, site, annotator, item_for):
    assignment = item_for("The cat sat.")
    page = context.new_page()

    # Log in through the login page; annotators land on their batches.
    page.goto("/login/")
    log_in(page, annotator.username)
    page.wait_for_url("**/annotate/")
    page.click("#continue")
    page.wait_for_url(f"**/edit/{assignment.pk}/")
    wait_ready(page)
    assert page.evaluate("() => window.crossOriginIsolated") is True

    textarea = page.locator("#post-edit-text")
    textarea.click()  # a mouse caret move
    keys = page.keyboard
    keys.press("End")  # navigation 1
    keys.press("Backspace")  # erase 1 -> "The cat sat"
    keys.type(" 42 times")  # spaces 2, digits 2, letters 5
    for _ in range(6):
        keys.press("ArrowLeft")  # navigation 7: caret after "42"
    keys.press("Shift+ArrowLeft")
    keys.press("Shift+ArrowLeft")  # navigation 9: "42" selected
    keys.type("7")  # digits 3 -> "The cat sat 7 times"
    keys.press("Control+A")  # no class
    keys.press("Control+C")  # copy 1
    keys.press("End")  # navigation 10
    keys.press("Enter")  # spaces 3
    keys.press("Control+V")  # paste 1
    assert text_of(page) == "The cat sat 7 times\nThe cat sat 7 times"
    keys.press("Control+Z")  # undo_redo 1: the paste is gone
    assert text_of(page) == "The cat sat 7 times\n"
    keys.press("Backspace")  # erase 2
    keys.type("!")  # symbols 1
    assert text_of(page) == "The cat sat 7 times!"
    submit_with_keys(page)

    post_edit, _ = assert_submitted(assignment, "The cat sat 7 times!")
    expected = {
        "letters": 5,
        "digits": 3,
        "spaces": 3,
        "symbols": 1,
        "erase": 2,
        "navigation": 10,
        "copy": 1,
        "cut": 0,
        "paste": 1,
        "undo_redo": 1,
        "commands": 3,
        "visible": 12,
        "keystrokes": 14,
        "allkeys": 27,
    }
    assert {name: getattr(post_edit, name) for name in expected} == expected
    assert post_edit.wall_ms > 0 and 0 < post_edit.active_ms <= post_edit.wall_ms
    with db_lock():
        kinds = list(EditEvent.objects.filter(post_edit=post_edit).values_list("kind", flat=True))
        paste = EditEvent.objects.get(post_edit=post_edit, kind="paste")
        mouse_moves = EditEvent.objects.filter(post_edit=post_edit, kind="select", extra__src="mouse").count()
    assert kinds[0] == "load" and kinds[-1] == "submit"
    # every press: 27 counted keys and commands, Control x 5 (A, C, V, Z, Enter), Shift x 2,
    # Enter of Ctrl+Enter; Ctrl+C/V/Z's letters are counted as commands, not keys
    assert kinds.count("keydown") == 36
    assert paste.data == "The cat sat 7 times"
    assert mouse_moves == 1
    with db_lock():
        assert Assignment.objects.get(pk=assignment.pk).status == Assignment.SUBMITTED


def test_a_reload_mid_edit_loses_nothing(context, site, annotator, item_for):
    assignment = item_for("Hello")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    page.keyboard.type(" wor")
    flush(page)

    # Nothing reaches the server any more; then the page is reloaded before anything was sent.
    page.route("**/api/post-edits/**", lambda route: route.abort())
    page.keyboard.type("ld 1")
    page.keyboard.press("Backspace")
    page.keyboard.type("2")
    unsent = page.evaluate("() => window.__editlabLogger.pending()")
    assert unsent >= 12
    page.reload()
    wait_ready(page)
    assert text_of(page) == "Hello world 2"  # the newer local draft
    page.unroute("**/api/post-edits/**")

    page.keyboard.press("End")
    compose(page, ["n", "に", "にh", "にほ", "日本"])  # an IME composition, committed
    page.keyboard.type("!")
    assert text_of(page) == "Hello world 2日本!"
    page.click("#submit-button")
    page.wait_for_url("**/annotate/")

    post_edit, seqs = assert_submitted(assignment, "Hello world 2日本!")
    with db_lock():
        visits = list(Visit.objects.filter(post_edit=post_edit).order_by("started_at"))
        second_load = EditEvent.objects.get(post_edit=post_edit, kind="load", visit=visits[1])
        keydowns = EditEvent.objects.filter(post_edit=post_edit, kind="keydown").count()
    assert len(visits) == 2
    assert second_load.data == "Hello world 2" and second_load.length_after == 13
    assert second_load.seq > 0 and seqs[-1] == len(seqs) - 1
    assert keydowns == 1 + 4 + 4 + 1 + 1 + 1 + 1  # End, " wor", "ld 1", Backspace, "2", End, "!"
    # letters: w o r l d and the composition: CDP's sends no keydown, so it counts as one (definition 3)
    assert (post_edit.letters, post_edit.digits, post_edit.erase, post_edit.navigation) == (6, 2, 1, 2)


def test_a_network_outage_loses_nothing(context, site, annotator, item_for):
    assignment = item_for("Offline test.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    # At most 40 keys/s (Playwright's own pace is several hundred: beyond the human rate bound).
    page.keyboard.type(" Before the outage, some words.", delay=KEY_DELAY_MS)
    flush(page)

    context.set_offline(True)
    burst = " Typed while offline: the quick brown fox jumps over the lazy dog 0123456789."
    page.keyboard.type(burst, delay=KEY_DELAY_MS)
    for _ in range(10):
        page.keyboard.press("Backspace", delay=KEY_DELAY_MS)
    page.keyboard.press("Home")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    page.evaluate("() => window.__editlabLogger.saveDraft()")
    # At least one send attempt fails (the logger retries on a 2 s timer).
    page.wait_for_function("() => document.getElementById('save-status').textContent.includes('Offline')")
    assert page.evaluate("() => window.__editlabLogger.pending()") > len(burst)

    context.set_offline(False)
    page.keyboard.press("End")
    page.keyboard.type(" Back online.", delay=KEY_DELAY_MS)
    flush(page)
    expected = "Offline test. Before the outage, some words." + burst[:-10] + " Back online."
    assert text_of(page) == expected
    submit_with_keys(page)

    post_edit, seqs = assert_submitted(assignment, expected)
    with db_lock():
        assert EditEvent.objects.filter(post_edit=post_edit).count() == len(seqs)
        keydowns = EditEvent.objects.filter(post_edit=post_edit, kind="keydown").count()
    typed = len(" Before the outage, some words.") + len(burst) + len(" Back online.")
    assert keydowns == 1 + typed + 10 + 1 + 5 + 1 + 2  # ... End, then Control+Enter
    assert post_edit.erase == 10 and post_edit.navigation == 8


def test_a_draft_saved_elsewhere_is_shown_beside_ours(context, site, annotator, item_for):
    assignment = item_for("Shared text.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    flush(page)
    # Another device opens the item, logs a few events and saves its draft meanwhile: our next
    # events collide with its sequence numbers and our next draft save with its version.
    with db_lock():
        post_edit = PostEdit.objects.get(assignment=assignment)
        taken = stored_seqs(post_edit)[-1] + 1
        other = Visit.objects.create(post_edit=post_edit)
        for offset, kind in enumerate(["focus", "mousedown", "blur"]):
            EditEvent.objects.create(post_edit=post_edit, visit=other, seq=taken + offset, t_ms=offset, kind=kind)
        PostEdit.objects.filter(pk=post_edit.pk).update(draft_text="Their text.", version=1)
    page.keyboard.type(" Mine.")
    page.evaluate("() => window.__editlabLogger.saveDraft()")
    conflict = page.locator("#conflict")
    conflict.wait_for(state="visible")
    assert conflict.locator("[data-conflict=mine]").input_value() == "Shared text. Mine."
    assert conflict.locator("[data-conflict=theirs]").input_value() == "Their text."
    assert post_edit_of(assignment).draft_text == "Their text."  # nothing overwritten

    page.click("[data-choose=theirs]")
    assert text_of(page) == "Their text."
    page.keyboard.type(" Merged.")
    submit_with_keys(page)

    post_edit = post_edit_of(assignment)
    assert post_edit.text == "Their text. Merged."
    assert post_edit.replay_ok is True, post_edit.replay_divergence
    seqs = assert_complete_log(post_edit)
    with db_lock():
        others = list(EditEvent.objects.filter(visit=other).order_by("seq").values_list("seq", "kind"))
        ours_after = EditEvent.objects.filter(post_edit=post_edit, seq__gt=taken + 2).exclude(visit=other).count()
    assert others == [(taken, "focus"), (taken + 1, "mousedown"), (taken + 2, "blur")]  # untouched
    assert ours_after == len(seqs) - taken - 3  # ours renumbered after theirs


def test_skip_asks_for_a_reason(context, site, annotator, item_for):
    assignment = item_for("Unfixable.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.click("#skip-button")
    page.fill("#skip-reason", "   ")
    page.click("#skip-form button[type=submit]")
    assert "give a reason" in page.locator("[data-skip-error]").inner_text()
    page.fill("#skip-reason", "The source is garbled.")
    with page.expect_navigation(url="**/annotate/"):
        page.click("#skip-form button[type=submit]")
    with db_lock():
        assignment.refresh_from_db()
    assert assignment.status == Assignment.SKIPPED
    assert assignment.skip_reason == "The source is garbled."
