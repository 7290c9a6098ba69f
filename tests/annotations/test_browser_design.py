"""The Latin-square page in a real browser (Playwright + Debian's Chromium): Show the plan swaps in
only the plan (htmx posts the choice: the page is not reloaded, and hundreds of ticked annotators
need no address to fit in), nothing is written
until Confirm, which makes the assignments and lands on progress per condition."""

import pytest

from annotations.models import Assignment
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.factories import ItemFactory, ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

CONDITIONS = [
    {"name": "mt", "output": None, "highlights": False},
    {"name": "mt-qe", "output": None, "highlights": True},
]


def test_the_plan_is_swapped_in_then_confirmed(context, site, admin_user, annotator, other_annotator):
    with db_lock():
        project = ProjectFactory(conditions=CONDITIONS)
        for d in range(3):
            for s in range(2):
                ItemFactory(project=project, external_id=f"d{d}-s{s}", document=f"doc{d}", document_position=s)
        cleo = UserFactory(username="cleo", role="annotator")
    people = [annotator, other_annotator, cleo]
    page = logged_in_page(context, site, admin_user)
    page.goto(f"{site}/manage/projects/{project.pk}/design/")
    page.evaluate("() => { window.notReloaded = true; }")
    assert page.locator("input[name=conditions]:checked").count() == 2  # every declared condition by default
    for person in people:
        page.check(f'input[name=annotators][value="{person.pk}"]')
    page.click("form.design-form button[type=submit]")
    page.wait_for_selector("#design-plan table.plan-documents")
    assert page.evaluate("() => window.notReloaded") is True
    assert page.url == f"{site}/manage/projects/{project.pk}/design/"  # posted: the choice is in no URL
    assert page.locator("table.plan-annotators tbody tr").count() == 3
    assert "18 assignments in all" in page.locator("#design-plan").inner_text()
    with db_lock():
        assert not Assignment.objects.filter(item__project=project).exists()

    page.click("form.design-apply button[type=submit]")
    page.wait_for_url(f"{site}/manage/projects/{project.pk}/progress/")
    assert "Created 18 assignments: 3 annotators x 3 documents x 2 conditions" in page.content()
    rows = page.locator(".by-condition tbody tr")
    assert rows.count() == 2
    # Annotator i, document j: mt when i + j is even; 5 of the 9 cells, 2 segments each.
    assert rows.nth(0).locator("td").nth(0).inner_text() == "mt"
    assert rows.nth(0).locator("td").nth(3).inner_text() == "10"
    assert rows.nth(1).locator("td").nth(3).inner_text() == "8"
    with db_lock():
        assert Assignment.objects.filter(item__project=project).count() == 18
