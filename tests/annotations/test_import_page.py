"""The admin upload page and its mapping partial: who may use them, and what they do."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotations.models import Item, PostEdit, Project
from tests.annotations.test_import_pet import HEADER, pet_row
from tests.factories import ProjectFactory

PAGE = reverse("manage-import")
MAPPING = reverse("manage-import-mapping")


def upload(name: str, text: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text)


def jsonl(*ids: str) -> SimpleUploadedFile:
    lines = [json.dumps({"id": i, "input": f"text {i}", "edits": [f"Text {i}."], "tasks": "fluency"}) for i in ids]
    return upload("examples.jsonl", "\n".join(lines) + "\n")


@pytest.mark.parametrize("url", [PAGE, MAPPING])
@pytest.mark.django_db
def test_anonymous_users_are_sent_to_the_login_page(client, url):
    response = client.get(url) if url == PAGE else client.post(url)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("who", ["annotator_client", "other_annotator_client", "researcher_client"])
@pytest.mark.django_db
def test_only_admins_may_open_or_post_the_page(request, who):
    client = request.getfixturevalue(who)
    project = ProjectFactory()

    assert client.get(PAGE).status_code == 403
    response = client.post(PAGE, {"project": project.pk, "fmt": "editeval", "files": jsonl("a")})
    assert response.status_code == 403
    assert client.post(MAPPING, {"fmt": "table", "files": upload("a.csv", "x\n1\n")}).status_code == 403
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_admins_see_the_page_and_the_nav_link(admin_client, annotator_client):
    ProjectFactory(name="Fluency study")

    page = admin_client.get(PAGE)

    assert page.status_code == 200
    assert "Fluency study" in page.content.decode()
    assert f'href="{PAGE}"' in admin_client.get(reverse("home")).content.decode()
    assert f'href="{PAGE}"' not in annotator_client.get(reverse("home")).content.decode()


@pytest.mark.django_db
def test_an_upload_imports_into_the_chosen_project_and_shows_the_report(admin_client):
    project = ProjectFactory(name="Fluency study")

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "editeval", "files": jsonl("a", "b")})

    assert response.status_code == 200
    assert response.context["report"].items_created == 2
    assert "Items created</th><td>2</td>" in response.content.decode()
    assert sorted(project.items.values_list("external_id", flat=True)) == ["a", "b"]
    again = admin_client.post(PAGE, {"project": project.pk, "fmt": "editeval", "files": jsonl("a", "b")})
    assert (again.context["report"].items_created, again.context["report"].items_skipped) == (0, 2)


@pytest.mark.django_db
def test_an_upload_can_create_the_project(admin_client):
    response = admin_client.post(PAGE, {"new_project": "  Fresh  ", "fmt": "editeval", "files": jsonl("a")})

    assert response.status_code == 200
    assert response.context["report"].project_created
    assert Project.objects.get(name="Fresh").items.count() == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "Choose a project or name a new one (not both)."),
        ({"project": "both", "new_project": "x"}, "Choose a project or name a new one (not both)."),
        ({"new_project": "Taken"}, "A project named &#x27;Taken&#x27; exists; choose it in the list."),
    ],
)
@pytest.mark.django_db
def test_the_form_needs_exactly_one_project(admin_client, fields, message):
    taken = ProjectFactory(name="Taken")
    if fields.get("project") == "both":
        fields["project"] = taken.pk

    response = admin_client.post(PAGE, {**fields, "fmt": "editeval", "files": jsonl("a")})

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_bad_input_is_a_form_error_naming_file_and_line_and_nothing_is_imported(admin_client):
    project = ProjectFactory()
    bad = upload("examples.jsonl", '{"id": "a", "input": "x", "edits": [], "tasks": "t"}\n{"id": "b", "input": 5}\n')

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "editeval", "files": bad})

    assert response.status_code == 400
    errors = response.context["form"].errors["files"]
    assert errors == [
        "Nothing was imported. examples.jsonl, line 2, field 'tasks': "
        "required field is missing (or task_type, as EditEval's writer names it)"
    ]
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_non_utf8_and_oversized_uploads_are_form_errors(admin_client, settings):
    project = ProjectFactory()
    latin1 = upload("a.csv", "model_output\ncaf\xe9\n".encode("latin-1"))

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "table", "files": latin1})
    assert response.status_code == 400
    assert "a.csv, line 2: byte 0xe9" in response.context["form"].errors["files"][0]

    settings.EDITLAB_IMPORT_MAX_BYTES = 1024
    big = upload("big.csv", "model_output\n" + "x" * 2000 + "\n")
    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "table", "files": big})
    assert response.status_code == 400
    assert (
        "big.csv: file is 2,014 bytes, over the import limit of 1,024 bytes"
        in response.context["form"].errors["files"][0]
    )
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_a_pet_study_is_uploaded_as_several_files(admin_client):
    project = ProjectFactory()
    files = [
        upload("header", HEADER),
        upload("ann0", pet_row("d", 1, "Un gato.", "Un gato negro.")),
        upload("ann1", pet_row("d", 1, "Un gato.", "El gato.")),
    ]

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "pet", "files": files, "annotator_prefix": "up-"})

    assert response.status_code == 200
    report = response.context["report"]
    assert (report.items_created, report.post_edits_created) == (1, 2)
    assert report.annotators_created == ["up-ann0", "up-ann1"]
    assert PostEdit.objects.get(assignment__annotator__username="up-ann1").origin_detail == {
        "format": "pet",
        "file": "ann1",
        "line": 1,
    }


STUDY = "seg,mt,post,who,secs\n1,Helo.,Hello.,lena,3.5\n1,Helo.,Hello!,max,2\n"


@pytest.mark.django_db
def test_the_mapping_partial_offers_the_files_columns(admin_client):
    response = admin_client.post(MAPPING, {"fmt": "table", "files": upload("s.csv", "model_output,post,who\nx,y,z\n")})

    html = response.content.decode()
    assert response.status_code == 200
    assert [t.name for t in response.templates] == ["annotations/import_mapping.html"]
    assert '<select name="map_edited" id="id_map_edited">' in html
    assert '<option value="post">post</option>' in html
    assert '<option value="model_output" selected>model_output</option>' in html  # same name: preselected
    pet = admin_client.post(MAPPING, {"fmt": "pet", "files": upload("header", HEADER)}).content.decode()
    assert "Detected:</strong> a PET study (a header file and 0 other files)." in pet
    assert "Column mapping" not in pet
    bad = admin_client.post(MAPPING, {"fmt": "table", "files": upload("s.xlsx", "x")})
    assert "cannot tell the table&#x27;s kind from its name" in bad.content.decode()


@pytest.mark.django_db
def test_a_table_upload_uses_the_chosen_mapping(admin_client):
    project = ProjectFactory()
    mapping = {
        "map_external_id": "seg",
        "map_model_output": "mt",
        "map_edited": "post",
        "map_annotator": "who",
        "map_wall_s": "secs",
        "map_source": "",
    }

    response = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "table", "files": upload("s.csv", STUDY), **mapping}
    )

    assert response.status_code == 200
    assert (response.context["report"].items_created, response.context["report"].post_edits_created) == (1, 2)
    assert PostEdit.objects.get(assignment__annotator__username="lena").wall_ms == 3500


@pytest.mark.django_db
def test_a_failed_table_upload_shows_the_mapping_to_fix_it(admin_client):
    project = ProjectFactory()

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "table", "files": upload("s.csv", STUDY)})

    assert response.status_code == 400
    assert "field &#x27;model_output&#x27;: map a column to model_output" in response.content.decode()
    assert response.context["columns"] == ["seg", "mt", "post", "who", "secs"]
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_a_whole_pet_folder_uploads_with_its_readme_skipped_as_the_command_line_does(admin_client, shared_data):
    # The page says "select every file of the study folder": the real folder has a README.md next to the data.
    readme = (shared_data / "iwslt2019" / "README.md").read_bytes()
    project = ProjectFactory()
    files = [
        upload("README.md", readme),
        upload("header", HEADER),
        upload("ann0", pet_row("d", 1, "Un gato.", "Un gato negro.")),
        upload(".DS_Store", b"\x00\x00\x00\x01Bud1"),
    ]

    response = admin_client.post(PAGE, {"project": project.pk, "fmt": "pet", "files": files})

    assert response.status_code == 200
    report = response.context["report"]
    assert (report.items_created, report.post_edits_created) == (1, 1)
    assert report.notes == ["skipped 2 file(s) that are not study data: README.md, .DS_Store"]
    assert "Note: skipped 2 file(s) that are not study data: README.md, .DS_Store" in response.content.decode()


NATINST_TASK = {
    "Definition": ["Ask 'Where is <person_name>?' and keep **this** \\ as is."],
    "Categories": ["Question Generation"],
    "Positive Examples": [{"input": "Bob left.", "output": "Where is Bob?", "explanation": "Names the person."}],
    "Negative Examples": [{"input": "Ann left.", "output": "", "explanation": "An empty output is wrong."}],
    "Instances": [
        {"id": "task1-a", "input": "Sam left.", "output": ["Where is Sam?"]},
        {"id": "task1-b", "input": "Kim left.", "output": ["Where is Kim?"]},
    ],
}


@pytest.mark.django_db
def test_a_natinst_task_uploads_with_its_predictions(admin_client):
    project = ProjectFactory()
    task_file = upload("task1_where.json", json.dumps(NATINST_TASK))
    preds = upload(
        "preds.jsonl", '{"id": "task1-a", "prediction": "Where Sam?"}\n{"id": "task1-b", "prediction": "Kim?"}\n'
    )

    response = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "natinst", "files": task_file, "predictions": preds}
    )

    assert response.status_code == 200
    assert response.context["report"].items_created == 2
    item = project.items.get(external_id="task1-a")
    assert (item.source, item.model_output, item.instruction) == (
        "Sam left.",
        "Where Sam?",
        "Ask 'Where is <person_name>?' and keep **this** \\ as is.",
    )


@pytest.mark.django_db
def test_a_natinst_upload_can_post_edit_the_input_and_needs_one_of_the_two(admin_client):
    project = ProjectFactory()

    missing = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "natinst", "files": upload("task1.json", json.dumps(NATINST_TASK))}
    )
    assert missing.status_code == 400
    assert "not a text to post-edit" in missing.context["form"].errors["files"][0]

    response = admin_client.post(
        PAGE,
        {
            "project": project.pk,
            "fmt": "natinst",
            "files": upload("task1.json", json.dumps(NATINST_TASK)),
            "post_edit_input": "on",
        },
    )
    assert response.status_code == 200
    assert project.items.get(external_id="task1-b").model_output == "Kim left."


@pytest.mark.django_db
def test_natinst_options_with_another_format_are_form_errors(admin_client):
    project = ProjectFactory()

    response = admin_client.post(
        PAGE,
        {
            "project": project.pk,
            "fmt": "editeval",
            "files": jsonl("a"),
            "post_edit_input": "on",
            "predictions": jsonl("b"),
        },
    )

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert errors["predictions"] == ["Applies to the natinst format only."]
    assert errors["post_edit_input"] == ["Applies to the natinst format only."]
    assert not Item.objects.exists()


@pytest.mark.parametrize("project_id", ["99999999999999999999", "-1", "²", "1e3", "0x10", "\u202e7"])
@pytest.mark.django_db
def test_a_project_id_that_is_not_a_project_is_a_form_error(admin_client, project_id):
    ProjectFactory()

    response = admin_client.post(PAGE, {"project": project_id, "fmt": "editeval", "files": jsonl("a")})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not Item.objects.exists()


@pytest.mark.django_db
def test_deep_json_and_huge_numbers_in_an_upload_are_form_errors(admin_client):
    project = ProjectFactory()
    deep = upload("a.jsonl", '{"id": "a", "input": "x", "tasks": "t", "meta": ' + "[" * 1000 + "]" * 1000 + "}\n")
    study = upload("s.csv", "model_output,edited,annotator,letters,wall_s\nx,y,lena,1e29,1\n")

    first = admin_client.post(PAGE, {"project": project.pk, "fmt": "editeval", "files": deep})
    second = admin_client.post(PAGE, {"project": project.pk, "fmt": "table", "files": study})

    assert (first.status_code, second.status_code) == (400, 400)
    assert first.context["form"].errors["files"] == [
        "Nothing was imported. a.jsonl, line 1, field 'meta[0][0][0]…': invalid JSON: "
        "JSON nested more than 64 levels deep (the limit is 64)"
    ]
    assert second.context["form"].errors["files"] == [
        "Nothing was imported. s.csv, line 2, field 'letters': 1e29 is out of range: "
        "letters must be between 0 and 2,147,483,647 (the letters column holds at most 2,147,483,647)"
    ]
    assert not Item.objects.exists()


DESIGN_CSV = (
    "id,doc,seg,src,google,mbart,qe_google,practice\n"
    'd1-1,news-7,1,The cat sleeps.,Il gatto dorme.,Il gatto riposa.,"[[4, 9, ""minor""]]",no\n'
    "d1-2,news-7,2,It is late.,È tardi.,Si è fatto tardi.,,\n"
)


@pytest.mark.django_db
def test_the_mapping_partial_offers_the_design_fields_and_the_outputs_by_system(admin_client):
    response = admin_client.post(MAPPING, {"fmt": "table", "files": upload("qe.csv", DESIGN_CSV)})

    html = response.content.decode()
    for target in ("document", "position", "outputs", "highlights", "practice", "condition", "start_text"):
        assert f'<select name="map_{target}" id="id_map_{target}">' in html
    assert '<option value="practice" selected>practice</option>' in html
    assert 'name="map_extra"' in html and "output:NAME=column" in html


@pytest.mark.django_db
def test_a_table_upload_maps_outputs_by_system_typed_beside_the_selects(admin_client):
    project = ProjectFactory()
    fields = {"map_external_id": "id", "map_document": "doc", "map_position": "seg", "map_source": "src"}
    fields["map_extra"] = "output:google=google, output:mbart=mbart, highlights:google=qe_google"

    response = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "table", "files": upload("qe.csv", DESIGN_CSV), **fields}
    )

    assert response.status_code == 200, response.content.decode()
    item = Item.objects.get(external_id="d1-1")
    assert item.outputs == {"google": "Il gatto dorme.", "mbart": "Il gatto riposa."}
    assert (item.document, item.document_position, item.highlights) == ("news-7", 1, {"google": [[4, 9, "minor"]]})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("output:google", "more mapping: &#x27;output:google&#x27; is not TARGET=COLUMN"),
        ("output:google=nowhere", "column &#x27;nowhere&#x27; (mapped to output:google) is not in the header"),
        (
            "output:google=google,highlights:google=src",
            "field &#x27;highlights:google&#x27;: must be a JSON list of spans",
        ),
    ],
)
def test_a_bad_output_mapping_is_a_form_error_and_nothing_is_imported(admin_client, extra, message):
    project = ProjectFactory()
    fields = {"map_external_id": "id", "map_document": "doc", "map_position": "seg", "map_extra": extra}

    response = admin_client.post(
        PAGE, {"project": project.pk, "fmt": "table", "files": upload("qe.csv", DESIGN_CSV), **fields}
    )

    assert response.status_code == 400
    assert message in response.content.decode()
    assert 'value="' + extra.replace('"', "&quot;") + '"' in response.content.decode()  # kept to fix it
    assert not Item.objects.exists()
