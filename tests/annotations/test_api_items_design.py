"""The items API takes the study design: document, document_position, outputs, highlights, practice,
through the importers' checks (the same messages, with the item's index and field)."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Item
from tests.factories import ItemFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_admin(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def project(db):
    return ProjectFactory(name="api study")


def post(client: APIClient, project, items: list[dict]):
    return client.post(reverse("api-items-create", args=[project.pk]), {"items": items}, format="json")


SEGMENT = {
    "external_id": "news-7:1",
    "source": "Le chat dort.",
    "model_output": "The cat sleeps.",
    "document": "news-7",
    "document_position": 1,
    "outputs": {"google": "The cat sleeps.", "mbart": "The cat is sleeping."},
    "highlights": {"mbart": [[8, 19, "minor"]]},
    "practice": False,
}


def test_items_carry_their_design_in_and_out(api_admin, project):
    warmup = {"external_id": "warm", "model_output": "Hi.", "practice": True}
    second = {"external_id": "news-7:2", "model_output": "It rains.", "document": "news-7"}

    response = post(api_admin, project, [warmup, SEGMENT, second])

    assert response.status_code == 201, response.content
    body = {item["external_id"]: item for item in response.json()["items"]}
    assert body["news-7:1"]["outputs"] == SEGMENT["outputs"]
    assert body["news-7:1"]["highlights"] == {"mbart": [[8, 19, "minor"]]}
    assert (body["news-7:1"]["document"], body["news-7:1"]["document_position"]) == ("news-7", 1)
    assert (body["news-7:2"]["document"], body["news-7:2"]["document_position"]) == ("news-7", 2)  # the next one
    assert (body["warm"]["practice"], body["warm"]["document"], body["warm"]["document_position"]) == (True, "", None)
    listed = api_admin.get(reverse("api-items", args=[project.pk])).json()["results"]
    assert [i["document_position"] for i in listed] == [None, 1, 2]

    again = post(api_admin, project, [SEGMENT])
    assert (again.status_code, again.json()["skipped"]) == (200, 1)


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (
            {"highlights": {"mbart": [[8, 99, "minor"]]}},
            "items[0].highlights.mbart[0]: [8, 99] is outside the text (0 <= start < end <= 20 characters)",
        ),
        (
            {"highlights": {"mbart": [[0, 5, "a"], [4, 9, "b"]]}},
            "items[0].highlights.mbart: spans [0, 5] and [4, 9] overlap",
        ),
        (
            {"highlights": {"deepl": [[0, 1, "a"]]}},
            "items[0].highlights.deepl: highlights over the output 'deepl', which this item does not have "
            "(its outputs: 'google', 'mbart')",
        ),
        (
            {"highlights": {"mbart": [[0, 10**30, "a"]]}},
            "items[0].highlights.mbart[0]: [0, 1000000000000000000000000000000] is outside the text",
        ),
        ({"outputs": {"google\u202e": "x"}}, "items[0].outputs: the output name 'google\\u202e' holds an invisible"),
        ({"document": "news\u200b-7"}, "items[0].document: the document id holds an invisible or control character"),
        ({"document": ""}, "items[0].document_position: a position needs a document"),
    ],
)
def test_bad_design_is_a_400_naming_the_item_and_field(api_admin, project, change, detail):
    response = post(api_admin, project, [{**SEGMENT, **change}])

    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(detail)
    assert response.json()["code"] == "invalid"
    assert not Item.objects.exists()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"outputs": {"google": 5}}, "outputs", "Not a valid string."),
        ({"outputs": {"google": None}}, "outputs", "This field may not be null."),
        ({"outputs": ["x"]}, "outputs", 'Expected a dictionary of items but got type "list".'),
        ({"document_position": -1}, "document_position", "Ensure this value is greater than or equal to 0."),
        ({"document_position": 2**31}, "document_position", "Ensure this value is less than or equal to 2147483647."),
        ({"document_position": 10**400}, "document_position", "Ensure this value is less than or equal to 2147483647."),
        ({"document": "d" * 256}, "document", "Ensure this field has no more than 255 characters."),
        ({"practice": "maybe"}, "practice", "Must be a valid boolean."),
        ({"highlights": {"mbart": "0-4"}}, "highlights", 'Expected a list of items but got type "str".'),
    ],
)
def test_ill_typed_design_is_a_400_from_the_serializer(api_admin, project, change, field, message):
    response = post(api_admin, project, [{**SEGMENT, **change}])

    assert response.status_code == 400, response.content
    errors = response.json()["errors"]["items"]["0"][field]
    flat = str(errors)
    assert message in flat
    assert not Item.objects.exists()


def test_a_position_held_by_another_item_or_twice_in_the_request_is_refused(api_admin, project):
    ItemFactory(project=project, external_id="stored", document="news-7", document_position=1)

    held = post(api_admin, project, [SEGMENT])
    twice = post(
        api_admin,
        project,
        [{**SEGMENT, "document_position": 5}, {**SEGMENT, "external_id": "b", "document_position": 5}],
    )

    assert held.status_code == twice.status_code == 400
    assert held.json()["detail"] == (
        "items[0].document_position: document 'news-7' already has a segment at position 1 in project 'api study' "
        "(item 'stored'); positions are unique per document"
    )
    assert twice.json()["detail"].startswith(
        "items[1].document_position: document 'news-7' has a segment at position 5 twice (item 'news-7:1' at items, line 1)"
    )
    assert list(Item.objects.values_list("external_id", flat=True)) == ["stored"]


def test_deep_json_in_highlights_is_a_400(api_admin, project):
    deep: list = []
    for _ in range(80):
        deep = [deep]
    response = post(api_admin, project, [{**SEGMENT, "highlights": {"mbart": deep}}])

    assert response.status_code == 400
    assert "deep" in response.json()["detail"]
    assert not Item.objects.exists()
