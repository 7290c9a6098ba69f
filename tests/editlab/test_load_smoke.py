"""The load benchmark's client logic (editlab/benchmarks/load/), kept light for CI.

The real benchmark runs 200 annotators against gunicorn + PostgreSQL for two minutes; here the same
client (TypingSession batches, the aiohttp annotators, the exactly-once check) drives a few
annotators against the live test server for a couple of seconds, and the check is shown to catch
lost, unexpected and underived data.
"""

import asyncio
import random
from datetime import timedelta
from itertools import pairwise

import pytest
from django.db import connection

from annotations.api.serializers_editor import event_from_wire
from annotations.editing.errors import SeqConflict
from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_open
from annotations.effort import count_keys
from annotations.models import Assignment, EditEvent, Visit
from annotations.replay import replay
from editlab.benchmarks.load.checker import check_exactly_once, seed
from editlab.benchmarks.load.client import MAX_BATCH_EVENTS, Ledger, LoadPlan, run_load
from editlab.benchmarks.load.report import percentile
from editlab.benchmarks.load.session import TypingSession, item_text
from tests.annotations.editing_helpers import wire


def _session_log(batches: int, seed_value: int = 3) -> tuple[TypingSession, str, list[list[dict]]]:
    rng = random.Random(seed_value)
    original = item_text(rng)
    session = TypingSession(original, next_seq=0, rng=rng)
    chunks = [session.load(5.0)]
    for n in range(1, batches + 1):
        chunks.append(session.type_keys(keys=rng.randint(4, 10), until_t=n * 2000.0))
    chunks.append(session.finish(batches * 2000.0 + 400))
    return session, original, chunks


# ---------------------------------------------------------------- the typing session (pure)


def test_a_typing_session_replays_to_its_text_and_counts_the_keys_it_typed():
    session, original, chunks = _session_log(batches=200)
    log = [event_from_wire(event, "page") for chunk in chunks for event in chunk]

    result = replay(original, log, final_text=session.text)
    counts = count_keys(log)

    assert result.ok, result.divergence
    assert session.text != original
    typed = session.counts
    assert {name: counts[name] for name in ("letters", "digits", "spaces", "symbols", "erase", "navigation")} == {
        "letters": typed.letters,
        "digits": typed.digits,
        "spaces": typed.spaces,
        "symbols": typed.symbols,
        "erase": typed.erase,
        "navigation": typed.navigation,
    }
    assert typed.keystrokes == typed.letters + typed.digits + typed.spaces + typed.symbols + typed.erase > 0
    assert typed.allkeys == typed.keystrokes + typed.navigation


def test_its_batches_look_like_the_loggers():
    _, _, chunks = _session_log(batches=300, seed_value=11)
    batches = chunks[1:-1]
    sizes = [len(batch) for batch in batches]
    events = [event for chunk in chunks for event in chunk]

    assert [event["seq"] for event in events] == list(range(len(events)))
    assert all(later["t"] >= earlier["t"] for earlier, later in pairwise(events))
    assert 10 <= sum(sizes) / len(sizes) <= 30
    assert max(sizes) <= MAX_BATCH_EVENTS
    kinds = {event["k"] for event in events}
    assert {"load", "keydown", "beforeinput", "input", "select", "mousedown", "submit"} <= kinds


def test_percentile_is_the_nearest_rank():
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 95) == 7.0


# ---------------------------------------------------------------- the client against a live server


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_load_client_stores_every_event_exactly_once_and_derives_every_submit(site):
    accounts = seed(annotators=3, items_each=5, seed_value=4)
    plan = LoadPlan(
        # A fixed amount of work, not a clock: 3 annotators x 2 items x 5 batches whatever the
        # machine's speed; the duration only caps a run that hangs.
        duration_s=120.0,
        batch_interval_s=0.05,
        batches_per_item=5,
        items_per_annotator=2,
        draft_every=3,
        resend=0.3,
        concurrency=1 if connection.vendor == "sqlite" else 3,
        login_concurrency=1,
        timeout_s=20.0,
        seed=5,
    )

    result = asyncio.run(run_load(site, accounts, plan))
    check = check_exactly_once(result.ledger)

    assert result.errors == []
    tally = result.ledger.tally
    assert tally.batches >= 3 * 2 * 5
    assert tally.resent >= 3
    assert tally.resent_not_duplicates == 0
    assert tally.fresh_with_duplicates == 0
    assert tally.unsent_events == 0
    assert check.ok, check.problems
    assert check.events_acked == check.events_stored == EditEvent.objects.count() > 0
    assert check.lost == check.unexpected == check.duplicated == check.with_gaps == 0
    assert check.submitted == tally.submits == 3 * 2
    assert Assignment.objects.filter(status=Assignment.SUBMITTED).count() == check.submitted
    endpoints = {sample.endpoint for sample in result.samples}
    assert {"login", "editor page", "events", "draft", "submit"} <= endpoints


# ---------------------------------------------------------------- the check catches what it must


@pytest.fixture
def ingested(db):
    """One annotator's post-edit with 3 batches stored through the service, and the ledger the client
    would have kept for it."""
    account = seed(annotators=1, items_each=1, seed_value=9)[0]
    assignment = Assignment.objects.get(pk=account.first_assignment_id)
    post_edit, visit = post_edit_open(assignment=assignment, user=assignment.annotator)
    session = TypingSession(post_edit.draft_text, next_seq=0, rng=random.Random(2))
    ledger = Ledger()
    record = ledger.post_edit(post_edit.pk)
    chunks = (session.load(1.0), session.type_keys(keys=6, until_t=900.0), session.type_keys(keys=6, until_t=1800.0))
    for chunk in chunks:
        post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(chunk))
        record.acked |= {event["seq"] for event in chunk}
    return post_edit, ledger, session


def test_the_check_passes_when_the_database_holds_what_was_acknowledged(ingested):
    post_edit, ledger, _ = ingested
    check = check_exactly_once(ledger)
    assert check.ok
    assert check.events_acked == check.events_stored == post_edit.events.count()


def test_the_check_reports_a_lost_event(ingested):
    post_edit, ledger, _ = ingested
    post_edit.events.filter(seq=4).delete()

    check = check_exactly_once(ledger)

    assert not check.ok
    assert check.lost == 1
    assert check.with_gaps == 1
    assert "first seq 4" in check.problems[0]


def test_the_check_reports_an_event_the_client_never_had_acknowledged(ingested):
    _, ledger, _ = ingested
    record = next(iter(ledger.post_edits.values()))
    top = max(record.acked)
    record.acked.discard(top)

    check = check_exactly_once(ledger)

    assert check.unexpected == 1
    assert not check.ok
    record.uncertain.add(top)  # sent, answer lost: may be stored, not an error
    assert check_exactly_once(ledger).ok


def test_the_check_reports_a_submit_that_the_database_does_not_hold(ingested):
    _, ledger, session = ingested
    record = next(iter(ledger.post_edits.values()))
    record.submitted = True
    record.counts = session.counts
    record.text = session.text

    check = check_exactly_once(ledger)

    assert check.not_submitted_in_db == 1
    assert not check.ok


# ---------------------------------------------------------------- the ingestion changes the benchmark led to


def test_a_refused_batch_leaves_the_page_loads_last_seen_time_alone(ingested):
    """Ingestion marks the page load seen first (one UPDATE ... RETURNING); a refused batch rolls it back."""
    post_edit, _, _ = ingested
    _, other_tab = post_edit_open(assignment=post_edit.assignment, user=post_edit.assignment.annotator)
    seen = Visit.objects.get(pk=other_tab.pk).last_seen_at
    taken = [{"seq": 0, "t": 5.0, "k": "focus"}]  # seq 0 belongs to the first tab's page load

    with pytest.raises(SeqConflict):
        post_edit_ingest_events(
            post_edit=post_edit, page_id=other_tab.page_id, events=wire(taken), now=seen + timedelta(seconds=30)
        )

    assert Visit.objects.get(pk=other_tab.pk).last_seen_at == seen
    assert not EditEvent.objects.filter(visit=other_tab).exists()


def test_a_batch_spanning_stored_and_new_seqs_stores_only_the_new_ones(ingested):
    post_edit, ledger, _ = ingested
    visit = post_edit.visits.get()
    top = max(next(iter(ledger.post_edits.values())).acked)
    batch = [{"seq": top - 1, "t": 5000.0, "k": "focus"}, {"seq": top + 3, "t": 5001.0, "k": "blur"}]
    stored_before = post_edit.events.get(seq=top - 1).kind

    result = post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(batch))

    assert (result.stored, result.duplicates, result.max_seq) == (1, 1, top + 3)
    assert result.gaps == [[top + 1, top + 2]]
    assert post_edit.events.get(seq=top - 1).kind == stored_before
    assert post_edit.events.get(seq=top + 3).kind == "blur"
