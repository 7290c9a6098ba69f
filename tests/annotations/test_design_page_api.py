"""The Latin-square assignment on the page and in the API: the plan first (nothing written), then
the same assignments the `assign --design latin-square --apply` command makes; every role, impossible
requests and hostile input answered with what would work; progress per condition."""

import json
import re
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotations.models import Assignment, Item, Project
from annotations.services.studies import study_assign_latin_square
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysB", "highlights": True},
    {"name": "scratch", "output": None, "highlights": False},
]
ROLES = ["anonymous", "anna", "bob", "researcher", "admin"]  # as in ROLE_CLIENTS (tests/conftest.py)
ABC = ["a", "b", "scratch"]


def study(name: str = "", documents: int = 3, segments: int = 2, practice: int = 1) -> Project:
    project = ProjectFactory(conditions=CONDITIONS, **({"name": name} if name else {}))
    for p in range(practice):
        ItemFactory(project=project, external_id=f"practice-{p}", practice=True)
    for d in range(documents):
        for s in range(segments):
            ItemFactory(project=project, external_id=f"d{d}-s{s}", document=f"doc{d}", document_position=s)
    return project


@pytest.fixture
def people(annotator, other_annotator) -> list:
    """anna, bob and cleo: the three annotators of a three-condition square (by username: the page's order)."""
    return [annotator, other_annotator, UserFactory(username="cleo", role="annotator")]


def page_url(project: Project, annotators: list, conditions: list[str]) -> str:
    query = urlencode({"annotators": [a.pk for a in annotators], "conditions": conditions}, doseq=True)
    return f"{reverse('manage-design', args=[project.pk])}?{query}"


def plan_url(project: Project, annotators: str, conditions: str) -> str:
    query = urlencode({"annotators": annotators, "conditions": conditions})
    return f"{reverse('api-design-plan', args=[project.pk])}?{query}"


def text(response) -> str:
    """The page's text with its whitespace folded (templates break sentences over lines)."""
    return " ".join(response.content.decode().split())


def post_json(client: Client, url: str, body) -> "object":
    text = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=text, content_type="application/json")


def assign_url(project: Project) -> str:
    return reverse("api-design-assign", args=[project.pk])


def digest_on(html: str) -> str:
    return re.search(r'name="plan_digest" value="([0-9a-f.]+)"', html).group(1)


def made(project: Project) -> list[tuple]:
    """What the assignments are, whatever made them: who, which item, under which condition, in which place."""
    return sorted(
        Assignment.objects.filter(item__project=project).values_list(
            "annotator__username", "item__external_id", "condition", "queue_position"
        )
    )


def untouched(project: Project) -> None:
    project.refresh_from_db()
    assert not Assignment.objects.filter(item__project=project).exists()
    assert project.design != Project.DESIGN_LATIN_SQUARE and "designs" not in project.meta


# --------------------------------------------------------------------------- every role


@pytest.mark.parametrize("role", ROLES)
def test_the_plan_page_is_for_admins_and_researchers(client_as, role, people):
    project = study()
    response = client_as(role).get(page_url(project, people, ABC))
    expected = {"anonymous": 302, "anna": 403, "bob": 403, "researcher": 200, "admin": 200}[role]
    assert response.status_code == expected
    if role == "anonymous":
        assert "login" in response["Location"]
    if expected == 200:
        html = text(response)
        assert "3 annotators × 3 documents (6 segments) × 3 conditions (a, b, scratch)" in html
        assert "21 assignments in all" in html  # 3 x (1 practice + 6 segments)
        assert ("Confirm: make these 21 assignments" in html) is (role == "admin")
        assert ("only admins apply a plan" in html) is (role == "researcher")
    else:
        assert b"doc0" not in response.content
    untouched(project)


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_apply_a_plan_on_the_page(client_as, role, people):
    project = study()
    digest = study_assign_latin_square(project=project, annotators=people, conditions=ABC).digest
    body = {"annotators": [a.pk for a in people], "conditions": ABC, "plan_digest": digest}
    response = client_as(role).post(reverse("manage-design-apply", args=[project.pk]), body)
    expected = {"anonymous": 302, "anna": 403, "bob": 403, "researcher": 403, "admin": 302}[role]
    assert response.status_code == expected
    if role == "admin":
        assert response["Location"] == reverse("manage-progress", args=[project.pk])
        assert Assignment.objects.filter(item__project=project).count() == 21
    else:
        untouched(project)


@pytest.mark.parametrize("role", ROLES)
def test_the_plan_api_is_for_admins_and_researchers(client_as, role, people):
    project = study()
    response = client_as(role).get(plan_url(project, "anna,bob,cleo", "a,b,scratch"))
    expected = {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 200, "admin": 200}[role]
    assert response.status_code == expected
    answer = response.json()
    if expected == 200:
        assert answer["applied"] is False and answer["created"] == 0 and answer["assignments"] == 21
    else:
        assert set(answer) == {"detail", "code"} and answer["code"] in ("not_authenticated", "permission_denied")
    untouched(project)


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_apply_through_the_api(client_as, role, people):
    project = study()
    response = post_json(
        client_as(role),
        assign_url(project),
        {"annotators": ["anna", "bob", "cleo"], "conditions": ABC},
    )
    expected = {"anonymous": 403, "anna": 403, "bob": 403, "researcher": 403, "admin": 201}[role]
    assert response.status_code == expected
    if role == "admin":
        assert response.json()["created"] == 21
    else:
        assert response.json()["code"] in ("not_authenticated", "permission_denied")
        untouched(project)


# --------------------------------------------------------------------------- the plan, then the same as the CLI


def test_the_plan_api_shows_who_gets_what_and_the_balance(admin_client, people):
    project = study(documents=4, segments=1, practice=0)
    answer = admin_client.get(plan_url(project, "anna,bob,cleo", "a,b,scratch")).json()
    assert answer["design"] == "latin-square" and answer["documents"] == 4 and answer["segments"] == 4
    assert answer["annotators"] == ["anna", "bob", "cleo"] and answer["conditions"] == ABC
    bob = answer["per_annotator"][1]
    assert bob["annotator"] == "bob"
    assert bob["documents"] == [
        {"document": "doc1", "condition": "scratch"},
        {"document": "doc2", "condition": "a"},
        {"document": "doc3", "condition": "b"},
        {"document": "doc0", "condition": "b"},
    ]
    assert bob["conditions"] == {"a": 1, "b": 2, "scratch": 1}  # 4 documents over 3 conditions: 1 or 2 each
    assert answer["per_document"][0] == {
        "document": "doc0",
        "segments": 1,
        "conditions": {"a": 1, "b": 1, "scratch": 1},
    }
    untouched(project)


def test_the_plan_page_shows_the_balance_tables(researcher_client, people):
    project = study(documents=4, segments=1, practice=0)
    html = researcher_client.get(page_url(project, people, ABC)).content.decode()
    bob_row = re.search(r"<tr><td>bob</td>(.*?)</tr>", html, re.S).group(1)
    assert re.findall(r"<td>(\d+)</td>", bob_row) == ["1", "2", "1"]
    assert "1. doc1 [scratch]" in bob_row and "4. doc0 [b]" in bob_row
    doc0_row = re.search(r"<tr><td>doc0</td>(.*?)</tr>", html, re.S).group(1)
    assert re.findall(r"<td>(\d+)</td>", doc0_row) == ["1", "1", "1", "1"]  # segments, then a, b, scratch


def test_the_page_applies_exactly_what_the_command_makes(admin_client, people):
    by_command = study(name="by command")
    call_command(
        "assign", "--project", by_command.name, "--annotators", "anna,bob,cleo", "--design", "latin-square",
        "--conditions", "a,b,scratch", "--apply", stdout=StringIO(),
    )  # fmt: skip
    on_page = study(name="on the page")
    html = admin_client.get(page_url(on_page, people, ABC)).content.decode()
    body = {"annotators": [a.pk for a in people], "conditions": ABC, "plan_digest": digest_on(html)}
    response = admin_client.post(reverse("manage-design-apply", args=[on_page.pk]), body, follow=True)
    assert "Created 21 assignments: 3 annotators x 3 documents x 3 conditions" in text(response)
    assert made(on_page) == made(by_command) and len(made(on_page)) == 21
    on_page.refresh_from_db()
    by_command.refresh_from_db()
    assert on_page.design == by_command.design == Project.DESIGN_LATIN_SQUARE
    strip = lambda designs: [{k: v for k, v in d.items() if k != "assigned"} for d in designs]  # noqa: E731
    assert strip(on_page.meta["designs"]) == strip(by_command.meta["designs"])


def test_the_api_applies_exactly_what_the_command_makes(admin_client, people):
    by_command = study(name="by command", documents=5, segments=3, practice=2)
    call_command(
        "assign", "--project", by_command.name, "--annotators", "cleo,anna,bob", "--design", "latin-square",
        "--conditions", "scratch,a", "--apply", stdout=StringIO(),
    )  # fmt: skip
    by_api = study(name="by api", documents=5, segments=3, practice=2)
    plan = admin_client.get(plan_url(by_api, "cleo,anna,bob", "scratch,a")).json()
    response = post_json(
        admin_client,
        assign_url(by_api),
        {"annotators": ["cleo", "anna", "bob"], "conditions": ["scratch", "a"], "plan_digest": plan["plan_digest"]},
    )
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer["applied"] is True and answer["created"] == answer["assignments"] == 3 * (2 + 15)
    assert answer["per_annotator"] == plan["per_annotator"]
    assert made(by_api) == made(by_command)


def test_the_plan_changes_nothing_however_often_it_is_shown(admin_client, researcher_client, people):
    project = study()
    before = (Item.objects.count(), project.meta, project.design)
    for client in (admin_client, researcher_client):
        client.get(page_url(project, people, ABC))
        client.get(page_url(project, people, ABC), headers={"HX-Request": "true"})
        client.get(plan_url(project, "anna,bob,cleo", "a,b,scratch"))
    project.refresh_from_db()
    assert (Item.objects.count(), project.meta, project.design) == before
    untouched(project)


def test_a_plan_that_changed_since_it_was_shown_is_not_applied(admin_client, people):
    project = study()
    html = admin_client.get(page_url(project, people, ABC)).content.decode()
    digest = digest_on(html)
    ItemFactory(project=project, external_id="d3-s0", document="doc3", document_position=0)  # imported meanwhile
    body = {"annotators": [a.pk for a in people], "conditions": ABC, "plan_digest": digest}
    response = admin_client.post(reverse("manage-design-apply", args=[project.pk]), body)
    assert response.status_code == 400
    page = text(response)
    assert "the plan changed since it was shown" in page and "× 4 documents" in page  # the plan as it is now
    assert digest_on(response.content.decode()) != digest  # ready to confirm the new one
    untouched(project)
    api = post_json(
        admin_client,
        assign_url(project),
        {"annotators": ["anna", "bob", "cleo"], "conditions": ABC, "plan_digest": digest},
    )
    assert api.status_code == 400 and api.json()["code"] == "invalid"
    assert api.json()["errors"] == {"plan_digest": [api.json()["detail"].split(": ", 1)[1]]}
    untouched(project)


def test_the_page_confirms_only_a_plan_it_showed(admin_client, people):
    project = study()
    body = {"annotators": [a.pk for a in people], "conditions": ABC}
    response = admin_client.post(reverse("manage-design-apply", args=[project.pk]), body)
    assert response.status_code == 400 and "Look at the plan first, then confirm it." in response.content.decode()
    untouched(project)


def test_a_study_is_assigned_once(admin_client, people):
    project = study()
    study_assign_latin_square(project=project, annotators=people, conditions=ABC, apply=True)
    response = post_json(admin_client, assign_url(project), {"annotators": ["anna", "bob", "cleo"], "conditions": ABC})
    assert response.status_code == 400
    assert "anna, bob, cleo already hold work in this project" in response.json()["detail"]
    assert Assignment.objects.filter(item__project=project).count() == 21


# --------------------------------------------------------------------------- impossible requests


@pytest.mark.parametrize(
    ("annotators", "conditions", "documents", "message"),
    [
        ("anna,bob", "a,b,scratch", 3, "2 annotator(s) for 3 conditions"),
        ("anna,bob", "a,b,scratch", 3, "add 1 annotator(s) or use fewer conditions"),
        ("anna,bob,cleo", "a,b,scratch", 2, "at least 3 documents are needed; import more documents"),
        ("anna,bob,cleo", "a,zzz", 3, "conditions: unknown 'zzz'; the project declares a, b, scratch"),
        ("anna,bob,cleo", "a,a", 3, "named twice"),
        ("anna,bob,nobody", "a,b", 3, "annotators: no such user: nobody"),
        ("anna,bob,rita", "a,b", 3, "annotators: not in the annotator role: rita"),
        ("anna,bob,adam", "a,b", 3, "annotators: not in the annotator role: adam"),
        ("anna,anna,bob", "a,b", 3, "annotators: listed twice: anna"),
    ],
)
def test_impossible_plans_say_what_would_work_in_the_api(
    admin_client, people, researcher, admin_user, annotators, conditions, documents, message
):
    project = study(documents=documents)
    for response in (
        admin_client.get(plan_url(project, annotators, conditions)),
        post_json(
            admin_client,
            assign_url(project),
            {"annotators": annotators.split(","), "conditions": conditions.split(",")},
        ),
    ):
        assert response.status_code == 400, response.content
        answer = response.json()
        assert answer["code"] == "invalid" and message in answer["detail"], answer
    untouched(project)


def test_impossible_plans_say_what_would_work_on_the_page(admin_client, people, researcher):
    project = study(documents=2)
    response = admin_client.get(page_url(project, people, ABC))
    assert "at least 3 documents are needed; import more documents" in text(response)
    assert "Confirm:" not in text(response)
    response = admin_client.get(page_url(project, people[:2], ["a", "b", "scratch"]))
    assert "2 annotator(s) for 3 conditions" in text(response)
    response = admin_client.get(page_url(project, [*people[:2], researcher], ["a", "b"]))
    assert f"{researcher.pk} is not an active annotator: choose among the annotators listed" in text(response)
    response = admin_client.get(page_url(project, people, ["a", "zzz"]))
    assert "zzz is not a condition of this project; it declares a, b, scratch." in text(response)
    untouched(project)


def test_a_project_without_conditions_says_to_declare_them(admin_client, people):
    project = ProjectFactory()
    ItemFactory(project=project, document="doc0", document_position=0)
    html = text(admin_client.get(reverse("manage-design", args=[project.pk])))
    assert "The project declares no conditions yet" in html
    html = text(admin_client.get(page_url(project, people, ["a"])))
    assert "a is not a condition of this project; it declares none yet (declare them in the settings)." in html
    answer = admin_client.get(plan_url(project, "anna,bob", "a")).json()
    assert "declare them on the project first" in answer["detail"]


def test_unknown_projects_and_ids_that_are_no_annotators(admin_client, people, researcher, admin_user):
    project = study()
    other = study()
    response = admin_client.get(reverse("api-design-plan", args=[987654]) + "?annotators=anna&conditions=a")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert post_json(admin_client, f"/api/projects/{10**30}/design-assign/", {}).status_code == 404
    assert admin_client.get(f"/manage/projects/{10**30}/design/").status_code == 404
    assert admin_client.post(f"/manage/projects/{10**30}/design/apply/", {}).status_code == 404
    # Annotators belong to no project: anyone in the annotator role may be chosen, nobody else.
    for value in (researcher.pk, admin_user.pk, 987654, 10**30, -1, "1e309", "NaN", "٣"):
        response = admin_client.get(f"{reverse('manage-design', args=[project.pk])}?annotators={value}&conditions=a")
        assert response.status_code == 200 and "Confirm:" not in text(response)
        assert re.search(r"is not (an active annotator|an id)", text(response)), value
    untouched(project)
    untouched(other)


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    ("body", "code", "detail"),
    [
        ("[" * 100 + "]" * 100, "too_deep", "JSON_MAX_DEPTH"),
        ('{"annotators": ' * 3000 + "[]" + "}" * 3000, "too_deep", ""),
        ("not json", "parse_error", "not valid JSON"),
        ([1, 2, 3], "invalid", ""),
        ({"annotators": "anna,bob,cleo", "conditions": ABC}, "invalid", "annotators: Expected a list"),
        ({"annotators": [], "conditions": ABC}, "invalid", "annotators: This list may not be empty"),
        ({"annotators": ["anna", "bob", "cleo"]}, "invalid", "conditions: This field is required"),
        ({"annotators": ["anna", "bob", "cleo"], "conditions": {"a": 1}}, "invalid", "conditions: Expected a list"),
        ({"annotators": [["anna"]], "conditions": ABC}, "invalid", "annotators"),
        ({"annotators": [{"a": {"b": {}}}], "conditions": ABC}, "invalid", "annotators"),
        ({"annotators": [10**400], "conditions": ABC}, "invalid", "no more than 150"),
        ({"annotators": [10**20, "bob", "cleo"], "conditions": ABC}, "invalid", f"no such user: {10**20}"),
        (
            {"annotators": [1e308], "conditions": ABC},
            "parse_error",
            "1e999 is out of range for a number at annotators[0]",
        ),
        ({"annotators": ["anna", "bob", "cleo"], "conditions": ["a\u202eb"]}, "invalid", r"unknown 'a\u202eb'"),
        ({"annotators": ["anna", "bob", "cleo"], "conditions": ["a", "scratch\u200b"]}, "invalid", "unknown"),
        ({"annotators": ["ánna", "bob", "cleo"], "conditions": ABC}, "invalid", "no such user: ánna"),
        ({"annotators": ["an\x00na", "bob", "cleo"], "conditions": ABC}, "parse_error", "NUL character"),
        ({"annotators": ["", " "], "conditions": ABC}, "invalid", "annotators[0]: This field may not be blank"),
        (
            {"annotators": ["anna", "bob", "cleo"], "conditions": [""]},
            "invalid",
            "conditions[0]: This field may not be",
        ),
        ({"annotators": ["x" * 151], "conditions": ABC}, "invalid", "no more than 150"),
        ({"annotators": [f"u{k}" for k in range(1001)], "conditions": ABC}, "invalid", "no more than 1000"),
        ({"annotators": ["anna", "bob", "cleo"], "conditions": ABC, "plan_digest": "x" * 65}, "invalid", "plan_digest"),
        (
            {"annotators": ["anna", "bob", "cleo"], "conditions": ABC, "plan_digest": "0" * 20},
            "invalid",
            "plan changed",
        ),
    ],
)
def test_hostile_bodies_are_refused_naming_the_problem(admin_client, people, body, code, detail):
    project = study()
    if isinstance(body, dict) and any(isinstance(v, float) for v in body.get("annotators", [])):
        body = '{"annotators": [1e999], "conditions": ["a", "b", "scratch"]}'  # inf once parsed
    response = post_json(admin_client, assign_url(project), body)
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == code and detail in answer["detail"], answer
    untouched(project)


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("annotators=anna,bob,cleo", "conditions: This field is required"),
        ("annotators=" + ",".join(f"u{k}" for k in range(1001)) + "&conditions=a", "too long for a URL"),
        ("annotators=" + ",".join(f"u{k}" for k in range(800)) + "&conditions=a", "POST the plan instead"),
        ("annotators=anna,bob,cleo&conditions=" + "a" * 10_001, "conditions: Ensure this field has no more than 10000"),
        ("annotators=an%00na&conditions=a", "Null characters"),
        ("annotators=anna,bob,cleo&conditions=%E2%80%AEa", r"unknown '\u202ea'"),
        ("annotators=,,&conditions=a", "annotators: name at least one (annotators are comma-separated)"),
        ("annotators=anna,bob&conditions=%20,%20", "conditions: name at least one (conditions are comma-separated)"),
        ("annotators=%F0%9F%98%80,bob,cleo&conditions=a", "no such user: \U0001f600"),
    ],
)
def test_hostile_plan_queries_are_refused_naming_the_problem(admin_client, people, query, detail):
    project = study()
    response = admin_client.get(f"{reverse('api-design-plan', args=[project.pk])}?{query}")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "invalid" and detail in answer["detail"], answer
    untouched(project)


def test_hostile_page_input_is_a_message(admin_client, people):
    project = study()
    url = reverse("manage-design", args=[project.pk])
    for query in ({"annotators": "\x00", "conditions": "a"}, {"conditions": "\u202e" * 500}):
        response = admin_client.get(f"{url}?{urlencode(query, doseq=True)}")
        assert response.status_code == 200 and "Confirm:" not in text(response), query
    twice = {"annotators": [people[0].pk, people[0].pk, people[1].pk], "conditions": ["a", "a"]}
    response = admin_client.get(f"{url}?{urlencode(twice, doseq=True)}")  # a checkbox sent twice counts once
    assert "2 annotators × 3 documents (6 segments) × 1 condition (a)" in text(response)
    response = admin_client.post(
        reverse("manage-design-apply", args=[project.pk]),
        {"annotators": [10**30], "conditions": ["a\x00"], "plan_digest": "z" * 1000},
    )
    assert response.status_code == 400
    page = text(response)
    assert "is not an id" in page and "not a condition of this project" in page
    untouched(project)


# --------------------------------------------------------------------------- htmx


def test_htmx_swaps_in_only_the_plan_and_the_form_works_without_it(admin_client, people):
    project = study()
    full = admin_client.get(reverse("manage-design", args=[project.pk])).content.decode()
    # The choices are posted: hundreds of ticked annotators do not fit in a URL (gunicorn: 414).
    form = re.search(r'<form method="post" action="([^"]+)"[^>]*hx-post="([^"]+)"', full, re.S)
    assert form.group(1) == form.group(2) == reverse("manage-design", args=[project.pk])
    partial = admin_client.get(page_url(project, people, ABC), headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in partial and 'class="design-form"' not in partial
    assert "Per annotator: documents in queue order" in partial and digest_on(partial)
    broken = admin_client.get(page_url(project, people[:1], ["zzz"]), headers={"HX-Request": "true"}).content.decode()
    assert 'id="design-form-errors"' in broken and "conditions: zzz is not a condition of this project" in broken


def test_the_batches_page_and_the_nav_link_to_the_design(admin_client):
    project = study()
    html = admin_client.get(reverse("manage-batches", args=[project.pk])).content.decode()
    assert html.count(f'href="{reverse("manage-design", args=[project.pk])}"') == 2  # nav and section


# --------------------------------------------------------------------------- progress per condition


def test_progress_counts_each_condition(admin_client, researcher_client, people):
    project = study(documents=3, segments=2, practice=1)
    study_assign_latin_square(project=project, annotators=people, conditions=["a", "b"], apply=True)
    anna_first = Assignment.objects.filter(annotator=people[0], item__project=project).order_by("queue_position")
    for assignment in list(anna_first)[:3]:  # the practice item, then doc0 (a) both segments
        SubmittedPostEditFactory(assignment=assignment, active_ms=1000 * (assignment.queue_position + 1))
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.SUBMITTED)
    answer = researcher_client.get(reverse("api-project-progress", args=[project.pk])).json()
    rows = {row["condition"]: row for row in answer["by_condition"]}
    assert [row["condition"] for row in answer["by_condition"]] == ["a", "b", "scratch", ""]
    # Annotator i, document j: a when i + j is even; 5 of the 9 cells are a, 4 are b, 2 segments each.
    assert (rows["a"]["total"], rows["b"]["total"]) == (10, 8)
    assert (rows["a"]["submitted"], rows["a"]["median_active_ms"]) == (2, 2500.0)
    assert rows["scratch"]["total"] == 0 and rows["scratch"]["label"] == "scratch"
    assert (rows[""]["label"], rows[""]["total"], rows[""]["submitted"]) == ("(no condition)", 3, 1)
    assert sum(row["total"] for row in answer["by_condition"]) == answer["total"]["total"] == 21
    html = admin_client.get(reverse("manage-progress", args=[project.pk])).content.decode()
    table = html.split("<h2>Per condition</h2>", 1)[1]
    assert "<td>a</td><td>2</td><td>0</td><td>8</td>" in table
    assert "<td>(no condition)</td><td>1</td>" in table
    partial = admin_client.get(reverse("manage-progress", args=[project.pk]), headers={"HX-Request": "true"})
    assert "<h2>Per condition</h2>" in partial.content.decode()


def test_progress_of_a_project_without_conditions_has_no_condition_rows(admin_client, annotator):
    project = ProjectFactory()
    ItemFactory(project=project)
    Assignment.objects.create(item=project.items.get(), annotator=annotator)
    answer = admin_client.get(reverse("api-project-progress", args=[project.pk])).json()
    assert answer["by_condition"] == [] and answer["total"]["total"] == 1
    assert "Per condition" not in admin_client.get(reverse("manage-progress", args=[project.pk])).content.decode()


def test_progress_shows_conditions_an_imported_study_carries(admin_client, annotator):
    project = ProjectFactory()
    for k, condition in enumerate(["sysB", "sysA", "sysA"]):
        Assignment.objects.create(
            item=ItemFactory(project=project, external_id=f"i{k}"), annotator=annotator, condition=condition
        )
    answer = admin_client.get(reverse("api-project-progress", args=[project.pk])).json()
    assert [(row["condition"], row["total"]) for row in answer["by_condition"]] == [("sysA", 2), ("sysB", 1)]
