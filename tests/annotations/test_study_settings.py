"""A project's study settings: declared conditions, source and target language, document context.

Through the service (annotations.services.projects), the project form page (a row per condition)
and the management API; every role; hostile values; conditions that work already carries.
"""

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, PostEdit, Project
from annotations.selectors_conditions import study_settings
from annotations.services.errors import ServiceError
from annotations.services.projects import MAX_CONDITIONS, project_create, project_update
from tests.factories import AssignmentFactory, ItemFactory, PostEditFactory, ProjectFactory

PE = {"name": "pe", "output": "sysA", "highlights": False}
HL = {"name": "pe-hl", "output": "sysA", "highlights": True}
HT = {"name": "ht", "output": None, "highlights": False}

pytestmark = pytest.mark.django_db


def _study(**fields) -> Project:
    return ProjectFactory(conditions=[PE, HL, HT], **fields)


def _frozen(project: Project) -> dict:
    project.refresh_from_db()
    return {
        field: getattr(project, field)
        for field in ("name", "conditions", "source_lang", "target_lang", "context", "context_window")
    }


# --------------------------------------------------------------------------- the service


def test_it_creates_a_project_with_its_study_settings():
    project = project_create(
        name="DivEMT",
        conditions=[PE, {"name": "ht", "output": None}],
        source_lang=" en ",
        target_lang="ar",
        context=Project.CONTEXT_WINDOW,
        context_window=3,
    )
    project.refresh_from_db()
    assert project.conditions == [PE, HT]
    assert (project.source_lang, project.target_lang) == ("en", "ar")
    assert (project.context, project.context_window) == ("window", 3)


def test_update_keeps_the_study_settings_it_is_not_given():
    project = _study(source_lang="en", target_lang="de", context="document", context_window=4)
    project_update(project=project, guidelines="New.")
    assert _frozen(project) | {"name": None} == {
        "name": None,
        "conditions": [PE, HL, HT],
        "source_lang": "en",
        "target_lang": "de",
        "context": "document",
        "context_window": 4,
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"conditions": "pe"}, "conditions: must be a list of conditions"),
        ({"conditions": [PE, {**HT, "name": "PE"}]}, "conditions[1].name: 'PE' is declared twice"),
        ({"conditions": [{"name": "a,b", "output": None}]}, "conditions[0].name: must be 1-100 letters"),
        ({"conditions": [{"name": "a", "output": 5}]}, "conditions[0].output: must be a system name"),
        ({"conditions": [{"name": "a", "output": "s", "highlights": "yes"}]}, "conditions[0].highlights: must be"),
        ({"conditions": [{"name": "a", "colour": "red"}]}, "conditions[0]: unknown field(s) colour"),
        ({"conditions": [[1, 2]]}, "conditions[0]: must be an object"),
        ({"conditions": [{"name": f"c{k}"} for k in range(MAX_CONDITIONS + 1)]}, "conditions: at most 100"),
        ({"source_lang": "english_US"}, "source_lang: 'english_US' is not a BCP 47 language tag"),
        ({"target_lang": "de-" + "x" * 40}, "target_lang: "),
        ({"target_lang": 7}, "target_lang: must be a BCP 47 language tag (text)"),
        ({"context": "paragraph"}, "context: must be one of none, window, document, got 'paragraph'"),
        ({"context_window": 0}, "context_window: must be 1 to 50 segments"),
        ({"context_window": 10**12}, "context_window: must be 1 to 50 segments"),
        ({"context_window": True}, "context_window: must be a whole number"),
        ({"context_window": 2.5}, "context_window: must be a whole number"),
    ],
)
def test_bad_study_settings_are_refused_by_field_and_nothing_is_stored(fields, message):
    with pytest.raises(ServiceError) as refused:
        project_create(name="new", **fields)
    assert str(refused.value).startswith(message)
    assert not Project.objects.filter(name="new").exists()
    project = _study(source_lang="en")
    before = _frozen(project)
    with pytest.raises(ServiceError):
        project_update(project=project, guidelines="changed", **fields)
    assert _frozen(project) == before
    assert Project.objects.get(pk=project.pk).guidelines != "changed"


def test_odd_unicode_names_and_rtl_languages_are_kept_as_given():
    names = [{"name": "İstanbul-ğ", "output": "نظام", "highlights": True}, {"name": "ß_2", "output": None}]
    project = project_create(name="x", conditions=names, source_lang="en", target_lang="ar-Arab-EG")
    assert [c["name"] for c in project.conditions] == ["İstanbul-ğ", "ß_2"]
    assert project.conditions[0]["output"] == "نظام"
    for bad in ("a\u202eb", "a\u0000", "\u200b", " pe"):
        with pytest.raises(ServiceError, match=r"conditions\[0\]\.name"):
            project_update(project=project, conditions=[{"name": bad, "output": None}])


def test_a_condition_work_carries_cannot_be_removed_or_renamed():
    project = _study()
    AssignmentFactory(item=ItemFactory(project=project), condition="pe")
    AssignmentFactory(item=ItemFactory(project=project), condition="pe")
    for conditions in ([HL, HT], [{**PE, "name": "post-edit"}, HL, HT], [{**PE, "name": "PE"}, HL, HT]):
        with pytest.raises(ServiceError) as refused:
            project_update(project=project, conditions=conditions)
        assert str(refused.value).startswith(
            "conditions: 'pe' cannot be removed or renamed: 2 assignment(s) carry it. Keep it"
        )
        assert _frozen(project)["conditions"] == [PE, HL, HT]
    # Unused conditions go; new ones come; the order may change.
    project_update(project=project, conditions=[{"name": "new", "output": "sysB"}, PE])
    assert _frozen(project)["conditions"] == [{"name": "new", "output": "sysB", "highlights": False}, PE]


def test_the_latin_square_design_holds_its_conditions_even_with_no_assignment_left():
    project = _study(
        design=Project.DESIGN_LATIN_SQUARE, meta={"designs": [{"design": "latin-square", "conditions": ["pe", "ht"]}]}
    )
    with pytest.raises(ServiceError, match="'ht' cannot be removed or renamed: the project's Latin-square design"):
        project_update(project=project, conditions=[PE, HL])
    project_update(project=project, conditions=[PE, HT])  # pe-hl is not in the design


def test_output_and_highlights_freeze_once_work_under_the_condition_has_started():
    project = _study()
    pending = AssignmentFactory(item=ItemFactory(project=project), condition="pe-hl")
    # Nobody has seen anything under it: both may change.
    project_update(project=project, conditions=[PE, {**HL, "output": "sysB", "highlights": False}, HT])
    project_update(project=project, conditions=[PE, HL, HT])
    PostEditFactory(assignment=pending, condition="pe-hl")  # opened by its annotator
    with pytest.raises(ServiceError) as refused:
        project_update(project=project, conditions=[PE, {**HL, "output": "sysB"}, HT])
    assert str(refused.value) == (
        "conditions: 'pe-hl' cannot change what the editor starts from (output 'sysA' -> output 'sysB'): "
        "1 post-edit(s) started from output 'sysA'. Declare a new condition for the new output instead"
    )
    with pytest.raises(ServiceError, match="'pe-hl' cannot turn highlights off: 1 annotator"):
        project_update(project=project, conditions=[PE, {**HL, "highlights": False}, HT])
    assert _frozen(project)["conditions"] == [PE, HL, HT]


def test_imported_work_freezes_the_output_but_not_the_highlights():
    """The importer declares a finished study's conditions without highlights and says to turn them on."""
    project = _study()
    assignment = AssignmentFactory(item=ItemFactory(project=project), condition="pe", status=Assignment.SUBMITTED)
    PostEditFactory(assignment=assignment, condition="pe", origin=PostEdit.IMPORTED)
    project_update(project=project, conditions=[{**PE, "highlights": True}, HL, HT])
    with pytest.raises(ServiceError, match="'pe' cannot change what the editor starts from"):
        project_update(project=project, conditions=[{**PE, "output": None, "highlights": True}, HL, HT])
    with pytest.raises(ServiceError, match=r"'pe' cannot be removed or renamed: 1 assignment\(s\), 1 of them imported"):
        project_update(project=project, conditions=[HL, HT])


# --------------------------------------------------------------------------- what the conditions need


def test_the_summary_counts_outputs_and_warns_about_what_items_lack():
    project = _study()
    ItemFactory(project=project, outputs={"sysA": "a", "sysB": "b"}, highlights={"sysA": [[0, 1, "minor"]]})
    ItemFactory(project=project, outputs={"sysB": "b"})
    ItemFactory(project=project, outputs={"sysA": "a"}, practice=True)  # practice: shown under no condition
    ItemFactory(project=project, document="d1", document_position=0)
    ItemFactory(project=project, document="d1", document_position=1)
    AssignmentFactory(item=ItemFactory(project=project), condition="gone")
    summary = study_settings(project=project)
    assert (summary.items, summary.practice_items, summary.documents) == (5, 1, 4)
    assert summary.outputs == {"sysA": 1, "sysB": 2}
    assert summary.output_rows == [("sysA", 1, 1), ("sysB", 2, 0)]
    coverage = {entry.condition.name: (entry.items_lacking, entry.items_with_spans) for entry in summary.conditions}
    assert coverage == {"pe": (4, 1), "pe-hl": (4, 1), "ht": (0, 0)}
    assert summary.warnings[0].startswith(
        "Condition 'pe' shows output 'sysA', which 4 of 5 item(s) lack (the items carry: sysA, sysB)"
    )
    assert summary.warnings[-1].startswith("1 assignment(s) carry the condition 'gone', which the project does not")


def test_the_summary_of_a_project_whose_stored_conditions_do_not_parse():
    project = ProjectFactory(conditions={"not": "a list"})
    summary = study_settings(project=project)
    assert summary.conditions == []
    assert summary.warnings == ["The stored conditions cannot be read: conditions: must be a list of conditions."]


def test_highlights_over_an_empty_editor_or_without_spans_are_warned_about():
    project = ProjectFactory(
        conditions=[{"name": "x", "output": None, "highlights": True}, {"name": "y", "output": "s", "highlights": True}]
    )
    ItemFactory(project=project, outputs={"s": "text"}, highlights={"s": "not spans"})
    ItemFactory(project=project, outputs=["not", "an", "object"])
    summary = study_settings(project=project)
    assert summary.outputs == {"s": 1}
    assert summary.warnings == [
        "Condition 'x' turns highlights on over an empty editor: there is nothing to highlight.",
        "Condition 'y' shows output 's', which 1 of 2 item(s) lack (the items carry: s): under it they would "
        "start from an empty editor instead, flagged condition_output_missing.",
    ]


# --------------------------------------------------------------------------- the page


def _form(project: Project | None = None, rows: list[dict] | None = None, **overrides) -> dict:
    data = {
        "name": project.name if project else "Study",
        "guidelines": "",
        "task_type": "",
        "instructions": "Fix it",
        "idle_threshold_s": "30",
        "overlap": "1",
        "source_lang": "en",
        "target_lang": "ar",
        "context": "window",
        "context_window": "3",
    }
    if rows is not None:
        data |= {"conditions-TOTAL_FORMS": str(len(rows) + 2), "conditions-INITIAL_FORMS": str(len(rows))}
        data |= {"conditions-MIN_NUM_FORMS": "0", "conditions-MAX_NUM_FORMS": "100"}
        for index, row in enumerate(rows):
            for key, value in row.items():
                if key == "highlights":
                    if value:
                        data[f"conditions-{index}-highlights"] = "on"
                elif key == "DELETE":
                    data[f"conditions-{index}-DELETE"] = "on"
                else:
                    data[f"conditions-{index}-{key}"] = value or ""
    return data | overrides


def test_admin_declares_conditions_languages_and_context_on_the_form(admin_client):
    rows = [{"name": "pe", "output": "sysA"}, {"name": "pe-hl", "output": "sysA", "highlights": True}, HT]
    response = admin_client.post(reverse("manage-project-create"), _form(rows=rows))
    project = Project.objects.get(name="Study")
    assert response.status_code == 302
    assert _frozen(project) == {
        "name": "Study",
        "conditions": [PE, HL, HT],
        "source_lang": "en",
        "target_lang": "ar",
        "context": "window",
        "context_window": 3,
    }
    body = admin_client.get(reverse("manage-project-edit", args=[project.pk])).content.decode()
    assert 'name="conditions-0-name"' in body and 'value="pe-hl"' in body
    assert 'name="conditions-4-name"' in body  # two blank rows to add more
    assert "What the conditions need" in body


def test_a_row_marked_for_removal_or_left_blank_is_no_condition(admin_client):
    project = _study()
    rows = [{**PE, "DELETE": True}, HL, {"name": "", "output": "", "highlights": False}, HT]
    response = admin_client.post(reverse("manage-project-edit", args=[project.pk]), _form(project, rows))
    assert response.status_code == 302
    assert _frozen(project)["conditions"] == [HL, HT]


def test_a_bad_row_is_shown_beside_its_field_and_nothing_changes(admin_client):
    project = _study(source_lang="de")
    before = _frozen(project)
    rows = [PE, {"name": "pe", "output": "sysB"}]
    response = admin_client.post(reverse("manage-project-edit", args=[project.pk]), _form(project, rows))
    assert response.status_code == 200
    body = response.content.decode()
    row = body[body.index('name="conditions-1-name"') - 400 : body.index('name="conditions-1-name"')]
    assert "&#x27;pe&#x27; is declared twice" in row
    assert _frozen(project) == before


def test_removing_a_used_condition_on_the_page_says_why_and_keeps_it(admin_client):
    project = _study()
    AssignmentFactory(item=ItemFactory(project=project), condition="ht")
    response = admin_client.post(reverse("manage-project-edit", args=[project.pk]), _form(project, [PE, HL]))
    assert response.status_code == 200
    assert 'id="conditions-error"' in response.content.decode()
    assert "&#x27;ht&#x27; cannot be removed or renamed: 1 assignment(s) carry it" in response.content.decode()
    assert _frozen(project)["conditions"] == [PE, HL, HT]


def test_a_bad_language_or_window_is_a_form_error_naming_the_field(admin_client):
    project = _study()
    before = _frozen(project)
    url = reverse("manage-project-edit", args=[project.pk])
    body = admin_client.post(url, _form(project, [PE, HL, HT], target_lang="arabic!")).content.decode()
    assert "&#x27;arabic!&#x27; is not a BCP 47 language tag" in body
    body = admin_client.post(url, _form(project, [PE, HL, HT], context_window="99999999999999999999")).content.decode()
    assert "Ensure this value is less than or equal to 50." in body
    body = admin_client.post(url, _form(project, [PE, HL, HT], context="sideways")).content.decode()
    assert "Select a valid choice. sideways is not one of the available choices." in body
    assert _frozen(project) == before


def test_a_post_without_the_study_fields_keeps_them(admin_client):
    """A script (or an old form) that posts only the basic fields changes no study setting."""
    project = _study(source_lang="en", target_lang="ar", context="document")
    before = _frozen(project)
    data = _form(project)
    for key in ("source_lang", "target_lang", "context", "context_window"):
        data.pop(key)
    response = admin_client.post(reverse("manage-project-edit", args=[project.pk]), data | {"guidelines": "New."})
    assert response.status_code == 302
    assert _frozen(project) == before


def test_emptying_a_language_makes_it_unknown(admin_client):
    project = _study(source_lang="en", target_lang="ar")
    admin_client.post(reverse("manage-project-edit", args=[project.pk]), _form(project, [PE, HL, HT], source_lang=""))
    assert (_frozen(project)["source_lang"], _frozen(project)["target_lang"]) == ("", "ar")


@pytest.mark.parametrize(
    "management",
    [
        {"conditions-TOTAL_FORMS": "abc", "conditions-INITIAL_FORMS": "0"},
        {"conditions-TOTAL_FORMS": "99999999999999999999999", "conditions-INITIAL_FORMS": "0"},
        {"conditions-TOTAL_FORMS": "-5", "conditions-INITIAL_FORMS": "0"},
        {"conditions-TOTAL_FORMS": "101", "conditions-INITIAL_FORMS": "0"},
    ],
)
def test_tampered_row_counts_are_a_message_not_a_crash(admin_client, management):
    project = _study()
    before = _frozen(project)
    data = _form(project, [PE]) | management
    response = admin_client.post(reverse("manage-project-edit", args=[project.pk]), data)
    assert response.status_code == 200
    assert 'class="errorlist' in response.content.decode()
    assert _frozen(project) == before


def test_the_settings_page_shows_outputs_and_the_missing_output_warning_escaped(admin_client):
    project = ProjectFactory(conditions=[{"name": "c", "output": "<b>sys</b>", "highlights": False}])
    ItemFactory(project=project, outputs={"<b>sys</b>": "x", "<script>alert(1)</script>": "y"})
    ItemFactory(project=project, outputs={})
    body = admin_client.get(reverse("manage-project-edit", args=[project.pk])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "<script>alert(1)" not in body
    assert "which 1 of 2 item(s) lack" in body
    assert '<option value="&lt;b&gt;sys&lt;/b&gt;">' in body


CLIENTS = {
    "anonymous": "client",
    "annotator": "annotator_client",
    "other annotator": "other_annotator_client",
    "researcher": "researcher_client",
    "admin": "admin_client",
}


@pytest.mark.parametrize("role", CLIENTS)
def test_only_admins_change_study_settings_on_the_page(request, role, annotator, other_annotator):
    project = _study(source_lang="en")
    AssignmentFactory(item=ItemFactory(project=project), annotator=annotator, condition="pe")
    before = _frozen(project)
    client = request.getfixturevalue(CLIENTS[role])
    url = reverse("manage-project-edit", args=[project.pk])
    response = client.post(url, _form(project, [PE, {"name": "new", "output": None}], target_lang="fr"))
    expected = {"anonymous": 302, "admin": 302}.get(role, 403)
    assert response.status_code == expected
    if role == "admin":
        assert _frozen(project)["conditions"] == [PE, {"name": "new", "output": None, "highlights": False}]
        assert _frozen(project)["target_lang"] == "fr"
    else:
        assert _frozen(project) == before
        assert client.get(url).status_code == {"anonymous": 302, "researcher": 200}.get(role, 403)  # researchers read


# --------------------------------------------------------------------------- the API


USERS = {
    "annotator": "annotator",
    "other annotator": "other_annotator",
    "researcher": "researcher",
    "admin": "admin_user",
}


def _api(request, role: str) -> APIClient:
    client = APIClient()
    if role != "anonymous":
        client.force_authenticate(request.getfixturevalue(USERS[role]))
    return client


def test_the_api_creates_and_shows_a_project_with_its_study_settings(request):
    payload = {
        "name": "QE4PE",
        "conditions": [PE, HL, {"name": "ht", "output": None}],
        "source_lang": "en",
        "target_lang": "nl",
        "context": "document",
    }
    response = _api(request, "admin").post(reverse("api-project-create"), payload, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["conditions"] == [PE, HL, HT]
    assert (body["source_lang"], body["target_lang"], body["context"], body["context_window"]) == (
        "en",
        "nl",
        "document",
        2,
    )
    assert body["design"] == "simple"
    detail = _api(request, "researcher").get(reverse("api-project", args=[body["id"]])).json()
    assert detail["conditions"] == [PE, HL, HT]


@pytest.mark.parametrize(
    ("payload", "detail", "errors"),
    [
        (
            {"conditions": [PE, {"name": "x", "output": None, "highlights": 1}]},
            "conditions[1].highlights: must be true or false",
            {"conditions[1].highlights": ["must be true or false"]},
        ),
        (
            {"conditions": [HL, HT]},
            "conditions: 'pe' cannot be removed or renamed: 1 assignment(s) carry it. Keep it (you may add other "
            "conditions beside it), or withdraw its pending assignments first",
            None,
        ),
        (
            {"source_lang": "e"},
            "source_lang: 'e' is not a BCP 47 language tag (e.g. en, de-CH, ar, zh-Hant, sr-Latn)",
            None,
        ),
        ({"context_window": 51}, "context_window: Ensure this value is less than or equal to 50.", None),
        ({"context_window": 1e300}, "context_window: A valid integer is required.", None),
        ({"context": ["window"]}, None, None),
        ({"conditions": None}, "conditions: This field may not be null.", None),
    ],
)
def test_bad_settings_through_the_api_are_400s_naming_the_field(request, payload, detail, errors):
    project = _study()
    AssignmentFactory(item=ItemFactory(project=project), condition="pe")
    before = _frozen(project)
    response = _api(request, "admin").post(reverse("api-project-update", args=[project.pk]), payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    if detail is not None:
        assert body["detail"] == detail
    else:
        assert body["detail"].startswith(f"{next(iter(payload))}: ")
    if errors is not None:
        assert body["errors"] == errors
    assert _frozen(project) == before


def test_deep_or_non_finite_json_in_conditions_is_refused(request):
    project = _study()
    before = _frozen(project)
    url = reverse("api-project-update", args=[project.pk])
    deep = '{"conditions": ' + "[" * 200 + "]" * 200 + "}"
    response = _api(request, "admin").post(url, deep, content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, "too_deep")
    nan = '{"conditions": [{"name": "a", "output": null, "highlights": NaN}]}'
    response = _api(request, "admin").post(url, nan, content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, "parse_error")
    assert _frozen(project) == before


@pytest.mark.parametrize("role", ["anonymous", "annotator", "other annotator", "researcher", "admin"])
def test_only_admins_change_study_settings_through_the_api(request, role, annotator):
    project = _study()
    AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    before = _frozen(project)
    response = _api(request, role).post(
        reverse("api-project-update", args=[project.pk]), {"conditions": [PE], "target_lang": "fr"}, format="json"
    )
    assert response.status_code == (200 if role == "admin" else 403)
    if role == "admin":
        assert (_frozen(project)["conditions"], _frozen(project)["target_lang"]) == ([PE], "fr")
    else:
        assert response.json()["code"] in ("not_authenticated", "permission_denied")
        assert _frozen(project) == before
    # Reading the settings: annotators only for a project they have work in.
    read = _api(request, role).get(reverse("api-project", args=[project.pk]))
    assert read.status_code == {"anonymous": 403, "other annotator": 404}.get(role, 200)
    if read.status_code == 200:
        assert "conditions" in read.json() and "target_lang" in read.json()


def test_another_projects_id_or_a_missing_one_is_a_404(request):
    response = _api(request, "admin").post(
        reverse("api-project-update", args=[987654]), {"conditions": []}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert json.loads(response.content)["detail"]
