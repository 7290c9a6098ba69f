"""The load client: annotators over HTTP (aiohttp, one connection each at most), and what each saw
acknowledged, for the exactly-once check."""

import asyncio
import json
import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from editlab.benchmarks.load.session import KeyCounts, TypingSession

MAX_BATCH_EVENTS = 500  # as the browser logger caps its batches
RETRY_MAX_S = 8.0
FLUSH_GRACE_S = 20.0
CONFIG_RE = re.compile(r'<script id="editor-config" type="application/json">(.*?)</script>', re.S)
CSRF_FIELD_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


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
class LoadPlan:
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
    # A fixed amount of work instead of a clock (the smoke test: its checks must not depend on
    # how fast the machine is): submit after this many acknowledged batches, stop after this many items.
    batches_per_item: int | None = None
    items_per_annotator: int | None = None


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
        plan: LoadPlan,
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

    @property
    def typing(self) -> TypingSession:
        """The open editor page's typing session."""
        if self.session is None:
            raise RuntimeError("no editor page is open (open() first)")
        return self.session

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
        body = {"page_id": self.config["page_id"], "text": self.typing.text, "version": self.version}
        try:
            _, answer = await self.call(
                "draft", "POST", self.config["urls"]["draft"], data=json.dumps(body), headers=self._json_headers()
            )
        except HttpFailure:
            return
        self.version = json.loads(answer)["version"]

    async def submit(self, until: float) -> str | None:
        """Flush, then submit (retried: it is idempotent); returns the next URL."""
        self.pending.extend(self.typing.finish(self.now_ms()))
        if not await self.flush(until):
            return None
        body = {
            "page_id": self.config["page_id"],
            "text": self.typing.text,
            "version": self.version,
            "last_seq": self.typing.next_seq - 1,
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
            record.counts = self.typing.counts
            record.text = self.typing.text
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
        per_item = plan.batches_per_item
        by_count = per_item is not None
        submit_at = math.inf if by_count else now + self.rng.uniform(0.25, 1.0) * plan.submit_interval_s
        batches_here = 0
        items_done = 0
        while True:
            wake = min(next_batch, submit_at, deadline)
            await asyncio.sleep(max(0.0, wake - loop.time()))
            now = loop.time()
            if now >= deadline:
                break
            if now >= submit_at or (per_item is not None and batches_here >= per_item):
                next_url = await self.submit(deadline)
                items_done += 1
                if plan.items_per_annotator is not None and items_done >= plan.items_per_annotator:
                    break
                if not next_url or not next_url.startswith("/edit/"):
                    if next_url:
                        self.ledger.tally.idle_annotators += 1
                    return
                if not await self._open_with_retries(next_url, deadline):
                    return
                now = loop.time()
                submit_at = math.inf if by_count else now + plan.submit_interval_s
                next_batch = now + plan.batch_interval_s
                batches_here = 0
                continue
            self.pending.extend(
                self.typing.type_keys(keys=self.rng.randint(*plan.keys_per_batch), until_t=self.now_ms())
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
    base_url: str, accounts: list[Account], plan: LoadPlan, *, on_run_start: Callable[[], None] | None = None
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
