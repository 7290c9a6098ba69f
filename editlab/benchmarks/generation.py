"""Generation throughput against the loopback OpenAI-compatible server with a fixed latency.

    python -m editlab.benchmarks.generation [--items 256] [--latency 0.2] [--concurrency 1,8,32]
        [--database-url postgres://...] [--workers 0|1|2]

The fake server (generation.fakeserver) runs in a process of its own, answering each request after
`--latency` seconds, so the CPU measured is the app's alone. For each concurrency a run of `--items`
items goes through generate_outputs' service (a new system name each time, so nothing is skipped):
with `--workers 0` in this process (the immediate task backend: plan and chunks here), with 1 or 2 on
the database backend, each a `manage.py db_worker` process (PostgreSQL only; each worker count is its
own section of the results). Reported: requests/s
against the ideal concurrency x workers / latency, and the app's CPU per generated text (this
process, plus the workers' CPU read from /proc when they run). Figures go to
editlab/benchmarks/results/generation.md.
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from editlab.benchmarks.support import free_port, result_file, setup_django, write_section

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "system:\nYou answer questions about accounting.\n---\nQuestion: {question}\nKnowledge: {knowledge}"


def _children_cpu_s(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _project(items: int):
    from annotations.models import Item, Project

    project = Project.objects.create(name=f"bench-gen-{time.time_ns()}")
    Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"q{n}",
            position=n,
            source=f"How is the account number {n} balanced at the end of the period?",
            model_output=f"It is balanced by closing entries ({n}).",
            references=[{"title": "Manual", "text": f"Section {n}: closing entries move balances to equity."}],
        )
        for n in range(items)
    )
    return project


def _workers_start(count: int, database_url: str) -> list[subprocess.Popen]:
    env = {**os.environ, "DATABASE_URL": database_url, "TASKS_BACKEND": "database", "LOG_LEVEL": "WARNING"}
    return [
        subprocess.Popen(
            [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload", "--worker-id", f"bench{n}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(count)
    ]


def run(*, items: int, latency: float, concurrencies: list[int], workers: int, database_url: str | None):
    from generation.models import GenerationRun
    from generation.services import generation_run_start

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "generation.fakeserver", "--port", str(port), "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    endpoint = server.stdout.readline().strip()
    procs = _workers_start(workers, database_url or "") if workers else []
    time.sleep(3 if procs else 0)
    rows = []
    try:
        for concurrency in concurrencies:
            project = _project(items)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            workers_cpu0 = _children_cpu_s([p.pid for p in procs])
            started = generation_run_start(
                project=project,
                kind="output",
                name=f"bench-c{concurrency}",
                endpoint=endpoint,
                model="fake",
                template_text=TEMPLATE,
                template_name="bench.txt",
                seed=1,
                concurrency=concurrency,
            )
            while True:
                done = GenerationRun.objects.get(pk=started.pk)
                if done.status in ("done", "failed"):
                    break
                time.sleep(0.02)
            wall = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0 + _children_cpu_s([p.pid for p in procs]) - workers_cpu0
            ideal = concurrency * max(1, workers) / latency
            rows.append((workers, concurrency, done.generated, wall, done.generated / wall, ideal, cpu / items))
            print(rows[-1], flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)
        server.terminate()
        server.wait(timeout=10)
    return rows


def report(rows, *, items: int, latency: float, vendor: str) -> str:
    lines = [
        f"## {rows[0][0] if rows else 0} db_worker(s) ({datetime.now():%Y-%m-%d}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, {vendor})",
        "",
        f"{items} items per run; the loopback server answers each request after {latency * 1000:.0f} ms "
        "(its own process); workers 0 = the app process runs the run (immediate backend).",
        "",
        "| db_workers | concurrency | generated | wall s | requests/s | ideal (c x workers / latency) | "
        "of ideal | app CPU ms per text |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for workers, c, generated, wall, rate, ideal, cpu in rows:
        lines.append(
            f"| {workers} | {c} | {generated} | {wall:.2f} | {rate:.1f} | {ideal:.1f} | {rate / ideal:.0%} | "
            f"{cpu * 1000:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--workers", type=int, default=0, help="db_worker processes; 0 = this process runs it.")
    parser.add_argument("--database-url", default=None, help="An empty database (PostgreSQL for db_workers).")
    args = parser.parse_args()
    if args.workers and not args.database_url:
        parser.error("--workers needs --database-url (PostgreSQL shared with the workers)")
    # Read by the settings when Django starts: the backend the runs go through.
    os.environ["TASKS_BACKEND"] = "database" if args.workers else "immediate"
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(args.database_url, Path(folder))
        rows = run(
            items=args.items,
            latency=args.latency,
            concurrencies=[int(c) for c in args.concurrency.split(",")],
            workers=args.workers,
            database_url=args.database_url,
        )
    body = report(rows, items=args.items, latency=args.latency, vendor=vendor)
    print(body)
    tag = f"generation:w{args.workers}"
    write_section(result_file("generation"), f"<!-- benchmark:{tag}:start -->", f"<!-- benchmark:{tag}:end -->", body)


if __name__ == "__main__":
    main()
