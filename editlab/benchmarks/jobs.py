"""One metric job shared by 1, then 2 `db_worker` processes on PostgreSQL; and how fast PostgreSQL upserts values.

    editlab/scripts/postgres start /tmp/pg-bench 55499        # an empty database
    python -m editlab.benchmarks.jobs --database-url postgres://editlab@127.0.0.1:55499/editlab \\
        [--workers 1,2] [--repeat 2] [--variant plain] [--chunk-size 250] [--upsert-rows 100000]

1. Imports ../shared/data/iwslt2019 (5,235 post-edits) into the database (migrated here).
2. For each worker count, `--repeat` times: removes every stored value, starts that many
   `manage.py db_worker` processes (EDITLAB_METRIC_PROCESSES=1: one core each, no pool), waits until
   they run, starts a job for the effort suite (one variant) and waits for it to finish. The job's time
   runs from its first chunk's claim to its last chunk's end (the plan and the workers' start-up are
   reported apart); values/s per worker come from the chunks' own claim and finish times.
3. Upserts: 1 and 2 processes each write `--upsert-rows` synthetic values (the store path of a chunk:
   500-row bulk upserts, one transaction per chunk of 500 post-edits), first as inserts, then again as
   updates of the same rows: the rate at which the database, not the metrics, becomes the limit.
Figures go to editlab/benchmarks/results/jobs.md; the load average is read before and after each run.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, write_section

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- benchmark:jobs:start -->", "<!-- benchmark:jobs:end -->"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _pg_cpu_s() -> float | None:
    """CPU seconds used so far by the PostgreSQL server of the benchmark's database (all its processes,
    those that exited included), when it runs on this machine; None otherwise."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW data_directory")
            data = Path(cursor.fetchone()[0])
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid, ppid = int(stat.parent.name), int(fields[1])
            if pid == postmaster:
                total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime (exited children)
            elif ppid == postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / ticks
    except Exception:
        return None


def _env(database_url: str, chunk_size: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TASKS_BACKEND"}}
    env.update(
        DATABASE_URL=database_url,
        TASKS_BACKEND="database",
        EDITLAB_METRIC_PROCESSES="1",
        EDITLAB_METRIC_CHUNK_SIZE=str(chunk_size),
        DEBUG=env.get("DEBUG", "1"),
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    return env


def _start_workers(n: int, env: dict[str, str], folder: Path) -> list[tuple[subprocess.Popen, Path]]:
    started = []
    for i in range(n):
        log = folder / f"worker-{i}-{time.monotonic_ns()}.log"
        process = subprocess.Popen(
            [sys.executable, "manage.py", "db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.1"]
            + ["--worker-id", f"bench-{i}-{time.monotonic_ns()}"],
            cwd=ROOT,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        started.append((process, log))
    from metrics.models import TaskWorker

    deadline = time.monotonic() + 120
    pids = {p.pid for p, _ in started}
    while TaskWorker.objects.filter(pid__in=pids, stopped__isnull=True).count() < n:
        for process, log in started:
            if process.poll() is not None:
                raise SystemExit(f"a worker exited: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise SystemExit("the workers did not start within 120 s")
        time.sleep(0.1)
    return started


def _pg_settings() -> str:
    """The server's version and durability settings: upsert rates depend on them."""
    from django.db import connection

    with connection.cursor() as cursor:
        shown = []
        for name in ("server_version", "fsync", "synchronous_commit"):
            cursor.execute(f"SHOW {name}")
            shown.append(f"{name}={cursor.fetchone()[0]}")
    return ", ".join(shown)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop_workers(started: list[tuple[subprocess.Popen, Path]]) -> None:
    for process, _ in started:
        process.terminate()
    for process, _ in started:
        process.wait(timeout=300)


def _seconds(start: datetime | None, end: datetime | None) -> float:
    if start is None or end is None:
        raise SystemExit("a chunk of a finished job has no claim or finish time")
    return (end - start).total_seconds()


def job_run(project, *, workers: int, variant: str, env: dict[str, str], folder: Path) -> dict:
    from django.db.models import Max, Min, Sum

    from metrics.jobs import metric_job_create
    from metrics.models import MetricChunk, MetricJob, MetricValue
    from metrics.text import EFFORT_SUITE

    MetricValue.objects.all().delete()
    started = _start_workers(workers, env, folder)
    load_before = _load()
    pg_before = _pg_cpu_s()
    cpu_before = sum(_cpu_s(p.pid) for p, _ in started)
    try:
        t0 = time.perf_counter()
        job = metric_job_create(project=project, user=None, metrics=list(EFFORT_SUITE), variants=[variant])
        while True:
            job.refresh_from_db()
            if job.status in (MetricJob.DONE, MetricJob.FAILED):
                break
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        pg_after = _pg_cpu_s()
        workers_cpu = sum(_cpu_s(p.pid) for p, _ in started) - cpu_before
    finally:
        _stop_workers(started)
    if job.status != MetricJob.DONE:
        raise SystemExit(f"the job failed: {job.error}")
    chunks = MetricChunk.objects.filter(job=job)
    span = chunks.aggregate(first=Min("claimed"), last=Max("finished"))
    compute_s = (span["last"] - span["first"]).total_seconds()
    per_worker = []
    for worker_id in chunks.order_by().values_list("worker", flat=True).distinct():
        mine = list(chunks.filter(worker=worker_id).values_list("claimed", "finished", "total"))
        busy = sum(_seconds(claimed, finished) for claimed, finished, _ in mine)
        values = sum(t for _, _, t in mine)
        per_worker.append({"chunks": len(mine), "values": values, "busy_s": busy, "rate": values / busy})
    values = chunks.aggregate(n=Sum("total"))["n"]
    assert MetricValue.objects.count() == values, "values stored != values planned"
    return {
        "workers": workers,
        "values": values,
        "chunks": chunks.count(),
        "wall_s": wall,
        "plan_s": (span["first"] - job.started).total_seconds(),
        "compute_s": compute_s,
        "rate": values / compute_s,
        "per_worker": per_worker,
        "load": f"{load_before} → {_load()}",
        "pg_cpu_s": pg_after - pg_before if pg_before is not None and pg_after is not None else None,
        "workers_cpu_s": workers_cpu,
    }


UPSERT_SCRIPT = """
import json, sys, time
import django
django.setup()
from django.db import transaction
from django.utils import timezone
from metrics.models import MetricValue
ids, names, rounds = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
rates = []
for _ in range(rounds):
    t0 = time.perf_counter()
    rows = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        with transaction.atomic():
            now = timezone.now()
            objs = [MetricValue(post_edit_id=pk, metric=name, variant="plain", value=pk * 0.5, metric_version="1",
                                input_hash="x" * 64, computed_at=now) for name in names for pk in chunk]
            MetricValue.objects.bulk_create(objs, batch_size=500, update_conflicts=True,
                                            unique_fields=["post_edit", "metric", "variant"],
                                            update_fields=["value", "metric_version", "input_hash", "computed_at"])
            rows += len(objs)
    rates.append([rows, time.perf_counter() - t0])
print(json.dumps(rates))
"""


def upsert_rates(post_edit_ids: list[int], *, processes: int, rows: int, env: dict[str, str]) -> dict:
    """Each process writes `rows` values (its own metric names: no two processes write the same row), once
    as inserts, once as updates; rows/s summed over the processes (each timed by itself)."""
    from metrics.models import MetricValue

    MetricValue.objects.filter(metric__startswith="bench-upsert").delete()
    ids = sorted(post_edit_ids)
    metrics = max(1, round(rows / len(ids)))  # synthetic metric names, each on every post-edit
    running = []
    load_before = _load()
    pg_before = _pg_cpu_s()
    t0 = time.perf_counter()
    for p in range(processes):
        names = [f"bench-upsert-{p}-{m}" for m in range(metrics)]
        running.append(
            subprocess.Popen(
                [sys.executable, "-c", UPSERT_SCRIPT, json.dumps(ids), json.dumps(names), "2"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    results = [json.loads(process.communicate(timeout=3600)[0].strip().splitlines()[-1]) for process in running]
    wall = time.perf_counter() - t0
    pg_after = _pg_cpu_s()
    inserted = sum(r[0][0] for r in results)
    updated = sum(r[1][0] for r in results)
    MetricValue.objects.filter(metric__startswith="bench-upsert").delete()
    return {
        "processes": processes,
        "metrics": metrics,
        "rows": inserted,
        "insert_rate": sum(r[0][0] / r[0][1] for r in results),
        "update_rate": sum(r[1][0] / r[1][1] for r in results),
        "total_rate": (inserted + updated) / wall,
        "pg_rows_per_cpu_s": (
            (inserted + updated) / (pg_after - pg_before) if pg_before is not None and pg_after is not None else None
        ),
        "load": f"{load_before} → {_load()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="An EMPTY PostgreSQL database.")
    parser.add_argument("--workers", default="1,2", help="Worker counts to measure, comma-separated.")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--variant", default="plain", choices=["plain", "with_references"])
    parser.add_argument("--chunk-size", type=int, default=250, help="Post-edits per chunk (EDITLAB_METRIC_CHUNK_SIZE).")
    parser.add_argument("--upsert-rows", type=int, default=100_000, help="Synthetic values per upserting process.")
    parser.add_argument("--skip-jobs", action="store_true")
    parser.add_argument("--output", type=Path, default=result_file("jobs"))
    args = parser.parse_args()
    if not args.database_url.startswith("postgres"):
        raise SystemExit("--database-url must name an empty PostgreSQL database: several workers share it")

    os.environ["TASKS_BACKEND"] = "database"
    os.environ["EDITLAB_METRIC_CHUNK_SIZE"] = str(args.chunk_size)
    with tempfile.TemporaryDirectory(prefix="editlab-bench-jobs-") as tmp:
        folder = Path(tmp)
        setup_django(args.database_url, folder)
        from annotations.importers import import_items
        from annotations.models import PostEdit, Project
        from metrics.text import EFFORT_SUITE

        if not Project.objects.filter(name="IWSLT2019").exists():
            import_items(project="IWSLT2019", fmt="pet", path=IWSLT2019, create_project=True)
        project = Project.objects.get(name="IWSLT2019")
        env = _env(args.database_url, args.chunk_size)
        lines = [
            f"Measured by `python -m editlab.benchmarks.jobs` on {platform.python_implementation()} "
            f"{platform.python_version()}, {os.cpu_count()} cores shared with other work (load average 1/5/15 min "
            f"before → after each run in the tables), PostgreSQL ({_pg_settings()}) "
            f"on the same machine; IWSLT2019 ({PostEdit.objects.filter(assignment__item__project=project).count():,} "
            f"post-edits), effort suite ({', '.join(EFFORT_SUITE)}), variant {args.variant}, chunks of "
            f"{args.chunk_size} post-edits, one core per worker (EDITLAB_METRIC_PROCESSES=1).",
            "",
        ]
        if not args.skip_jobs:
            lines += [
                "| workers | run | values | chunks | plan | compute (first claim → last chunk) | values/s | "
                "per worker: chunks, values/s while busy | values per worker CPU-second | "
                "PostgreSQL CPU per 1,000 values | load |",
                "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
            ]
            for n in [int(x) for x in args.workers.split(",")]:
                for run in range(1, args.repeat + 1):
                    r = job_run(project, workers=n, variant=args.variant, env=env, folder=folder)
                    shares = "; ".join(f"{w['chunks']}, {w['rate']:.0f}" for w in r["per_worker"])
                    pg = f"{r['pg_cpu_s'] / r['values'] * 1000:.3f} s" if r["pg_cpu_s"] is not None else "n/a"
                    lines.append(
                        f"| {n} | {run} | {r['values']:,} | {r['chunks']} | {r['plan_s']:.1f} s | "
                        f"{r['compute_s']:.1f} s | {r['rate']:.0f} | {shares} | "
                        f"{r['values'] / r['workers_cpu_s']:.0f} | {pg} | {r['load']} |"
                    )
                    print(lines[-1], flush=True)
            lines.append("")
        ids = list(PostEdit.objects.filter(assignment__item__project=project).values_list("pk", flat=True))
        lines += [
            f"Upserts into `metrics_metricvalue` (about {args.upsert_rows:,} synthetic values per process: metric "
            "names of its own x every post-edit, 500-row bulk upserts, a transaction per 500 post-edits as a chunk "
            "does; inserts, then the same rows again as updates; rows/s summed over the processes):",
            "",
            "| processes | rows each | inserts/s | updates/s | rows per PostgreSQL CPU-second | load |",
            "|---:|---:|---:|---:|---:|---|",
        ]
        for processes in (1, 2):
            u = upsert_rates(ids, processes=processes, rows=args.upsert_rows, env=env)
            per_cpu = f"{u['pg_rows_per_cpu_s']:,.0f}" if u["pg_rows_per_cpu_s"] is not None else "n/a"
            lines.append(
                f"| {processes} | {u['rows'] // processes:,} | {u['insert_rate']:,.0f} | {u['update_rate']:,.0f} | "
                f"{per_cpu} | {u['load']} |"
            )
            print(lines[-1], flush=True)
        lines.append("")
        write_section(args.output, START, END, "\n".join(lines))
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
