"""Pages stay whole in a real browser (Playwright + Debian's Chromium): after an htmx swap or poll,
another page and Back show the whole page (its bar, its heading, its stylesheet), never the fragment
htmx fetched from the same URL; 403 and 404 pages say what the code said and lead back; no page asks
for a file that is not there (the favicon).

The browser runs without its back-forward cache, so that Back reads the page from the HTTP cache or
the server, where a fragment cached for the page's URL would show (with the cache, a test would pass
on Chromium's memory of the page whatever the server answered).
"""

import pytest
from django.urls import get_resolver

from annotations.models import Assignment
from editlab.benchmarks.support import CHROMIUM_ARGS
from tests.browser_support import BROWSER_DB, CHROMIUM, db_lock, logged_in_page
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

PAGE_TIMEOUT_MS = 60000  # how long a step may wait for the page (a busy machine); no time is asserted

CONDITIONS = [
    {"name": "mt", "output": None, "highlights": False},
    {"name": "ht", "output": None, "highlights": False},
]


@pytest.fixture(scope="module")
def browser():
    """Chromium as tests/browser_support.py launches it, without the back-forward cache."""
    from django.db import connections
    from playwright.sync_api import sync_playwright

    shared = connections["default"]
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        connections["default"] = shared
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=[*CHROMIUM_ARGS, "--disable-features=BackForwardCache"],
        )
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def _url_conf_loaded() -> None:
    """The URL conf imports the metrics libraries: loaded before the browser asks, so that the first
    page answers within the browser's wait on a busy machine too."""
    get_resolver().url_patterns  # noqa: B018 - the property loads it


@pytest.fixture
def page_for(context, site):
    def make(user):
        page = logged_in_page(context, site, user)
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        return page

    return make


def assert_whole_page(page, heading: str) -> None:
    """The page has the site's bar, its own heading and the site's stylesheet applied."""
    assert page.locator("header.topbar nav").count() == 1, page.content()[:500]
    assert heading in page.locator("h1").first.inner_text()
    assert page.evaluate("() => getComputedStyle(document.querySelector('header.topbar')).display") == "flex"


def missing_files(page) -> list[str]:
    """Collects every answer with a 4xx/5xx status the page receives from now on."""
    missing: list[str] = []
    page.on(
        "response",
        lambda response: missing.append(f"{response.status} {response.url}") if response.status >= 400 else None,
    )
    return missing


def _study():
    project = ProjectFactory(name="Study", conditions=CONDITIONS)
    for d in range(2):
        for s in range(2):
            ItemFactory(project=project, external_id=f"d{d}-s{s}", document=f"doc{d}", document_position=s)
    return project


def test_back_after_show_the_plan_and_another_page_shows_the_whole_design_page(
    page_for, admin_user, annotator, other_annotator
):
    with db_lock():
        project = _study()
    page = page_for(admin_user)
    missing = missing_files(page)
    page.goto(f"/manage/projects/{project.pk}/design/")
    for person in (annotator, other_annotator):
        page.check(f'input[name=annotators][value="{person.pk}"]')
    page.click("form.design-form button[type=submit]")
    page.wait_for_selector("#design-plan table.plan-documents")
    page.click("p.subnav >> text=Progress")
    page.wait_for_url(f"**/manage/projects/{project.pk}/progress/")
    page.go_back()
    page.wait_for_url(f"**/manage/projects/{project.pk}/design/")
    assert_whole_page(page, "Assign with a Latin square")
    assert page.locator("form.design-form").count() == 1
    with db_lock():
        assert not Assignment.objects.filter(item__project=project).exists()
    assert missing == []


def test_back_after_a_report_target_change_shows_the_whole_report(page_for, researcher, annotator):
    with db_lock():
        project = ProjectFactory(name="Reported")
        for n in range(4):
            SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=annotator, keystrokes=n)
    page = page_for(researcher)
    missing = missing_files(page)
    page.goto(f"/research/{project.pk}/report/")
    assert_whole_page(page, "Report: Reported")
    with page.expect_response(lambda response: "target=wall_time" in response.url):
        page.select_option("form.report-selection select[name=target]", "wall_time")
    page.wait_for_url("**target=wall_time**")  # htmx pushed the selection
    page.click("header.topbar nav >> text=Projects")
    page.wait_for_url("**/manage/projects/")
    page.go_back()
    page.wait_for_url("**target=wall_time**")
    assert_whole_page(page, "Report: Reported")
    assert page.locator("form.report-selection select[name=target]").input_value() == "wall_time"
    page.evaluate("() => { window.beforeBack = true; }")
    with page.expect_event("load"):  # the report as first loaded: htmx reloads it whole
        page.go_back()
    assert page.url.endswith(f"/research/{project.pk}/report/")
    assert page.evaluate("() => window.beforeBack") is None
    assert_whole_page(page, "Report: Reported")
    assert missing == []


def test_back_after_a_progress_poll_shows_the_whole_progress_page(page_for, admin_user):
    with db_lock():
        project = _study()
    page = page_for(admin_user)
    page.goto(f"/manage/projects/{project.pk}/progress/")
    with page.expect_response(
        lambda response: response.request.headers.get("hx-request") == "true", timeout=PAGE_TIMEOUT_MS
    ):
        pass  # the tables poll every 5 s, from the page's own URL
    page.click("p.subnav >> text=Latin square")
    page.wait_for_url(f"**/manage/projects/{project.pk}/design/")
    page.go_back()
    page.wait_for_url(f"**/manage/projects/{project.pk}/progress/")
    assert_whole_page(page, "Progress")


def test_a_403_page_says_who_may_and_leads_back(page_for, site, annotator):
    page = page_for(annotator)
    response = page.goto("/manage/import/", referer=f"{site}/annotate/")
    assert response.status == 403
    assert page.locator("#error-message").inner_text() == "Only admins may import items."
    assert page.locator("header.topbar nav >> text=Annotate").count() == 1  # the site's navigation
    back = page.locator(".error-way-back a", has_text="previous page")
    assert back.get_attribute("href").endswith("/annotate/")
    back.click()
    page.wait_for_url("**/annotate/")


def test_a_404_page_carries_the_codes_message(page_for, annotator):
    page = page_for(annotator)
    response = page.goto("/annotate/?batch=x")
    assert response.status == 404
    assert page.locator("#error-message").inner_text() == "batch: expected a batch id (a number)"
    assert page.locator(".error-way-back a", has_text="start page").get_attribute("href") == "/"
    response = page.goto("/no/such/page/")
    assert response.status == 404
    assert page.locator("#error-message").inner_text() == "There is no such page."
    assert page.locator("header.topbar nav").count() == 1


def test_the_api_docs_page_leads_back_to_the_app_and_every_page_finds_its_favicon(page_for, researcher):
    page = page_for(researcher)
    missing = missing_files(page)
    page.goto("/api/docs/")
    page.wait_for_selector("#swagger-ui .info")
    assert page.locator("link[rel=icon]").get_attribute("href").endswith(".svg")
    page.click("#api-docs-back")
    page.wait_for_url(lambda url: url.endswith("/") and "/api/" not in url)
    assert page.locator("link[rel=icon]").count() == 1
    assert missing == []


def test_a_researcher_reads_the_settings_and_cannot_change_them(page_for, researcher):
    with db_lock():
        project = _study()
        UserFactory(username="somebody", role="annotator")
    page = page_for(researcher)
    page.goto(f"/manage/projects/{project.pk}/progress/")
    page.click("p.subnav >> text=Settings")
    page.wait_for_url(f"**/manage/projects/{project.pk}/edit/")
    assert page.locator("#read-only").inner_text() == "Read-only: only admins change a project's settings."
    assert page.locator("#id_name").input_value() == "Study"
    assert page.locator("#id_name").is_disabled()
    assert page.locator("form.project-form button[type=submit]").count() == 0
