"""A login session that ends mid-edit, in a real browser (Playwright + Debian's Chromium).

The annotator keeps typing while the server refuses every request; a banner asks them to log in
again in a new tab. Logging in rotates the CSRF token, so the old tab only recovers because the
logger reads the current token from the CSRF cookie: then the banner goes and everything it kept
arrives, once.
"""

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings

from annotations.models import Visit
from editlab.logins.models import Session
from tests.browser_support import (
    BROWSER_DB,
    assert_submitted,
    db_lock,
    flush,
    log_in,
    logged_in_page,
    open_editor,
    pending,
    post_edit_of,
    submit_with_keys,
    text_of,
    wait_ready,
)

if TYPE_CHECKING:  # imported by the browser fixture; collecting needs no Playwright
    from playwright.sync_api import Page


def csrf_cookie(page: "Page") -> str:
    [value] = [c["value"] for c in page.context.cookies() if c["name"] == settings.CSRF_COOKIE_NAME]
    return value


def typed_until_the_session_expires(context, site, annotator, assignment) -> "Page":
    """The editor on `assignment` after " one" was typed and sent, and " two" typed after the
    session ended: the banner is up."""
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.keyboard.press("End")
    page.keyboard.type(" one")
    flush(page)
    with db_lock():
        Session.objects.all().delete()  # expired, or flushed by an admin
    page.keyboard.type(" two")
    banner = page.locator("#session-expired")
    banner.wait_for(state="visible")  # the next periodic send is refused
    assert "Your session has expired" in banner.inner_text()
    assert "your work is kept in this browser and will be sent automatically" in banner.inner_text()
    assert "session has expired" in page.locator("#save-status").inner_text()
    assert page.evaluate("() => window.__editlabLogger.session") == "auth"
    return page


def test_the_csrf_cookie_stays_readable_by_the_logger():
    # An old tab finds the token of a new login only in this cookie.
    assert settings.CSRF_COOKIE_HTTPONLY is False
    assert settings.CSRF_USE_SESSIONS is False


@pytest.mark.browser
@BROWSER_DB
def test_an_old_tab_recovers_by_itself_after_logging_in_elsewhere(context, site, annotator, item_for):
    assignment = item_for("Session text")
    page = typed_until_the_session_expires(context, site, annotator, assignment)
    link = page.locator("#login-again")
    href = urlsplit(link.get_attribute("href"))
    assert (href.path, parse_qs(href.query)) == ("/login/", {"next": [f"/edit/{assignment.pk}/"]})
    assert link.get_attribute("target") == "_blank"
    page.keyboard.type(" three")  # still recorded, kept in localStorage
    assert pending(page) >= 12
    page.wait_for_function(  # the text is kept in this browser (persisted off the typing path)
        """(pe) => Object.keys(localStorage).filter((k) => k.startsWith(`editlab:pe:${pe}:`))
            .some((k) => JSON.parse(localStorage.getItem(k)).draft.text === 'Session text one two three')""",
        arg=post_edit_of(assignment).pk,
    )
    page_token = page.evaluate("() => JSON.parse(document.getElementById('editor-config').textContent).csrf_token")
    old_cookie = csrf_cookie(page)

    # Logging in again somewhere else in this browser (not on this item).
    second = context.new_page()
    second.goto("/login/")
    log_in(second, annotator.username)
    second.wait_for_url("**/annotate/")
    assert csrf_cookie(page) != old_cookie  # the login rotated the token

    page.locator("#session-expired").wait_for(state="hidden")  # the old tab noticed by itself
    flush(page)
    page.evaluate("() => window.__editlabLogger.saveDraft()")
    assert page.evaluate("() => window.__editlabLogger.session") is None
    assert post_edit_of(assignment).draft_text == "Session text one two three"
    # The token the page was rendered with is refused now: only the cookie's is good.
    refused = page.evaluate(
        """async (token) => {
            const config = JSON.parse(document.getElementById('editor-config').textContent);
            const r = await fetch(config.urls.events, {method: 'POST', body: '{}',
                headers: {'Content-Type': 'application/json', 'X-CSRFToken': token}});
            const answer = await r.json();
            return [r.status, answer.detail, answer.code];
        }""",
        page_token,
    )
    assert refused[0] == 403 and refused[1].startswith("CSRF Failed") and refused[2] == "csrf_failed"

    page.keyboard.type(" four")
    submit_with_keys(page)
    post_edit, seqs = assert_submitted(assignment, "Session text one two three four")  # every seq once, no gaps
    with db_lock():
        assert Visit.objects.filter(post_edit=post_edit).count() == 1  # never reloaded
        kinds = list(post_edit.events.order_by("seq").values_list("kind", flat=True))
    assert len(kinds) == len(seqs) and kinds[0] == "load" and kinds[-1] == "submit"
    assert kinds.count("keydown") == 1 + 4 + 4 + 6 + 5 + 2  # End " one" " two" " three" " four" Ctrl+Enter
    assert (post_edit.letters, post_edit.spaces) == (3 + 3 + 5 + 4, 4)


@pytest.mark.browser
@BROWSER_DB
def test_the_banner_link_logs_in_in_a_new_tab_that_takes_the_work_over(context, site, annotator, item_for):
    assignment = item_for("Link text")
    page = typed_until_the_session_expires(context, site, annotator, assignment)

    with context.expect_page() as opened:
        page.click("#login-again")
    second = opened.value
    second.wait_for_load_state()
    log_in(second, annotator.username)
    second.wait_for_url(f"**/edit/{assignment.pk}/")  # straight back to the item
    wait_ready(second)
    assert text_of(second) == "Link text one two"
    # One tab per item: the old one hands over and says so, its banner gone.
    page.wait_for_function("() => document.querySelector('#save-status').textContent.includes('another tab')")
    assert page.locator("#session-expired").is_hidden()
    second.keyboard.press("End")
    second.keyboard.type(" three")
    submit_with_keys(second)

    post_edit, _ = assert_submitted(assignment, "Link text one two three")
    with db_lock():
        assert Visit.objects.filter(post_edit=post_edit).count() == 2
        keydowns = post_edit.events.filter(kind="keydown").count()
    assert keydowns == 1 + 4 + 4 + 1 + 6 + 2  # End " one" " two" | End " three" Ctrl+Enter
