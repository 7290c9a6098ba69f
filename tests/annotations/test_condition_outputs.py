"""A condition's output on the Settings page: refused when the items carry others, saved with a warning
(never a plain "Saved") when they carry none yet; rows enough to declare any number of conditions."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from annotations.models import Project
from annotations.services.errors import ServiceError
from annotations.services.projects import project_update
from tests.annotations.test_study_settings import HT, PE, _form, _frozen, _study
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

SYS_Z = {"name": "z", "output": "sysZ", "highlights": False}


def edit(project: Project) -> str:
    return reverse("manage-project-edit", args=[project.pk])


def test_the_service_refuses_an_output_the_items_lack_beside_the_ones_they_carry():
    project = _study()
    ItemFactory(project=project, outputs={"sysA": "a", "sysB": "b"})
    before = _frozen(project)
    with pytest.raises(ServiceError) as refused:
        project_update(project=project, conditions=[PE, HT, SYS_Z])
    assert str(refused.value) == (
        "conditions[2].output: condition 'z' starts from output 'sysZ', which no item of this project carries; "
        "the items carry sysA, sysB. Choose one of them, or import items with that output first"
    )
    assert _frozen(project) == before


def test_a_stored_condition_is_kept_as_it_is_when_other_settings_change():
    project = Project.objects.create(name="old", conditions=[SYS_Z])  # declared before its check existed
    ItemFactory(project=project, outputs={"sysA": "a"})
    project_update(project=project, conditions=[SYS_Z, HT], source_lang="de")
    assert _frozen(project)["conditions"] == [SYS_Z, HT]


def test_the_page_names_the_condition_and_the_missing_system_beside_its_row(admin_client):
    project = _study()
    ItemFactory(project=project, outputs={"sysA": "a", "sysB": "b"})
    before = _frozen(project)

    response = admin_client.post(edit(project), _form(project, [PE, HT, SYS_Z]))

    assert response.status_code == 200
    body = response.content.decode()
    row = body[body.index('name="conditions-2-output"') - 600 : body.index('name="conditions-2-output"')]
    assert "condition &#x27;z&#x27; starts from output &#x27;sysZ&#x27;, which no item of this project carries" in row
    assert "Saved project" not in body
    assert _frozen(project) == before


def test_with_no_named_outputs_yet_it_is_saved_with_a_warning_not_a_green_saved(admin_client):
    project = Project.objects.create(name="Study")  # no items: they are imported later

    response = admin_client.post(edit(project), _form(project, [SYS_Z]))

    assert response.status_code == 302
    assert _frozen(project)["conditions"] == [SYS_Z]
    (message,) = list(get_messages(response.wsgi_request))
    assert message.level_tag == "warning"
    assert str(message) == (
        "Saved project 'Study', but: Condition 'z' shows output 'sysZ', which no item carries yet: import items "
        "with it (outputs, or output:NAME=column in a table) before assigning work."
    )
    page = admin_client.get(edit(project)).content.decode()
    assert '<li class="warning">Saved project &#x27;Study&#x27;, but:' in page


def test_a_condition_every_item_carries_is_a_plain_saved(admin_client):
    project = Project.objects.create(name="Study")
    ItemFactory(project=project, outputs={"sysZ": "z"})
    response = admin_client.post(edit(project), _form(project, [SYS_Z]))
    (message,) = list(get_messages(response.wsgi_request))
    assert (message.level_tag, str(message)) == ("success", "Saved project 'Study'.")


def test_three_blank_rows_and_an_add_button_that_saves_nothing(admin_client):
    project = _study()
    before = _frozen(project)
    page = admin_client.get(edit(project)).content.decode()
    assert 'name="conditions-5-name"' in page and 'name="conditions-6-name"' not in page  # 3 declared + 3 blank
    assert '<button type="submit" name="add_condition" value="1" formnovalidate>Add a condition</button>' in page

    data = _form(project, [PE, HT, {"name": "typed", "output": ""}]) | {"add_condition": "1"}
    more = admin_client.post(edit(project), data)

    assert more.status_code == 200
    html = more.content.decode()
    assert 'name="conditions-5-name"' in html and 'name="conditions-6-name"' not in html  # 3 rows + 2 + 1 more
    assert 'value="typed"' in html  # what was typed stays
    assert _frozen(project) == before
    four = [PE, HT, {"name": "c3", "output": ""}, {"name": "c4", "output": ""}]
    assert admin_client.post(edit(project), _form(project, four)).status_code == 302
    assert [c["name"] for c in _frozen(project)["conditions"]] == ["pe", "ht", "c3", "c4"]


def test_the_help_text_points_to_the_latin_square_page(admin_client):
    project = _study()
    page = admin_client.get(edit(project)).content.decode()
    assert f'<a href="{reverse("manage-design", args=[project.pk])}">Latin square</a>' in page
    assert "designed assignment (Batches &amp; assignment)" not in page
