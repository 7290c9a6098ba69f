"""End to end: a 3-condition Latin-square study for 6 annotators x 6 documents, edited through the
editor's own HTTP endpoints with a known condition effect, and the analysis recovers it."""

import datetime
import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotations.models import Assignment, PostEdit
from annotations.services.studies import study_assign_latin_square
from metrics.selection_data import clear_cache
from metrics.services import metric_values_compute
from tests.factories import ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "mt-a", "output": "sysA", "highlights": False},
    {"name": "mt-b", "output": "sysB", "highlights": True},
    {"name": "mt-c", "output": "sysC", "highlights": False},
]
# Keystrokes added per segment by each condition (mt-a is the baseline).
EFFECT = {"mt-a": 0, "mt-b": 9, "mt-c": -4}
BASE = 16
ANNOTATORS, DOCUMENTS, SEGMENTS = 6, 6, 3
PRACTICE_KEYS = 150  # practice edits are long: kept in, they would move every mean
CONFIG = re.compile(r'<script id="editor-config" type="application/json">(.*?)</script>', re.S)


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()


def typing(original: str, keys: int, t0: float = 50.0) -> tuple[list[dict], str]:
    """The editor's log of typing `keys` letters at the end of the text, then Ctrl+Enter."""
    events = [{"t": 0, "k": "load", "data": original, "len": len(original)}]
    text = original
    t = 300.0
    for n in range(keys):
        letter = "abcdefghij"[n % 10]
        position = len(text)
        events += [
            {"t": t, "k": "keydown", "key": letter, "code": f"Key{letter.upper()}"},
            {"t": t + 1, "k": "beforeinput", "it": "insertText", "s": position, "e": position},
            {"t": t + 2, "k": "input", "it": "insertText", "s": position + 1, "len": len(text) + 1, "data": letter},
        ]
        text += letter
        t += 150.0
    events += [
        {"t": t + 400, "k": "keydown", "key": "Enter", "code": "Enter", "mods": 1},
        {"t": t + 401, "k": "submit"},
    ]
    return [dict(event, seq=n, t=t0 + event["t"]) for n, event in enumerate(events)], text


class ServerClock:
    """The server's clock, moved by the test: the server sees each page open as long as its typing took
    (typed at 150 ms a key, the log is honest only when that much server time passes)."""

    def __init__(self) -> None:
        self.at = timezone.now()

    def now(self) -> datetime.datetime:
        return self.at

    def advance(self, ms: float) -> None:
        self.at += datetime.timedelta(milliseconds=ms)


def edit_through_the_editor(client: Client, assignment: Assignment, keys: int, clock: ServerClock) -> None:
    page = client.get(reverse("editor", args=[assignment.pk]))
    assert page.status_code == 200
    config = json.loads(CONFIG.search(page.content.decode()).group(1))
    events, text = typing(config["original"], keys)
    clock.advance(events[-1]["t"] + 100)
    for start in range(0, len(events), 200):
        response = client.post(
            config["urls"]["events"],
            data=json.dumps({"page_id": config["page_id"], "events": events[start : start + 200]}),
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
    submit = {"page_id": config["page_id"], "text": text, "version": config["version"], "last_seq": len(events) - 1}
    response = client.post(config["urls"]["submit"], data=json.dumps(submit), content_type="application/json")
    assert response.status_code == 200, response.content
    clock.advance(500)


@pytest.fixture
def simulated_study(monkeypatch):
    """Keystrokes per segment = BASE + condition effect + annotator + item + noise (seeded)."""
    clock = ServerClock()
    monkeypatch.setattr(timezone, "now", clock.now)
    rng = np.random.default_rng(2026)
    project = ProjectFactory(name="latin study", conditions=CONDITIONS)
    ItemFactory(project=project, external_id="practice", practice=True, outputs={"sysA": "Try.", "sysB": "Try."})
    for d in range(DOCUMENTS):
        for s in range(SEGMENTS):
            ItemFactory(
                project=project,
                external_id=f"doc{d}-s{s}",
                document=f"doc{d}",
                document_position=s,
                outputs={system: f"Segment {s} of document {d} from {system}." for system in ("sysA", "sysB", "sysC")},
            )
    people = [UserFactory(username=f"pe{k}", role="annotator") for k in range(ANNOTATORS)]
    study_assign_latin_square(project=project, annotators=people, conditions=list(EFFECT), apply=True)
    annotator_effect = dict(zip(people, rng.normal(0, 3, ANNOTATORS), strict=True))
    item_effect = {item.pk: rng.normal(0, 2) for item in project.items.all()}
    expected: dict[int, int] = {}
    for person in people:
        client = Client()
        client.force_login(person)
        for assignment in Assignment.objects.filter(annotator=person).order_by("queue_position"):
            if assignment.item.practice:
                keys = PRACTICE_KEYS
            else:
                mean = BASE + EFFECT[assignment.condition] + annotator_effect[person] + item_effect[assignment.item_id]
                keys = max(1, round(mean + rng.normal(0, 1.5)))
            edit_through_the_editor(client, assignment, keys, clock)
            expected[assignment.pk] = keys
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    return project, expected


def analysis_json(project, **options) -> dict:
    out = io.StringIO()
    call_command("analyze", project=project.name, target="keystrokes", format="json", stdout=out, **options)
    return json.loads(out.getvalue())


def test_the_analysis_recovers_the_simulated_condition_effects(simulated_study, researcher_client):
    project, expected = simulated_study
    post_edits = PostEdit.objects.filter(assignment__item__project=project).select_related("assignment__item")
    assert post_edits.count() == ANNOTATORS * (DOCUMENTS * SEGMENTS + 1)
    for post_edit in post_edits:  # the editor's counts are the typed keys, under the assignment's condition
        assert post_edit.keystrokes == expected[post_edit.assignment_id]
        assert post_edit.condition == post_edit.assignment.condition
        assert post_edit.condition == ("" if post_edit.assignment.item.practice else post_edit.condition)
        assert post_edit.replay_ok is True

    data = analysis_json(project)
    conditions = data["conditions"]
    assert data["n_rows"] == ANNOTATORS * DOCUMENTS * SEGMENTS  # the practice edits are left out
    assert data["practice"] == {"in_selection": ANNOTATORS, "excluded": True}
    assert f"{ANNOTATORS} post-edits of practice items left out (include practice keeps them)" in data["messages"]
    assert conditions["baseline"] == "mt-a" and conditions["conditions"] == ["mt-a", "mt-b", "mt-c"]
    # Latin square: each condition on 2 of each annotator's 6 documents, each document under each condition twice.
    assert [(s["n"], s["items"], s["annotators"]) for s in conditions["summaries"]] == [(36, 18, 6)] * 3
    model = conditions["model"]
    assert model["groups"] == {"annotator": ANNOTATORS, "item": DOCUMENTS * SEGMENTS} and model["converged"]
    effects = {e["condition"]: e for e in model["effects"]}
    for name in ("mt-b", "mt-c"):
        low, high = effects[name]["ci"]
        assert low < EFFECT[name] < high, (name, effects[name])
    assert effects["mt-b"]["p"] < 0.001 and effects["mt-c"]["p"] < 0.001
    means = [s["mean"] for s in conditions["summaries"]]
    assert means[2] < means[0] < means[1]  # the simulated order: mt-c < mt-a < mt-b

    # Against another baseline the effects are the differences between the simulated ones.
    again = analysis_json(project, baseline="mt-c")["conditions"]
    assert again["conditions"] == ["mt-c", "mt-a", "mt-b"]
    for effect in again["model"]["effects"]:
        low, high = effect["ci"]
        assert low < EFFECT[effect["condition"]] - EFFECT["mt-c"] < high

    # Practice kept on request: every post-edit, and the practice edits have no condition.
    kept = analysis_json(project, include_practice=True)
    assert kept["n_rows"] == ANNOTATORS * (DOCUMENTS * SEGMENTS + 1)
    assert kept["practice"] == {"in_selection": ANNOTATORS, "excluded": False}
    assert kept["conditions"]["left_out"] == ANNOTATORS

    # The API and the report page say the same.
    api = researcher_client.get(
        reverse("api-project-analysis", kwargs={"project_id": project.pk}) + "?target=keystrokes&baseline=mt-c"
    ).json()
    assert api["conditions"] == again
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}) + "?target=keystrokes")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Conditions" in body and f"{ANNOTATORS} post-edits of practice items left out" in body

    table = io.StringIO()
    call_command("analyze", project=project.name, target="keystrokes", stdout=table)
    assert "Conditions (target keystrokes; baseline mt-a;" in table.getvalue()
