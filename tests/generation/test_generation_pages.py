"""The Generation page and API: start a run against the loopback server, list runs with progress, stop
one, resume it; who may do what (admins; researchers only simulations, only where the project allows);
refusals naming the problem and storing nothing; the API key never stored or shown."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotations.models import Item, PostEdit
from generation.control import generation_policy_set, generation_run_stop
from generation.models import GenerationChunk, GenerationPolicy, GenerationRecord, GenerationRun
from tests.factories import UserFactory

KEY = "sk-secret-key-0123456789"


@pytest.fixture
def users(db):
    return {role: UserFactory(username=role, role=role) for role in ("admin", "researcher", "annotator")}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_start(client, project, **body):
    url = reverse("api-generation-run-start", kwargs={"project_id": project.pk})
    return client.post(url, data=json.dumps(body), content_type="application/json")


def settings_of(server, **extra) -> dict:
    return {"endpoint": server.base_url, "model": "m1", "seed": 1, "temperature": 0.0, **extra}


def test_an_admin_starts_an_output_run_from_the_api_and_reads_its_progress(project, server, users, settings):
    settings.EDITLAB_LLM_API_KEY = KEY
    admin = client_of(users["admin"])
    body = settings_of(server, kind="output", name="llm-a", template="answer", variables={"domain": "accounting"})
    response = api_start(admin, project, **body)
    assert response.status_code == 202, response.content
    run = response.json()
    assert (run["status"], run["total"], run["done"], run["generated"], run["kind"]) == ("done", 5, 5, 5, "output")
    assert run["chunks"] == {"total": 1, "done": 1, "running": 0, "queued": 0, "failed": 0}
    assert run["template_name"] == "answer.txt" and run["endpoint"] == server.base_url
    assert all(i.outputs["llm-a"].startswith("ANSWER:") for i in Item.objects.filter(project=project))
    listed = admin.get(reverse("api-generation-runs", kwargs={"project_id": project.pk})).json()
    assert [r["id"] for r in listed] == [run["id"]]
    detail = admin.get(reverse("api-generation-run", kwargs={"run_id": run["id"]}))
    assert detail.json()["completion_tokens"] == run["completion_tokens"] > 0
    # The same settings again: the run resumed, nothing asked twice.
    asked = len(server.requests)
    again = api_start(admin, project, **body).json()
    assert again["id"] == run["id"] and again["skipped"] == 5 and len(server.requests) == asked
    everything = b"".join(
        admin.get(url).content
        for url in (
            reverse("api-generation-runs", kwargs={"project_id": project.pk}),
            reverse("generation-page", kwargs={"project_id": project.pk}),
        )
    )
    assert KEY.encode() not in everything
    assert not any(KEY in json.dumps(r.provenance) for r in GenerationRecord.objects.all())


def test_the_page_starts_a_simulation_from_an_upload_and_lists_the_run(project, server, users):
    admin = client_of(users["admin"])
    url = reverse("generation-page", kwargs={"project_id": project.pk})
    upload = SimpleUploadedFile("mine.txt", b"Edit this answer: {answer}\nKnowledge: {knowledge}\n")
    response = admin.post(
        url,
        {
            **settings_of(server),
            "kind": "simulation",
            "name": "terse",
            "template": "",
            "template_file": upload,
            "concurrency": "2",
            "timeout_s": "30",
            "max_prompt_chars": "100000",
            "items": "q0\nq1\n",
            "variables": "",
        },
    )
    assert response.status_code == 302 and response["Location"] == url
    run = GenerationRun.objects.get()
    assert (run.kind, run.name, run.template_name, run.total, run.generated) == (
        "simulation",
        "terse",
        "mine.txt",
        2,
        2,
    )
    assert PostEdit.objects.filter(origin="simulated", condition="terse").count() == 2
    page = admin.get(url).content.decode()
    assert f'id="run-{run.pk}"' in page and "terse" in page and "stopped" not in page
    assert "<html" in page.lower()  # loaded directly: the whole page
    fragment = admin.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'id="generation-runs"' in fragment and "<html" not in fragment.lower()


def test_a_bad_setting_on_the_page_is_named_and_nothing_is_stored(project, server, users):
    admin = client_of(users["admin"])
    url = reverse("generation-page", kwargs={"project_id": project.pk})
    base = {**settings_of(server), "kind": "output", "name": "x", "template": "answer", "concurrency": "1"}
    base |= {"timeout_s": "60", "max_prompt_chars": "100000"}
    cases = [
        ({"endpoint": "http://user:pw@127.0.0.1:1/v1"}, "holds credentials"),
        (
            {"template": "", "template_file": SimpleUploadedFile("t.txt", b"{nosuchfield}")},
            "unknown field {nosuchfield}",
        ),
        ({"max_prompt_chars": "5"}, "over the limit of 5"),
        ({"items": "no-such-item"}, "has no item &#x27;no-such-item&#x27;"),
        ({"temperature": "nan"}, "Enter a number"),
        ({"variables": "not a pair"}, "write name=value"),
    ]
    for change, message in cases:
        response = admin.post(url, {**base, **change})
        body = response.content.decode()
        if message == "over the limit of 5":  # refused per item before any call: the run records it
            run = GenerationRun.objects.get()
            assert run.refused == 5 and run.generated == 0 and not server.requests
            assert message in GenerationRecord.objects.first().error
            run.delete()
            continue
        assert response.status_code == 400, (change, response.status_code)
        assert message in body, (change, body[:2000])
        assert not GenerationRun.objects.exists() and not server.requests


def test_who_may_start_and_stop(project, server, users):
    body = settings_of(server, kind="simulation", name="fast", template="fast", max_prompt_chars=1)
    researcher, annotator = client_of(users["researcher"]), client_of(users["annotator"])
    assert api_start(annotator, project, **body).status_code == 403
    refused = api_start(researcher, project, **body)
    assert refused.status_code == 403 and "does not let researchers" in refused.json()["detail"]
    page = reverse("generation-page", kwargs={"project_id": project.pk})
    assert researcher.get(page).status_code == 200 and annotator.get(page).status_code == 403
    assert researcher.post(page, {**body, "concurrency": 1}).status_code == 403
    policy_url = reverse("api-generation-policy", kwargs={"project_id": project.pk})
    assert (
        researcher.post(policy_url, {"researchers_simulate": True}, content_type="application/json").status_code == 403
    )
    admin = client_of(users["admin"])
    assert admin.post(policy_url, {"researchers_simulate": True}, content_type="application/json").json() == {
        "researchers_simulate": True
    }
    assert researcher.get(policy_url).json() == {"researchers_simulate": True}
    started = api_start(researcher, project, **body)
    assert started.status_code == 202 and started.json()["refused"] == 5  # every prompt over 1 character
    # Outputs stay the admins' even where simulations are allowed.
    output = api_start(researcher, project, **{**body, "kind": "output", "name": "sys"})
    assert output.status_code == 403 and "Only admins" in output.json()["detail"]
    assert GenerationRun.objects.count() == 1 and not server.requests


def running_run(project, server) -> GenerationRun:
    """A run a worker is working on (as the engine leaves it mid-run), made directly."""
    return GenerationRun.objects.create(
        project=project,
        kind="output",
        name="llm-a",
        endpoint=server.base_url,
        model="m1",
        template_name="t",
        template="Q: {question}",
        template_sha256="0" * 64,
        settings_key="k",
        status="running",
        total=5,
    )


def test_stopping_a_running_run_fails_its_chunks_and_the_same_settings_resume_it(project, server, users):
    admin = users["admin"]
    body = settings_of(server, kind="output", name="llm-a", template="answer")
    run = running_run(project, server)
    chunk = GenerationChunk.objects.create(run=run, seq=0, item_ids=[1, 2], size=2, status="running", attempts=1)
    researcher = client_of(users["researcher"])
    assert researcher.post(reverse("api-generation-run-stop", kwargs={"run_id": run.pk})).status_code == 403
    response = client_of(admin).post(reverse("api-generation-run-stop", kwargs={"run_id": run.pk}))
    assert response.status_code == 200 and response.json()["status"] == "stopped"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.error) == ("failed", "stopped")
    again = client_of(admin).post(reverse("api-generation-run-stop", kwargs={"run_id": run.pk}))
    assert again.status_code == 409 and again.json()["code"] == "not_running"
    # A real run, stopped between two starts: the same settings resume it where it was.
    first = api_start(client_of(admin), project, **{**body, "items": ["q0", "q1"]}).json()
    GenerationRun.objects.filter(pk=first["id"]).update(status="running")
    generation_run_stop(run=GenerationRun.objects.get(pk=first["id"]), user=admin)
    resumed = api_start(client_of(admin), project, **{**body, "items": ["q0", "q1"]}).json()
    assert resumed["id"] == first["id"] and resumed["status"] == "done" and resumed["skipped"] == 2
    assert len(server.requests) == 2


def test_a_stopped_chunk_stores_nothing_more(project, server, users, monkeypatch):
    """A worker whose chunk was stopped loses its claim: the answers it still gets are not stored."""
    from generation import jobs

    run = running_run(project, server)
    ids = list(Item.objects.filter(project=project).values_list("pk", flat=True))
    chunk = GenerationChunk.objects.create(run=run, seq=0, item_ids=ids, size=len(ids))
    store = jobs._store

    def stopped_first(chunk, run, answered):  # the admin presses Stop while the first answer arrives
        generation_run_stop(run=run, user=users["admin"])
        return store(chunk, run, answered)

    monkeypatch.setattr(jobs, "_store", stopped_first)
    assert jobs.generation_chunk_run(chunk_id=chunk.pk, worker=None) is None
    assert GenerationRecord.objects.filter(run=run).count() == 0 and len(server.requests) >= 1
    run.refresh_from_db()
    assert run.status == "stopped" and all(i.outputs.get("llm-a") is None for i in Item.objects.all())


def test_an_items_provenance_in_the_api_names_the_model_and_never_the_key(project, server, users, settings):
    settings.EDITLAB_LLM_API_KEY = KEY
    admin = client_of(users["admin"])
    api_start(admin, project, **settings_of(server, kind="output", name="llm-a", template="answer", max_tokens=32))
    generation_policy_set(project=project, researchers_simulate=True, user=users["admin"])
    api_start(
        client_of(users["researcher"]),
        project,
        **settings_of(server, kind="simulation", name="normal", template="normal"),
    )
    item = Item.objects.get(project=project, external_id="q2")
    url = reverse("api-item-provenance", kwargs={"project_id": project.pk, "item_id": item.pk})
    assert client_of(users["annotator"]).get(url).status_code == 403
    body = client_of(users["researcher"]).get(url)
    assert body.status_code == 200 and KEY not in body.content.decode()
    records = body.json()["records"]
    assert [(r["kind"], r["name"], r["status"]) for r in records] == [
        ("output", "llm-a", "generated"),
        ("simulation", "normal", "generated"),
    ]
    first = records[0]["provenance"]
    assert first["model"] == "fake-model-1" and first["requested_model"] == "m1"
    assert first["params"]["max_tokens"] == 32 and first["endpoint"] == server.base_url
    assert first["response_id"] and first["finish_reason"] == "stop" and first["usage"]["completion_tokens"] >= 1
    assert records[1]["post_edit"] == PostEdit.objects.get(origin="simulated", assignment__item=item).pk
    assert GenerationPolicy.objects.get(project=project).researchers_simulate
