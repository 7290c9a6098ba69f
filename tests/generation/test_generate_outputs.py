"""generate_outputs end to end against the loopback server: outputs with provenance, resuming, a new run
for a changed setting, refusals and faults recorded per item, the token tally."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Item
from generation import jobs
from generation.fakeserver import FakeServer, default_answer
from generation.models import GenerationRecord, GenerationRun
from tests.factories import ItemFactory


def generate(server, prompt_file, *extra, system="llm-a") -> str:
    out = StringIO()
    call_command(
        "generate_outputs",
        "--project",
        "gen",
        "--system",
        system,
        "--endpoint",
        server.base_url,
        "--model",
        "m1",
        "--prompt",
        str(prompt_file),
        "--seed",
        "1",
        "--temperature",
        "0",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def outputs(project, system="llm-a") -> dict[str, str | None]:
    return {i.external_id: i.outputs.get(system) for i in Item.objects.filter(project=project).order_by("position")}


def test_every_item_gets_its_output_and_provenance(project, server, prompt_file):
    printed = generate(server, prompt_file, "--concurrency", "3", "--max-tokens", "64")
    assert "generated 5, refused or empty 0, failed 0" in printed
    got = outputs(project)
    assert all(text and text.startswith("ANSWER:") for text in got.values())
    first = next(r for r in server.requests if "number 0" in r["messages"][-1]["content"])
    assert first["messages"] == [
        {"role": "system", "content": "You answer questions."},
        {"role": "user", "content": "Question: What is the rule number 0?\nAnswer briefly.\n"},
    ]
    assert got["q0"] == default_answer(first)
    run = GenerationRun.objects.get()
    assert (run.status, run.total, run.done, run.generated, run.kind) == ("done", 5, 5, 5, "output")
    assert run.prompt_tokens == 5 * (3 + 9) and run.completion_tokens == 5
    record = GenerationRecord.objects.get(item__external_id="q0")
    p = record.provenance
    assert record.status == "generated" and record.text == got["q0"]
    assert p["endpoint"] == server.base_url and p["model"] == "fake-model-1" and p["requested_model"] == "m1"
    assert p["params"] == {"temperature": 0.0, "max_tokens": 64, "seed": 1, "timeout_s": 60.0}
    assert p["finish_reason"] == "stop" and p["response_id"].startswith("chatcmpl-") and p["created"]
    assert p["prompt_sha256"] == record.prompt_sha256 and len(record.prompt_sha256) == 64
    assert p["template"] == str(prompt_file) and run.template.startswith("system:\nYou answer questions.")


def test_the_same_settings_again_call_nothing(project, server, prompt_file):
    generate(server, prompt_file)
    calls = len(server.requests)
    printed = generate(server, prompt_file, "--concurrency", "4")  # concurrency is not a setting of the text
    assert len(server.requests) == calls == 5
    assert "answered before (skipped) 5" in printed
    assert GenerationRun.objects.count() == 1


def test_a_changed_setting_is_a_new_run_and_never_overwrites(project, server, prompt_file):
    generate(server, prompt_file)
    before = outputs(project)
    with pytest.raises(CommandError, match=r"5 item\(s\) .* already have an output 'llm-a', made by run #\d+"):
        call_command(
            "generate_outputs",
            "--project",
            "gen",
            "--system",
            "llm-a",
            "--endpoint",
            server.base_url,
            "--model",
            "m1",
            "--prompt",
            str(prompt_file),
            "--seed",
            "2",
            stdout=StringIO(),
        )
    assert outputs(project) == before and GenerationRun.objects.count() == 1
    generate(server, prompt_file, "--seed", "2", system="llm-b")
    assert GenerationRun.objects.count() == 2
    assert all(outputs(project, "llm-b").values()) and outputs(project) == before


def test_an_imported_output_is_never_overwritten(project, server, prompt_file):
    item = Item.objects.get(external_id="q3")
    item.outputs = {"llm-a": "imported text"}
    item.save()
    with pytest.raises(CommandError, match=r"1 item\(s\) .* \(e.g. 'q3'\) already have an output 'llm-a', made by an"):
        generate(server, prompt_file)
    assert server.requests == [] and GenerationRun.objects.count() == 0


def test_only_the_items_named(project, server, prompt_file):
    generate(server, prompt_file, "--items", "q1", "q3")
    assert [k for k, v in outputs(project).items() if v] == ["q1", "q3"]
    with pytest.raises(CommandError, match="project 'gen' has no item 'nope'"):
        generate(server, prompt_file, "--items", "q1", "nope")


def test_faults_are_retried_and_refusals_recorded(project, prompt_file):
    faults = {"q0": "429", "q1": "500", "q2": "empty", "q3": "refusal", "q4": "malformed"}
    seen: set[str] = set()

    def fault_for(body):
        text = body["messages"][-1]["content"]
        key = f"q{text.split('number ')[1][0]}"
        if faults[key] in ("empty", "refusal"):
            return faults[key]
        if key in seen:
            return "ok"
        seen.add(key)
        return faults[key]

    with FakeServer(fault_for=fault_for, retry_after_s=0.01) as server:
        printed = generate(server, prompt_file)
    assert "generated 3, refused or empty 2, failed 0" in printed
    statuses = dict(GenerationRecord.objects.values_list("item__external_id", "status"))
    assert statuses == {"q0": "generated", "q1": "generated", "q2": "empty", "q3": "model_refused", "q4": "generated"}
    got = outputs(project)
    assert got["q2"] is None and got["q3"] is None
    q0 = GenerationRecord.objects.get(item__external_id="q0").provenance
    assert q0["attempts"][0]["error"].startswith("HTTP 429") and q0["attempts"][0]["retry_after_s"] == 0.01
    refusal = GenerationRecord.objects.get(item__external_id="q3")
    assert refusal.provenance["refusal"] == "I can't help with that." and "refused" in refusal.error


def test_an_answer_over_the_text_limit_is_stored_as_refused(project, settings, prompt_file):
    settings.EDITLAB_TEXT_MAX_BYTES = 1000
    with FakeServer(fault_for=lambda body: "huge", huge_chars=5000) as server:
        printed = generate(server, prompt_file, "--items", "q0")
    assert "generated 0, refused or empty 1" in printed
    record = GenerationRecord.objects.get()
    assert record.status == "too_long" and "refused, not truncated" in record.error and len(record.text) == 5000
    assert outputs(project)["q0"] is None


def test_an_oversized_prompt_is_refused_before_the_call(project, server, tmp_path):
    ItemFactory(project=project, external_id="long", source="x" * 5000)
    path = tmp_path / "p.txt"
    path.write_text("{question}", encoding="utf-8")
    printed = generate(server, path, "--max-prompt-chars", "1000")
    assert "generated 5, refused or empty 1" in printed and len(server.requests) == 5
    record = GenerationRecord.objects.get(item__external_id="long")
    assert record.status == "prompt_refused" and "5,000 characters, over the limit of 1,000" in record.error


def test_a_template_with_an_unknown_field_is_refused_naming_it(project, server, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("Q: {question}\nDomain: {domain}\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"bad.txt, line 2: unknown field \{domain\}"):
        generate(server, path)
    assert server.requests == []
    generate(server, path, "--var", "domain=accounting")
    assert server.requests[0]["messages"][0]["content"] == "Q: What is the rule number 0?\nDomain: accounting\n"


@pytest.mark.parametrize(
    ("endpoint", "says"),
    [("ftp://127.0.0.1/v1", "scheme 'ftp'"), ("http://me:secret@127.0.0.1:1/v1", "holds credentials")],
)
def test_a_bad_endpoint_is_refused(project, prompt_file, endpoint, says):
    with pytest.raises(CommandError, match=says) as refused:
        call_command(
            "generate_outputs",
            "--project",
            "gen",
            "--system",
            "s",
            "--endpoint",
            endpoint,
            "--model",
            "m",
            "--prompt",
            str(prompt_file),
            stdout=StringIO(),
        )
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--temperature", "5"], "--temperature must lie between 0 and 2"),
        (["--concurrency", "0"], "--concurrency must lie between 1"),
        (["--max-tokens", "0"], "--max-tokens must lie between 1"),
    ],
)
def test_bad_parameters_are_refused(project, server, prompt_file, option, says):
    with pytest.raises(CommandError, match=says):
        generate(server, prompt_file, *option)


def test_a_prompt_file_that_is_not_utf8(project, server, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("Q: {question}\ncaf\xe9".encode("latin-1"))
    with pytest.raises(CommandError, match=r"latin1.txt, line 2: not UTF-8"):
        generate(server, path)


def test_the_api_key_is_sent_and_never_stored(project, server, prompt_file, settings):
    settings.EDITLAB_LLM_API_KEY = "sk-test-0123456789"
    seen = []
    server.fault_for = lambda body: seen.append(1) or "ok"
    shown = generate(server, prompt_file, "--items", "q0")
    run = GenerationRun.objects.get()
    stored = repr(list(GenerationRun.objects.values())) + repr(list(GenerationRecord.objects.values()))
    assert "sk-test" not in stored and run.generated == 1
    assert "sk-test" not in shown and shown
    assert server.authorizations == ["Bearer sk-test-0123456789"]


def test_a_server_dying_mid_job_stops_the_run_and_the_same_command_resumes(project, prompt_file, monkeypatch):
    monkeypatch.setattr(jobs, "BREAKER_FAILURES", 2)
    ItemFactory.create_batch(5, project=project, source="More?")
    server = FakeServer().start()
    calls = {"n": 0}

    def die_at_the_fourth(body):
        calls["n"] += 1
        if calls["n"] == 4:
            server.stop()
            return "close"
        return "ok"

    server.fault_for = die_at_the_fourth
    with pytest.raises(CommandError, match=r"2 calls in a row failed, the last: connection failed"):
        generate(server, prompt_file)
    run = GenerationRun.objects.get()
    assert run.status == "failed" and "Run the same command again to resume" in run.error
    first = dict(GenerationRecord.objects.filter(status="generated").values_list("item_id", "text"))
    assert len(first) == 3
    assert GenerationRecord.objects.filter(status="failed").count() == 2

    with FakeServer(port=server.port) as revived:
        printed = generate(revived, prompt_file)
    assert "generated 10, refused or empty 0, failed 0, answered before (skipped) 3" in printed
    assert len(revived.requests) == 7  # nothing generated twice
    assert GenerationRun.objects.get().status == "done"
    after = dict(GenerationRecord.objects.filter(item_id__in=first).values_list("item_id", "text"))
    assert after == first and all(outputs(project).values())


def test_the_admin_shows_provenance_and_never_the_key(project, server, prompt_file, settings, client):
    from django.contrib.auth import get_user_model

    settings.EDITLAB_LLM_API_KEY = "sk-test-0123456789"
    generate(server, prompt_file, "--items", "q0")
    record = GenerationRecord.objects.get()
    admin_user = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(admin_user)
    pages = [
        client.get("/admin/generation/generationrun/"),
        client.get("/admin/generation/generationrecord/"),
        client.get(f"/admin/generation/generationrecord/{record.pk}/change/"),
    ]
    assert [page.status_code for page in pages] == [200, 200, 200]
    detail = pages[2].content.decode()
    assert "fake-model-1" in detail and "sk-test" not in "".join(p.content.decode() for p in pages)
