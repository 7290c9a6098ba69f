"""IDFX: published logs import as finished post-edits that replay exactly; our IDFX export reads back.

The files are real ScriptLog IDFX logs published with the WTA tool (tests/annotations/data/idfx/README.md).
`wta_final_text` is an independent reader: the WTA tool's rules for ScriptLog IDFX (its EventFactory
and actions), over the standard library's ElementTree rather than editlab's SAX reader; it is checked
against the corpus' published final text before it judges our export.
"""

import gzip
import io
import xml.etree.ElementTree as ET
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_submit
from annotations.editing.logs import stored_log
from annotations.importers import ImportDataError, idfx, import_items
from annotations.importers.base import InputFile
from annotations.models import EditEvent, Item, PostEdit
from annotations.replay import replay
from metrics.exports_events import EventExportSpec, event_export_stream
from tests.annotations.editing_helpers import open_item, wire

DATA = Path(__file__).parent / "data" / "idfx"
NAVIGATION = {"VK_LEFT", "VK_RIGHT", "VK_UP", "VK_DOWN", "VK_END", "VK_HOME"}


def published(stem: str) -> bytes:
    return gzip.decompress((DATA / f"{stem}.idfx.gz").read_bytes())


def final_text(stem: str) -> str:
    return (DATA / f"{stem.replace('_il_', '_ft_')}.txt").read_text(encoding="utf-8")


def wta_final_text(data: bytes) -> str:
    """The text WTA's ScriptLog rules rebuild from an IDFX log (positions as string indices)."""
    root = ET.fromstring(data.replace(b"&#x8;", b""))  # WTA reads through lxml, which accepts &#x8;
    events = [e for e in root.iter("event") if e.get("type") in ("keyboard", "replacement", "insert")]
    text: list[str] = []
    for n, event in enumerate(events):
        word = next(p for p in event.iter("part") if p.get("type") == "wordlog")
        if event.get("type") == "keyboard":
            if n + 1 < len(events) and events[n + 1].get("type") == "replacement":
                continue  # the replacement that follows says what the key did
            win = next(p for p in event.iter("part") if p.get("type") == "winlog")
            key, value = win.findtext("key", ""), win.findtext("value", "")
            position = int(word.findtext("position", "0"))
            if key == "VK_BACK":
                del text[max(position - 1, 0) : position]
            elif key == "VK_DELETE":
                del text[position : position + 1]
            elif key not in NAVIGATION:
                text[position:position] = list(value)
        elif event.get("type") == "replacement":
            start, end = int(word.findtext("start", "0")), int(word.findtext("end", "0"))
            text[start:end] = list(word.findtext("newtext", ""))
        else:
            before = word.findtext("before", "")
            start = int(word.findtext("position", "0")) - len(before)
            text[start:start] = list(before)
    return "".join(text)


def test_the_independent_reader_rebuilds_the_published_final_texts():
    for stem in ("J_il_1", "A1_2022RI1_il_2"):
        assert wta_final_text(published(stem)) == final_text(stem)


def test_parsing_a_published_log_rebuilds_its_start_and_final_text_and_replays_exactly():
    plan = idfx.parse(InputFile(name="A1_2022RI1_il_2.idfx", data=published("A1_2022RI1_il_2")))
    (item,), (post_edit,) = plan.items, plan.post_edits
    # The item is named after the file, the annotator after the log's participant.
    assert item.external_id == "A1_2022RI1_il_2" and post_edit.annotator == "2022RI1_il_2"
    assert item.model_output.startswith("Die Sprache ist ein Instrument,") and len(item.model_output) == 332
    assert post_edit.text == final_text("A1_2022RI1_il_2")
    log = plan.logs[("A1_2022RI1_il_2", "2022RI1_il_2")]
    assert replay(item.model_output, log, final_text=post_edit.text).ok
    assert log[0].kind == "load" and log[0].data == item.model_output


@pytest.mark.django_db
def test_import_items_stores_a_finished_post_edit_with_its_log_and_effort(tmp_path):
    path = tmp_path / "J_il_1.idfx"
    path.write_bytes(published("J_il_1"))
    report = import_items(project="writing", fmt="idfx", path=path, create_project=True)
    assert (report.items_created, report.post_edits_created) == (1, 1)
    post_edit = PostEdit.objects.get()
    assert post_edit.origin == PostEdit.IMPORTED and post_edit.origin_detail["format"] == "idfx"
    assert post_edit.assignment.item.model_output == "" and post_edit.text == final_text("J_il_1")
    assert post_edit.replay_ok is True
    log = stored_log(post_edit)
    assert replay(post_edit.start_text, log, final_text=post_edit.text).ok
    assert [e.seq for e in log] == list(range(len(log)))
    # Effort from the log: the file's 48 Backspaces and 998 typed characters, each corroborated by its input.
    assert (post_edit.erase, post_edit.visible, post_edit.uncorroborated_keys) == (48, 998, 0)
    assert post_edit.wall_ms > 60_000 and post_edit.pauses_2000_count > 0
    # The same file again: nothing new, the log kept once.
    count = EditEvent.objects.count()
    import_items(project="writing", fmt="idfx", path=path)
    assert (PostEdit.objects.count(), EditEvent.objects.count()) == (1, count)


def _exported_idfx(project, **spec) -> dict[str, bytes]:
    body = b"".join(event_export_stream(EventExportSpec(project, **spec), "idfx"))
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.django_db
def test_an_imported_log_exports_as_idfx_that_both_readers_read_back(tmp_path):
    path = tmp_path / "A1_2022RI1_il_2.idfx"
    path.write_bytes(published("A1_2022RI1_il_2"))
    import_items(project="writing", fmt="idfx", path=path, create_project=True)
    post_edit = PostEdit.objects.get()
    (name, document), *_ = _exported_idfx(post_edit.assignment.item.project).items()
    assert name == f"A1_2022RI1_il_2__2022RI1_il_2__{post_edit.pk}.idfx"
    assert wta_final_text(document) == final_text("A1_2022RI1_il_2")
    again = idfx.parse(InputFile(name="again.idfx", data=document))
    assert again.items[0].model_output == post_edit.start_text
    assert again.post_edits[0].text == post_edit.text


@pytest.mark.django_db
def test_a_live_post_edit_exports_as_idfx_that_the_independent_reader_reads_back(annotator):
    """Select and retype, a paste, Backspace, Delete, a carriage return: each written and read back."""
    original = "Teh cat sat."
    log = [
        {"t": 0, "k": "load", "data": original, "len": 12},
        {"t": 10, "k": "select", "s": 0, "e": 3},
        {"t": 20, "k": "keydown", "key": "T", "code": "KeyT"},
        {"t": 21, "k": "beforeinput", "it": "insertText", "s": 0, "e": 3},
        {"t": 22, "k": "input", "it": "insertText", "s": 1, "len": 10, "data": "T"},
        {"t": 30, "k": "keydown", "key": "h", "code": "KeyH"},
        {"t": 31, "k": "beforeinput", "it": "insertText", "s": 1, "e": 1},
        {"t": 32, "k": "input", "it": "insertText", "s": 2, "len": 11, "data": "h"},
        {"t": 40, "k": "keydown", "key": "e", "code": "KeyE"},
        {"t": 41, "k": "beforeinput", "it": "insertText", "s": 2, "e": 2},
        {"t": 42, "k": "input", "it": "insertText", "s": 3, "len": 12, "data": "e"},
        {"t": 50, "k": "keydown", "key": "End", "code": "End"},
        {"t": 60, "k": "paste", "data": " It\r purred."},
        {"t": 61, "k": "beforeinput", "it": "insertFromPaste", "s": 12, "e": 12},
        {"t": 62, "k": "input", "it": "insertFromPaste", "s": 24, "len": 24, "data": " It\r purred."},
        {"t": 70, "k": "keydown", "key": "Backspace", "code": "Backspace"},
        {"t": 71, "k": "beforeinput", "it": "deleteContentBackward", "s": 23, "e": 24},
        {"t": 72, "k": "input", "it": "deleteContentBackward", "s": 23, "len": 23},
        {"t": 80, "k": "keydown", "key": "Home", "code": "Home"},
        {"t": 90, "k": "keydown", "key": "Delete", "code": "Delete"},
        {"t": 91, "k": "beforeinput", "it": "deleteContentForward", "s": 0, "e": 0},
        {"t": 92, "k": "input", "it": "deleteContentForward", "s": 0, "len": 22},
    ]
    events = [dict(event, seq=n, t=1000 + event["t"]) for n, event in enumerate(log)]
    final = "he cat sat. It\r purred"
    start = timezone.now() - timedelta(seconds=30)
    post_edit, visit = open_item(annotator, model_output=original, now=start)
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(events), now=start)
    post_edit_submit(
        post_edit=post_edit, page_id=visit.page_id, text=final, version=0, last_seq=len(events) - 1,
        now=start + timedelta(seconds=5),
    )  # fmt: skip
    post_edit.refresh_from_db()
    assert post_edit.replay_ok is True
    (document,) = _exported_idfx(post_edit.assignment.item.project).values()
    assert wta_final_text(document) == final
    root = ET.fromstring(document)
    keys = [e.findtext("part[@type='winlog']/key") for e in root.iter("event") if e.get("type") == "keyboard"]
    assert keys == ["VK_T", "VK_H", "VK_E", "VK_END", "NONE", "VK_BACK", "VK_HOME", "VK_DELETE"]
    assert [e.get("type") for e in root.iter("event")][:3] == ["insert", "keyboard", "replacement"]
    back = idfx.parse(InputFile(name="live.idfx", data=document))
    assert (back.items[0].model_output, back.post_edits[0].text) == (original, final)


# ------------------------------------------------------------------ refusals: file and line, nothing stored

BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE log [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
]>
<log><event id="0" type="keyboard"><part type="winlog"><value>&c;</value></part></event></log>
"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE log [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<log><event id="0" type="insert"><part type="wordlog"><position>0</position><before>&secret;</before></part></event></log>
"""


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _last_line(data: bytes) -> int:
    return data.count(b"\n") + 1


def _event_line(data: bytes, offset: int) -> int:
    """The line of the <event> element around `offset` (refusals name the event's line)."""
    return _line_at(data, data.rindex(b"<event ", 0, offset))


def _cut_after_event(data: bytes, event_id: int) -> bytes:
    return data[: data.index(f'<event id="{event_id}"'.encode())]


def _backspace_past_the_end(data: bytes) -> bytes:
    at = data.index(b"<key>VK_BACK</key>")
    start = data.rindex(b"<position>", 0, at)
    end = data.index(b"</position>", start)
    return data[:start] + b"<position>99999" + data[end:]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        pytest.param(BOMB, 2, "declares a DTD or entities", id="entity-expansion"),
        pytest.param(EXTERNAL, 2, "declares a DTD or entities", id="external-entity"),
        pytest.param(b"VK_END" + published("J_il_1"), 1, "not well-formed XML", id="bytes-before-the-declaration"),
        pytest.param(_cut_after_event(published("J_il_1"), 40), _last_line, "not well-formed XML", id="truncated"),
        pytest.param(
            published("J_il_1").replace(b"<value>deu</value>", b"<value>d\xe9u</value>", 1),
            lambda data: _line_at(data, data.index(b"\xe9")),
            "is not UTF-8",
            id="latin-1-bytes",
        ),
        pytest.param(
            published("J_il_1").replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"', 1),
            1,
            "declares encoding 'ISO-8859-1'",
            id="declared-latin-1",
        ),
        pytest.param(
            _backspace_past_the_end(published("J_il_1")),
            lambda data: _event_line(data, data.index(b"<position>99999")),
            "lies outside the text",
            id="no-replay",
        ),
        pytest.param(
            published("J_il_1").replace(b"<position>3</position>", b"<position>3e9</position>", 1),
            lambda data: _event_line(data, data.index(b"<position>3e9")),
            "position must be a whole number",
            id="position-not-a-number",
        ),
        pytest.param(b'<?xml version="1.0"?><log><meta/></log>', 1, "holds no <event> element", id="no-events"),
    ],
)
def test_hostile_files_are_refused_with_file_and_line_and_nothing_is_stored(tmp_path, content, line, message):
    if callable(line):
        line = line(content)
    path = tmp_path / "hostile.idfx"
    path.write_bytes(content)
    with pytest.raises(ImportDataError, match=message) as refused:
        import_items(project="writing", fmt="idfx", path=path, create_project=True)
    assert (refused.value.file, refused.value.line) == (str(path), line)
    assert (Item.objects.count(), PostEdit.objects.count(), EditEvent.objects.count()) == (0, 0, 0)


@pytest.mark.django_db
def test_a_1_gb_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.idfx"
    with path.open("wb") as handle:
        handle.truncate(1024**3)  # sparse: a gigabyte on paper, nothing on disk
    with pytest.raises(ImportDataError, match="over the import limit"):
        import_items(project="writing", fmt="idfx", path=path, create_project=True)
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_the_import_and_export_commands_take_idfx(tmp_path):
    path = tmp_path / "J_il_1.idfx"
    path.write_bytes(published("J_il_1"))
    out = io.StringIO()
    call_command("import_items", str(path), project="writing", fmt="idfx", create_project=True, stdout=out)
    assert "post-edits created: 1" in out.getvalue()
    target = tmp_path / "events.idfx.zip"
    call_command("export", project="writing", fmt="idfx", events=True, output=str(target), stdout=io.StringIO())
    with zipfile.ZipFile(target) as archive:
        (name,) = archive.namelist()
        assert wta_final_text(archive.read(name)) == final_text("J_il_1")


NUMBER_FIELDS = ("position", "startTime", "start", "end")


@settings(max_examples=60, deadline=None)
@given(
    field=st.sampled_from(NUMBER_FIELDS),
    value=st.one_of(
        st.sampled_from(["-1", "NaN", "inf", "1e309", "9" * 40, "0x10", " 7 ", "", "\u0663"]),
        st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="<&"), max_size=10),
    ),
)
def test_hostile_numbers_are_refused_by_line_or_read_never_a_crash(field, value):
    data = published("J_il_1")
    tag = field.encode()
    at = data.find(b"<" + tag + b">")
    if at < 0:  # J has no replacement: give it one with the hostile value
        data = data.replace(
            b"</log>",
            b'<event id="9999" type="replacement"><part type="wordlog"><start>0</start><end>0</end>'
            b"<newtext>x</newtext></part></event></log>",
        )
        at = data.find(b"<" + tag + b">")
    end = data.index(b"</" + tag + b">", at)
    hostile = data[: at + len(tag) + 2] + value.encode() + data[end:]
    try:
        plan = idfx.parse(InputFile(name="h.idfx", data=hostile))
    except ImportDataError as refused:
        assert refused.line is not None and refused.file == "h.idfx"
        return
    log = next(iter(plan.logs.values()))
    assert replay(plan.items[0].model_output, log, final_text=plan.post_edits[0].text).ok
