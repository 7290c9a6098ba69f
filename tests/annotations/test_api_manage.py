import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations.models import Assignment, Batch, Item, Project
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, SubmittedPostEditFactory


@pytest.fixture
def api_admin(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def api_annotator(annotator) -> APIClient:
    client = APIClient()
    client.force_authenticate(annotator)
    return client


def test_admin_creates_a_project_from_an_instructions_file_payload(api_admin, shared_data):
    import json

    payload = {
        "name": "Neutral",
        "task_type": "neutralization",
        "instructions_file": json.loads((shared_data / "editeval_instructions.json").read_text()),
        "overlap": 2,
    }
    response = api_admin.post(reverse("api-project-create"), payload, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Neutral"
    assert len(body["instructions"]) == 9
    assert (body["overlap"], body["idle_threshold_s"], body["item_count"]) == (2, 30.0, 0)


def test_project_errors_name_the_field(api_admin):
    ProjectFactory(name="taken")
    response = api_admin.post(reverse("api-project-create"), {"name": "taken"}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "name: a project called 'taken' already exists",
        "code": "invalid",
        "errors": {"name": ["a project called 'taken' already exists"]},
    }
    response = api_admin.post(reverse("api-project-create"), {"name": "x", "overlap": 0}, format="json")
    assert response.status_code == 400
    assert "overlap" in response.json()["errors"]


def test_guidelines_html_is_sanitized(api_admin):
    project = ProjectFactory(guidelines="*hi* <img src=x onerror=alert(1)>")
    body = api_admin.get(reverse("api-project", args=[project.pk])).json()
    assert "<em>hi</em>" in body["guidelines_html"] and "onerror" not in body["guidelines_html"]


def test_update_keeps_absent_fields(api_admin):
    project = ProjectFactory(name="p", instructions=["a"], overlap=1)
    response = api_admin.post(reverse("api-project-update", args=[project.pk]), {"overlap": 3}, format="json")
    assert response.status_code == 200
    project.refresh_from_db()
    assert (project.name, project.instructions, project.overlap) == ("p", ["a"], 3)


def test_bulk_item_create_is_atomic_and_idempotent(api_admin):
    project = ProjectFactory(instructions=["one", "two"])
    url = reverse("api-items-create", args=[project.pk])
    items = [
        {"external_id": "a", "model_output": "Text A", "references": ["doc"]},
        {"external_id": "b", "model_output": "Text B", "source": "Quelle B", "instruction": "Own"},
    ]
    response = api_admin.post(url, {"items": items}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["skipped"]) == (2, 0)
    assert [i["external_id"] for i in body["items"]] == ["a", "b"]
    a = Item.objects.get(external_id="a")
    assert a.drawn_instruction in ("one", "two") and a.references == ["doc"]
    assert Item.objects.get(external_id="b").effective_instruction == "Own"

    again = api_admin.post(url, {"items": items}, format="json")
    assert again.status_code == 200 and again.json()["skipped"] == 2
    assert Item.objects.count() == 2

    clash = api_admin.post(
        url,
        {"items": [{"external_id": "c", "model_output": "C"}, {"external_id": "a", "model_output": "changed"}]},
        format="json",
    )
    assert clash.status_code == 400
    assert clash.json()["detail"].startswith("items[1].external_id: duplicate id 'a'")
    assert not Item.objects.filter(external_id="c").exists()

    missing = api_admin.post(url, {"items": [{"external_id": "d"}]}, format="json")
    assert missing.status_code == 400
    assert missing.json() == {
        "detail": "items[0].model_output: This field is required.",
        "code": "invalid",
        "errors": {"items": {"0": {"model_output": ["This field is required."]}}},
    }


def test_items_list_is_paginated_in_import_order(api_admin):
    project = ProjectFactory()
    for k in range(3):
        ItemFactory(project=project, external_id=f"n{k}", position=k)
    body = api_admin.get(reverse("api-items", args=[project.pk])).json()
    assert body["count"] == 3
    assert [i["external_id"] for i in body["results"]] == ["n0", "n1", "n2"]


def test_make_batches_then_assign_with_overlap(api_admin, annotator, other_annotator):
    project = ProjectFactory()
    for k in range(5):
        ItemFactory(project=project, external_id=f"m{k}", position=k)
    made = api_admin.post(reverse("api-batches-make", args=[project.pk]), {"size": 2, "shuffle_seed": 3}, format="json")
    assert made.status_code == 201
    assert [(b["name"], b["item_count"]) for b in made.json()["batches"]] == [
        ("batch 001", 2),
        ("batch 002", 2),
        ("batch 003", 1),
    ]
    assigned = api_admin.post(
        reverse("api-batches-assign", args=[project.pk]), {"annotators": ["anna", "bob"], "overlap": 2}, format="json"
    )
    assert assigned.status_code == 200
    assert assigned.json() == {
        "created": 10,
        "batches": 3,
        "skipped_full_items": 0,
        "per_annotator": {"anna": 5, "bob": 5},
    }
    listed = api_admin.get(reverse("api-batches", args=[project.pk])).json()
    assert all(b["annotators"] == ["anna", "bob"] for b in listed)

    too_many = api_admin.post(
        reverse("api-batches-assign", args=[project.pk]), {"annotators": ["anna"], "overlap": 2}, format="json"
    )
    assert too_many.status_code == 400
    assert "needs 2 distinct annotators but only 1" in too_many.json()["detail"]
    unknown = api_admin.post(
        reverse("api-batches-assign", args=[project.pk]), {"annotators": ["anna", "zed"], "overlap": 1}, format="json"
    )
    assert unknown.json() == {
        "detail": "annotators: no such user: zed",
        "code": "invalid",
        "errors": {"annotators": ["no such user: zed"]},
    }


def test_annotator_queue_holds_only_their_assignments_in_batch_order(api_annotator, annotator, other_annotator):
    project = ProjectFactory()
    batch = Batch.objects.create(project=project, name="batch 001")
    second = AssignmentFactory(item=ItemFactory(project=project, batch=batch, batch_position=1), annotator=annotator)
    first = AssignmentFactory(item=ItemFactory(project=project, batch=batch, batch_position=0), annotator=annotator)
    AssignmentFactory(item=ItemFactory(project=project), annotator=other_annotator)
    body = api_annotator.get(reverse("api-assignments")).json()
    assert [a["id"] for a in body["results"]] == [first.pk, second.pk]
    assert body["results"][0]["item"]["model_output"] == first.item.model_output
    assert body["results"][0]["batch"] == "batch 001" and body["results"][0]["post_edit"] is None
    pending = api_annotator.get(reverse("api-assignments"), {"status": "submitted"}).json()
    assert pending["count"] == 0
    bad = api_annotator.get(reverse("api-assignments"), {"status": "nope"})
    assert bad.status_code == 400 and "status" in bad.json()["errors"]


def test_withdraw_and_reassign_through_the_api(api_admin, annotator, other_annotator):
    project = ProjectFactory()
    a = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    b = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    done = SubmittedPostEditFactory(assignment__item=ItemFactory(project=project), assignment__annotator=annotator)
    response = api_admin.post(
        reverse("api-assignments-reassign"), {"ids": [a.pk, done.assignment_id], "to": "bob"}, format="json"
    )
    assert response.json() == {
        "withdrawn": 0,
        "reassigned": 1,
        "kept_submitted": 1,
        "kept_in_progress": 0,
        "skipped_already_assigned": 0,
        "not_found": [],
    }
    assert Assignment.objects.get(item=a.item).annotator == other_annotator
    response = api_admin.post(reverse("api-assignments-withdraw"), {"ids": [b.pk, 99999]}, format="json")
    assert response.json()["withdrawn"] == 1 and response.json()["not_found"] == [99999]
    assert not Assignment.objects.filter(pk=b.pk).exists()


def test_progress_endpoint(api_admin, annotator):
    project = ProjectFactory()
    SubmittedPostEditFactory(
        assignment__item=ItemFactory(project=project), assignment__annotator=annotator, active_ms=4000
    )
    AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    body = api_admin.get(reverse("api-project-progress", args=[project.pk])).json()
    assert body["total"]["submitted"] == 1 and body["total"]["pending"] == 1
    assert body["by_annotator"][0]["label"] == "anna" and body["by_annotator"][0]["median_active_ms"] == 4000
    assert body["by_batch"][0]["label"] == "(no batch)"


def test_users_and_roles(api_admin, annotator):
    listed = {u["username"]: u["role"] for u in api_admin.get(reverse("api-users")).json()}
    assert listed == {"adam": "admin", "anna": "annotator"}
    created = api_admin.post(
        reverse("api-user-create"),
        {"username": "nora", "role": "researcher", "password": "long-enough-pw"},
        format="json",
    )
    assert created.status_code == 201 and created.json()["role"] == "researcher"
    promoted = api_admin.post(reverse("api-user-role", args=[annotator.pk]), {"role": "admin"}, format="json")
    assert promoted.json()["role"] == "admin" and promoted.json()["is_staff"] is True
    bad = api_admin.post(reverse("api-user-role", args=[annotator.pk]), {"role": "king"}, format="json")
    assert bad.status_code == 400 and "role" in bad.json()["errors"]


def test_token_authentication_works(annotator):
    token = Token.objects.create(user=annotator)
    client = APIClient()
    assert client.get(reverse("api-assignments")).status_code in (401, 403)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get(reverse("api-assignments")).status_code == 200


def test_every_management_endpoint_is_in_the_openapi_schema(admin_client):
    schema = admin_client.get(reverse("api-schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    for path, method in [
        ("/api/projects/", "get"),
        ("/api/projects/create/", "post"),
        ("/api/projects/{project_id}/", "get"),
        ("/api/projects/{project_id}/update/", "post"),
        ("/api/projects/{project_id}/progress/", "get"),
        ("/api/projects/{project_id}/items/", "get"),
        ("/api/projects/{project_id}/items/create/", "post"),
        ("/api/projects/{project_id}/batches/", "get"),
        ("/api/projects/{project_id}/batches/make/", "post"),
        ("/api/projects/{project_id}/assign/", "post"),
        ("/api/assignments/", "get"),
        ("/api/assignments/{assignment_id}/", "get"),
        ("/api/assignments/withdraw/", "post"),
        ("/api/assignments/reassign/", "post"),
        ("/api/users/", "get"),
        ("/api/users/create/", "post"),
        ("/api/users/{user_id}/role/", "post"),
    ]:
        assert method in paths[path], path
    assert "ItemBulkCreateInput" in schema["components"]["schemas"]
    assert "PaginatedAssignmentOutputList" in schema["components"]["schemas"]
    assert Project.objects.count() == 0


def test_every_refusal_answers_in_the_one_error_shape(api_annotator, annotator, other_annotator, client):
    theirs = AssignmentFactory(annotator=other_annotator)
    project = ProjectFactory(name="Shape")
    answers = {
        "not an admin": (api_annotator.post(reverse("api-project-create"), {"name": "x"}, format="json"), 403),
        "not visible": (api_annotator.get(reverse("api-assignment", args=[theirs.pk])), 404),
        "no such project": (api_annotator.get(reverse("api-project", args=[project.pk + 1000])), 404),
        "wrong method": (api_annotator.post(reverse("api-projects")), 405),
        "anonymous": (client.get(reverse("api-projects")), 403),
        "bad query": (api_annotator.get(reverse("api-assignments"), {"status": "lost"}), 400),
    }
    codes = {}
    for what, (response, status) in answers.items():
        body = response.json()
        assert response.status_code == status, what
        assert isinstance(body["detail"], str) and body["detail"], what
        assert set(body) <= {"detail", "code", "errors"}, what
        codes[what] = body["code"]
    assert codes == {
        "not an admin": "permission_denied",
        "not visible": "not_found",
        "no such project": "not_found",
        "wrong method": "method_not_allowed",
        "anonymous": "not_authenticated",
        "bad query": "invalid",
    }
