"""Imports and the editor agree: one text limit (editlab/limits.py), line endings as a textarea gives
them, and one rule for ids, on SQLite and PostgreSQL."""

import json
from bisect import bisect_left

import pytest
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.editing.lifecycle import post_edit_open
from annotations.highlights import highlight_edits
from annotations.importers import import_items
from annotations.importers.base import ImportDataError, InputFile, Origin, normalize_line_endings, removed_before
from annotations.importers.study import document_id, id_problem
from annotations.models import Assignment, Item, PostEdit, Project
from annotations.replay import replay, utf16_len
from editlab import limits
from tests.annotations.editing_helpers import url, wire
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def _jsonl(*records: dict) -> InputFile:
    return InputFile(name="items.jsonl", data="".join(json.dumps(r) + "\n" for r in records).encode())


def _import(project: str, file: InputFile, fmt: str = "table"):
    return import_items(project=project, fmt=fmt, files=[file], create_project=True)


def _browser_post(client: Client, target: str, payload: dict):
    """As the editor posts: JSON with its text as UTF-8 (JSON.stringify escapes no letter)."""
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return client.post(target, data=body, content_type="application/json")


def _edit_as_the_editor(client: Client, user, item: Item) -> list:
    """Open the item, send its load event, save a draft and submit it unchanged: the answers."""
    assignment = Assignment.objects.create(item=item, annotator=user)
    post_edit, visit = post_edit_open(assignment=assignment, user=user)
    text = post_edit.start_text
    load = {"seq": 0, "t": 0, "k": "load", "data": text, "len": utf16_len(text), "state": "visible"}
    page = str(visit.page_id)
    return [
        _browser_post(client, url("events", post_edit), {"page_id": page, "events": [load]}),
        _browser_post(client, url("draft", post_edit), {"page_id": page, "text": text, "version": 0}),
        _browser_post(client, url("submit", post_edit), {"page_id": page, "text": text, "version": 1, "last_seq": 0}),
    ]


@pytest.fixture
def editor(db):
    user = UserFactory(username="ed", role="annotator")
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return user, client


# --------------------------------------------------------------------------- one limit per text


def test_a_10_mb_model_output_is_refused_at_import_with_file_line_and_field():
    huge = "x" * (10 * 1024 * 1024)
    with pytest.raises(ImportDataError) as refused:
        _import(
            "big", _jsonl({"external_id": "ok", "model_output": "fine"}, {"external_id": "big", "model_output": huge})
        )
    assert str(refused.value) == (
        "items.jsonl, line 2, field 'model_output': the text takes 10,485,760 bytes as the editor sends it; "
        "the editor takes at most 262,144 (EDITLAB_TEXT_MAX_BYTES; UTF-8, a line break, tab or quote counting 2 bytes)"
    )
    assert not Project.objects.filter(name="big").exists() and not Item.objects.exists()


def test_an_output_and_an_imported_post_edit_have_the_same_limit():
    huge = "y" * (limits.TEXT_MAX_BYTES_DEFAULT + 1)
    with pytest.raises(ImportDataError, match=r"items.jsonl, line 1, field 'outputs.sysA': the text takes 262,145"):
        _import("o", _jsonl({"external_id": "a", "model_output": "m", "outputs": {"sysA": huge}}))
    table = InputFile(name="study.csv", data=f"external_id,model_output,edited,annotator\na,m,{huge},lena\n".encode())
    with pytest.raises(ImportDataError, match=r"study.csv, line 2, field 'text': the text takes 262,145"):
        _import("p", table)


def test_the_largest_text_that_imports_loads_drafts_and_submits_under_the_default_limits(editor):
    user, client = editor
    # 'é' takes 2 bytes in UTF-8 and a line break 2 as JSON: the limit counts what the editor sends.
    unit = 'é\n"q" '
    text = unit * (limits.TEXT_MAX_BYTES_DEFAULT // limits.text_bytes(unit) + 1)
    while limits.text_bytes(text) > limits.TEXT_MAX_BYTES_DEFAULT:
        text = text[:-1]
    _import("edge", _jsonl({"external_id": "edge", "model_output": text}))
    answers = _edit_as_the_editor(client, user, Item.objects.get(external_id="edge"))
    assert [answer.status_code for answer in answers] == [200, 200, 200], [a.content[:300] for a in answers]
    assert PostEdit.objects.get().text == text
    with pytest.raises(ImportDataError, match="field 'model_output': the text takes 262,14[5-9]"):
        _import("over", _jsonl({"external_id": "over", "model_output": text + "éé"}))


def test_a_draft_or_submit_over_the_limit_is_refused_with_the_limit_named(editor):
    user, client = editor
    _import("d", _jsonl({"external_id": "d", "model_output": "short"}))
    assignment = Assignment.objects.create(item=Item.objects.get(), annotator=user)
    post_edit, visit = post_edit_open(assignment=assignment, user=user)
    big = "z" * (limits.TEXT_MAX_BYTES_DEFAULT + 1)
    draft = _browser_post(client, url("draft", post_edit), {"page_id": str(visit.page_id), "text": big, "version": 0})
    assert draft.status_code == 400
    assert draft.json()["detail"].startswith("text: the text takes 262,145 bytes as the editor sends it")
    assert PostEdit.objects.get().draft_text == "short"
    payload = {"page_id": str(visit.page_id), "text": big, "version": 0, "last_seq": -1}
    submit = _browser_post(client, url("submit", post_edit), payload)
    assert submit.status_code == 400 and submit.json()["detail"].startswith("text: the text takes 262,145 bytes")
    assert PostEdit.objects.get().submitted_at is None


# The property runs under small limits (the same rule: text + envelope fits both request limits).
SMALL = {
    "EDITLAB_TEXT_MAX_BYTES": 600,
    "EDITLAB_EVENTS_MAX_BYTES": 600 + 4096,
    "DATA_UPLOAD_MAX_MEMORY_SIZE": 600 + 4096,
}
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.text(CHARS, min_size=1, max_size=12), copies=st.integers(1, 400))
def test_any_text_that_imports_can_be_loaded_drafted_and_submitted(editor, unit, copies):
    user, client = editor
    text = "x" + unit * copies  # a model output has some visible text
    name = f"prop-{Project.objects.count()}"
    with override_settings(**SMALL):
        assert limits.text_limit_problem(600, events_max=600 + 4096, body_max=600 + 4096) is None
        try:
            _import(name, _jsonl({"external_id": "t", "model_output": text}))
        except ImportDataError as refused:
            assert "field 'model_output'" in str(refused) and "line 1" in str(refused)
            assert limits.text_bytes(normalize_line_endings(text)[0]) > 600
            return
        item = Item.objects.get(project__name=name)
        assert limits.text_bytes(item.model_output) <= 600
        answers = _edit_as_the_editor(client, user, item)
    assert [answer.status_code for answer in answers] == [200, 200, 200], [a.content[:300] for a in answers]


def test_settings_refuse_a_text_limit_the_request_limits_cannot_carry():
    assert limits.text_limit_problem(limits.TEXT_MAX_BYTES_DEFAULT, events_max=1024 * 1024, body_max=5 << 20) is None
    problem = limits.text_limit_problem(1024 * 1024, events_max=1024 * 1024, body_max=5 << 20)
    assert problem is not None and "EDITLAB_EVENTS_MAX_BYTES (1,048,576)" in problem


# --------------------------------------------------------------------------- line endings


def test_crlf_and_cr_become_lf_so_loading_the_item_is_no_edit(editor):
    user, client = editor
    report = _import(
        "le", _jsonl({"external_id": "a", "source": "s\r\nt", "model_output": "line one\r\nline two\rthree"})
    )
    item = Item.objects.get()
    assert (item.model_output, item.source) == ("line one\nline two\nthree", "s\nt")
    assert "line endings normalized to LF in 2 text(s): 2 CRLF, 1 CR" in report.notes
    answers = _edit_as_the_editor(client, user, item)
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    post_edit = PostEdit.objects.get()
    assert post_edit.replay_ok is True and post_edit.keystrokes == 0 and post_edit.text == item.model_output


def test_highlights_move_with_the_line_endings_they_lie_after():
    output = "one\r\ntwo\r\nthree"
    _import(
        "hl",
        _jsonl(
            {
                "id": "a",
                "model_output": output,
                "outputs": {"sysA": output},
                "highlights": {"sysA": [[5, 8, "minor"], [10, 15, "major"]]},
            }
        ),
    )
    item = Item.objects.get()
    assert item.outputs["sysA"] == "one\ntwo\nthree"
    assert item.highlights["sysA"] == [[4, 7, "minor"], [8, 13, "major"]]
    assert [item.outputs["sysA"][s:e] for s, e, _ in item.highlights["sysA"]] == ["two", "three"]


def test_an_imported_post_edit_keeps_its_line_endings_counted_in_origin_detail():
    table = InputFile(
        name="study.jsonl",
        data=(
            json.dumps({"external_id": "a", "model_output": "a\r\nb", "edited": "a\r\nb\r", "annotator": "lena"}) + "\n"
        ).encode(),
    )
    _import("pe", table)
    post_edit = PostEdit.objects.get()
    assert post_edit.text == "a\nb\n"
    assert post_edit.origin_detail == {
        "format": "table",
        "file": "study.jsonl",
        "line": 1,
        "line_endings": {"crlf": 1, "cr": 1},
    }


@given(st.lists(st.sampled_from(["a", "b", "\r", "\n", "é", "😀", " "]), max_size=60).map("".join))
def test_line_ending_normalization_is_idempotent_and_leaves_no_cr(text):
    once, crlf, cr = normalize_line_endings(text)
    assert "\r" not in once
    assert normalize_line_endings(once) == (once, 0, 0)
    assert len(once) == len(text) - crlf and crlf == text.count("\r\n") and cr == text.count("\r") - crlf
    # Nothing else changes: back to CRLF and CR where they were, the text is the original.
    assert once.replace("\n", "") == text.replace("\r", "").replace("\n", "")


@given(
    st.lists(st.sampled_from(["a", "b", "\r", "\n", "é", " "]), min_size=1, max_size=40).map("".join),
    st.data(),
)
def test_a_span_keeps_its_text_when_line_endings_are_normalized(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    removed = removed_before(text)
    new_start, new_end = start - bisect_left(removed, start), end - bisect_left(removed, end)
    normalized = normalize_line_endings(text)[0]
    inside = text[start:end]
    # A span that starts or ends between a CR and its LF keeps the LF (the CR is what goes).
    assert normalized[new_start:new_end] == normalize_line_endings(inside)[0] or (
        inside.startswith("\n") or inside.endswith("\r")
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "\r", "\n", "\r\n", " "]), max_size=30).map("".join))
def test_replay_of_an_imported_text_is_exact_with_the_textarea_s_text(text):
    """What the browser's textarea holds (LF only) is what import stored: the load event and a
    submit of it replay exactly, and no highlight is edited by loading it."""
    stored = normalize_line_endings(text)[0]
    textarea = text.replace("\r\n", "\n").replace("\r", "\n")
    events = wire([{"seq": 0, "t": 0, "k": "load", "data": textarea, "len": utf16_len(textarea)}])
    assert replay(stored, events, final_text=textarea).ok
    assert not any(e["edited"] for e in highlight_edits(stored, [(0, len(stored), "all")], events))


# --------------------------------------------------------------------------- one rule for ids


@pytest.mark.parametrize("odd", ["\u202e", "\u200b", "\u2066", "\t", "\u00a0"])
def test_an_item_id_with_an_invisible_character_is_refused_as_a_document_id_is(odd):
    with pytest.raises(ImportDataError) as item_id:
        _import(
            "ids", _jsonl({"external_id": "ok", "model_output": "m"}, {"external_id": f"a{odd}b", "model_output": "m"})
        )
    with pytest.raises(ImportDataError) as document_id:
        _import("ids", _jsonl({"external_id": "ok", "model_output": "m", "document": f"a{odd}b"}))
    code = f"U+{ord(odd):04X}"
    assert str(item_id.value).startswith(
        f"items.jsonl, line 2, field 'external_id': the item id holds an invisible or control character, {code}"
    )
    assert str(document_id.value).startswith(
        f"items.jsonl, line 1, field 'document': the document id holds an invisible or control character, {code}"
    )
    assert not Item.objects.exists()


def test_the_items_api_refuses_the_same_id(admin_client):
    project = Project.objects.create(name="api")
    response = admin_client.post(
        f"/api/projects/{project.pk}/items/create/",
        data=json.dumps({"items": [{"external_id": "x\u202ey", "model_output": "m"}]}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "the item id holds an invisible or control character, U+202E" in response.json()["detail"]
    assert not Item.objects.exists()


@given(st.text(st.characters(blacklist_characters="\x00"), min_size=1, max_size=20))
def test_one_rule_decides_item_and_document_ids(value):
    item_problem = id_problem(value, what="item id", max_chars=255)
    try:
        document_id(value, origin=Origin("f", 1))
        document_ok = True
    except ImportDataError:
        document_ok = False
    # The document id is stripped first; on the same (stripped) value both rules agree.
    if value == value.strip():
        assert (item_problem is None) == document_ok
