"""What a run measured: latency per endpoint (client and server side), CPU per process tree,
autovacuum, the worst seconds; the markdown report."""

import math
import os
import platform
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from editlab.benchmarks.load.checker import Check
from editlab.benchmarks.load.client import LoadResult, Sample

START, END = "<!-- benchmark:load:start -->", "<!-- benchmark:load:end -->"
EVENTS_GOAL_P99_MS = 200.0


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
