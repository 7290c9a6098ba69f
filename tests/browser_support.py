"""The live test server and the real browser (Playwright driving Debian's Chromium) that the
browser tests share, with helpers for the editor page and what it stored.

Its fixtures (site, browser, context, item_for) are registered for the whole suite by
tests/conftest.py; test modules import the helpers they call.
"""

import contextlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.db import connection, connections
from django.test import Client

from annotations.models import Assignment, EditEvent, PostEdit
from editlab.benchmarks.support import CHROMIUM_ARGS
from tests.factories import PASSWORD, AssignmentFactory, BatchFactory, ItemFactory, ProjectFactory

if TYPE_CHECKING:  # Playwright is imported by the browser fixture only: other tests collect without it
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 15000

# serialized_rollback: the flush between live-server tests must bring back the data
# migrations' rows (the role groups) for the tests that follow.
BROWSER_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True)


# ---------------------------------------------------------------- server and browser


_SERIAL_LOCK = threading.RLock()


class _InFlight:
    """Counts the live server's requests that are still running. A closed page can still send
    (the editor's pagehide beacon): the database flush after a test must not run beside such a
    request, or PostgreSQL's TRUNCATE and the request's transaction deadlock and the flush fails."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.running = 0
        self.last_end = 0.0

    def wrap(self, app):
        def counted(environ, start_response):
            with self.changed:
                self.running += 1
            try:
                return app(environ, start_response)
            finally:
                with self.changed:
                    self.running -= 1
                    self.last_end = time.monotonic()
                    self.changed.notify_all()

        counted.editlab_counted = True
        return counted

    def wait_quiet(self, *, quiet_s: float = 0.3, timeout_s: float = 10.0) -> None:
        """Until no request runs and none ended in the last `quiet_s` (a beacon sent as the page
        closed may reach the server just after): a condition, not a fixed sleep."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while time.monotonic() < deadline:
                if self.running == 0 and time.monotonic() - self.last_end >= quiet_s:
                    return
                self.changed.wait(timeout=quiet_s)


_IN_FLIGHT = _InFlight()


@pytest.fixture
def site(live_server):
    """The live server's URL. With in-memory SQLite its request threads share the test's one
    connection, so requests run one at a time (and the test's own ORM writes take the same lock).
    After the test (its pages closed first: `context` depends on this fixture) it waits for the
    server's requests to end, so that the database flush runs alone."""
    httpd = live_server.thread.httpd
    app = httpd.get_app()
    if connection.vendor == "sqlite" and connection.is_in_memory_db() and not getattr(app, "editlab_serial", False):
        inner = app

        def serial(environ, start_response):
            with _SERIAL_LOCK:
                return inner(environ, start_response)

        serial.editlab_serial = True
        app = serial
        httpd.set_app(app)
    if not getattr(app, "editlab_counted", False):
        counted = _IN_FLIGHT.wrap(app)
        counted.editlab_serial = getattr(app, "editlab_serial", False)
        httpd.set_app(counted)
    yield live_server.url
    _IN_FLIGHT.wait_quiet()


def db_lock():
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        return _SERIAL_LOCK
    return contextlib.nullcontext()


@pytest.fixture(scope="module")
def browser() -> "Browser":
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright: install the test extra (editlab/scripts/install test)")
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's Chromium. "
            "Install it with `apt-get install chromium` (editlab/scripts/install test does it)."
        )
    shared = connections["default"]
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # Playwright's sync API keeps an event loop in this thread while the browser runs; the
        # ORM calls made here (and the database flush between tests) are still plain sync calls.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        # With Playwright's event loop running in this thread, Django keeps connections per
        # async context; hand it back the same connection, so that the test, the live server
        # (in-memory SQLite) and pytest-django's serialized rollback all use one.
        connections["default"] = shared
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser, site):
    ctx = browser.new_context(base_url=site)
    ctx.set_default_timeout(TIMEOUT_MS)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    yield ctx
    ctx.close()


@pytest.fixture
def item_for(annotator):
    def make(model_output: str) -> Assignment:
        with db_lock():
            batch = BatchFactory(project=ProjectFactory(guidelines="Fix it.", idle_threshold_s=30))
            item = ItemFactory(project=batch.project, batch=batch, batch_position=0, model_output=model_output)
            return AssignmentFactory(item=item, annotator=annotator)

    return make


# ---------------------------------------------------------------- the editor page


def logged_in_page(context, site: str, user) -> "Page":
    """A page whose context carries the user's session cookie (login itself is tested once)."""
    client = Client()
    client.force_login(user)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site}])
    return context.new_page()


def log_in(page: "Page", username: str) -> None:
    """Fills and sends the login form the page shows."""
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form.login button[type=submit]")


def open_editor(page: "Page", assignment: Assignment) -> None:
    page.goto(f"/edit/{assignment.pk}/")
    wait_ready(page)


def wait_ready(page: "Page") -> None:
    page.wait_for_function("() => window.__editlabLogger !== undefined")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'post-edit-text'")


def flush(page: "Page") -> None:
    page.evaluate("() => window.__editlabLogger.flush()")
    assert page.evaluate("() => window.__editlabLogger.pending()") == 0


def pending(page: "Page") -> int:
    return page.evaluate("() => window.__editlabLogger.pending()")


def text_of(page: "Page") -> str:
    return page.locator("#post-edit-text").input_value()


def submit_with_keys(page: "Page", next_path: str = "/annotate/") -> None:
    with page.expect_navigation(url=f"**{next_path}"):
        page.keyboard.press("Control+Enter")


# ---------------------------------------------------------------- what the server stored


def post_edit_of(assignment: Assignment) -> PostEdit:
    with db_lock():
        return PostEdit.objects.get(assignment=assignment)


def stored_seqs(post_edit: PostEdit) -> list[int]:
    with db_lock():
        return list(EditEvent.objects.filter(post_edit=post_edit).order_by("seq").values_list("seq", flat=True))


def assert_complete_log(post_edit: PostEdit) -> list[int]:
    seqs = stored_seqs(post_edit)
    assert seqs == list(range(len(seqs))), "the stored log has gaps or does not start at 0"
    assert post_edit.event_gaps == []
    return seqs


def assert_submitted(assignment: Assignment, text: str) -> tuple[PostEdit, list[int]]:
    """The stored post-edit holds `text`, its log replays to it exactly, nothing is flagged and
    every seq is stored once; returns it and its stored seqs."""
    post_edit = post_edit_of(assignment)
    assert post_edit.text == text
    assert post_edit.replay_ok is True, post_edit.replay_divergence
    assert post_edit.flags == []
    return post_edit, assert_complete_log(post_edit)
