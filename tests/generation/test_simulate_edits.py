"""simulate_edits: each synthetic edit a simulated post-edit with its provenance and scenario."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Item, PostEdit
from generation.models import GenerationRecord, GenerationRun

EDIT_PROMPT = (
    "system:\nYou are an expert in {domain}.\n---\n"
    "Question: {question}\nExpert knowledge:\n{knowledge}\nAnswer to edit:\n{answer}\nEdit it as little as needed."
)


def edited(body) -> str:
    answer = body["messages"][-1]["content"].split("Answer to edit:\n")[1].split("\n")[0]
    return answer.replace("simple", "balanced")


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "fast.txt"
    path.write_text(EDIT_PROMPT, encoding="utf-8")
    return path


def simulate(server, path, *extra) -> str:
    out = StringIO()
    call_command(
        "simulate_edits",
        "--project",
        "gen",
        "--scenario",
        str(path),
        "--endpoint",
        server.base_url,
        "--model",
        "m1",
        "--seed",
        "3",
        "--var",
        "domain=accounting",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def test_each_item_gets_a_simulated_post_edit(project, server, scenario_file):
    server.answer = edited
    printed = simulate(server, scenario_file, "--concurrency", "2")
    assert "generated 5" in printed
    edits = PostEdit.objects.filter(origin=PostEdit.SIMULATED).select_related("assignment__item")
    assert edits.count() == 5
    edit = edits.get(assignment__item__external_id="q2")
    assert edit.text == "The rule 2 is balanced." and edit.start_text == "The rule 2 is simple."
    assert edit.condition == edit.assignment.condition == "fast"
    assert edit.start_override is None  # edited from the model output
    assert edit.wall_ms is None and edit.events.count() == 0  # no time, no keys
    detail = edit.origin_detail
    assert detail["scenario"] == "fast" and detail["model"] == "fake-model-1"
    assert detail["params"]["seed"] == 3 and detail["settings"]["variables"] == {"domain": "accounting"}
    assert detail["response_id"].startswith("chatcmpl-") and detail["usage"]["total_tokens"] > 0
    record = GenerationRecord.objects.get(item__external_id="q2")
    assert record.post_edit == edit and record.text == edit.text
    sent = next(r for r in server.requests if "rule number 2" in r["messages"][-1]["content"])
    assert sent["messages"][0]["content"] == "You are an expert in accounting."
    assert "Rule 2: always balance the ledger." in sent["messages"][-1]["content"]
    assert Item.objects.filter(outputs__has_key="fast").count() == 0  # a simulation writes no output


def test_a_resumed_simulation_stores_nothing_twice(project, server, scenario_file):
    simulate(server, scenario_file)
    printed = simulate(server, scenario_file)
    assert "answered before (skipped) 5" in printed and len(server.requests) == 5
    assert PostEdit.objects.filter(origin=PostEdit.SIMULATED).count() == 5


def test_a_changed_setting_is_a_second_set_of_edits(project, server, scenario_file):
    simulate(server, scenario_file)
    simulate(server, scenario_file, "--temperature", "0.7")
    assert GenerationRun.objects.count() == 2
    assert PostEdit.objects.filter(origin=PostEdit.SIMULATED, condition="fast").count() == 10
    assert PostEdit.objects.filter(origin=PostEdit.SIMULATED).values("assignment__annotator").distinct().count() == 2


def test_editing_another_output(project, server, scenario_file):
    item = Item.objects.get(external_id="q1")
    item.outputs = {"sys-b": "Rule one is simple indeed."}
    item.save()
    server.answer = edited
    printed = simulate(server, scenario_file, "--output", "sys-b")
    assert "generated 1, refused or empty 4" in printed
    edit = PostEdit.objects.get(origin=PostEdit.SIMULATED)
    assert edit.start_override == "Rule one is simple indeed." and edit.text == "Rule one is balanced indeed."
    assert "has no output 'sys-b' to edit" in GenerationRecord.objects.get(item__external_id="q0").error


def test_a_simulated_edit_over_the_limit_is_refused(project, settings, server, scenario_file):
    settings.EDITLAB_TEXT_MAX_BYTES = 100
    server.fault_for = lambda body: "huge"
    server.huge_chars = 500
    simulate(server, scenario_file, "--items", "q0")
    assert GenerationRecord.objects.get().status == "too_long"
    assert not PostEdit.objects.filter(origin=PostEdit.SIMULATED).exists()


def test_a_shipped_scenario_or_a_file_is_needed(project, server, tmp_path):
    with pytest.raises(CommandError, match="cannot read the prompt template"):
        simulate(server, tmp_path / "nope.txt")
