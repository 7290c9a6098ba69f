"""The event export as CRITT TPR-DB keystroke (KD) tables (metrics/exports_critt.py; docs/events.md).

Hand-made logs with known rows; the live post-edit's table read back with the standard library's csv
reader, as a TPR-DB table is read (tab-separated, a header line)."""

import csv
import io
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotations.api.serializers_editor import event_from_wire
from metrics.exports_critt import KD_COLUMNS, kd_rows, kd_table
from metrics.exports_events import EventExportSpec, PostEditHead, event_export_stream
from tests.annotations.test_process import IME_WIRE, Log
from tests.metrics.test_export_events import _live

START = datetime(2026, 1, 1, tzinfo=UTC)


def head(original: str, pages=("p1",), gap_s: float = 60.0) -> PostEditHead:
    visits = {n: (page, START + timedelta(seconds=gap_s * n)) for n, page in enumerate(pages)}
    return PostEditHead(
        id=7, external_id="seg 1", annotator="ann", condition="", origin="live", practice=False,
        original=original, text="", visits=visits,
    )  # fmt: skip


def table(original: str, log: Log, pages=("p1",)) -> list[tuple]:
    offsets = {page: round(60_000 * n) for n, page in enumerate(pages)}
    rows = kd_rows("Study X", head(original, pages), log.events(), offsets)
    # Id, Time, Type, Cur, Char, Pause: the columns that vary within a session.
    return [(row[0], row[6], row[7], row[8], row[9], row[10]) for row in rows]


def test_typing_backspace_and_a_typed_over_selection_give_ins_and_del_rows():
    log = Log("ab").type("cd", gap=1000).backspace(gap=500).type("X", at=0, gap=250)
    assert table("ab", log) == [
        (1, 1000, "Ins", 2, "c", 1000),
        (2, 2000, "Ins", 3, "d", 1000),
        (3, 2500, "Del", 3, "d", 500),
        (4, 2750, "Ins", 0, "X", 250),
    ]


def test_a_paste_and_an_undo_are_one_row_each_with_all_their_characters():
    log = Log("one").paste(" two", at=3, gap=300).history("one", "historyUndo", gap=700)
    assert table("one", log) == [(1, 300, "Ins", 3, " two", 300), (2, 1000, "Del", 3, " two", 700)]


def test_an_ime_composition_is_one_insertion_of_its_committed_text():
    events = [event_from_wire(dict(event, seq=seq), "p1") for seq, event in enumerate(IME_WIRE)]
    rows = kd_rows("S", head("「」"), events, {"p1": 0})
    assert [(row[6], row[7], row[8], row[9]) for row in rows] == [(4, "Ins", 1, "日本")]


def test_a_second_page_load_continues_the_sessions_time():
    log = Log("ab").type("c", gap=400)
    log.reload()
    log.type("d", gap=250)
    assert table("ab", log, pages=("p1", "p2")) == [
        (1, 400, "Ins", 2, "c", 400),
        (2, 60_250, "Ins", 3, "d", 59_850),
    ]


def test_cells_with_tabs_and_line_breaks_read_back_whole():
    log = Log("").type("a\tb\n", gap=100)
    rows = kd_rows("S", head(""), log.events(), {"p1": 0})
    read = list(csv.reader(io.StringIO(kd_table(rows)), delimiter="\t"))
    assert read[0] == list(KD_COLUMNS)
    assert [line[9] for line in read[1:]] == ["a", "\t", "b", "\n"]


@pytest.mark.django_db
def test_the_export_of_a_live_post_edit_reads_back_as_its_kd_table(annotator, client_as, tmp_path):
    live = _live(annotator, external_id="s1")
    project = live.assignment.item.project
    body = b"".join(event_export_stream(EventExportSpec(project), "critt-kd"))
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        name = f"s1__{annotator.username}__{live.pk}.kd"
        assert archive.namelist() == [name]
        read = list(csv.DictReader(io.StringIO(archive.read(name).decode("utf-8")), delimiter="\t"))
    session = f"s1__{annotator.username}__{live.pk}"
    # "This are a test." -> select "are" (5..8), type "i" at 1,020 ms and "s" at 1,420 ms.
    assert read == [
        {"Id": "1", "Study": project.name, "Session": session, "StudySession": f"{project.name}@{session}",
         "Part": annotator.username, "Text": "s1", "Time": "1020", "Type": "Del", "Cur": "5", "Char": "are",
         "Pause": "1020"},
        {"Id": "2", "Study": project.name, "Session": session, "StudySession": f"{project.name}@{session}",
         "Part": annotator.username, "Text": "s1", "Time": "1020", "Type": "Ins", "Cur": "5", "Char": "i",
         "Pause": "0"},
        {"Id": "3", "Study": project.name, "Session": session, "StudySession": f"{project.name}@{session}",
         "Part": annotator.username, "Text": "s1", "Time": "1420", "Type": "Ins", "Cur": "6", "Char": "s",
         "Pause": "400"},
    ]  # fmt: skip
    out = tmp_path / "kd.zip"
    call_command("export", project=project.name, fmt="critt-kd", output=str(out), events=True, stdout=io.StringIO())
    assert out.read_bytes() == body
    with pytest.raises(CommandError, match="critt-kd is binary"):
        call_command("export", project=project.name, fmt="critt-kd", output="-", events=True)
    api = reverse("api-project-events", kwargs={"project_id": project.pk}) + "?format=critt-kd"
    response = client_as("researcher").get(api)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert b"".join(response.streaming_content) == body
    assert client_as("anna").get(api).status_code == 403
