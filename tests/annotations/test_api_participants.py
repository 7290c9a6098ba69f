"""The participation API: open, list and revoke participation links, list participants; every role,
and hostile bodies (deep JSON, huge and odd numbers, NUL, wrong types, another project's link)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import JoinLink, Project
from annotations.services.join_links import PlatformIds, join_link_open
from annotations.services.participants import participant_join
from tests.factories import ItemFactory, ProjectFactory

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "anna", "bob", "researcher", "admin"]


def simple_project(**kwargs) -> Project:
    project = ProjectFactory(**kwargs)
    ItemFactory(project=project, external_id="i0")
    ItemFactory(project=project, external_id="p0", practice=True)
    return project


def post(client: Client, url: str, body) -> "object":
    text = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=text, content_type="application/json")


def open_url(project: Project) -> str:
    return reverse("api-join-link-open", args=[project.pk])


# --------------------------------------------------------------------------- every role


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_open_links(client_as, role):
    project = simple_project()
    response = post(client_as(role), open_url(project), {"completion_code": "C0DE"})
    assert response.status_code == {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 403, "admin": 201}[role]
    assert JoinLink.objects.exists() is (role == "admin")
    if role != "admin":
        assert response.json()["code"] in ("not_authenticated", "permission_denied")


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_revoke_links(client_as, role):
    project = simple_project()
    link = join_link_open(project=project, completion_code="C")
    url = reverse("api-join-link-revoke", args=[project.pk, link.pk])
    response = post(client_as(role), url, {})
    assert response.status_code == {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 403, "admin": 200}[role]
    link.refresh_from_db()
    assert (link.revoked_at is not None) is (role == "admin")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", ["api-join-links", "api-participants"])
def test_admins_and_researchers_read_links_and_participants(client_as, role, name):
    project = simple_project()
    response = client_as(role).get(reverse(name, args=[project.pk]))
    assert response.status_code == {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 200, "admin": 200}[role]


def test_a_participant_cannot_use_the_participation_api():
    project = simple_project(overlap=2)
    link = join_link_open(project=project, completion_code="C")
    participant = participant_join(join_link=link, ids=PlatformIds("pid")).participant
    client = Client()
    client.force_login(participant.user)
    assert client.get(reverse("api-participants", args=[project.pk])).status_code == 403
    assert client.get(reverse("api-join-links", args=[project.pk])).status_code == 403
    assert post(client, open_url(simple_project()), {"completion_code": "X"}).status_code == 403


# --------------------------------------------------------------------------- what they answer


def test_open_answers_the_link_with_its_addresses(admin_client):
    project = simple_project()
    response = post(
        admin_client,
        open_url(project),
        {
            "completion_code": "C0DE",
            "completion_url": "https://app.prolific.com/submissions/complete?cc=C0DE",
            "max_participants": 50,
            "params": {"participant": "PROLIFIC_PID", "session": ""},
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    link = JoinLink.objects.get()
    assert body["url"] == f"http://testserver/join/{link.token}/"
    assert body["platform_url"] == body["url"] + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
    assert body["params"] == {"participant": "PROLIFIC_PID", "study": "STUDY_ID", "session": ""}
    assert (body["is_open"], body["max_participants"], body["participant_count"]) == (True, 50, 0)
    assert body["project"] == project.pk and body["token"] == link.token


def test_lists_show_links_and_participants_with_their_progress(researcher_client):
    project = simple_project(overlap=3)
    link = join_link_open(project=project, completion_code="C")
    for n in range(2):
        participant_join(join_link=link, ids=PlatformIds(f"pid{n}", study="S", session=f"x{n}"))
    links = researcher_client.get(reverse("api-join-links", args=[project.pk])).json()
    assert [(row["id"], row["participant_count"], row["is_open"]) for row in links] == [(link.pk, 2, True)]
    rows = researcher_client.get(reverse("api-participants", args=[project.pk])).json()["results"]
    assert [(r["slot"], r["platform_id"], r["session_id"], r["assigned"], r["submitted"]) for r in rows] == [
        (0, "pid0", "x0", 2, 0),
        (1, "pid1", "x1", 2, 0),
    ]
    assert all(row["username"].startswith(f"p{project.pk}-") and row["join_link"] == link.pk for row in rows)


def test_revoking_twice_is_harmless_and_a_new_link_can_then_be_opened(admin_client):
    project = simple_project()
    link = join_link_open(project=project, completion_code="C")
    url = reverse("api-join-link-revoke", args=[project.pk, link.pk])
    first = post(admin_client, url, {}).json()
    second = post(admin_client, url, {}).json()
    assert first["revoked_at"] == second["revoked_at"] and first["is_open"] is False
    assert post(admin_client, open_url(project), {"completion_code": "D"}).status_code == 201


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    ("body", "status", "code", "detail"),
    [
        ({}, 400, "invalid", "completion_code: give a completion code, a completion URL or both"),
        ({"completion_code": "C", "max_participants": 10**30}, 400, "invalid", "max_participants:"),
        ({"completion_code": "C", "max_participants": -1}, 400, "invalid", "max_participants:"),
        ({"completion_code": "C", "max_participants": 1.5}, 400, "invalid", "max_participants:"),
        ({"completion_code": "C", "max_participants": True}, 400, "invalid", "max_participants:"),
        ({"completion_code": "C", "max_participants": "ten"}, 400, "invalid", "max_participants:"),
        ('{"completion_code": "C", "max_participants": 1e400}', 400, "parse_error", "1e400"),
        ('{"completion_code": "C", "max_participants": NaN}', 400, "parse_error", "NaN"),
        ({"completion_code": "C\u0000"}, 400, "parse_error", "completion_code"),
        ({"completion_code": "x" * 1000}, 400, "invalid", "completion_code: Ensure this field has no more than 200"),
        ({"completion_code": "C", "completion_url": "javascript:alert(1)"}, 400, "invalid", "completion_url: must"),
        ({"completion_code": "C", "completion_url": "data:text/html,x"}, 400, "invalid", "completion_url: must"),
        ({"completion_code": "C", "params": "PROLIFIC_PID"}, 400, "invalid", "params:"),
        ({"completion_code": "C", "params": {"participant": "<script>"}}, 400, "invalid", "params.participant:"),
        ({"completion_code": "C", "params": {"participant": "P" * 1000}}, 400, "invalid", "params.participant:"),
        ({"completion_code": "C", "params": {"participant": None}}, 400, "invalid", "params.participant:"),
        ({"completion_code": "C", "params": {"participant": ["a"]}}, 400, "invalid", "params.participant:"),
        ({"completion_code": "C", "params": {"worker": "ID"}}, 400, "invalid", "params: unknown key(s) worker"),
        ({"completion_code": "C", "params": {"\ud800": "ID"}}, 400, "parse_error", ""),
        ("[" * 100 + "]" * 100, 400, "too_deep", "JSON_MAX_DEPTH"),
        ({"completion_code": "C", "params": {"participant": {"a": {"b": {"c": {}}}}}}, 400, "invalid", "params"),
        ("not json", 400, "parse_error", "not valid JSON"),
        ([1, 2, 3], 400, "invalid", ""),
    ],
)
def test_hostile_bodies_are_refused_naming_the_problem(admin_client, body, status, code, detail):
    project = simple_project()
    if isinstance(body, dict) and "\ud800" in json.dumps(body, ensure_ascii=False):
        body = '{"completion_code": "C", "params": {"\\ud800": "ID"}}'
    response = post(admin_client, open_url(project), body)
    assert response.status_code == status, response.content
    answer = response.json()
    assert answer["code"] == code, answer
    assert detail in answer["detail"], answer
    assert not JoinLink.objects.exists()


def test_a_deeply_nested_body_is_refused_before_anything_is_read(admin_client):
    deep = '{"params": ' * 5000 + "{}" + "}" * 5000
    response = post(admin_client, open_url(simple_project()), deep)
    assert response.status_code == 400 and response.json()["code"] == "too_deep"


def test_another_projects_link_id_is_404(admin_client):
    mine, other = simple_project(), simple_project()
    link = join_link_open(project=other, completion_code="C")
    response = post(admin_client, reverse("api-join-link-revoke", args=[mine.pk, link.pk]), {})
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    link.refresh_from_db()
    assert link.revoked_at is None


def test_unknown_ids_are_404(admin_client):
    project = simple_project()
    assert admin_client.get(reverse("api-join-links", args=[987654])).status_code == 404
    assert admin_client.get(reverse("api-participants", args=[987654])).status_code == 404
    assert post(admin_client, reverse("api-join-link-revoke", args=[project.pk, 987654]), {}).status_code == 404
    huge = f"/api/projects/{project.pk}/join-links/{10**30}/revoke/"
    assert post(admin_client, huge, {}).status_code == 404


def test_a_second_open_link_is_refused_while_one_is_open(admin_client):
    project = simple_project()
    assert post(admin_client, open_url(project), {"completion_code": "C"}).status_code == 201
    response = post(admin_client, open_url(project), {"completion_code": "C"})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("project: already has an open participation link")
    assert JoinLink.objects.count() == 1
