"""Faults in a real browser (Playwright + Debian's Chromium, from tests/browser_support.py).

- The app server is SIGKILLed while an annotator types (right after storing a batch, before
  answering it), and started again: the page keeps its unsent events and delivers them; the batch
  sent twice is stored once, every seq is stored, and replay matches at submit.
- The login session expires mid-edit: the page keeps its events while the server refuses them;
  after logging in again (in a new tab) the draft and every event arrive.
"""

import pytest

from annotations.models import Visit
from editlab.logins.models import Session
from tests.browser_support import (
    BROWSER_DB,
    TIMEOUT_MS,
    assert_submitted,
    db_lock,
    flush,
    log_in,
    logged_in_page,
    open_editor,
    pending,
    submit_with_keys,
    text_of,
    wait_ready,
)
from tests.editlab.app_process import AppServer, copy_of, free_port, query, run_script

SEED_ITEM = """
import json
from django.contrib.auth import get_user_model
from annotations.models import Assignment, Batch, Item, Project
project = Project.objects.create(name="Faults", guidelines="Fix it.", instructions=["Fix it"], idle_threshold_s=30)
batch = Batch.objects.create(project=project, name="b1")
item = Item.objects.create(project=project, external_id="i1", model_output="The server", batch=batch, batch_position=0)
assignment = Assignment.objects.create(item=item, annotator=get_user_model().objects.get(username="anna"))
print(json.dumps({"assignment": assignment.pk}))
"""


@pytest.mark.browser
def test_the_app_server_killed_while_an_annotator_types_loses_and_doubles_nothing(
    browser, process_db_template, tmp_path
):
    database = copy_of(process_db_template, tmp_path, "app.sqlite3")
    assignment = run_script(database, SEED_ITEM)["assignment"]
    server = AppServer(database, free_port(), tmp_path / "server.log")
    server.start()
    ctx = browser.new_context(base_url=server.url)
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto("/login/")
        log_in(page, "anna")
        page.wait_for_url("**/annotate/")
        page.goto(f"/edit/{assignment}/")
        wait_ready(page)
        page.keyboard.press("End")
        page.keyboard.type(" stays up")
        flush(page)

        # The next batch reaches the server and is stored, then the server dies before answering.
        cut = {"done": False}

        def store_then_die(route) -> None:
            if cut["done"]:
                route.abort("connectionrefused")
                return
            cut["done"] = True
            route.fetch()  # stored ...
            server.kill()  # ... and the answer never comes back
            route.abort("connectionreset")

        answers: list[dict] = []
        page.on("response", lambda r: answers.append(r.json()) if "/events/" in r.url and r.ok else None)
        page.route("**/api/post-edits/*/events/", store_then_die)
        page.keyboard.type(" and down")
        page.wait_for_function("() => document.querySelector('#save-status').textContent.includes('Offline')")
        assert cut["done"]
        page.keyboard.press("Backspace")
        page.keyboard.type("n")
        unsent = pending(page)
        assert unsent >= 11  # the stored-but-unanswered batch, and what was typed since
        page.unroute("**/api/post-edits/*/events/")

        server.start()
        page.keyboard.type(" and up again")
        flush(page)  # everything kept meanwhile goes out now
        assert text_of(page) == "The server stays up and down and up again"
        with page.expect_navigation(url="**/annotate/"):
            page.keyboard.press("Control+Enter")
    finally:
        ctx.close()
        server.kill()

    # The batch whose answer was lost came again, and was acknowledged as duplicates.
    assert sum(answer["duplicates"] for answer in answers) >= 1
    [(post_edit, text, replay_ok, flags, gaps)] = query(
        database, "SELECT id, text, replay_ok, flags, event_gaps FROM annotations_postedit"
    )
    assert text == "The server stays up and down and up again"
    assert (replay_ok, flags, gaps) == (1, "[]", "[]")
    seqs = [seq for (seq,) in query(database, "SELECT seq FROM annotations_editevent ORDER BY seq")]
    assert seqs == list(range(len(seqs)))  # nothing lost, nothing doubled
    [(keydowns,)] = query(
        database, "SELECT COUNT(*) FROM annotations_editevent WHERE post_edit_id = ? AND kind = 'keydown'", (post_edit,)
    )
    # End, " stays up", " and down", Backspace, "n", " and up again", Control+Enter
    assert keydowns == 1 + 9 + 9 + 1 + 1 + 13 + 2
    [(erase, letters)] = query(database, "SELECT erase, letters FROM annotations_postedit")
    assert (erase, letters) == (1, 7 + 7 + 1 + 10)  # "staysup", "anddown", "n", "andupagain"


@pytest.mark.browser
@BROWSER_DB
def test_a_session_expiring_mid_edit_loses_nothing_after_logging_in_again(context, site, annotator, item_for):
    assignment = item_for("Session text")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    page.keyboard.type(" one")
    flush(page)

    with db_lock():
        Session.objects.all().delete()  # expired, or flushed by an admin
    page.keyboard.type(" two")
    page.evaluate("() => window.__editlabLogger.saveDraft()")
    page.wait_for_function("() => document.querySelector('#save-status').textContent.includes('not saved')")
    assert pending(page) >= 8  # 4 keys, each keydown + beforeinput + input (+ selection moves)

    # Logging in again, in a new tab that goes straight back to the item.
    second = context.new_page()
    second.goto(f"/login/?next=/edit/{assignment.pk}/")
    log_in(second, annotator.username)
    second.wait_for_url(f"**/edit/{assignment.pk}/")
    wait_ready(second)
    assert text_of(second) == "Session text one two"  # the draft kept in this browser
    second.keyboard.press("End")
    second.keyboard.type(" three")
    submit_with_keys(second)

    post_edit, _ = assert_submitted(assignment, "Session text one two three")
    with db_lock():
        assert Visit.objects.filter(post_edit=post_edit).count() == 2
        keydowns = post_edit.events.filter(kind="keydown").count()
    assert keydowns == 1 + 4 + 4 + 1 + 6 + 2  # End " one" " two" | End " three" Control+Enter
