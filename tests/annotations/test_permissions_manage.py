"""The permission matrix of the management pages and API (projects, batches, assignment, progress, users):
anonymous, annotator A (anna), annotator B (bob), researcher, admin.

Pages: anonymous -> login redirect; annotators -> 403; researchers read (200) but
every POST and every form page -> 403; admins everything. API: anonymous -> 403;
annotators see only their own assignments/projects (others 404) and nothing admin-only
(403); researchers read everything, writes 403; admins everything.
"""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotations.models import Assignment, Batch, Item, Project
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory

ROLES = ["anonymous", "anna", "bob", "researcher", "admin"]


@pytest.fixture
def world(db, annotator, other_annotator, researcher, admin_user):
    """Project P: a batch whose first item is anna's (pending); an unbatched item of bob's."""
    project = ProjectFactory(name="P")
    batch = Batch.objects.create(project=project, name="batch 001")
    mine = AssignmentFactory(item=ItemFactory(project=project, batch=batch, batch_position=0), annotator=annotator)
    ItemFactory(project=project, batch=batch, batch_position=1)
    ItemFactory(project=project, external_id="loose")
    other_project = ProjectFactory(name="Q")
    bobs = AssignmentFactory(item=ItemFactory(project=other_project), annotator=other_annotator)
    return {"project": project, "batch": batch, "anna_assignment": mine, "bob_assignment": bobs, "q": other_project}


LOGIN = 302

# --------------------------------------------------------------------------- pages

PAGE_READS = [
    # (url name, takes project pk, anonymous, annotators, researcher, admin)
    ("manage-projects", False, LOGIN, 403, 200, 200),
    ("manage-project-create", False, LOGIN, 403, 403, 200),
    ("manage-project-edit", True, LOGIN, 403, 200, 200),  # researchers read the settings
    ("manage-batches", True, LOGIN, 403, 200, 200),
    ("manage-progress", True, LOGIN, 403, 200, 200),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("name", "with_pk", "anon", "annot", "res", "adm"), PAGE_READS)
def test_page_reads(client_as, world, role, name, with_pk, anon, annot, res, adm):
    url = reverse(name, args=[world["project"].pk] if with_pk else [])
    response = client_as(role).get(url)
    expected = {"anonymous": anon, "anna": annot, "bob": annot, "researcher": res, "admin": adm}[role]
    assert response.status_code == expected
    if role == "anonymous":
        assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("role", ROLES)
def test_progress_partial_follows_the_same_rules(client_as, world, role):
    url = reverse("manage-progress", args=[world["project"].pk])
    response = client_as(role).get(url, HTTP_HX_REQUEST="true")
    assert response.status_code == {"anonymous": LOGIN, "anna": 403, "bob": 403, "researcher": 200, "admin": 200}[role]


def _page_writes(world, annotator):
    project = world["project"]
    return [
        (
            "manage-project-create",
            [],
            {"name": "New", "idle_threshold_s": "30", "overlap": "1"},
            lambda: Project.objects.filter(name="New").exists(),
        ),
        (
            "manage-project-edit",
            [project.pk],
            {"name": "Renamed", "idle_threshold_s": "30", "overlap": "1"},
            lambda: Project.objects.filter(name="Renamed").exists(),
        ),
        (
            "manage-batches-make",
            [project.pk],
            {"size": "5"},
            lambda: Item.objects.filter(external_id="loose", batch__isnull=False).exists(),
        ),
        (
            "manage-batches-assign",
            [project.pk],
            {"annotators": [annotator.pk], "overlap": "1"},
            lambda: Assignment.objects.filter(item__project=project).count() == 2,
        ),
        (
            "manage-assignments-move",
            [project.pk],
            {"action": "withdraw", "from_annotator": annotator.pk},
            lambda: not Assignment.objects.filter(pk=world["anna_assignment"].pk).exists(),
        ),
    ]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("index", range(5))
def test_page_writes_only_for_admins(client_as, world, annotator, role, index):
    name, args, data, changed = _page_writes(world, annotator)[index]
    response = client_as(role).post(reverse(name, args=args), data)
    expected = {"anonymous": LOGIN, "anna": 403, "bob": 403, "researcher": 403, "admin": 302}[role]
    assert response.status_code == expected, response.content[:500]
    assert changed() is (role == "admin")


def test_unknown_project_is_404_for_admins(admin_client, world):
    assert admin_client.get(reverse("manage-progress", args=[999999])).status_code == 404


# --------------------------------------------------------------------------- API reads


@pytest.mark.parametrize("role", ROLES)
def test_api_project_list_is_scoped(client_as, world, role):
    response = client_as(role).get(reverse("api-projects"))
    expected_names = {"anonymous": None, "anna": ["P"], "bob": ["Q"], "researcher": ["P", "Q"], "admin": ["P", "Q"]}[
        role
    ]
    if expected_names is None:
        assert response.status_code in (401, 403)
    else:
        assert response.status_code == 200
        assert [p["name"] for p in response.json()["results"]] == expected_names


@pytest.mark.parametrize("role", ROLES)
def test_api_project_detail(client_as, world, role):
    response = client_as(role).get(reverse("api-project", args=[world["project"].pk]))
    assert response.status_code == {"anonymous": 403, "anna": 200, "bob": 404, "researcher": 200, "admin": 200}[role]


@pytest.mark.parametrize("role", ROLES)
def test_api_assignment_list_is_scoped(client_as, world, role):
    response = client_as(role).get(reverse("api-assignments"))
    if role == "anonymous":
        assert response.status_code == 403
        return
    ids = {a["id"] for a in response.json()["results"]}
    anna, bob = world["anna_assignment"].pk, world["bob_assignment"].pk
    assert ids == {"anna": {anna}, "bob": {bob}, "researcher": {anna, bob}, "admin": {anna, bob}}[role]


@pytest.mark.parametrize("role", ROLES)
def test_api_assignment_detail_is_404_for_other_annotators(client_as, world, role):
    response = client_as(role).get(reverse("api-assignment", args=[world["anna_assignment"].pk]))
    assert response.status_code == {"anonymous": 403, "anna": 200, "bob": 404, "researcher": 200, "admin": 200}[role]


ADMIN_OR_RESEARCHER_READS = ["api-project-progress", "api-items", "api-batches"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", ADMIN_OR_RESEARCHER_READS)
def test_api_reads_for_admins_and_researchers(client_as, world, role, name):
    response = client_as(role).get(reverse(name, args=[world["project"].pk]))
    assert response.status_code == {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 200, "admin": 200}[role]


@pytest.mark.parametrize("role", ROLES)
def test_api_user_list_only_for_admins(client_as, world, role):
    response = client_as(role).get(reverse("api-users"))
    assert response.status_code == {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 403, "admin": 200}[role]


# --------------------------------------------------------------------------- API writes


def _api_writes(world, annotator):
    project = world["project"]
    return [
        ("api-project-create", [], {"name": "New"}, 201, lambda: Project.objects.filter(name="New").exists()),
        (
            "api-project-update",
            [project.pk],
            {"name": "Renamed"},
            200,
            lambda: Project.objects.filter(name="Renamed").exists(),
        ),
        (
            "api-items-create",
            [project.pk],
            {"items": [{"external_id": "z", "model_output": "Z"}]},
            201,
            lambda: Item.objects.filter(external_id="z").exists(),
        ),
        (
            "api-batches-make",
            [project.pk],
            {"size": 5},
            201,
            lambda: Item.objects.filter(external_id="loose", batch__isnull=False).exists(),
        ),
        (
            "api-batches-assign",
            [project.pk],
            {"annotators": ["anna"], "overlap": 1},
            200,
            lambda: Assignment.objects.filter(item__project=project).count() == 2,
        ),
        (
            "api-assignments-withdraw",
            [],
            {"ids": [world["anna_assignment"].pk]},
            200,
            lambda: not Assignment.objects.filter(pk=world["anna_assignment"].pk).exists(),
        ),
        (
            "api-assignments-reassign",
            [],
            {"ids": [world["anna_assignment"].pk], "to": "bob"},
            200,
            lambda: Assignment.objects.filter(item=world["anna_assignment"].item, annotator__username="bob").exists(),
        ),
        (
            "api-user-create",
            [],
            {"username": "newbie", "role": "annotator", "password": "long-enough-pw"},
            201,
            lambda: get_user_model().objects.filter(username="newbie").exists(),
        ),
        (
            "api-user-role",
            [annotator.pk],
            {"role": "researcher"},
            200,
            lambda: annotator.groups.filter(name="researcher").exists(),
        ),
    ]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("index", range(9))
def test_api_writes_only_for_admins(client_as, world, annotator, role, index):
    name, args, data, ok, changed = _api_writes(world, annotator)[index]
    response = client_as(role).post(reverse(name, args=args), data, content_type="application/json")
    expected = {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 403, "admin": ok}[role]
    assert response.status_code == expected, response.content[:500]
    assert changed() is (role == "admin")
