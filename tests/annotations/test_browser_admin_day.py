"""The admin's day in Chromium: an import that fails, says which format fits, and succeeds when the file
is chosen again; the Users page's filters swap the table, and Back shows the whole page."""

import pytest

from annotations.models import Item
from tests.browser_support import BROWSER_DB, db_lock
from tests.editlab.test_browser_pages import _url_conf_loaded, assert_whole_page, browser, page_for  # noqa: F401
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

ITEMS20 = b"id,source,mt_text,ref,note\n1,Der Hund.,The dog.,The dog.,x\n2,Die Katze.,The cat.,The cat.,y\n"


def _choose(page, name: str = "items20.csv") -> None:
    with page.expect_response(lambda response: response.url.endswith("/manage/import/mapping/")):
        page.set_input_files("#id_files", files=[{"name": name, "mimeType": "text/csv", "buffer": ITEMS20}])


def test_an_import_error_then_the_import_again(page_for, admin_user):  # noqa: F811 - the imported fixture
    with db_lock():
        project = ProjectFactory(name="Items20")
    page = page_for(admin_user)
    page.goto("/manage/import/")
    page.select_option("#id_project", str(project.pk))
    _choose(page)
    assert (
        page.locator("#import-detected")
        .inner_text()
        .startswith("Detected: a CSV table (comma separated, 5 columns): it is read as Table")
    )
    page.select_option("#id_fmt", "editeval")
    page.wait_for_selector("text=not the format chosen")
    page.click("form.import-form button.primary")
    page.wait_for_selector("#import-failed")
    error = page.locator("form.import-form ul.errorlist").first.inner_text()
    assert "items20.csv, line 1: invalid JSON" in error and "choose 'Table'" in error
    assert page.locator("legend", has_text="choose the file again to import").count() == 0  # not a table import
    page.select_option("#id_fmt", "auto")
    _choose(page)
    assert page.locator("legend").last.inner_text() == "Column mapping for items20.csv"
    page.select_option("#id_map_model_output", "mt_text")
    page.click("form.import-form button.primary")
    page.wait_for_selector("#import-report")
    assert "Read as Table" in page.locator(".read-as").inner_text()
    with db_lock():
        assert sorted(Item.objects.filter(project=project).values_list("model_output", flat=True)) == [
            "The cat.",
            "The dog.",
        ]


def test_the_users_filters_swap_the_table_and_back_shows_the_whole_page(page_for, admin_user):  # noqa: F811
    with db_lock():
        UserFactory(username="rita", role="researcher")
        UserFactory(username="anna", role="annotator")
    page = page_for(admin_user)
    page.goto("/manage/users/")
    with page.expect_response(lambda response: response.request.headers.get("hx-request") == "true"):
        page.select_option("#filter_role", "researcher")
    page.wait_for_url("**/manage/users/?*role=researcher*")
    assert page.locator("#users-table tbody tr").all_inner_texts()[0].startswith("rita")
    assert page.locator("#users-table tbody tr").count() == 1
    page.click("header.topbar nav >> text=Projects")
    page.wait_for_url("**/manage/projects/")
    page.go_back()
    page.wait_for_url("**/manage/users/?*role=researcher*")
    assert_whole_page(page, "Users")
    assert page.locator("#users-table tbody tr").count() == 1
