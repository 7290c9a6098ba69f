"""Event export at scale: wall time and peak memory of `export --events` for millions of synthetic events.

    python -m editlab.benchmarks.events_export [--database-url postgres://...] [--steps 1000000,3000000,10000000]
        [--events-per-post-edit 300] [--formats parquet,csv,jsonl] [--with-text-up-to 1000000] [--output FILE]

Fills a throwaway database (PostgreSQL when --database-url is given, else a SQLite file) with live
post-edits of --events-per-post-edit events each, a realistic mix (typing 80 %, Backspace 8 %,
arrows 5 %, a selection retyped 3 %, a paste 2 %, a click and a selection 2 %; lengths and carets
consistent, so the replay of --with-text runs as on real logs). At each step (the total number of
events) it exports the whole project in every format in a child process, through the same code the
command runs (metrics.exports_events), and reports the child's wall time, peak RSS (getrusage of the
child: its whole life, Django and the export's imports included, which are also given alone) and the file's size.
The scaling across steps shows whether memory stays flat.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from editlab.benchmarks.support import production_settings, result_file, setup_django, write_section

START, END = "<!-- events_export:start -->", "<!-- events_export:end -->"
PROJECT = "events-benchmark"
ANNOTATORS = 50
CHUNK = 20_000
COLUMNS = (
    "post_edit_id, visit_id, seq, t_ms, received_at, kind, key, code, modifiers, repeat, input_type, "
    "sel_start, sel_end, data, length_after, extra"
)


def synthetic_log(rng: random.Random, count: int, original_length: int) -> list[tuple]:
    """(seq, t_ms, kind, key, code, modifiers, input_type, sel_start, sel_end, data, length_after) rows."""
    rows: list[tuple] = [(0, 0.0, "load", "", "", 0, "", None, None, "x" * original_length, original_length)]
    length, caret, t = original_length, original_length, 0.0

    def add(kind, key="", code="", mods=0, it="", s=None, e=None, data="", after=None) -> None:
        nonlocal t
        t += rng.uniform(2, 30) if kind in ("beforeinput", "input", "paste", "select") else rng.expovariate(1 / 250)
        rows.append((len(rows), round(t, 1), kind, key, code, mods, it, s, e, data, after))

    while len(rows) < count:
        roll = rng.random()
        if roll < 0.80:
            char = rng.choice("abcdefghijklmnopqrstuvwxyz     .,")
            add("keydown", char, "Key" + char.upper() if char.isalpha() else "Space")
            add("beforeinput", it="insertText", s=caret, e=caret)
            length, caret = length + 1, caret + 1
            add("input", it="insertText", s=caret, data=char, after=length)
        elif roll < 0.88 and caret > 0:
            add("keydown", "Backspace", "Backspace")
            add("beforeinput", it="deleteContentBackward", s=caret - 1, e=caret)
            length, caret = length - 1, caret - 1
            add("input", it="deleteContentBackward", s=caret, after=length)
        elif roll < 0.93:
            caret = max(0, caret - 1) if rng.random() < 0.7 else min(length, caret + 1)
            add("keydown", "ArrowLeft", "ArrowLeft")
        elif roll < 0.96 and length > 5:
            start = rng.randrange(0, length - 4)
            add("select", s=start, e=start + 4)
            add("keydown", "e", "KeyE")
            add("beforeinput", it="insertText", s=start, e=start + 4)
            length, caret = length - 3, start + 1
            add("input", it="insertText", s=caret, data="e", after=length)
        elif roll < 0.98:
            pasted = "pasted words "
            add("keydown", "v", "KeyV", 1)
            add("paste", data=pasted)
            add("beforeinput", it="insertFromPaste", s=caret, e=caret)
            length, caret = length + len(pasted), caret + len(pasted)
            add("input", it="insertFromPaste", s=caret, data=pasted, after=length)
        else:
            add("mousedown")
            caret = rng.randint(0, length)
            add("select", s=caret, e=caret)
    return rows[:count]


def grow(total_events: int, per_post_edit: int, seed: int) -> int:
    """Add post-edits (with one visit and their logs) until the project holds total_events; the count."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from annotations.models import Assignment, EditEvent, Item, PostEdit, Project, Visit
    from annotations.roles import ANNOTATOR, set_role

    project, created = Project.objects.get_or_create(name=PROJECT)
    User = get_user_model()
    if created:
        for n in range(ANNOTATORS):
            set_role(User.objects.create(username=f"typist-{n}"), ANNOTATOR)
    users = list(User.objects.filter(username__startswith="typist-").order_by("id"))
    have = EditEvent.objects.filter(post_edit__assignment__item__project=project).count()
    missing = max(0, total_events - have) // per_post_edit
    rng = random.Random(seed + have)
    first = Item.objects.filter(project=project).count()
    now = timezone.now()
    for block in range(0, missing, 1000):
        size = min(1000, missing - block)
        items = Item.objects.bulk_create(
            Item(
                project=project,
                external_id=f"seg-{first + block + n}",
                model_output="x" * 120,
                position=first + block + n,
            )
            for n in range(size)
        )
        assignments = Assignment.objects.bulk_create(
            Assignment(item=item, annotator=users[(first + block + n) % len(users)], status=Assignment.SUBMITTED)
            for n, item in enumerate(items)
        )
        post_edits = PostEdit.objects.bulk_create(
            PostEdit(assignment=a, text="", origin=PostEdit.LIVE, submitted_at=now) for a in assignments
        )
        visits = Visit.objects.bulk_create(Visit(post_edit=p, started_at=now) for p in post_edits)
        rows = []
        for post_edit, visit in zip(post_edits, visits, strict=True):
            base = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=post_edit.pk)
            for seq, t, kind, key, code, mods, it, s, e, data, after in synthetic_log(rng, per_post_edit, 120):
                at = base + timedelta(milliseconds=t)
                # SQLite holds UTC as text, as Django writes it.
                received: object = at if connection.vendor == "postgresql" else at.replace(tzinfo=None).isoformat(" ")
                rows.append(
                    (
                        post_edit.pk,
                        visit.pk,
                        seq,
                        t,
                        received,
                        kind,
                        key,
                        code,
                        mods,
                        False,
                        it,
                        s,
                        e,
                        data,
                        after,
                        "{}",
                    )
                )
        _insert(connection, rows)
    return EditEvent.objects.filter(post_edit__assignment__item__project=project).count()


def _insert(connection, rows: list[tuple]) -> None:
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with (
            connection.connection.cursor() as cursor,
            cursor.copy(f"COPY annotations_editevent ({COLUMNS}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        return
    from django.db import transaction

    marks = ", ".join(["%s"] * len(COLUMNS.split(",")))
    with transaction.atomic(), connection.cursor() as cursor:  # one commit, not one sync per row
        for at in range(0, len(rows), CHUNK):
            cursor.executemany(f"INSERT INTO annotations_editevent ({COLUMNS}) VALUES ({marks})", rows[at : at + CHUNK])  # noqa: S608


def _rss_kb() -> int:
    """This process's resident set now (not its high-water mark), from /proc."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(fmt: str, with_text: bool, out: Path) -> None:
    """Export the benchmark project to `out` (run as a child: its rusage is the export's). Reports the
    resident set before the first row and the largest one seen after each chunk written."""
    import django

    django.setup()
    from annotations.models import Project
    from metrics.exports_events import EventExportSpec, event_export_stream

    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the process before its first row
    before = largest = _rss_kb()
    started = time.perf_counter()
    spec = EventExportSpec(Project.objects.get(name=PROJECT), with_text=with_text)
    with out.open("wb") as handle:
        for chunk in event_export_stream(spec, fmt):
            handle.write(chunk)
            largest = max(largest, _rss_kb())
    print(
        json.dumps(
            {"baseline_kb": baseline, "export_s": time.perf_counter() - started, "rss_before_kb": before,
             "rss_largest_kb": largest}
        )
    )  # fmt: skip


def measure(fmt: str, with_text: bool, folder: Path) -> dict:
    out = folder / f"events.{fmt}"
    command = [sys.executable, "-m", "editlab.benchmarks.events_export", "--child", fmt, "--out", str(out)]
    if with_text:
        command.append("--child-with-text")
    started = time.perf_counter()
    # The command's settings: production (DEBUG off), the benchmark's database.
    env = {**os.environ, **production_settings(os.environ["DATABASE_URL"]), "EDITLAB_ALLOW_SQLITE": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    output = process.stdout.read().decode() if process.stdout else ""
    if status != 0:
        raise SystemExit(f"the export child failed ({status}): {output}")
    report = json.loads(output.strip().splitlines()[-1])
    size = out.stat().st_size
    out.unlink()
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
            "baseline_mb": report["baseline_kb"] / 1024, "export_s": report["export_s"], "size_mb": size / 1e6,
            "rss_before_mb": report["rss_before_kb"] / 1024, "rss_largest_mb": report["rss_largest_kb"] / 1024}  # fmt: skip


def run(database_url: str | None, steps: list[int], per_post_edit: int, formats: list[str], text_up_to: int) -> str:
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(database_url, Path(folder))
        lines.append(
            f"database: {vendor}; {per_post_edit} events per post-edit; 2-core machine, {os.cpu_count()} CPUs seen"
        )
        lines.append("")
        lines.append(
            "| events | format | with text | export s | events/s | process wall s | process CPU s | peak RSS MB "
            "| RSS before the first row MB | largest RSS while exporting MB | growth MB | file MB |"
        )
        lines.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for step in steps:
            generated = time.perf_counter()
            events = grow(step, per_post_edit, seed=7)
            print(f"{events:,} events stored ({time.perf_counter() - generated:.0f} s)", flush=True)
            cases = [(fmt, False) for fmt in formats] + ([("parquet", True)] if events <= text_up_to else [])
            for fmt, with_text in cases:
                m = measure(fmt, with_text, Path(folder))
                line = (
                    f"| {events:,} | {fmt} | {'yes' if with_text else 'no'} | {m['export_s']:.1f} | "
                    f"{events / m['export_s']:,.0f} | {m['wall_s']:.1f} | {m['cpu_s']:.1f} | {m['peak_mb']:.0f} | {m['rss_before_mb']:.0f} | "
                    f"{m['rss_largest_mb']:.0f} | {m['rss_largest_mb'] - m['rss_before_mb']:.0f} | "
                    f"{m['size_mb']:.1f} |"
                )
                print(line, flush=True)
                lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--steps", default="1000000,3000000,10000000")
    parser.add_argument("--events-per-post-edit", type=int, default=300)
    parser.add_argument("--formats", default="parquet,csv,jsonl")
    parser.add_argument("--with-text-up-to", type=int, default=1_000_000, help="also --with-text up to this size")
    parser.add_argument("--output", default=str(result_file("events_export")))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-with-text", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.child_with_text, Path(args.out))
        return
    steps = [int(step) for step in args.steps.split(",")]
    report = run(args.database_url, steps, args.events_per_post_edit, args.formats.split(","), args.with_text_up_to)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_section(Path(args.output), START, END, f"{START}\nRun {stamp}.\n\n{report}\n{END}")
    print(report)


if __name__ == "__main__":
    main()
