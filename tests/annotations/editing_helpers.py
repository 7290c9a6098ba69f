"""Shared helpers of the editor server tests: open an item, post to the endpoints, a real edit log."""

import json
from datetime import datetime

from django.test import Client
from django.urls import reverse

from annotations.api.serializers_editor import event_from_wire
from annotations.editing.lifecycle import post_edit_open
from annotations.log_event import LogEvent
from annotations.models import PostEdit, Visit
from tests.factories import AssignmentFactory

ORIGINAL = "This are a test."
EDITED = "This is a test."


def open_item(
    annotator, *, model_output: str = ORIGINAL, now: datetime | None = None, **item
) -> tuple[PostEdit, Visit]:
    assignment = AssignmentFactory(annotator=annotator, item__model_output=model_output, **item)
    return post_edit_open(assignment=assignment, user=annotator, now=now)


def url(name: str, post_edit: PostEdit | int) -> str:
    pk = post_edit if isinstance(post_edit, int) else post_edit.pk
    return reverse(f"api-post-edit-{name}", args=[pk])


def post_json(client: Client, target: str, payload) -> "object":
    return client.post(target, data=json.dumps(payload), content_type="application/json")


def edit_log(start_seq: int = 0, t0: float = 120.0) -> list[dict]:
    """ "This are a test." -> "This is a test.": select "are", type "is", Ctrl+Enter (11 events)."""
    events = [
        {"t": 0, "k": "load", "data": ORIGINAL, "len": 16},
        {"t": 400, "k": "mousedown"},
        {"t": 500, "k": "select", "s": 5, "e": 8, "src": "mouse"},
        {"t": 900, "k": "keydown", "key": "i", "code": "KeyI"},
        {"t": 901, "k": "beforeinput", "it": "insertText", "s": 5, "e": 8},
        {"t": 902, "k": "input", "it": "insertText", "s": 6, "len": 14, "data": "i"},
        {"t": 1300, "k": "keydown", "key": "s", "code": "KeyS"},
        {"t": 1301, "k": "beforeinput", "it": "insertText", "s": 6, "e": 6},
        {"t": 1302, "k": "input", "it": "insertText", "s": 7, "len": 15, "data": "s"},
        {"t": 2500, "k": "keydown", "key": "Enter", "code": "Enter", "mods": 1},
        {"t": 2501, "k": "submit"},
    ]
    return [dict(event, seq=start_seq + n, t=t0 + event["t"]) for n, event in enumerate(events)]


def send(client: Client, post_edit: PostEdit, visit: Visit, events: list[dict]):
    return post_json(client, url("events", post_edit), {"page_id": str(visit.page_id), "events": events})


def wire(events: list[dict], page: str = "") -> list[LogEvent]:
    """Contract EVENT dicts as the events serializer hands them to the services (of page load `page`)."""
    return [event_from_wire(event, page) for event in events]
