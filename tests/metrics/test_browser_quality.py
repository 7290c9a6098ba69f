"""The quality page in Chromium, with evaluations on it: a filter change swaps the body and pushes its URL,
a hostile rated text stays text (no script runs, every character shown once), the page passes axe-core and
fits an 800 px window."""

import pytest
from django.urls import get_resolver, reverse

from annotations.importers import import_items
from annotations.models import ErrorSpan, Evaluation, Item, Project
from tests.annotations.test_import_mqm import TSV
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.editlab.test_accessibility import AXE, BLOCKING, RUN_AXE
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

PAGE_TIMEOUT_MS = 60000  # how long a step may wait for the page (a busy machine); no time is asserted
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> tail'


@pytest.fixture
def quality_url(tmp_path):
    get_resolver().url_patterns  # noqa: B018 - the URL conf (and the metrics libraries) loaded before the browser asks
    path = tmp_path / "mqm.tsv"
    path.write_text(TSV, encoding="utf-8")
    with db_lock():
        import_items(project="browser wmt", fmt="mqm", path=path, create_project=True)
        project = Project.objects.get(name="browser wmt")
        evaluation = Evaluation.objects.create(
            item=Item.objects.get(project=project, external_id="2"),
            rater=UserFactory(username="rater9"),
            system="sysC",
            text=HOSTILE,
            status=Evaluation.SUBMITTED,
        )
        for position, (start, end) in enumerate([(5, 30), (0, 12), (40, 500)]):
            ErrorSpan.objects.create(
                evaluation=evaluation, position=position, start=start, end=end, category="Other", severity="major"
            )
    return reverse("metrics-quality", kwargs={"project_id": project.pk})


def test_filters_swap_the_body_hostile_text_stays_text_and_axe_passes(context, site, researcher, quality_url):
    page = logged_in_page(context, site, researcher)
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(quality_url)
    assert page.evaluate("() => window.pwned") is None
    cell = page.locator("tr", has_text="rater9").locator(".seg-text").last
    assert cell.inner_text() == HOSTILE
    assert page.locator("img[src=x]").count() == 0

    page.select_option("select[name=system]", "sysB")
    page.wait_for_url(f"**{quality_url}?system=sysB*")
    page.wait_for_function("() => !document.querySelector('#quality-body').innerText.includes('rater9')")
    systems = page.locator("h2:has-text('Systems') + .table-scroll tbody th").all_inner_texts()
    assert systems == ["sysB"]
    page.reload()  # the pushed URL is a whole page
    assert page.locator("h1").inner_text() == "Quality: browser wmt"
    assert page.locator("select[name=system]").input_value() == "sysB"

    page.goto(quality_url)
    page.add_script_tag(path=str(AXE))
    blocking = [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]
    page.set_viewport_size({"width": 800, "height": 900})
    blocking += [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]
    assert blocking == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
