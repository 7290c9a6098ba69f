"""Issue 18's attacks on crowd completion codes (section 4) and on imports and the editor (section 5),
replayed against a throwaway database; prints what each attack got.

    python -m editlab.benchmarks.validity_crowd_imports [--database-url URL]

Uses only interfaces older than the fixes (join link, Start, the editor's endpoints, import_items,
highlight_edits), so the same file measures the code before them: run it from another checkout with
PYTHONPATH pointing there. Results: editlab/benchmarks/results/validity_crowd_imports.md.
"""

import argparse
import json
from datetime import timedelta
from urllib.parse import urlencode

from editlab.benchmarks.support import print_run

PID = "5f8e9a0b1c2d3e4f5a6b7c8d"
FULL_WIDTH = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})


def _study(name: str):
    from annotations.models import Item, Project
    from annotations.services.projects import project_create

    project = project_create(name=name)
    project.conditions = [{"name": "a", "output": "sysA", "highlights": False}]
    project.design = Project.DESIGN_LATIN_SQUARE
    project.save(update_fields=["conditions", "design"])
    for d in range(2):
        Item.objects.create(
            project=project,
            external_id=f"d{d}",
            model_output="m",
            outputs={"sysA": f"Output {d}."},
            document=f"doc{d}",
            document_position=0,
            position=d,
        )
    return project


def _join_url(link, pid: str) -> str:
    return f"{link.path()}?{urlencode({'PROLIFIC_PID': pid, 'STUDY_ID': 's', 'SESSION_ID': 'x'})}"


def _post(client, target: str, payload: dict):
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return client.post(target, data=body, content_type="application/json")


def _editor_round(client, user, item) -> str:
    """load event, draft and submit of the item's own text: their statuses."""
    from django.urls import reverse

    from annotations.editing.lifecycle import post_edit_open
    from annotations.models import Assignment
    from annotations.replay import utf16_len

    assignment = Assignment.objects.create(item=item, annotator=user)
    post_edit, visit = post_edit_open(assignment=assignment, user=user)
    text, page = post_edit.start_text, str(visit.page_id)
    load = {"seq": 0, "t": 0, "k": "load", "data": text, "len": utf16_len(text), "state": "visible"}
    answers = [
        _post(client, reverse("api-post-edit-events", args=[post_edit.pk]), {"page_id": page, "events": [load]}),
        _post(
            client, reverse("api-post-edit-draft", args=[post_edit.pk]), {"page_id": page, "text": text, "version": 0}
        ),
        _post(
            client,
            reverse("api-post-edit-submit", args=[post_edit.pk]),
            {"page_id": page, "text": text, "version": 1, "last_seq": 0},
        ),
    ]
    return f"load {answers[0].status_code}, draft {answers[1].status_code}, submit {answers[2].status_code}"


def run() -> list[str]:
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import Client
    from django.utils import timezone

    from annotations.editing.lifecycle import post_edit_open, post_edit_skip
    from annotations.highlights import highlight_edits
    from annotations.importers import import_items
    from annotations.importers.base import ImportDataError, InputFile
    from annotations.models import Assignment, Item, Participant
    from annotations.replay import utf16_len
    from annotations.roles import ANNOTATOR, set_role
    from annotations.services.join_links import join_link_open
    from annotations.services.studies import study_assign_latin_square  # noqa: F401 - present before and after

    lines = []
    editor = get_user_model().objects.create_user("measure-editor", password="pw-measure-1")
    set_role(editor, ANNOTATOR)
    client = Client(raise_request_exception=False)
    client.login(username="measure-editor", password="pw-measure-1")

    # 4a: skip every item with reason "x".
    link = join_link_open(
        project=_study("skip"), completion_code="C0DE1234", completion_url="https://app.prolific.com/c?cc={code}"
    )
    skipper = Client(REMOTE_ADDR="192.0.2.1")
    skipper.post(_join_url(link, "skipper"))
    user = Participant.objects.get(platform_id="skipper").user
    while (assignment := Assignment.objects.open_for(user).first()) is not None:
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        post_edit_skip(post_edit=post_edit, page_id=visit.page_id, reason="x")
    done = skipper.get("/participant/done/")
    got = (
        f"302 to {done['Location']}"
        if done.status_code == 302
        else f"{done.status_code}, code shown: {'C0DE1234' in done.content.decode()}"
    )
    lines.append(f"4a skip every item (reason x), /participant/done/: {got}")

    # 4b: one Prolific id spelled three ways.
    link = join_link_open(project=_study("spellings"), completion_code="C")
    for n, pid in enumerate((PID, PID.upper(), PID.translate(FULL_WIDTH))):
        Client(REMOTE_ADDR=f"192.0.2.{10 + n}").post(_join_url(link, pid))
    lines.append(f"4b one id as given, upper case, full-width: {link.participants.count()} participant(s)")

    # 4c: three made-up ids fill max_participants=3, idle for 31 minutes; the real participant.
    link = join_link_open(project=_study("fill"), completion_code="C", max_participants=3)
    for n in range(3):
        Client(REMOTE_ADDR=f"192.0.2.{20 + n}").post(_join_url(link, f"fake{n}"))
    Participant.objects.filter(platform_id__startswith="fake").update(joined_at=timezone.now() - timedelta(minutes=31))
    real = Client(REMOTE_ADDR="192.0.2.30").post(_join_url(link, PID))
    lines.append(
        f"4c 3 made-up ids idle 31 min fill max_participants=3; the real participant's Start: {real.status_code}"
    )

    # 5a: a 10 MB model output.
    huge = "x" * (10 * 1024 * 1024)
    data = (json.dumps({"external_id": "big", "model_output": huge}) + "\n").encode()
    try:
        import_items(project="big", fmt="table", files=[InputFile("items.jsonl", data)], create_project=True)
        lines.append(
            f"5a 10 MB model output: imported; then {_editor_round(client, editor, Item.objects.get(external_id='big'))}"
        )
    except ImportDataError as exc:
        lines.append(f"5a 10 MB model output: refused at import: {str(exc)[:120]}…")

    # 5b: CRLF in a model output.
    data = (json.dumps({"external_id": "crlf", "model_output": "line one\r\nline two"}) + "\n").encode()
    import_items(project="crlf", fmt="table", files=[InputFile("items.jsonl", data)], create_project=True)
    stored = Item.objects.get(external_id="crlf").model_output
    lines.append(
        f"5b 'line one\\r\\nline two': stored {stored!r}; CRs the textarea's LF text must edit: {stored.count(chr(13))}"
    )

    # 5c: U+202E in external_id.
    data = (json.dumps({"external_id": "a\u202eb", "model_output": "m"}) + "\n").encode()
    try:
        import_items(project="rlo", fmt="table", files=[InputFile("items.jsonl", data)], create_project=True)
        lines.append("5c U+202E in external_id: accepted")
    except ImportDataError as exc:
        lines.append(f"5c U+202E in external_id: refused: {exc}")

    # 5d: undo/redo and an untouched highlight.
    output = "The cat sat on teh mat."
    fixed = "The cat sat on the mat."
    log = [
        {"seq": 0, "t": 0, "k": "load", "data": output, "len": 23},
        {"seq": 1, "t": 10, "k": "beforeinput", "it": "insertText", "s": 15, "e": 18},
        {"seq": 2, "t": 11, "k": "input", "it": "insertText", "s": 18, "len": 23, "data": "the"},
        {"seq": 3, "t": 20, "k": "beforeinput", "it": "historyUndo", "s": 18, "e": 18},
        {"seq": 4, "t": 21, "k": "input", "it": "historyUndo", "s": 18, "len": 23, "data": output},
        {"seq": 5, "t": 30, "k": "beforeinput", "it": "historyRedo", "s": 18, "e": 18},
        {"seq": 6, "t": 31, "k": "input", "it": "historyRedo", "s": 18, "len": 23, "data": fixed},
    ]
    from annotations.api.serializers_editor import event_from_wire

    edits = highlight_edits(output, [(4, 7, "minor"), (15, 18, "major")], [event_from_wire(e, "") for e in log])
    lines.append(
        "5d edit 'teh', undo, redo: highlight 'cat' (untouched) edited="
        f"{edits[0]['edited']}, 'teh' edited={edits[1]['edited']}"
    )
    assert utf16_len(output) == 23

    # 5e: the database down.
    item = Item.objects.get(external_id="d0", project__name="skip")
    assignment = Assignment.objects.create(item=item, annotator=editor)
    up = connections["default"]
    settings = dict(up.settings_dict)
    if up.vendor == "postgresql":
        settings.update(HOST="127.0.0.1", PORT="1")
    else:
        settings["NAME"] = "/nonexistent-editlab-folder/db.sqlite3"
    connections["default"] = type(up)(settings, alias="default")
    try:
        answers = {
            "GET /edit/<id>/": client.get(f"/edit/{assignment.pk}/"),
            "POST /login/": Client(raise_request_exception=False).post("/login/", {"username": "a", "password": "b"}),
            "GET /api/assignments/": client.get("/api/assignments/"),
        }
    finally:
        connections["default"].close()
        connections["default"] = up
    shown = ", ".join(
        f"{name} {r.status_code} (Retry-After {r.get('Retry-After', '-')})" for name, r in answers.items()
    )
    lines.append(f"5e database down: {shown}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: temporary SQLite)")
    args = parser.parse_args()
    print_run(args.database_url, run)


if __name__ == "__main__":
    main()
