"""The event export of a post-edit made in a real browser (Playwright driving Debian's Chromium):
its rows are the stored events, one for one, and the text after its last change is the submitted text."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import EditEvent
from tests.browser_support import BROWSER_DB, assert_submitted, db_lock, logged_in_page, open_editor, submit_with_keys

pytestmark = [pytest.mark.browser, BROWSER_DB]


def test_the_event_exports_rows_equal_the_stored_events_of_a_live_post_edit(
    context, site, annotator, researcher, item_for
):
    assignment = item_for("The cat sat.")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.locator("#post-edit-text").click()
    keys = page.keyboard
    keys.press("End")
    keys.press("Backspace")  # "The cat sat"
    keys.type(" down")  # "The cat sat down"
    keys.press("Home")
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.press("Shift+ArrowRight")
    keys.type("A")  # "A cat sat down"
    keys.press("End")
    keys.type(".")
    submit_with_keys(page)
    post_edit, seqs = assert_submitted(assignment, "A cat sat down.")

    client = Client()
    client.force_login(researcher)
    url = reverse("api-project-events", kwargs={"project_id": assignment.item.project_id})
    with db_lock():
        response = client.get(url, {"format": "jsonl", "with_text": "1"})
        body = b"".join(response.streaming_content).decode("utf-8")
        stored = list(EditEvent.objects.filter(post_edit=post_edit).select_related("visit").order_by("seq"))
    assert response.status_code == 200
    rows = [json.loads(line) for line in body.splitlines()]
    assert [row["seq"] for row in rows] == seqs == [event.seq for event in stored]
    for row, event in zip(rows, stored, strict=True):
        assert (row["post_edit"], row["annotator"], row["origin"], row["visit"]) == (
            post_edit.pk, annotator.username, "live", str(event.visit.page_id),
        )  # fmt: skip
        assert row["received_at"] == event.received_at.isoformat()
        assert {name: row[name] for name in ("kind", "key", "code", "modifiers", "repeat", "input_type")} == {
            "kind": event.kind, "key": event.key, "code": event.code, "modifiers": event.modifiers,
            "repeat": event.repeat, "input_type": event.input_type,
        }  # fmt: skip
        assert (row["t_ms"], row["sel_start"], row["sel_end"], row["data"], row["length_after"]) == (
            event.t_ms, event.sel_start, event.sel_end, event.data, event.length_after,
        )  # fmt: skip
    typed = [row["data"] for row in rows if row["kind"] == "input" and row["input_type"] == "insertText"]
    assert typed == [" ", "d", "o", "w", "n", "A", "."]
    assert [row["key"] for row in rows if row["kind"] == "keydown"][:2] == ["End", "Backspace"]
    texts = [row["text_after"] for row in rows if row["text_after"] is not None]
    assert texts[0] == "The cat sat." and texts[-1] == "A cat sat down."
