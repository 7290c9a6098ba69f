"""The error-span task's pages and endpoints: a rater sees and writes only their own evaluations, bad
input is a 400 naming its field, and what the page embeds is escaped and blind (no system name)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import Evaluation, EvaluationEvent
from annotations.services.evaluation_task import evaluation_assign
from tests.factories import ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

OUTPUT = "Le <b>chat</b> est assis."


@pytest.fixture
def world():
    project = ProjectFactory(name="Rating study", context="document")
    for n, (source, output) in enumerate([("Before.", "Avant."), ("The cat sits.", OUTPUT), ("After.", "Après.")]):
        ItemFactory(
            project=project,
            external_id=f"seg-{n}",
            source=source,
            document="doc1",
            document_position=n,
            outputs={"secret-system-x": output, "other-sys": f"OTHER-{n}"},
        )
    rhea = UserFactory(username="rhea", role="annotator")
    omar = UserFactory(username="omar", role="annotator")
    evaluation_assign(project=project, raters=[rhea, omar], systems=["secret-system-x"], protocol="esa")
    mine = Evaluation.objects.get(rater=rhea, item__external_id="seg-1")
    return {"project": project, "rhea": rhea, "omar": omar, "mine": mine}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post_json(client: Client, url: str, body) -> tuple[int, dict]:
    response = client.post(
        url, data=json.dumps(body) if not isinstance(body, str) else body, content_type="application/json"
    )
    return response.status_code, response.json()


def config_of(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="evaluation-config" type="application/json">') + len(
        '<script id="evaluation-config" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_the_list_shows_the_raters_own_evaluations_only(world):
    page = client_of(world["rhea"]).get(reverse("evaluations"))
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count('class="evaluation"') == 3
    assert f'data-evaluation="{world["mine"].pk}"' in html
    theirs = Evaluation.objects.filter(rater=world["omar"]).values_list("pk", flat=True)
    assert not any(f'data-evaluation="{pk}"' in html for pk in theirs)
    assert "secret-system-x" not in html
    empty = client_of(UserFactory(role="annotator")).get(reverse("evaluations")).content.decode()
    assert 'id="no-evaluations"' in empty


def test_the_task_page_is_the_raters_alone(world):
    url = reverse("evaluation", args=[world["mine"].pk])
    assert client_of(world["rhea"]).get(url).status_code == 200
    for other in (world["omar"], UserFactory(role="researcher"), UserFactory(role="admin", is_staff=True)):
        assert client_of(other).get(url).status_code == 404
    assert Client().get(url).status_code == 302


def test_the_task_page_shows_source_context_and_the_text_escaped_and_blind(world):
    response = client_of(world["rhea"]).get(reverse("evaluation", args=[world["mine"].pk]))
    html = response.content.decode()
    assert "Le &lt;b&gt;chat&lt;/b&gt; est assis." in html
    assert "The cat sits." in html
    assert "Avant." in html and "Après." in html  # the document around it, the same system's outputs
    assert "OTHER-" not in html and "secret-system-x" not in html
    config = config_of(response)
    assert (config["text"], config["protocol"], config["next_seq"], config["prefill"]) == (OUTPUT, "esa", 0, [])
    assert "Non-translation" not in config["categories"] and config["non_translation"] is True
    assert config["severities"] == ["minor", "major", "critical"]
    world["mine"].refresh_from_db()
    assert world["mine"].status == "in_progress" and world["mine"].started_at is not None


def _submit_flow(world) -> Client:
    client = client_of(world["rhea"])
    config = config_of(client.get(reverse("evaluation", args=[world["mine"].pk])))
    events = [{"seq": 0, "t": 0.0, "k": "load", "state": "visible"}, {"seq": 1, "t": 1500.0, "k": "submit"}]
    status, answer = post_json(client, config["urls"]["events"], {"page_id": config["page_id"], "events": events})
    assert (status, answer) == (200, {"stored": 2, "next_seq": 2})
    body = {
        "page_id": config["page_id"],
        "last_seq": 1,
        "esa_score": 40,
        "spans": [{"start": 3, "end": 13, "category": "Accuracy/Mistranslation", "severity": "major"}],
    }
    status, answer = post_json(client, config["urls"]["submit"], body)
    assert status == 200, answer
    assert answer == {"id": world["mine"].pk, "wall_ms": 1500, "active_ms": 1500, "spans": 1}
    return client


def test_events_and_submit_store_the_evaluation_and_the_page_then_shows_it_read_only(world):
    client = _submit_flow(world)
    world["mine"].refresh_from_db()
    assert (world["mine"].status, world["mine"].esa_score, world["mine"].wall_ms) == ("submitted", 40.0, 1500)
    assert list(world["mine"].spans.values_list("start", "end", "category")) == [(3, 13, "Accuracy/Mistranslation")]
    html = client.get(reverse("evaluation", args=[world["mine"].pk])).content.decode()
    assert 'id="evaluation-submitted"' in html and "evaluation-config" not in html
    assert "<q>&lt;b&gt;chat&lt;/b</q>" in html
    status, answer = post_json(client, reverse("api-evaluation-submit", args=[world["mine"].pk]), {"page_id": "x"})
    assert (status, answer["code"]) == (409, "closed")


def test_the_endpoints_refuse_other_people_and_bad_input(world):
    events_url = reverse("api-evaluation-events", args=[world["mine"].pk])
    submit_url = reverse("api-evaluation-submit", args=[world["mine"].pk])
    body = {"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "events": [{"seq": 0, "t": 0, "k": "load"}]}
    assert post_json(client_of(world["omar"]), events_url, body)[0] == 404
    assert post_json(client_of(UserFactory(role="researcher")), events_url, body)[0] == 403
    assert Client().post(events_url, data=json.dumps(body), content_type="application/json").status_code == 403
    rhea = client_of(world["rhea"])
    status, answer = post_json(rhea, events_url, '{"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "events": NaN}')
    assert status == 400 and "NaN" in answer["detail"]
    status, answer = post_json(rhea, events_url, {**body, "events": [{"seq": 0, "t": 0, "k": "evil"}]})
    assert (status, list(answer["errors"])) == (400, ["events[0].k"])
    status, answer = post_json(
        rhea, submit_url, {"page_id": body["page_id"], "last_seq": -1, "spans": [], "esa_score": 101}
    )
    assert (status, answer["errors"]) == (400, {"esa_score": ["101 is outside 0-100"]})
    status, answer = post_json(rhea, submit_url, {"page_id": body["page_id"], "surprise": 1})
    assert (status, list(answer["errors"])) == (400, ["surprise"])
    status, answer = post_json(rhea, submit_url, [1, 2])
    assert status == 400
    assert not EvaluationEvent.objects.exists()
    world["mine"].refresh_from_db()
    assert world["mine"].status == "pending"


def test_the_home_page_links_a_raters_evaluations_and_only_a_raters(world):
    world["mine"].status = Evaluation.SUBMITTED
    world["mine"].save()
    home = client_of(world["rhea"]).get(reverse("annotator_home")).content.decode()
    assert f'<a href="{reverse("evaluations")}">Your evaluations</a>: 2 to do of 3' in home
    nobody = client_of(UserFactory(username="nina", role="annotator")).get(reverse("annotator_home")).content.decode()
    assert reverse("evaluations") not in nobody


@pytest.mark.parametrize(
    "body",
    [
        '{"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "spans": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "last_seq": 1e400, "spans": []}',
        '{"page_id": "\\ud800", "last_seq": -1, "spans": []}',
        '{"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "last_seq": -1, "spans": [{"start": 0, "end": '
        + str(2**70)
        + ', "category": "Accuracy", "severity": "minor"}]}',
    ],
    ids=["deep", "huge-number", "lone-surrogate", "offset-past-bigint"],
)
def test_the_submit_refuses_hostile_json_with_a_400_and_stores_nothing(world, body):
    rhea = client_of(world["rhea"])
    status, answer = post_json(rhea, reverse("api-evaluation-submit", args=[world["mine"].pk]), body)
    assert status == 400 and answer["detail"]
    world["mine"].refresh_from_db()
    assert world["mine"].status != Evaluation.SUBMITTED and not world["mine"].spans.exists()
