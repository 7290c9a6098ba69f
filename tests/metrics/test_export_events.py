"""The event export: one row per stored event, equal to the stored events, in every format and entry point."""

import csv
import io
import json
from datetime import timedelta

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_submit
from annotations.editing.logs import stored_log
from annotations.models import EditEvent, PostEdit
from annotations.replay import replay_texts
from metrics.exports_events import EventExportSpec, event_export_stream, event_rows
from tests.annotations.editing_helpers import EDITED, ORIGINAL, edit_log, open_item, wire
from tests.factories import EditEventFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

COLUMNS = [
    "post_edit", "external_id", "annotator", "condition", "origin", "practice",
    "visit", "seq", "t_ms", "received_at", "kind", "key", "code", "modifiers", "repeat", "input_type",
    "sel_start", "sel_end", "data", "length_after", "extra",
]  # fmt: skip


def _live(annotator, *, external_id: str, practice: bool = False, project=None) -> PostEdit:
    """A live post-edit made as the editor makes one: opened, its log ingested, submitted."""
    start = timezone.now() - timedelta(seconds=30)
    item = {"item__external_id": external_id, "item__practice": practice}
    if project is not None:
        item["item__project"] = project
    post_edit, visit = open_item(annotator, now=start, **item)
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(edit_log()), now=start)
    post_edit_submit(
        post_edit=post_edit, page_id=visit.page_id, text=EDITED, version=0, last_seq=10,
        now=start + timedelta(seconds=5),
    )  # fmt: skip
    post_edit.refresh_from_db()
    return post_edit


@pytest.fixture
def study(annotator):
    live = _live(annotator, external_id="s1")
    project = live.assignment.item.project
    practice = _live(annotator, external_id="warm-up", practice=True, project=project)
    simulated = SubmittedPostEditFactory(assignment__item__project=project, origin=PostEdit.SIMULATED)
    EditEventFactory(post_edit=simulated, seq=0)
    return project, live, practice


def _jsonl(spec: EventExportSpec) -> list[dict]:
    body = b"".join(event_export_stream(spec, "jsonl")).decode("utf-8")
    return [json.loads(line) for line in body.splitlines()]


def test_rows_equal_the_stored_events_of_a_live_post_edit(study, annotator):
    project, live, _ = study
    rows = _jsonl(EventExportSpec(project))
    stored = list(EditEvent.objects.filter(post_edit=live).order_by("seq"))
    assert len(rows) == len(stored) == 11
    page_id = str(live.visits.get().page_id)
    for row, event in zip(rows, stored, strict=True):
        assert list(row) == COLUMNS
        assert row == {
            "post_edit": live.pk,
            "external_id": "s1",
            "annotator": annotator.username,
            "condition": "",
            "origin": "live",
            "practice": False,
            "visit": page_id,
            "seq": event.seq,
            "t_ms": event.t_ms,
            "received_at": event.received_at.isoformat(),
            "kind": event.kind,
            "key": event.key,
            "code": event.code,
            "modifiers": event.modifiers,
            "repeat": event.repeat,
            "input_type": event.input_type,
            "sel_start": event.sel_start,
            "sel_end": event.sel_end,
            "data": event.data,
            "length_after": event.length_after,
            "extra": json.dumps(event.extra) if event.extra else "{}",
        }
    assert [r["kind"] for r in rows][:3] == ["load", "mousedown", "select"]
    assert rows[5] | {"received_at": None} == rows[5] | {
        "received_at": None, "input_type": "insertText", "sel_start": 6, "length_after": 14, "data": "i",
    }  # fmt: skip


def test_practice_items_follow_the_post_edit_exports_rule_and_simulated_edits_never_come(study):
    project, live, practice = study
    assert {r["post_edit"] for r in _jsonl(EventExportSpec(project))} == {live.pk}
    assert {r["post_edit"] for r in _jsonl(EventExportSpec(project, include_practice=True))} == {live.pk, practice.pk}


def test_with_text_gives_the_replayed_text_after_each_text_change(study):
    project, live, _ = study
    rows = _jsonl(EventExportSpec(project, with_text=True))
    texts = {row["seq"]: row["text_after"] for row in rows}
    assert texts[0] == ORIGINAL
    assert texts[5] == "This i a test."
    assert texts[8] == EDITED
    assert [seq for seq, text in texts.items() if text is not None] == [0, 5, 8]
    assert dict(replay_texts(ORIGINAL, stored_log(live))) == {s: t for s, t in texts.items() if t is not None}


def test_small_chunks_give_the_same_rows(study):
    project, _, _ = study
    spec = EventExportSpec(project, include_practice=True, with_text=True)
    whole = [row for rows in event_rows(spec) for row in rows]
    chunked = list(event_rows(spec, chunk_size=3))
    assert [row for rows in chunked for row in rows] == whole
    assert len(whole) == 22


def test_csv_and_parquet_carry_the_same_values(study):
    project, live, _ = study
    spec = EventExportSpec(project, with_text=True)
    rows = _jsonl(spec)
    table = pq.read_table(io.BytesIO(b"".join(event_export_stream(spec, "parquet"))))
    assert table.schema.metadata[b"editlab.events.schema"] == b"1"
    assert table.column_names == [*COLUMNS, "text_after"]
    parquet_rows = table.to_pylist()
    for row, got in zip(rows, parquet_rows, strict=True):
        assert got["received_at"].isoformat() == row["received_at"]
        assert {k: v for k, v in got.items() if k != "received_at"} == {
            k: v for k, v in row.items() if k != "received_at"
        }
    body = b"".join(event_export_stream(spec, "csv")).decode("utf-8")
    records = list(csv.DictReader(io.StringIO(body, newline="")))
    assert [r["seq"] for r in records] == [str(r["seq"]) for r in rows]
    assert records[0]["text_after"] == ORIGINAL and records[1]["text_after"] == ""
    assert records[5]["repeat"] == "false" and records[5]["sel_end"] == ""


def test_csv_guards_typed_formula_starts(annotator):
    post_edit = SubmittedPostEditFactory(assignment__annotator=annotator)
    EditEventFactory(post_edit=post_edit, seq=0, kind="keydown", key="=", data="=cmd()")
    spec = EventExportSpec(post_edit.assignment.item.project)
    record = next(csv.DictReader(io.StringIO(b"".join(event_export_stream(spec, "csv")).decode(), newline="")))
    assert (record["key"], record["data"]) == ("'=", "'=cmd()")
    assert _jsonl(spec)[0]["data"] == "=cmd()"


def test_export_command_writes_the_event_log(study, tmp_path):
    project, live, _ = study
    out = tmp_path / "events.jsonl"
    stdout = io.StringIO()
    call_command("export", project=project.name, fmt="jsonl", output=str(out), events=True, stdout=stdout)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(11))
    assert "1 post-edits" in stdout.getvalue()
    with pytest.raises(CommandError, match="--with-text goes with --events"):
        call_command("export", project=project.name, fmt="csv", output=str(out), with_text=True)
    with pytest.raises(CommandError, match="exports events"):
        call_command("export", project=project.name, fmt="idfx", output=str(out))
    with pytest.raises(CommandError, match="idfx is binary"):
        call_command("export", project=project.name, fmt="idfx", output="-", events=True)


def test_the_page_and_the_api_give_the_event_log_to_readers_only(study, client_as):
    project, _, _ = study
    page = reverse("metrics-export", kwargs={"project_id": project.pk}) + "?events=1&format=jsonl"
    api = reverse("api-project-events", kwargs={"project_id": project.pk}) + "?format=jsonl"
    for role in ("researcher", "admin"):
        for target in (page, api):
            response = client_as(role).get(target)
            assert response.status_code == 200, (role, target)
            assert len(b"".join(response.streaming_content).splitlines()) == 11
    for target in (page, api):
        assert client_as("anna").get(target).status_code == 403
    assert client_as("researcher").get(page.replace("jsonl", "xlsx")).status_code == 400
    response = client_as("researcher").get(api + "&with_text=perhaps")
    assert response.status_code == 400 and "with_text" in response.json()["detail"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.one_of(st.sampled_from(["1", "0", "yes", "", "\x00", "1e9", "NaN"]), st.text(max_size=12)),
    fmt=st.one_of(st.sampled_from(["csv", "jsonl", "parquet", "idfx", "CSV", "../x"]), st.text(max_size=8)),
    with_text=st.one_of(st.sampled_from(["1", "true", "-1", "inf"]), st.text(max_size=8)),
)
def test_hostile_options_are_refused_with_a_message_never_a_crash(study, client_as, events, fmt, with_text):
    project, _, _ = study
    target = reverse("metrics-export", kwargs={"project_id": project.pk})
    response = client_as("researcher").get(target, {"events": events, "format": fmt, "with_text": with_text})
    assert response.status_code in (200, 400)
    if response.status_code == 400:
        assert response.content.decode().strip()
    else:
        b"".join(response.streaming_content)
    api = reverse("api-project-events", kwargs={"project_id": project.pk})
    response = client_as("researcher").get(api, {"format": fmt, "with_text": with_text})
    assert response.status_code in (200, 400)
