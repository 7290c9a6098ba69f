"""The effort-inflation attacks of issue 18 §1, run against the submit path, and the cost of the submit's checks.

    python -m editlab.benchmarks.effort_attacks [--database-url URL] [--events 20000] [--repeat 5]

Each attack is posted as its scripted client would post it (the events API in batches of at most
EDITLAB_EVENTS_MAX_PER_BATCH, then submit, through Django's test client with a real session), and
the stored values of the submitted post-edit are printed. Then the pure part of the submit (replay
and derive_effort over a consistent typing session of --events events, editlab.benchmarks.load.session)
is timed: CPU time per event and per 20-event batch, median of --repeat runs. Without
--database-url a throwaway SQLite file is used. The attack logs are plain functions
(attack_streams) the tests replay too. Runs on any version of the code (it passes the replay's
findings that the installed derive_effort accepts).
"""

import argparse
import inspect
import json
import os
import platform
import random
import secrets
import statistics
import tempfile
import time
from typing import Any

from editlab.benchmarks.support import production_settings

START_TEXT = "abc"


def flood_a_backspace(pairs: int = 3000, span_ms: float = 300.0) -> list[dict]:
    """`pairs` x (a, Backspace), each typing and erasing for real, every event inside span_ms: the text ends unchanged."""
    events: list[dict] = [{"t": 0, "k": "load", "data": START_TEXT, "len": 3}]
    end = len(START_TEXT)
    for _ in range(pairs):
        events += [
            {"k": "keydown", "key": "a", "code": "KeyA"},
            {"k": "beforeinput", "it": "insertText", "s": end, "e": end},
            {"k": "input", "it": "insertText", "s": end + 1, "len": end + 1, "data": "a"},
            {"k": "keydown", "key": "Backspace", "code": "Backspace"},
            {"k": "beforeinput", "it": "deleteContentBackward", "s": end, "e": end + 1},
            {"k": "input", "it": "deleteContentBackward", "s": end, "len": end},
        ]
    events.append({"k": "submit"})
    return _timed(events, span_ms)


def ime_flood(letters: int = 5000, span_ms: float = 9.0) -> list[dict]:
    """One composition committing `letters` letters, then one Backspace over them: 10 events."""
    text = "x" * letters
    end = len(START_TEXT)
    events: list[dict] = [
        {"k": "load", "data": START_TEXT, "len": end},
        {"k": "compositionstart", "data": ""},
        {"k": "compositionupdate", "data": text},
        {"k": "beforeinput", "it": "insertCompositionText", "s": end, "e": end},
        {"k": "input", "it": "insertCompositionText", "s": end + letters, "len": end + letters, "data": text},
        {"k": "compositionend", "data": text},
        {"k": "keydown", "key": "Backspace", "code": "Backspace"},
        {"k": "beforeinput", "it": "deleteContentBackward", "s": end, "e": end + letters},
        {"k": "input", "it": "deleteContentBackward", "s": end, "len": end},
        {"k": "submit"},
    ]
    return _timed(events, span_ms)


def command_flood(copies: int = 2000, arrows: int = 1990, undos: int = 5, span_ms: float = 64.0) -> list[dict]:
    """`copies` copy events (of "abc"), `arrows` ArrowLeft keydowns and `undos` Ctrl+Z with nothing to undo."""
    events: list[dict] = [{"k": "load", "data": START_TEXT, "len": 3}]
    events += [{"k": "copy", "data": START_TEXT}] * copies
    events += [{"k": "keydown", "key": "ArrowLeft", "code": "ArrowLeft"}] * arrows
    events += [{"k": "keydown", "key": "z", "code": "KeyZ", "mods": 1}] * undos
    events.append({"k": "submit"})
    return _timed(events, span_ms)


def _timed(events: list[dict], span_ms: float) -> list[dict]:
    step = span_ms / (len(events) - 1)
    return [dict(event, seq=n, t=round(n * step, 3)) for n, event in enumerate(events)]


def attack_streams() -> dict[str, list[dict]]:
    return {
        "3,000 x (a, Backspace) in 300 ms": flood_a_backspace(),
        "IME: 5,000 letters + 1 Backspace in 9 ms": ime_flood(),
        "2,000 copy + 1,990 ArrowLeft + 5 no-op Ctrl+Z in 64 ms": command_flood(),
    }


SHOWN = (
    "keystrokes",
    "allkeys",
    "letters",
    "erase",
    "navigation",
    "copy",
    "undo_redo",
    "uncorroborated_keys",
    "wall_ms",
)


def run_attacks() -> list[dict]:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    from annotations.editing.lifecycle import post_edit_open
    from annotations.models import Assignment, Item, PostEdit, Project
    from annotations.roles import ANNOTATOR, set_role

    call_command("migrate", verbosity=0)
    name = "effort-attacks-" + secrets.token_hex(3)
    user = get_user_model().objects.create_user(name, password=secrets.token_urlsafe(16))
    set_role(user, ANNOTATOR)
    project = Project.objects.create(name=name)
    client = Client()
    client.force_login(user)
    size = settings.EDITLAB_EVENTS_MAX_PER_BATCH
    rows = []
    for n, (label, events) in enumerate(attack_streams().items()):
        item = Item.objects.create(project=project, external_id=str(n), model_output=START_TEXT)
        assignment = Assignment.objects.create(item=item, annotator=user)
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        for start in range(0, len(events), size):
            body = {"page_id": str(visit.page_id), "events": events[start : start + size]}
            response = client.post(
                reverse("api-post-edit-events", args=[post_edit.pk]), json.dumps(body), content_type="application/json"
            )
            if response.status_code != 200:
                raise RuntimeError(f"{label}: events {response.status_code} {response.content[:300]!r}")
        submitted = {"page_id": str(visit.page_id), "text": START_TEXT, "version": 0, "last_seq": len(events) - 1}
        response = client.post(
            reverse("api-post-edit-submit", args=[post_edit.pk]), json.dumps(submitted), content_type="application/json"
        )
        if response.status_code != 200:
            raise RuntimeError(f"{label}: submit {response.status_code} {response.content[:300]!r}")
        stored = PostEdit.objects.get(pk=post_edit.pk)
        rows.append(
            {
                "attack": label,
                "events": len(events),
                **{field: getattr(stored, field) for field in SHOWN},
                "flags": " ".join(stored.flags) or "(none)",
                "replay_ok": stored.replay_ok,
                "definition_version": stored.definition_version,
            }
        )
    return rows


def submit_cost(events: int, repeat: int) -> dict:
    """CPU time of the submit's pure part (replay + derive_effort) over one consistent typing log."""
    from annotations.api.serializers_editor import event_from_wire
    from annotations.effort import derive_effort
    from annotations.replay import replay
    from editlab.benchmarks.load.session import TypingSession, item_text

    rng = random.Random(1)
    original = item_text(rng)
    session = TypingSession(original, next_seq=0, rng=rng)
    wire = session.load(5.0)
    while len(wire) < events:
        wire.extend(session.type_keys(keys=10, until_t=session.last_t + 3000))
    wire.extend(session.finish(session.last_t + 400))
    log = [event_from_wire(event, "page") for event in wire]
    accepted = inspect.signature(derive_effort).parameters
    replay_s, derive_s = [], []
    for _ in range(repeat):
        started = time.process_time()
        result = replay(original, log, final_text=session.text)
        replayed = time.process_time()
        findings: dict[str, Any] = {"committed_compositions": result.committed_compositions}
        if "noop_inputs" in accepted:
            findings["noop_inputs"] = result.noop_inputs
        derive_effort(log, idle_threshold_ms=30_000, **findings)
        derive_s.append(time.process_time() - replayed)
        replay_s.append(replayed - started)
    replay_ms, derive_ms = 1000 * statistics.median(replay_s), 1000 * statistics.median(derive_s)
    return {
        "events": len(log),
        "replay_ms": replay_ms,
        "derive_ms": derive_ms,
        "us_per_event": 1000 * (replay_ms + derive_ms) / len(log),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="an empty database (migrated here); default: a throwaway SQLite file")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    url = args.database_url
    if url is None:
        url = "sqlite:///" + os.path.join(tempfile.mkdtemp(prefix="effort-attacks-"), "db.sqlite3")
        os.environ["EDITLAB_ALLOW_SQLITE"] = "1"
    os.environ.update(production_settings(url))
    os.environ["ALLOWED_HOSTS"] = "testserver"
    rows = run_attacks()
    cost = submit_cost(args.events, args.repeat)
    lines = ["| attack | " + " | ".join(SHOWN) + " | flags | replay_ok | version |", "|---" * (len(SHOWN) + 4) + "|"]
    for row in rows:
        values = " | ".join(f"{row[field]:,}" if isinstance(row[field], int) else str(row[field]) for field in SHOWN)
        lines.append(
            f"| {row['attack']} | {values} | {row['flags']} | {row['replay_ok']} | {row['definition_version']} |"
        )
    lines.append("")
    lines.append(
        f"Submit's pure part over a {cost['events']:,}-event typing log (CPU, median of {args.repeat}): "
        f"replay {cost['replay_ms']:.1f} ms + derive_effort {cost['derive_ms']:.1f} ms, "
        f"{cost['us_per_event']:.2f} µs per event, {20 * cost['us_per_event'] / 1000:.3f} ms per 20-event batch "
        f"({platform.python_implementation()} {platform.python_version()}, load average {os.getloadavg()[0]:.2f})."
    )
    text = "\n".join(lines)
    print(text)


if __name__ == "__main__":
    main()
