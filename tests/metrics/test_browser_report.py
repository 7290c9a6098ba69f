"""The report's main table in a real browser (Playwright + Debian's Chromium) at 1366 x 900: the ranking
fits without scrolling sideways, its key columns are on screen, notes are footnotes (rows stay one line
high), and every other figure is one click away under "More columns" (a <details>: no JS needed)."""

import numpy as np
import pytest
from django.urls import get_resolver, reverse

from metrics.models import MetricValue
from metrics.selection_data import clear_cache
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.factories import MetricValueFactory, UserFactory
from tests.metrics.report_data import build_study

pytestmark = [pytest.mark.browser, BROWSER_DB]

PAGE_TIMEOUT_MS = 60000  # how long a step may wait for the page (a busy machine); no time is asserted
KEY_COLUMNS = ["rank", "metric", "n", "r", "r 95% CI", "oriented r"]
MORE = ["Williams p", "Δr bootstrap [95%]", "CV by annotator", "5-NN R² (published protocol)"]


@pytest.fixture
def report_url(researcher):
    get_resolver().url_patterns  # noqa: B018 - the URL conf (and the metrics libraries) loaded before the browser asks
    with db_lock():
        clear_cache()
        people = [UserFactory(username=name, role="annotator") for name in ("anna", "bob")]
        project, post_edits = build_study(annotators=people, n_per_annotator=20)
        rng = np.random.default_rng(4)
        for post_edit in post_edits:  # the IWSLT suite's other metrics; exact_match is constant: it gets a note
            change = post_edit.keystrokes / 2
            for metric, value in {
                "levenshtein_words": change / 5 + rng.normal(0, 1),
                "ter": change / 30 + rng.normal(0, 0.1),
                "chrf": 1 - change / 40 + rng.normal(0, 0.1),
                "rouge_l": 1 - change / 50 + rng.normal(0, 0.1),
                "charac_ter": change / 35 + rng.normal(0, 0.1),
                "exact_match": 0.0,
            }.items():
                MetricValueFactory(post_edit=post_edit, metric=metric, value=value, variant=MetricValue.PLAIN)
    return reverse("metrics-report", kwargs={"project_id": project.pk})


def test_the_ranking_fits_1366_px_with_its_key_columns_and_notes_as_footnotes(context, site, researcher, report_url):
    page = logged_in_page(context, site, researcher)
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(report_url)
    table = page.locator("#metrics-key")
    box = table.locator("xpath=..")  # its .table-scroll
    widths = box.evaluate("b => ({scroll: b.scrollWidth, client: b.clientWidth})")
    assert widths["scroll"] <= widths["client"], widths
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1366

    headers = table.locator("thead th")
    names = headers.all_inner_texts()
    assert [name for name in names if name in KEY_COLUMNS] == KEY_COLUMNS
    viewport_right = 1366
    for name in KEY_COLUMNS:
        cell = headers.nth(names.index(name)).bounding_box()
        assert cell is not None and cell["x"] >= 0 and cell["x"] + cell["width"] <= viewport_right, name

    rows = table.locator("tbody tr")
    assert rows.count() == 9
    ranks = [rows.nth(i).locator("td").nth(0).inner_text() for i in range(rows.count())]
    assert ranks == [str(rank) for rank in range(1, rows.count())] + ["–"]  # in rank order, the constant one last
    assert "best" in (rows.nth(0).get_attribute("class") or "")
    heights = [rows.nth(i).bounding_box()["height"] for i in range(rows.count())]
    one_line = page.evaluate("() => parseFloat(getComputedStyle(document.body).lineHeight)")
    assert max(heights) < 2.5 * one_line, heights  # one line of figures (and padding), not a column of notes

    constant = table.locator("tbody tr", has=page.locator("th", has_text="exact_match"))
    assert constant.locator("td").nth(0).inner_text() == "–"
    ref = constant.locator(".note-refs a").first
    target = ref.get_attribute("href")
    assert target and target.startswith("#report-note-")
    note = page.locator(target)
    assert "exact_match" in note.inner_text()

    more = page.locator("#more-columns")
    assert not more.locator("table").is_visible()
    more.locator("summary").click()
    more_headers = more.locator("thead th").all_inner_texts()
    assert all(name in more_headers for name in MORE), more_headers
    assert more.locator("table").is_visible()


def test_the_reports_list_says_what_is_computed_while_the_report_loads(context, site, researcher, report_url):
    page = logged_in_page(context, site, researcher)
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(reverse("metrics-reports"))
    # The click and a look at the page in one task: the status line is read before the report replaces the page.
    shown = page.evaluate(
        """href => {
          document.querySelector(`a[href="${href}"]`).click();
          const line = document.getElementById("page-loading");
          const box = line && line.getBoundingClientRect();
          return line && {text: line.textContent, role: line.getAttribute("role"), visible: box.height > 0,
                          busy: document.body.getAttribute("aria-busy")};
        }""",
        report_url,
    )
    assert shown == {
        "text": "Computing correlations for 9 metrics over 40 post-edits…",
        "role": "status",
        "visible": True,
        "busy": "true",
    }
    page.wait_for_url(f"**{report_url}")
    page.locator("#metrics-key").wait_for()
    assert page.locator("#page-loading").count() == 0  # the report's page has none
