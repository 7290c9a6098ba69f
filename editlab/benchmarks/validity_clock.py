"""The two time attacks of issue 18 §2, rerun against this code, and what opening and submitting cost.

    python -m editlab.benchmarks.validity_clock [--database-url URL] [--rounds 30] [--hold 20]
                                                [--items 10] [--cost-items 40] [--output FILE]

Runs in this process against a throwaway database (SQLite in a temporary folder unless
--database-url names an empty PostgreSQL database) with production settings (DEBUG off), through
the whole Django stack (django.test.Client):

1. fast items: one annotator opens --items items one after the other (GET /edit/<id>/), each page
   load claims 1,995 ms (a load event at 0, a mousedown, the submit event at 1,995 ms) and is
   submitted at once. Reports the real time taken, the summed stored wall and active time, the
   server-observed time (the union of the annotator's page loads) and the flags.
2. parallel opens: --rounds times, a new annotator's two items opened by two processes (forked,
   each its own connection, as gunicorn's workers) released together; counts the rounds in which
   both page loads stayed open. Then a pair opened at once (again until both stay open, at most
   --rounds tries) is held for --hold seconds, both claim the whole hold and are submitted: their
   summed wall and active time against the real time.
3. cost: --cost-items items opened, logged (one batch) and submitted one by one: the app's CPU
   time per editor page (GET) and per submit (median), the statements each runs, and on
   PostgreSQL the backend's CPU per item.
"""

import argparse
import json
import multiprocessing
import os
import platform
import secrets
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from editlab.benchmarks.support import production_settings, result_file, write_section

CLAIM_MS = 1995
STATIC_BACKEND = "django.contrib.staticfiles.storage.StaticFilesStorage"


def _claim(load_text: str, claim_ms: float, start_seq: int = 0) -> list[dict]:
    return [
        {"seq": start_seq, "t": 0, "k": "load", "data": load_text, "len": len(load_text)},
        {"seq": start_seq + 1, "t": claim_ms / 2, "k": "mousedown"},
        {"seq": start_seq + 2, "t": claim_ms, "k": "submit"},
    ]


class Site:
    """An annotator with assignments, and helpers that drive the editor's endpoints as a browser would."""

    def __init__(self, items: int, text: str = "A sentence to post-edit.") -> None:
        from django.contrib.auth import get_user_model

        from annotations.models import Assignment, Item, Project
        from annotations.roles import ANNOTATOR, set_role

        name = "clock-" + secrets.token_hex(4)
        self.user = get_user_model().objects.create_user(name, password=secrets.token_urlsafe(16))
        set_role(self.user, ANNOTATOR)
        project = Project.objects.create(name=name)
        self.text = text
        self.assignments = [
            Assignment.objects.create(
                item=Item.objects.create(project=project, external_id=str(n), model_output=text), annotator=self.user
            )
            for n in range(items)
        ]

    def client(self):
        from django.test import Client

        client = Client()
        client.force_login(self.user)
        return client

    def open(self, client, assignment) -> None:
        response = client.get(f"/edit/{assignment.pk}/")
        assert response.status_code == 200, response.status_code

    def page(self, assignment):
        from annotations.models import Visit

        return Visit.objects.filter(post_edit__assignment=assignment).latest("started_at", "pk")

    def log_and_submit(self, client, assignment, claim_ms: float) -> None:
        visit = self.page(assignment)
        post_edit_id = visit.post_edit_id
        body = {"page_id": str(visit.page_id), "events": _claim(self.text, claim_ms)}
        answer = client.post(f"/api/post-edits/{post_edit_id}/events/", json.dumps(body), "application/json")
        assert answer.status_code == 200, answer.content
        self.submit(client, visit)

    def submit(self, client, visit):
        body = {"page_id": str(visit.page_id), "text": self.text, "version": 0, "last_seq": 2}
        answer = client.post(f"/api/post-edits/{visit.post_edit_id}/submit/", json.dumps(body), "application/json")
        assert answer.status_code == 200, answer.content
        return answer

    def totals(self) -> dict:
        from annotations.models import PostEdit, Visit

        post_edits = list(PostEdit.objects.filter(assignment__annotator=self.user, submitted_at__isnull=False))
        visits = list(Visit.objects.filter(post_edit__assignment__annotator=self.user))
        return {
            "wall_ms": sum(p.wall_ms for p in post_edits),
            "active_ms": sum(p.active_ms for p in post_edits),
            "union_ms": _union_ms(visits),
            "flagged": sum(1 for p in post_edits if p.flags),
            "flags": sorted({flag for p in post_edits for flag in p.flags}),
            "submitted": len(post_edits),
        }


def _union_ms(visits) -> float:
    """The union of the page loads' server windows (started .. last seen, cut where ended)."""
    windows = sorted(
        (v.started_at, max(v.started_at, min(v.last_seen_at, v.ended_at or v.last_seen_at))) for v in visits
    )
    total, until = timedelta(0), None
    for start, end in windows:
        start = max(start, until) if until is not None else start
        if end > start:
            total += end - start
        until = end if until is None else max(until, end)
    return total.total_seconds() * 1000


def fast_items(items: int) -> dict:
    site = Site(items)
    client = site.client()
    started = time.perf_counter()
    for assignment in site.assignments:
        site.open(client, assignment)
        site.log_and_submit(client, assignment, CLAIM_MS)
    return {"items": items, "real_ms": (time.perf_counter() - started) * 1000, **site.totals()}


def _open_in_child(site: Site, assignment, barrier) -> None:
    from django.db import connection

    try:
        client = site.client()
        barrier.wait()
        site.open(client, assignment)
    finally:
        connection.close()


def _at_once(site: Site, assignments) -> None:
    """Open the assignments in as many processes (as gunicorn's workers would), released together."""
    from django.db import connections

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(len(assignments))
    connections.close_all()  # a forked child must not share the parent's connection
    children = [context.Process(target=_open_in_child, args=(site, a, barrier)) for a in assignments]
    for child in children:
        child.start()
    for child in children:
        child.join()
    if any(child.exitcode for child in children):
        raise RuntimeError(f"an opening failed: exit codes {[child.exitcode for child in children]}")


def _both_open(site: Site) -> bool:
    from annotations.models import Visit

    return Visit.objects.filter(post_edit__assignment__annotator=site.user, ended_at__isnull=True).count() == 2


def _opened_pair() -> tuple[Site, bool]:
    """A new annotator's two items opened at once, and whether both page loads stayed open."""
    site = Site(2)
    _at_once(site, site.assignments)
    return site, _both_open(site)


def parallel_opens(rounds: int, hold_s: float) -> dict:
    both = sum(_opened_pair()[1] for _ in range(rounds))
    # The held pair: opened at once until both stay open (or --rounds tries).
    site, held_both_open = _opened_pair()
    for _ in range(rounds - 1):
        if held_both_open:
            break
        site, held_both_open = _opened_pair()
    started = time.perf_counter()
    time.sleep(hold_s)
    client = site.client()
    for assignment in site.assignments:
        site.log_and_submit(client, assignment, hold_s * 1000)
    real_ms = (time.perf_counter() - started) * 1000
    return {"rounds": rounds, "both_open": both, "hold_s": hold_s, "held_both_open": held_both_open,
            "hold_real_ms": real_ms, **site.totals()}  # fmt: skip


def _backend_cpu() -> float | None:
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    import psutil

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


class _Statements:
    """Counts the statements run on a connection (DEBUG off records none)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def _counted(fn) -> int:
    from django.db import connection

    counter = _Statements()
    with connection.execute_wrapper(counter):
        fn()
    return counter.count


def cost(items: int) -> dict:

    site = Site(items + 1)
    client = site.client()
    # One unmeasured item warms the caches and connection; its statements are counted.
    first = site.assignments[0]
    opened = _counted(lambda: site.open(client, first))
    visit = site.page(first)
    body = {"page_id": str(visit.page_id), "events": _claim(site.text, 500)}
    client.post(f"/api/post-edits/{visit.post_edit_id}/events/", json.dumps(body), "application/json")
    submitted = _counted(lambda: site.submit(client, visit))
    opens, submits = [], []
    backend = _backend_cpu()
    for assignment in site.assignments[1:]:
        cpu = time.process_time()
        site.open(client, assignment)
        opens.append(time.process_time() - cpu)
        visit = site.page(assignment)
        body = {"page_id": str(visit.page_id), "events": _claim(site.text, 500)}
        client.post(f"/api/post-edits/{visit.post_edit_id}/events/", json.dumps(body), "application/json")
        cpu = time.process_time()
        site.submit(client, visit)
        submits.append(time.process_time() - cpu)
    after = _backend_cpu()
    return {
        "items": items,
        "open_cpu_ms": statistics.median(opens) * 1000,
        "submit_cpu_ms": statistics.median(submits) * 1000,
        "open_queries": opened,
        "submit_queries": submitted,
        "backend_ms_per_item": None if backend is None or after is None else (after - backend) * 1000 / items,
    }


def report(vendor: str, fast: dict, parallel: dict, spent: dict, label: str) -> str:
    backend = spent["backend_ms_per_item"]
    lines = [
        f"### {label}: {vendor}",
        "",
        f"`python -m editlab.benchmarks.validity_clock` (Python {platform.python_version()}, "
        f"{os.cpu_count()} cores shared with other jobs, load average {os.getloadavg()[0]:.1f}).",
        "",
        f"- fast items: {fast['items']} items opened and submitted in {fast['real_ms']:.0f} ms of real time, "
        f"each claiming {CLAIM_MS:,} ms: stored wall {fast['wall_ms']:,} ms, active {fast['active_ms']:,} ms in all; "
        f"the server saw {fast['union_ms']:.0f} ms; {fast['flagged']} of {fast['submitted']} flagged "
        f"({', '.join(fast['flags']) or 'no flag'}).",
        f"- parallel opens: both page loads left open in {parallel['both_open']} of {parallel['rounds']} rounds. "
        f"A pair opened at once and held {parallel['hold_s']:g} s (both open: {parallel['held_both_open']}), "
        f"each claiming the hold: stored wall {parallel['wall_ms']:,} ms, active {parallel['active_ms']:,} ms "
        f"in all for {parallel['hold_real_ms']:.0f} ms of real time (server saw {parallel['union_ms']:.0f} ms; "
        f"flags: {', '.join(parallel['flags']) or 'none'}).",
        f"- cost (median of {spent['items']} items, app CPU): editor page {spent['open_cpu_ms']:.2f} ms "
        f"({spent['open_queries']} statements), submit {spent['submit_cpu_ms']:.2f} ms "
        f"({spent['submit_queries']} statements)"
        + ("." if backend is None else f"; PostgreSQL backend {backend:.2f} ms per item (page, batch, submit)."),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--hold", type=float, default=20.0)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--cost-items", type=int, default=40)
    parser.add_argument("--label", default="this code")
    parser.add_argument("--output", type=Path, help=f"write the section here (e.g. {result_file('validity_clock')})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'clock.sqlite3'}"
        os.environ.update(production_settings(url))
        os.environ["ALLOWED_HOSTS"] = "testserver"
        os.environ["EDITLAB_ALLOW_SQLITE"] = "1"
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        # The page's static files by their source names: no collectstatic manifest in a throwaway run.
        settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": STATIC_BACKEND}}
        from django.db import connection

        call_command("migrate", verbosity=0)
        vendor = connection.vendor
        fast = fast_items(args.items)
        parallel = parallel_opens(args.rounds, args.hold)
        spent = cost(args.cost_items)
    text = report(vendor, fast, parallel, spent, args.label)
    print(text)
    if args.output:
        slug = "".join(ch if ch.isalnum() else "-" for ch in args.label.lower())
        start, end = f"<!-- benchmark:validity_clock:{slug}:{vendor}:start -->", f"<!-- :{slug}:{vendor}:end -->"
        write_section(args.output, start, end, text)


if __name__ == "__main__":
    main()
