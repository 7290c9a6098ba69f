"""The load benchmark: many annotators at once against PostgreSQL + gunicorn.

    python -m editlab.benchmarks.load [--annotators 200] [--duration 120] [--workers 4]
                                      [--worker-class sync|gthread] [--threads 1]
                                      [--batch-interval 2] [--submit-interval 60] [--draft-every 5]
                                      [--resend 0.02] [--login-concurrency 4] [--seed 1]
                                      [--output FILE] [--profile FILE]
    python -m editlab.benchmarks.load --annotators 5 --duration 10        # smoke run

1. Starts a throwaway PostgreSQL cluster (editlab/scripts/postgres) on a free loopback port,
   migrates it and creates one project with --annotators annotator accounts, each holding one batch
   of items (annotations.services: batch_make + batch_assign).
2. Starts the app under gunicorn on 127.0.0.1 with --workers workers (DEBUG=0, a throwaway
   SECRET_KEY, plain HTTP on loopback: SECURE_SSL_REDIRECT=0, SESSION_COOKIE_SECURE=0,
   CSRF_COOKIE_SECURE=0).
3. Warm-up, not measured: logs every annotator in (login form: session + CSRF cookies; PBKDF2 makes
   each login cost ~0.3 s of server CPU) and opens its first editor page (GET /edit/<id>/, config
   from the "editor-config" json_script), --login-concurrency at a time. Then drives them all for
   --duration seconds with a bounded asyncio client (aiohttp; one connection per annotator at
   most): each sends an event batch every --batch-interval seconds (10-30 keydown/beforeinput/
   input/select events of a
   consistent typing session, exactly as annotations/static/annotations/logger.js sends them),
   saves the draft every --draft-every batches, re-sends a fraction --resend of its batches (a
   retry after a lost answer: must come back as duplicates), and submits its item every
   --submit-interval seconds (first submits are spread over the first interval), then opens the
   next one. A failed request is retried like the logger does (backoff); every loop stops at the
   deadline, pending events get one last flush.
4. Reports requests/s and p50/p95/p99 latency per endpoint (client-side, and server-side from
   gunicorn's access log), errors, where the CPU went (app, PostgreSQL, this client, other
   processes) and what the offered load needs, when the slow batches happened and PostgreSQL's
   autovacuum runs; --profile FILE also samples the app server with py-spy (collapsed stacks).
5. Checks in the database that every event the server acknowledged is stored exactly once (per
   post-edit: the stored seqs are exactly the acknowledged ones, 0..n-1, no gaps), and that every
   submitted post-edit has its effort derived, with counts equal to the keys the client typed and
   a replay that matches the submitted text.

Traffic goes only to 127.0.0.1; PostgreSQL and gunicorn are stopped at the end, also on failure.
Exit status: 0 when there were no errors and no lost or duplicated event, else 1 (the p99 goal is
reported, not enforced: the load generator shares the machine).

The client half (TypingSession, run_load, check_exactly_once, seed) is importable: the test suite
drives it in-process against a live server (tests/editlab/test_load_smoke.py).
"""

import argparse
import asyncio
import json
import math
import os
import platform
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

import aiohttp

BASE_DIR = Path(__file__).resolve().parent.parent.parent
START, END = "<!-- benchmark:load:start -->", "<!-- benchmark:load:end -->"
EVENTS_GOAL_P99_MS = 200.0
MAX_BATCH_EVENTS = 500  # as the browser logger caps its batches
RETRY_MAX_S = 8.0
FLUSH_GRACE_S = 20.0
CONFIG_RE = re.compile(r'<script id="editor-config" type="application/json">(.*?)</script>', re.S)
CSRF_FIELD_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

LETTERS = "abcdefghijklmnopqrstuvwxyzéè"
DIGITS = "0123456789"
SYMBOLS = ",.;:!?-'()"
WORDS = (
    "the a of and to in is was for on that with as by at from this translation model output "
    "sentence meaning human effort measure word edit fix état naïve résumé quality fluent adequate"
).split()


# ---------------------------------------------------------------- the typing session (pure)


@dataclass
class KeyCounts:
    """The key classes the client typed, counted by what it chose to type (not by the server's rules)."""

    letters: int = 0
    digits: int = 0
    spaces: int = 0
    symbols: int = 0
    erase: int = 0
    navigation: int = 0

    @property
    def keystrokes(self) -> int:
        return self.letters + self.digits + self.spaces + self.symbols + self.erase

    @property
    def allkeys(self) -> int:
        return self.keystrokes + self.navigation


class TypingSession:
    """A consistent event log of one page load, produced batch by batch.

    Keeps the text and caret like the browser's textarea does, so the server's replay of the log
    gives exactly `text`. Offsets are str indices: the texts hold no astral characters, so they equal
    the contract's UTF-16 offsets.
    """

    def __init__(self, text: str, *, next_seq: int, rng: random.Random):
        self.text = text
        self.caret = 0
        self.next_seq = next_seq
        self.rng = rng
        self.counts = KeyCounts()
        self.last_t = 0.0

    def _event(self, t: float, **fields) -> dict:
        event = {"seq": self.next_seq, "t": round(t, 1), **fields}
        self.next_seq += 1
        self.last_t = max(self.last_t, event["t"])
        return event

    def load(self, t: float) -> list[dict]:
        """The page's first events: the text shown and the caret put at its start."""
        return [
            self._event(t, k="load", data=self.text, len=len(self.text), state="visible"),
            self._event(t, k="select", s=0, e=0, src="other"),
        ]

    def type_keys(self, *, keys: int, until_t: float) -> list[dict]:
        """`keys` key presses spread evenly between the last event and `until_t` (ms)."""
        start = self.last_t
        step = max(0.0, until_t - start) / (keys + 1)
        events: list[dict] = []
        for n in range(1, keys + 1):
            events.extend(self._key(start + n * step))
        return events

    def _key(self, t: float) -> list[dict]:
        roll = self.rng.random()
        if roll < 0.66:
            return self._type_char(t, *self._char())
        if roll < 0.76 and self.caret > 0:
            return self._backspace(t)
        if roll < 0.80 and self.caret < len(self.text):
            return self._delete(t)
        if roll < 0.96:
            return self._arrow(t)
        return self._select_and_type(t)

    def _char(self) -> tuple[str, str]:
        roll = self.rng.random()
        if roll < 0.75:
            return self.rng.choice(LETTERS), "letters"
        if roll < 0.90:
            return " ", "spaces"
        if roll < 0.95:
            return self.rng.choice(DIGITS), "digits"
        return self.rng.choice(SYMBOLS), "symbols"

    def _insert(self, t: float, char: str, start: int, end: int) -> list[dict]:
        before = self._event(t + 0.3, k="beforeinput", it="insertText", s=start, e=end)
        self.text = self.text[:start] + char + self.text[end:]
        self.caret = start + len(char)
        after = self._event(t + 0.6, k="input", it="insertText", s=self.caret, len=len(self.text), data=char)
        return [before, after]

    def _keydown(self, t: float, key: str) -> dict:
        code = {" ": "Space"}.get(key, key if len(key) > 1 else "Key" + key.upper())
        return self._event(t, k="keydown", key=key, code=code)

    def _type_char(self, t: float, char: str, kind: str) -> list[dict]:
        setattr(self.counts, kind, getattr(self.counts, kind) + 1)
        return [self._keydown(t, char), *self._insert(t, char, self.caret, self.caret)]

    def _backspace(self, t: float) -> list[dict]:
        self.counts.erase += 1
        events = [
            self._keydown(t, "Backspace"),
            self._event(t + 0.3, k="beforeinput", it="deleteContentBackward", s=self.caret, e=self.caret),
        ]
        self.text = self.text[: self.caret - 1] + self.text[self.caret :]
        self.caret -= 1
        events.append(self._event(t + 0.6, k="input", it="deleteContentBackward", s=self.caret, len=len(self.text)))
        return events

    def _delete(self, t: float) -> list[dict]:
        self.counts.erase += 1
        events = [
            self._keydown(t, "Delete"),
            self._event(t + 0.3, k="beforeinput", it="deleteContentForward", s=self.caret, e=self.caret),
        ]
        self.text = self.text[: self.caret] + self.text[self.caret + 1 :]
        events.append(self._event(t + 0.6, k="input", it="deleteContentForward", s=self.caret, len=len(self.text)))
        return events

    def _arrow(self, t: float) -> list[dict]:
        self.counts.navigation += 1
        key = self.rng.choice(("ArrowLeft", "ArrowRight", "ArrowRight"))
        self.caret = max(0, self.caret - 1) if key == "ArrowLeft" else min(len(self.text), self.caret + 1)
        return [self._keydown(t, key), self._event(t + 0.3, k="select", s=self.caret, e=self.caret, src="key")]

    def _select_and_type(self, t: float) -> list[dict]:
        """Select a few characters with the mouse and type a letter over them."""
        start = self.rng.randrange(0, max(1, len(self.text) - 6))
        end = min(len(self.text), start + self.rng.randint(1, 6))
        self.counts.letters += 1
        char = self.rng.choice(LETTERS)
        return [
            self._event(t, k="mousedown"),
            self._event(t + 0.1, k="select", s=start, e=end, src="mouse"),
            self._keydown(t + 0.2, char),
            *self._insert(t + 0.2, char, start, end),
        ]

    def finish(self, t: float) -> list[dict]:
        """Ctrl+Enter (a shortcut: counts in no key class) and the submit marker."""
        t = max(t, self.last_t)
        return [
            self._event(t, k="keydown", key="Enter", code="Enter", mods=1),
            self._event(t, k="submit"),
        ]


def item_text(rng: random.Random) -> str:
    """A model output of 150-500 characters."""
    target = rng.randint(150, 500)
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < target:
        words.append(rng.choice(WORDS))
    return (" ".join(words).capitalize() + ".")[:target]


# ---------------------------------------------------------------- what the client saw


@dataclass
class ClientPostEdit:
    """One post-edit as the client saw it: the seqs the server acknowledged, and what was typed."""

    post_edit_id: int
    acked: set[int] = field(default_factory=set)
    uncertain: set[int] = field(default_factory=set)  # last attempt failed without an answer
    counts: KeyCounts = field(default_factory=KeyCounts)
    text: str = ""
    submitted: bool = False


@dataclass
class Sample:
    endpoint: str
    phase: str
    ms: float
    status: int  # 0: no answer (connection error or timeout)
    ok: bool
    at: float = 0.0  # when the request was sent (time.perf_counter())


@dataclass
class ClientTally:
    ticks: int = 0  # typing batches (one per batch interval, when the server keeps up)
    batches: int = 0
    resent: int = 0
    resent_not_duplicates: int = 0  # a re-sent batch that was not answered as all duplicates
    fresh_with_duplicates: int = 0  # a first send answered with duplicates (it should store all)
    unsent_events: int = 0  # still pending at the end (the flush gave up)
    submits: int = 0
    opened: int = 0
    idle_annotators: int = 0  # ran out of items before the end


class Recorder:
    def __init__(self) -> None:
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self.phase = "login"

    def add(self, endpoint: str, ms: float, status: int, ok: bool, problem: str = "") -> None:
        self.samples.append(Sample(endpoint, self.phase, ms, status, ok, time.perf_counter() - ms / 1000))
        if not ok:
            self.errors.append(f"{endpoint}: {problem or status}")


@dataclass
class Ledger:
    post_edits: dict[int, ClientPostEdit] = field(default_factory=dict)
    tally: ClientTally = field(default_factory=ClientTally)

    def post_edit(self, pk: int) -> ClientPostEdit:
        return self.post_edits.setdefault(pk, ClientPostEdit(pk))


@dataclass
class Account:
    username: str
    password: str
    first_assignment_id: int


@dataclass
class Plan:
    duration_s: float = 120.0
    batch_interval_s: float = 2.0
    submit_interval_s: float = 60.0
    draft_every: int = 5
    resend: float = 0.02
    keys_per_batch: tuple[int, int] = (4, 10)
    concurrency: int = 200
    login_concurrency: int = 4
    timeout_s: float = 30.0
    seed: int = 1


@dataclass
class LoadResult:
    samples: list[Sample]
    errors: list[str]
    ledger: Ledger
    run_s: float
    login_s: float
    run_started: float = 0.0  # time.perf_counter() when the run phase began


# ---------------------------------------------------------------- one annotator over HTTP


class HttpFailure(Exception):
    pass


class Annotator:
    """One annotator's browser: cookies, the open editor page, its pending events."""

    def __init__(
        self,
        account: Account,
        *,
        http: aiohttp.ClientSession,
        recorder: Recorder,
        ledger: Ledger,
        plan: Plan,
        rng: random.Random,
    ):
        self.account = account
        self.http = http
        self.recorder = recorder
        self.ledger = ledger
        self.plan = plan
        self.rng = rng
        self.loop = asyncio.get_running_loop()
        self.config: dict = {}
        self.opened_at = 0.0
        self.session: TypingSession | None = None
        self.pending: list[dict] = []
        self.version = 0

    # -- transport

    async def call(self, endpoint: str, method: str, path: str, *, expect: int = 200, **kwargs) -> tuple[int, str]:
        started = time.perf_counter()
        try:
            async with self.http.request(method, path, allow_redirects=False, **kwargs) as response:
                body = await response.text()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            ms = (time.perf_counter() - started) * 1000
            self.recorder.add(endpoint, ms, 0, False, f"{type(exc).__name__}: {exc}")
            raise HttpFailure(str(exc)) from None
        ms = (time.perf_counter() - started) * 1000
        ok = status == expect
        self.recorder.add(endpoint, ms, status, ok, f"HTTP {status} {body[:200]!r}")
        if not ok:
            raise HttpFailure(f"{endpoint}: HTTP {status}")
        return status, body

    def _json_headers(self) -> dict:
        return {"Content-Type": "application/json", "X-CSRFToken": self.config["csrf_token"]}

    def now_ms(self) -> float:
        return (self.loop.time() - self.opened_at) * 1000

    # -- steps

    async def login(self) -> None:
        _, page = await self.call("login form", "GET", "/login/")
        token = CSRF_FIELD_RE.search(page)
        if not token:
            raise HttpFailure("the login page has no CSRF field")
        form = {
            "username": self.account.username,
            "password": self.account.password,
            "csrfmiddlewaretoken": token.group(1),
            "next": "/",
        }
        await self.call("login", "POST", "/login/", data=form, expect=302)

    async def open(self, path: str) -> None:
        _, page = await self.call("editor page", "GET", path)
        self.opened_at = self.loop.time()
        match = CONFIG_RE.search(page)
        if not match:
            raise HttpFailure(f"{path}: no editor-config on the page")
        self.config = json.loads(match.group(1))
        self.version = self.config["version"]
        self.session = TypingSession(self.config["draft"], next_seq=self.config["next_seq"], rng=self.rng)
        self.pending = self.session.load(self.now_ms())
        self.ledger.post_edit(self.config["post_edit_id"])
        self.ledger.tally.opened += 1

    async def send_pending(self) -> bool:
        """POST the pending events (one batch); True when the server acknowledged them."""
        if not self.pending:
            return True
        batch = self.pending[:MAX_BATCH_EVENTS]
        seqs = {event["seq"] for event in batch}
        record = self.ledger.post_edit(self.config["post_edit_id"])
        # Duplicates are legitimate only when an earlier attempt got no answer (stored, answer lost).
        retried = bool(record.uncertain & seqs)
        body = {"page_id": self.config["page_id"], "events": batch}
        try:
            _, answer = await self.call(
                "events", "POST", self.config["urls"]["events"], data=json.dumps(body), headers=self._json_headers()
            )
        except HttpFailure:
            record.uncertain |= seqs
            return False
        reply = json.loads(answer)
        record.uncertain -= seqs
        record.acked |= seqs
        self.ledger.tally.batches += 1
        if reply["stored"] + reply["duplicates"] != len(batch) or (reply["duplicates"] and not retried):
            self.ledger.tally.fresh_with_duplicates += 1
        del self.pending[: len(batch)]
        if self.plan.resend and self.rng.random() < self.plan.resend:
            await self.resend(body, len(batch))
        return True

    async def resend(self, body: dict, size: int) -> None:
        """The same batch again, as after a lost answer: stored once, answered as duplicates."""
        self.ledger.tally.resent += 1
        try:
            _, answer = await self.call(
                "events", "POST", self.config["urls"]["events"], data=json.dumps(body), headers=self._json_headers()
            )
        except HttpFailure:
            return
        reply = json.loads(answer)
        if reply["stored"] != 0 or reply["duplicates"] != size:
            self.ledger.tally.resent_not_duplicates += 1

    async def flush(self, until: float) -> bool:
        """Send until nothing is pending, retrying with backoff, but not past `until`."""
        failures = 0
        while self.pending:
            if await self.send_pending():
                failures = 0
                continue
            failures += 1
            wait = min(RETRY_MAX_S, 2 ** (failures - 1))
            if self.loop.time() + wait >= until:
                return False
            await asyncio.sleep(wait)
        return True

    async def save_draft(self) -> None:
        body = {"page_id": self.config["page_id"], "text": self.session.text, "version": self.version}
        try:
            _, answer = await self.call(
                "draft", "POST", self.config["urls"]["draft"], data=json.dumps(body), headers=self._json_headers()
            )
        except HttpFailure:
            return
        self.version = json.loads(answer)["version"]

    async def submit(self, until: float) -> str | None:
        """Flush, then submit (retried: it is idempotent); returns the next URL."""
        self.pending.extend(self.session.finish(self.now_ms()))
        if not await self.flush(until):
            return None
        body = {
            "page_id": self.config["page_id"],
            "text": self.session.text,
            "version": self.version,
            "last_seq": self.session.next_seq - 1,
        }
        for attempt in range(3):
            try:
                _, answer = await self.call(
                    "submit", "POST", self.config["urls"]["submit"], data=json.dumps(body), headers=self._json_headers()
                )
            except HttpFailure:
                await asyncio.sleep(2**attempt)
                continue
            record = self.ledger.post_edit(self.config["post_edit_id"])
            record.submitted = True
            record.counts = self.session.counts
            record.text = self.session.text
            self.ledger.tally.submits += 1
            return json.loads(answer)["next_url"]
        return None

    async def work(self, *, deadline: float) -> None:
        """Edit items until the deadline: a batch every interval, a submit every submit interval."""
        plan = self.plan
        loop = self.loop
        if self.session is None and not await self._open_with_retries(
            f"/edit/{self.account.first_assignment_id}/", deadline
        ):
            return
        now = loop.time()
        next_batch = now + self.rng.uniform(0, plan.batch_interval_s)
        submit_at = now + self.rng.uniform(0.25, 1.0) * plan.submit_interval_s
        batches_here = 0
        while True:
            wake = min(next_batch, submit_at, deadline)
            await asyncio.sleep(max(0.0, wake - loop.time()))
            now = loop.time()
            if now >= deadline:
                break
            if now >= submit_at:
                next_url = await self.submit(deadline)
                if not next_url or not next_url.startswith("/edit/"):
                    if next_url:
                        self.ledger.tally.idle_annotators += 1
                    return
                if not await self._open_with_retries(next_url, deadline):
                    return
                now = loop.time()
                submit_at = now + plan.submit_interval_s
                next_batch = now + plan.batch_interval_s
                batches_here = 0
                continue
            self.pending.extend(
                self.session.type_keys(keys=self.rng.randint(*plan.keys_per_batch), until_t=self.now_ms())
            )
            self.ledger.tally.ticks += 1
            if await self.send_pending():
                batches_here += 1
                if plan.draft_every and batches_here % plan.draft_every == 0:
                    await self.save_draft()
                next_batch += plan.batch_interval_s
            else:  # the logger's backoff: retry later, events stay pending
                next_batch = loop.time() + min(RETRY_MAX_S, plan.batch_interval_s)
            next_batch = max(next_batch, loop.time())
        if self.session is not None:
            await self.flush(deadline + FLUSH_GRACE_S)
            self.ledger.tally.unsent_events += len(self.pending)

    async def _open_with_retries(self, path: str, deadline: float) -> bool:
        for attempt in range(3):
            try:
                await self.open(path)
                return True
            except HttpFailure:
                if self.loop.time() + 2**attempt >= deadline:
                    return False
                await asyncio.sleep(2**attempt)
        return False


async def run_load(
    base_url: str, accounts: list[Account], plan: Plan, *, on_run_start: Callable[[], None] | None = None
) -> LoadResult:
    """Log every account in, then drive them all for plan.duration_s; returns what the client saw."""
    recorder = Recorder()
    ledger = Ledger()
    master = random.Random(plan.seed)
    connector = aiohttp.TCPConnector(limit=plan.concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=plan.timeout_s)
    sessions = [
        aiohttp.ClientSession(
            base_url=base_url,
            connector=connector,
            connector_owner=False,
            timeout=timeout,
            cookie_jar=aiohttp.CookieJar(unsafe=True),
        )
        for _ in accounts
    ]
    try:
        annotators = [
            Annotator(
                account,
                http=http,
                recorder=recorder,
                ledger=ledger,
                plan=plan,
                rng=random.Random(master.getrandbits(64)),
            )
            for account, http in zip(accounts, sessions, strict=True)
        ]
        started = time.perf_counter()
        gate = asyncio.Semaphore(plan.login_concurrency)

        async def login(annotator: Annotator) -> bool:
            # Log in and open the first item before the measured window: 200 clients started in
            # the same instant would otherwise open 200 editor pages at once, a burst no real
            # team produces, and its queue would be measured as the steady state.
            async with gate:
                try:
                    await annotator.login()
                    await annotator.open(f"/edit/{annotator.account.first_assignment_id}/")
                    return True
                except HttpFailure:
                    return False

        logged_in = await asyncio.gather(*(login(a) for a in annotators))
        login_s = time.perf_counter() - started
        recorder.phase = "run"
        if on_run_start is not None:
            on_run_start()
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        deadline = loop.time() + plan.duration_s
        await asyncio.gather(*(a.work(deadline=deadline) for a, ok in zip(annotators, logged_in, strict=True) if ok))
        run_s = time.perf_counter() - started
    finally:
        for http in sessions:
            await http.close()
        await connector.close()
    return LoadResult(recorder.samples, recorder.errors, ledger, run_s=run_s, login_s=login_s, run_started=started)


# ---------------------------------------------------------------- the database check (ORM)


@dataclass
class Check:
    post_edits: int = 0
    events_acked: int = 0
    events_stored: int = 0
    lost: int = 0  # acknowledged, not stored
    unexpected: int = 0  # stored, never acknowledged (and not in an unanswered attempt)
    duplicated: int = 0  # rows beyond one per (post-edit, seq)
    with_gaps: int = 0  # stored seqs not 0..n-1, or event_gaps recorded
    submitted: int = 0
    effort_missing: int = 0
    counts_differ: int = 0
    replay_failed: int = 0
    not_submitted_in_db: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.unexpected
            or self.duplicated
            or self.with_gaps
            or self.effort_missing
            or self.counts_differ
            or self.replay_failed
            or self.not_submitted_in_db
        )

    def note(self, problem: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(problem)


def check_exactly_once(ledger: Ledger) -> Check:
    """Compare the database with what the client had acknowledged (see the module docstring)."""
    from django.db.models import Count

    from annotations.models import Assignment, EditEvent, PostEdit

    check = Check(post_edits=len(ledger.post_edits))
    ids = list(ledger.post_edits)
    stored: dict[int, list[int]] = defaultdict(list)
    for chunk in range(0, len(ids), 500):
        rows = EditEvent.objects.filter(post_edit_id__in=ids[chunk : chunk + 500]).values_list("post_edit_id", "seq")
        for post_edit_id, seq in rows.iterator(chunk_size=20000):
            stored[post_edit_id].append(seq)
    repeated = (
        EditEvent.objects.filter(post_edit_id__in=ids)
        .values("post_edit_id", "seq")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    for row in repeated:
        check.duplicated += row["n"] - 1
        check.note(f"post-edit {row['post_edit_id']}: seq {row['seq']} stored {row['n']} times")
    post_edits = {pe.pk: pe for pe in PostEdit.objects.filter(pk__in=ids).select_related("assignment")}
    for pk, record in ledger.post_edits.items():
        seqs = stored.get(pk, [])
        distinct = set(seqs)
        check.events_acked += len(record.acked)
        check.events_stored += len(seqs)
        lost = record.acked - distinct
        unexpected = distinct - record.acked - record.uncertain
        if lost:
            check.lost += len(lost)
            check.note(f"post-edit {pk}: {len(lost)} acknowledged events missing, first seq {min(lost)}")
        if unexpected:
            check.unexpected += len(unexpected)
            check.note(f"post-edit {pk}: {len(unexpected)} events stored that the client never had acknowledged")
        post_edit = post_edits.get(pk)
        if distinct and distinct != set(range(max(distinct) + 1)) or (post_edit and post_edit.event_gaps):
            check.with_gaps += 1
            check.note(f"post-edit {pk}: gaps in the stored seqs ({post_edit.event_gaps if post_edit else '?'})")
        if record.submitted:
            check.submitted += 1
            _check_submitted(check, record, post_edit, Assignment)
    return check


def _check_submitted(check: Check, record: ClientPostEdit, post_edit, assignment_model) -> None:
    pk = record.post_edit_id
    if post_edit is None or post_edit.assignment.status != assignment_model.SUBMITTED:
        check.not_submitted_in_db += 1
        check.note(f"post-edit {pk}: submitted by the client, not submitted in the database")
        return
    effort = ("wall_ms", "active_ms", "reading_ms", "keystrokes", "allkeys", "letters", "erase", "navigation")
    missing = [name for name in effort if getattr(post_edit, name) is None]
    if missing or not post_edit.definition_version:
        check.effort_missing += 1
        check.note(f"post-edit {pk}: effort not derived ({', '.join(missing) or 'definition_version'})")
        return
    expected = record.counts
    got = {
        name: getattr(post_edit, name)
        for name in ("letters", "digits", "spaces", "symbols", "erase", "navigation", "keystrokes", "allkeys")
    }
    want = {
        **{name: getattr(expected, name) for name in ("letters", "digits", "spaces", "symbols", "erase", "navigation")},
        "keystrokes": expected.keystrokes,
        "allkeys": expected.allkeys,
    }
    if got != want:
        check.counts_differ += 1
        differing = {name: (got[name], want[name]) for name in want if got[name] != want[name]}
        check.note(f"post-edit {pk}: counts (stored, typed) differ: {differing}")
    if not post_edit.replay_ok or post_edit.text != record.text:
        check.replay_failed += 1
        check.note(f"post-edit {pk}: replay_ok={post_edit.replay_ok} {post_edit.replay_divergence}")


# ---------------------------------------------------------------- seeding (ORM)


def seed(*, annotators: int, items_each: int, seed_value: int = 1, prefix: str = "load") -> list[Account]:
    """One project; `annotators` annotator accounts, each assigned one batch of `items_each` items."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group

    from annotations.models import Assignment, Item
    from annotations.roles import ANNOTATOR
    from annotations.services.assignment import batch_assign
    from annotations.services.batches import batch_make
    from annotations.services.projects import project_create

    rng = random.Random(seed_value)
    password = "load-" + secrets.token_hex(8)
    hashed = make_password(password)  # one PBKDF2 run shared by all: seeding stays fast, logins stay real
    users_model = get_user_model()
    users = users_model.objects.bulk_create(
        [users_model(username=f"{prefix}{n:04d}", password=hashed) for n in range(annotators)]
    )
    Group.objects.get(name=ANNOTATOR).user_set.add(*users)
    project = project_create(
        name=f"{prefix} benchmark {secrets.token_hex(3)}",
        idle_threshold_s=30.0,
        guidelines="Fix the errors; keep the meaning.",
    )
    Item.objects.bulk_create(
        [
            Item(project=project, external_id=f"{n}", model_output=item_text(rng), position=n)
            for n in range(annotators * items_each)
        ],
        batch_size=2000,
    )
    batch_make(project=project, size=items_each)
    batch_assign(project=project, annotators=users, overlap=1)
    first: dict[int, int] = {}
    for assignment_id, annotator_id in Assignment.objects.filter(item__project=project).values_list(
        "pk", "annotator_id"
    ):
        first.setdefault(annotator_id, assignment_id)
    return [Account(user.username, password, first[user.pk]) for user in users]


# ---------------------------------------------------------------- reporting


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class EndpointStats:
    endpoint: str
    count: int
    per_s: float
    p50: float
    p95: float
    p99: float
    max: float
    errors: int


def endpoint_stats(samples: list[Sample], *, phase: str, seconds: float) -> list[EndpointStats]:
    grouped: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        if sample.phase == phase:
            grouped[sample.endpoint].append(sample)
    stats = []
    for endpoint, group in grouped.items():
        times = [s.ms for s in group if s.status]
        stats.append(
            EndpointStats(
                endpoint,
                len(group),
                len(group) / seconds if seconds else 0.0,
                percentile(times, 50),
                percentile(times, 95),
                percentile(times, 99),
                max(times, default=math.nan),
                sum(1 for s in group if not s.ok),
            )
        )
    order = ("events", "draft", "submit", "editor page", "login form", "login")
    return sorted(stats, key=lambda s: order.index(s.endpoint) if s.endpoint in order else len(order))


ACCESS_ENDPOINTS = (
    (re.compile(r"^POST /api/post-edits/\d+/events/$"), "events"),
    (re.compile(r"^POST /api/post-edits/\d+/draft/$"), "draft"),
    (re.compile(r"^POST /api/post-edits/\d+/submit/$"), "submit"),
    (re.compile(r"^GET /edit/\d+/$"), "editor page"),
)


def server_times(access_log: Path, offset: int) -> dict[str, list[float]]:
    """Server-side request times (ms) per endpoint from gunicorn's access log, from byte `offset`."""
    times: dict[str, list[float]] = defaultdict(list)
    if not access_log.exists():
        return times
    with access_log.open("rb") as handle:
        handle.seek(offset)
        for raw in handle:
            parts = raw.decode("utf-8", "replace").split()
            if len(parts) != 4:
                continue
            method, path, _status, micros = parts
            for pattern, name in ACCESS_ENDPOINTS:
                if pattern.match(f"{method} {path}"):
                    times[name].append(int(micros) / 1000)
                    break
    return times


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_environment(database_url: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DJANGO_SETTINGS_MODULE="editlab.settings",
        DATABASE_URL=database_url,
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_HSTS_SECONDS="0",
        LOG_LEVEL="WARNING",
        TASKS_BACKEND="immediate",
    )
    return env


class Postgres:
    """A throwaway cluster from editlab/scripts/postgres; stop() is safe to call twice."""

    script = BASE_DIR / "editlab" / "scripts" / "postgres"

    def __init__(self, folder: Path):
        self.folder = folder
        self.url = ""

    def start(self) -> str:
        result = subprocess.run(
            [str(self.script), "start", str(self.folder), str(free_port())], capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start: {result.stderr.strip()}")
        self.url = result.stdout.strip().splitlines()[-1]
        return self.url

    def pids(self) -> list[int]:
        pid_file = self.folder / "data" / "postmaster.pid"
        try:
            return [int(pid_file.read_text().split()[0])]
        except (OSError, ValueError, IndexError):
            return []

    def version(self) -> str:
        try:
            return (self.folder / "data" / "PG_VERSION").read_text().strip()
        except OSError:
            return "?"

    def stop(self) -> None:
        subprocess.run([str(self.script), "stop", str(self.folder)], capture_output=True, timeout=120)


class Gunicorn:
    def __init__(self, *, env: dict[str, str], workers: int, worker_class: str, threads: int, folder: Path):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.access_log = folder / "access.log"
        self.error_log = folder / "gunicorn.log"
        self.command = [
            sys.executable,
            "-m",
            "gunicorn",
            "editlab.wsgi:application",
            "--chdir",
            str(BASE_DIR),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--threads",
            str(threads),
            "--timeout",
            "60",
            "--graceful-timeout",
            "10",
            "--access-logfile",
            str(self.access_log),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
            "--error-logfile",
            str(self.error_log),
        ]
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, cwd=BASE_DIR, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.process.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/login/", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"gunicorn did not answer within 60 s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class CpuMeter:
    """CPU seconds spent by process trees (app server, PostgreSQL, this client) and by the whole machine."""

    def __init__(self, trees: dict[str, list[int]], *, alone: tuple[str, ...] = ()):
        import psutil

        self.alone = alone  # names measured without their children (the client: gunicorn is its child)

        self.psutil = psutil
        self.trees = trees
        self.start = self._snapshot()

    def _tree_seconds(self, pids: list[int], *, children: bool) -> float:
        total = 0.0
        for pid in pids:
            try:
                root = self.psutil.Process(pid)
                for process in [root, *(root.children(recursive=True) if children else [])]:
                    times = process.cpu_times()
                    total += times.user + times.system
                    if children:  # processes that already exited (PostgreSQL backends after
                        # CONN_MAX_AGE, a replaced worker) count in their waiting parent
                        total += times.children_user + times.children_system
            except self.psutil.Error:
                continue
        return total

    def _snapshot(self) -> dict[str, float]:
        machine = self.psutil.cpu_times()
        snapshot = {
            name: self._tree_seconds(pids, children=name not in self.alone) for name, pids in self.trees.items()
        }
        snapshot["machine busy"] = (
            machine.user + machine.system + machine.nice + getattr(machine, "irq", 0) + getattr(machine, "softirq", 0)
        )
        snapshot["wall"] = time.monotonic()
        return snapshot

    def stop(self) -> dict[str, float]:
        end = self._snapshot()
        used = {name: end[name] - self.start[name] for name in end}
        used["others"] = max(0.0, used["machine busy"] - sum(used[name] for name in self.trees))
        return used


class Profiler:
    """py-spy sampling the app server's processes during the run (--profile FILE: collapsed stacks)."""

    def __init__(self, pid: int, output: Path):
        self.output = output
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--subprocesses",
                "--rate",
                "100",
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


PROJECT_PREFIXES = ("annotations/", "editlab/", "metrics/")


def profile_summary(collapsed: Path, *, top: int = 25) -> str:
    """From py-spy's collapsed stacks: the project's functions by inclusive share of the app's CPU
    samples (counted once per stack), then the functions where the samples land (self share)."""
    inclusive: dict[str, int] = defaultdict(int)
    leaf: dict[str, int] = defaultdict(int)
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        names = [_frame_name(frame) for frame in stack.split(";") if not frame.startswith("process ")]
        if names:
            leaf[names[-1]] += count
        for name in set(names):
            if name.split("(")[-1].startswith(PROJECT_PREFIXES):
                inclusive[name] += count
    if not total:
        return "(no samples)"

    def lines(table: dict[str, int]) -> list[str]:
        rows = sorted(table.items(), key=lambda item: -item[1])[:top]
        return [f"{100 * count / total:5.1f}%  {name}" for name, count in rows]

    return "\n".join(
        [
            f"{total} samples; the project's functions (inclusive):",
            *lines(inclusive),
            "where the samples land (self):",
            *lines(leaf),
        ]
    )


def _frame_name(frame: str) -> str:
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({path.split('site-packages/')[-1].replace(str(BASE_DIR) + '/', '')})"


# ---------------------------------------------------------------- the benchmark


def _setup_django(database_url: str, env: dict[str, str]) -> None:
    os.environ.update(
        {
            key: env[key]
            for key in (
                "DJANGO_SETTINGS_MODULE",
                "DATABASE_URL",
                "DEBUG",
                "SECRET_KEY",
                "ALLOWED_HOSTS",
                "SECURE_SSL_REDIRECT",
                "SESSION_COOKIE_SECURE",
                "CSRF_COOKIE_SECURE",
                "SECURE_HSTS_SECONDS",
                "LOG_LEVEL",
                "TASKS_BACKEND",
            )
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)


def report(
    *,
    args,
    result: LoadResult,
    check: Check,
    server: dict[str, list[float]],
    cpu: dict[str, float],
    maintenance: str,
    load_before: tuple[float, ...],
    load_after: tuple[float, ...],
    pg_version: str,
) -> tuple[str, bool]:
    run = endpoint_stats(result.samples, phase="run", seconds=result.run_s)
    login = endpoint_stats(result.samples, phase="login", seconds=result.login_s)
    tally = result.ledger.tally
    events = next((s for s in run if s.endpoint == "events"), None)
    run_requests = sum(s.count for s in run)
    errors = len(result.errors)
    p99_ok = events is not None and events.p99 < EVENTS_GOAL_P99_MS
    integrity_ok = check.ok and not (tally.resent_not_duplicates or tally.fresh_with_duplicates or tally.unsent_events)
    wall = cpu["wall"]
    offered = args.annotators / args.batch_interval
    drafts = 1 / args.draft_every if args.draft_every else 0.0
    offered_requests = offered * (1 + args.resend + drafts) + 2 * args.annotators / args.submit_interval

    def per_request(name: str) -> float:
        return 1000 * cpu[name] / max(1, run_requests)

    served_by = ("app (gunicorn)", "PostgreSQL", "load client")
    needed_cores = offered_requests * sum(per_request(name) for name in served_by) / 1000
    worker_text = f"{args.workers} {args.worker_class} workers" + (
        f" x {args.threads} threads" if args.worker_class == "gthread" else ""
    )
    lines = [
        START,
        f"Measured with `python -m editlab.benchmarks.load --annotators {args.annotators} --duration {args.duration:g} "
        f"--workers {args.workers}` (PostgreSQL {pg_version}, gunicorn {worker_text}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores shared with the load generator and other jobs; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after).",
        "",
        f"{args.annotators} annotators for {result.run_s:.0f} s: an event batch every {args.batch_interval:g} s, "
        f"a draft save every {args.draft_every} batches, a submit every {args.submit_interval:g} s, "
        f"{args.resend:.0%} of batches re-sent; {run_requests:,} requests = {run_requests / result.run_s:.1f} req/s. "
        f"The client waits for each answer (as the logger does), so a slow server gets fewer batches: "
        f"{tally.ticks / result.run_s:.1f} typing batches/s were sent of the {offered:.1f}/s offered.",
        "",
        "| endpoint | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | server p50 / p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stats in run:
        times = server.get(stats.endpoint, [])
        server_text = f"{percentile(times, 50):.1f} / {percentile(times, 99):.1f}" if times else "-"
        lines.append(
            f"| {stats.endpoint} | {stats.count:,} | {stats.per_s:.1f} | {stats.p50:.1f} | {stats.p95:.1f} | "
            f"{stats.p99:.1f} | {stats.max:.0f} | {stats.errors} | {server_text} |"
        )
    for stats in login:
        lines.append(
            f"| {stats.endpoint} (warm-up before the run, {args.login_concurrency} at a time) | {stats.count:,} | "
            f"{stats.per_s:.1f} | {stats.p50:.1f} | {stats.p95:.1f} | {stats.p99:.1f} | {stats.max:.0f} | "
            f"{stats.errors} | - |"
        )
    lines += [
        "",
        f"CPU during the run ({wall:.0f} s wall, {os.cpu_count()} cores = {wall * (os.cpu_count() or 1):.0f} core-s): "
        + ", ".join(f"{name} {cpu[name]:.0f} s" for name in ("app (gunicorn)", "PostgreSQL", "load client", "others"))
        + f". Per request: app {per_request('app (gunicorn)'):.1f} ms, PostgreSQL {per_request('PostgreSQL'):.1f} ms, "
        f"client {per_request('load client'):.1f} ms; the full offered load ({offered_requests:.0f} req/s) needs "
        f"{needed_cores:.2f} of the {os.cpu_count()} cores.",
        "",
        f"Database check: {check.events_acked:,} events acknowledged to the client in {check.post_edits} post-edits, "
        f"{check.events_stored:,} stored; lost {check.lost}, duplicated {check.duplicated}, stored but never "
        f"acknowledged {check.unexpected}, post-edits with gaps {check.with_gaps}; {tally.resent} re-sent batches, "
        f"{tally.resent - tally.resent_not_duplicates} answered as all duplicates; {tally.unsent_events} events "
        f"left unsent. {check.submitted} post-edits submitted: effort missing {check.effort_missing}, counts unlike "
        f"the keys typed {check.counts_differ}, replay failures {check.replay_failed}.",
        "",
        slow_seconds(result) + " " + maintenance,
        "",
        f"Goals: event batches p99 < {EVENTS_GOAL_P99_MS:.0f} ms: {'met' if p99_ok else 'MISSED'} "
        f"({events.p99 if events else math.nan:.1f} ms); zero errors: {'met' if not errors else f'MISSED ({errors})'}; "
        f"zero lost or duplicated events: {'met' if integrity_ok else 'MISSED'}.",
        END,
    ]
    if result.errors:
        lines += ["", "First errors:", *(f"- {error}" for error in result.errors[:10])]
    if check.problems:
        lines += ["", "Database problems:", *(f"- {problem}" for problem in check.problems)]
    return "\n".join(lines), integrity_ok and not errors


AUTOVACUUM_RE = re.compile(
    r"^(\S+ \S+) \S+ \[\d+\] LOG:  automatic (vacuum|analyze) of table \"[^\"]*annotations_editevent\""
)
ELAPSED_RE = re.compile(r"elapsed: ([\d.]+) s")


def log_autovacuum() -> None:
    """Have PostgreSQL log every autovacuum run, to place them on the run's timeline."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ALTER SYSTEM SET log_autovacuum_min_duration = 0")
        cursor.execute("SELECT pg_reload_conf()")


def autovacuum_timeline(server_log: Path, run_wall_start: float) -> str:
    """PostgreSQL's background maintenance of the event table during the run (it competes for the CPU):
    when each autovacuum/autoanalyze ended (second of the run) and how long it took."""
    from datetime import datetime

    try:
        lines = server_log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    runs = []
    for index, line in enumerate(lines):
        match = AUTOVACUUM_RE.match(line)
        if not match:
            continue
        ended = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
        elapsed = next((m.group(1) for m in map(ELAPSED_RE.search, lines[index : index + 20]) if m), "?")
        runs.append(f"{match.group(2)} at {ended - run_wall_start:.0f} s ({elapsed} s)")
    if not runs:
        return "PostgreSQL ran no autovacuum on the event table."
    return "PostgreSQL's autovacuum on the event table, second of the run it ended (duration): " + ", ".join(runs) + "."


def slow_seconds(result: LoadResult) -> str:
    """When the event batches over the goal were sent: a few bad seconds or all along."""
    slow = [s for s in result.samples if s.phase == "run" and s.endpoint == "events" and s.ms >= EVENTS_GOAL_P99_MS]
    events = sum(1 for s in result.samples if s.phase == "run" and s.endpoint == "events")
    if not slow:
        return f"No event batch took {EVENTS_GOAL_P99_MS:.0f} ms or more."
    by_second: dict[int, int] = defaultdict(int)
    for sample in slow:
        by_second[int(sample.at - result.run_started)] += 1
    worst = sorted(by_second.items(), key=lambda item: -item[1])[:8]
    return (
        f"Event batches of {EVENTS_GOAL_P99_MS:.0f} ms or more: {len(slow):,} of {events:,} "
        f"({len(slow) / max(1, events):.1%}), sent during {len(by_second)} of the run's {result.run_s:.0f} seconds; "
        "the worst seconds (second of the run: batches) " + ", ".join(f"{sec}: {n}" for sec, n in sorted(worst)) + "."
    )


def write_output(path: Path, text: str) -> None:
    block = text[text.index(START) : text.index(END) + len(END)]
    current = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    updated = pattern.sub(lambda _: block, current) if pattern.search(current) else current + "\n" + block + "\n"
    path.write_text(updated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load after every login")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--worker-class", choices=("sync", "gthread"), default="sync")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (gthread)")
    parser.add_argument("--batch-interval", type=float, default=2.0)
    parser.add_argument(
        "--submit-interval",
        type=float,
        default=None,
        help="seconds per item (default 60, or half the duration when that is shorter)",
    )
    parser.add_argument("--draft-every", type=int, default=5, help="save the draft every N batches (0: never)")
    parser.add_argument("--resend", type=float, default=0.02, help="fraction of batches sent twice")
    parser.add_argument("--login-concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None, help="write the table into FILE between markers")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="sample the app server with py-spy during the run; collapsed stacks to FILE",
    )
    args = parser.parse_args(argv)
    if args.annotators < 1 or args.duration <= 0 or args.workers < 1 or args.batch_interval <= 0:
        parser.error("--annotators, --duration, --workers and --batch-interval must be positive")
    if args.submit_interval is None:
        args.submit_interval = min(60.0, args.duration / 2)

    items_each = math.ceil(args.duration / args.submit_interval) + 2
    plan = Plan(
        duration_s=args.duration,
        batch_interval_s=args.batch_interval,
        submit_interval_s=args.submit_interval,
        draft_every=args.draft_every,
        resend=args.resend,
        concurrency=args.annotators,
        login_concurrency=args.login_concurrency,
        seed=args.seed,
    )
    with tempfile.TemporaryDirectory(prefix="editlab-load-") as folder:
        folder_path = Path(folder)
        folder_path.chmod(0o755)  # initdb runs as the postgres user when we are root
        postgres = Postgres(folder_path / "pg")
        gunicorn = None
        try:
            print("starting PostgreSQL ...", file=sys.stderr)
            database_url = postgres.start()
            env = server_environment(database_url)
            _setup_django(database_url, env)
            print(f"creating {args.annotators} annotators x {items_each} items ...", file=sys.stderr)
            accounts = seed(annotators=args.annotators, items_each=items_each, seed_value=args.seed)
            log_autovacuum()
            from django.db import connections

            connections.close_all()
            gunicorn = Gunicorn(
                env=env, workers=args.workers, worker_class=args.worker_class, threads=args.threads, folder=folder_path
            )
            gunicorn.start()
            print(f"gunicorn on {gunicorn.base_url}; logging in, then {args.duration:g} s of load ...", file=sys.stderr)
            load_before = os.getloadavg()
            result, cpu, offset, run_wall_start = asyncio.run(
                _measured(gunicorn, postgres, accounts, plan, profile=args.profile)
            )
            load_after = os.getloadavg()
            gunicorn.stop()
            server = server_times(gunicorn.access_log, offset)
            check = check_exactly_once(result.ledger)
            maintenance = autovacuum_timeline(postgres.folder / "server.log", run_wall_start)
            connections.close_all()
            text, ok = report(
                args=args,
                result=result,
                check=check,
                server=server,
                cpu=cpu,
                maintenance=maintenance,
                load_before=load_before,
                load_after=load_after,
                pg_version=postgres.version(),
            )
        finally:
            if gunicorn is not None:
                gunicorn.stop()
            try:
                from django.db import connections

                connections.close_all()
            except Exception:  # Django may not be set up yet; the cluster is removed anyway
                pass
            postgres.stop()
    print(text)
    if args.profile and args.profile.exists():
        print("\nWhere the app server's CPU went (py-spy, inclusive):\n" + profile_summary(args.profile))
    if args.output:
        write_output(args.output, text)
    return 0 if ok else 1


async def _measured(
    gunicorn: Gunicorn, postgres: Postgres, accounts: list[Account], plan: Plan, *, profile: Path | None = None
):
    """run_load, with the CPU meter and the access-log offset taken when the run phase starts."""
    trees = {"app (gunicorn)": [gunicorn.process.pid], "PostgreSQL": postgres.pids(), "load client": [os.getpid()]}
    started: dict = {}

    def on_run_start() -> None:
        started["offset"] = gunicorn.access_log.stat().st_size if gunicorn.access_log.exists() else 0
        started["wall"] = time.time()
        started["meter"] = CpuMeter(trees, alone=("load client",))
        if profile is not None:
            started["profiler"] = Profiler(gunicorn.process.pid, profile)

    try:
        result = await run_load(gunicorn.base_url, accounts, plan, on_run_start=on_run_start)
    finally:
        if "profiler" in started:
            started["profiler"].stop()
    return result, started["meter"].stop(), started["offset"], started["wall"]


if __name__ == "__main__":
    sys.exit(main())
