"""Cost of the editor's server side on a long synthetic editing session.

    python -m editlab.benchmarks.editing [--keys 5000] [--batch 200] [--database-url URL] [--output FILE]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url names an
empty PostgreSQL database), never the project's own. A consistent log (typing, Backspace,
Delete, arrows, select-and-type, each with its keydown/beforeinput/input) of --keys key presses
on a 1,500-character text is
1. posted to POST /api/post-edits/<id>/events/ in batches of --batch events (through the whole
   Django/DRF stack: session, parsing, validation, storage, gaps), then re-posted (all duplicates);
2. submitted through POST /api/post-edits/<id>/submit/ (effort derivation + replay of the stored log);
3. derived and replayed in memory (the pure functions alone);
4. shown on the admin replay page.
Prints a markdown table (and writes it to --output between markers, so re-runs replace it).
"""

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from editlab.benchmarks.support import result_file, setup_django, write_section


def markers(database: str) -> tuple[str, str]:
    """One pair per database, so a SQLite run and a PostgreSQL run both stay in the file."""
    name = database.lower()
    return f"<!-- benchmark:editing:{name}:start -->", f"<!-- benchmark:editing:{name}:end -->"


WORDS = "the a of translation model output edit fix word sentence meaning human effort measure".split()


def synthetic_session(text: str, keys: int, seed: int = 7) -> tuple[list[dict], str]:
    """A consistent event log of `keys` key presses on `text`, and the text it ends with."""
    rng = random.Random(seed)
    events: list[dict] = []
    t = 250.0
    caret = 0

    def add(**event) -> None:
        events.append({"seq": len(events), "t": round(t, 1), **event})

    add(k="load", data=text, len=len(text), state="visible")
    for _ in range(keys):
        t += rng.choice((60, 90, 120, 180, 250, 400, 900, 2500))
        roll = rng.random()
        if roll < 0.70:
            char = rng.choice("abcdefghijklmnopqrstuvwxyz      ,.0123456789")
            add(k="keydown", key=char, code="Key" + char.upper())
            add(k="beforeinput", it="insertText", s=caret, e=caret)
            text = text[:caret] + char + text[caret:]
            caret += 1
            add(k="input", it="insertText", s=caret, len=len(text), data=char)
        elif roll < 0.82 and caret > 0:
            add(k="keydown", key="Backspace", code="Backspace")
            add(k="beforeinput", it="deleteContentBackward", s=caret, e=caret)
            text = text[: caret - 1] + text[caret:]
            caret -= 1
            add(k="input", it="deleteContentBackward", s=caret, len=len(text))
        elif roll < 0.86 and caret < len(text):
            add(k="keydown", key="Delete", code="Delete")
            add(k="beforeinput", it="deleteContentForward", s=caret, e=caret)
            text = text[:caret] + text[caret + 1 :]
            add(k="input", it="deleteContentForward", s=caret, len=len(text))
        elif roll < 0.96:
            key = rng.choice(("ArrowLeft", "ArrowRight"))
            add(k="keydown", key=key, code=key)
            caret = max(0, caret - 1) if key == "ArrowLeft" else min(len(text), caret + 1)
            add(k="select", s=caret, e=caret, src="key")
        else:  # select a word with the mouse and type over it
            start = rng.randrange(0, max(1, len(text) - 8))
            end = start + rng.randint(1, 8)
            add(k="mousedown")
            add(k="select", s=start, e=end, src="mouse")
            word = rng.choice(WORDS)
            add(k="keydown", key=word[0], code="Key" + word[0].upper())
            add(k="beforeinput", it="insertText", s=start, e=end)
            text = text[:start] + word[0] + text[end:]
            caret = start + 1
            add(k="input", it="insertText", s=caret, len=len(text), data=word[0])
    t += 500
    add(k="keydown", key="Enter", code="Enter", mods=1)
    add(k="submit")
    return events, text


def run(keys: int, batch: int) -> dict:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from annotations.api.serializers_editor import event_from_wire
    from annotations.editing.lifecycle import post_edit_open
    from annotations.editing.logs import stored_log
    from annotations.effort import derive_effort
    from annotations.models import Assignment, Item, PostEdit, Project
    from annotations.replay import replay
    from annotations.roles import set_role

    rng = random.Random(1)
    original = " ".join(rng.choice(WORDS) for _ in range(400))[:1500]
    users = get_user_model()
    annotator = users.objects.create_user("bench-annotator", password="bench-password-1")
    set_role(annotator, "annotator")
    admin = users.objects.create_user("bench-admin", password="bench-password-1")
    set_role(admin, "admin")
    project = Project.objects.create(name=f"bench {time.time()}")
    item = Item.objects.create(project=project, external_id="1", model_output=original)
    assignment = Assignment.objects.create(item=item, annotator=annotator)
    # Opened an hour ago, so the server bound does not clip the synthetic session.
    post_edit, visit = post_edit_open(assignment=assignment, user=annotator, now=timezone.now() - timedelta(hours=3))
    events, final_text = synthetic_session(original, keys)

    client = Client()
    client.login(username="bench-annotator", password="bench-password-1")
    events_url = reverse("api-post-edit-events", args=[post_edit.pk])
    batches = [events[i : i + batch] for i in range(0, len(events), batch)]
    timings = []
    for chunk in batches:
        body = json.dumps({"page_id": str(visit.page_id), "events": chunk})
        started = time.perf_counter()
        response = client.post(events_url, data=body, content_type="application/json")
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content
    resend = []
    for chunk in batches[:10]:
        body = json.dumps({"page_id": str(visit.page_id), "events": chunk})
        started = time.perf_counter()
        response = client.post(events_url, data=body, content_type="application/json")
        resend.append(time.perf_counter() - started)
        assert response.json()["duplicates"] == len(chunk)

    started = time.perf_counter()
    response = client.post(
        reverse("api-post-edit-submit", args=[post_edit.pk]),
        data=json.dumps(
            {"page_id": str(visit.page_id), "text": final_text, "version": 0, "last_seq": events[-1]["seq"]}
        ),
        content_type="application/json",
    )
    submit_s = time.perf_counter() - started
    assert response.status_code == 200, response.content
    post_edit = PostEdit.objects.get(pk=post_edit.pk)
    assert post_edit.replay_ok, post_edit.replay_divergence

    log = [event_from_wire(event, str(visit.page_id)) for event in events]
    started = time.perf_counter()
    derive_effort(log, idle_threshold_ms=30_000)
    derive_s = time.perf_counter() - started
    started = time.perf_counter()
    assert replay(original, log, final_text=final_text).ok
    replay_s = time.perf_counter() - started
    started = time.perf_counter()
    stored_log(post_edit)
    load_s = time.perf_counter() - started

    admin_client = Client()
    admin_client.login(username="bench-admin", password="bench-password-1")
    started = time.perf_counter()
    page = admin_client.get(reverse("manage-post-edit-replay", args=[post_edit.pk]))
    page_s = time.perf_counter() - started
    assert page.status_code == 200

    return {
        "events": len(events),
        "keys": keys,
        "batch": batch,
        "batches": len(batches),
        "batch_median_ms": statistics.median(timings) * 1000,
        "batch_max_ms": max(timings) * 1000,
        "events_per_s": len(events) / sum(timings),
        "resend_median_ms": statistics.median(resend) * 1000,
        "submit_ms": submit_s * 1000,
        "load_ms": load_s * 1000,
        "derive_ms": derive_s * 1000,
        "replay_ms": replay_s * 1000,
        "page_ms": page_s * 1000,
        "page_kib": len(page.content) / 1024,
        "allkeys": post_edit.allkeys,
    }


def table(result: dict, database: str) -> str:
    r = result
    return "\n".join(
        [
            f"Measured with `python -m editlab.benchmarks.editing` ({database}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores shared with other jobs): a session of {r['keys']:,} key presses "
            f"= {r['events']:,} events on a 1,500-character text.",
            "",
            "| what | time |",
            "|---|---|",
            f"| POST events, batch of {r['batch']} (median / max over {r['batches']} batches) "
            f"| {r['batch_median_ms']:.1f} ms / {r['batch_max_ms']:.1f} ms ({r['events_per_s']:,.0f} events/s) |",
            f"| the same batch re-sent (all duplicates, median) | {r['resend_median_ms']:.1f} ms |",
            f"| POST submit (load the {r['events']:,} stored events, derive effort, replay, save) "
            f"| {r['submit_ms']:.0f} ms |",
            f"| of which: loading the stored log | {r['load_ms']:.0f} ms |",
            f"| derive_effort alone (pure) | {r['derive_ms']:.0f} ms |",
            f"| replay alone (pure) | {r['replay_ms']:.0f} ms |",
            f"| admin replay page (GET, {r['page_kib']:.0f} KiB) | {r['page_ms']:.0f} ms |",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--output", type=Path, default=result_file("editing"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        setup_django(args.database_url, Path(folder))
        result = run(args.keys, args.batch)
        database = "PostgreSQL" if args.database_url else "SQLite"
        text = table(result, database)
    print(text)
    if args.output:
        write_section(args.output, *markers(database), text)


if __name__ == "__main__":
    main()
