"""Generation throughput against the loopback OpenAI-compatible server with a fixed latency.

    python -m editlab.benchmarks.generation [--items 256] [--latency 0.2] [--concurrency 1,8,32]
        [--database-url postgres://...] [--workers 0|1|2] [--kill-resume 10000]

The fake server (generation.fakeserver) runs in a process of its own, answering each request after
`--latency` seconds, so the CPU measured is the app's alone. For each concurrency a run of `--items`
items goes through generate_outputs' service (a new system name each time, so nothing is skipped):
with `--workers 0` in this process (the immediate task backend: plan and chunks here), with 1 or 2 on
the database backend, each a `manage.py db_worker` process (PostgreSQL only; each worker count is its
own section of the results). Reported: requests/s
against the ideal concurrency x workers / latency, and the app's CPU per generated text (this
process, plus the workers' CPU from psutil when they run). `--kill-resume N` instead runs N items on one
worker, SIGKILLs it mid-run and lets a second worker finish: it reports the items generated twice (asked
again after their answer was stored; must be 0) and missing (0). Figures go to
editlab/benchmarks/results/generation.md.
"""

import argparse
import os
import platform
import signal
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
    """User + system CPU seconds of the processes (psutil), their finished children included; a process
    that is gone counts nothing more."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
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


def _workers_start(
    count: int, database_url: str, *, first: int = 0, extra: dict[str, str] | None = None
) -> list[subprocess.Popen]:
    env = {**os.environ, "DATABASE_URL": database_url, "TASKS_BACKEND": "database", "LOG_LEVEL": "WARNING"}
    env |= extra or {}
    return [
        subprocess.Popen(
            [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload", "--worker-id", f"bench{n}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for n in range(first, first + count)
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


def _stored(run_id: int) -> set[int]:
    from generation.models import GenerationRecord

    return set(GenerationRecord.objects.filter(run_id=run_id, status="generated").values_list("item_id", flat=True))


def kill_resume(*, items: int, latency: float, concurrency: int, database_url: str) -> dict:
    """One run of `items` items on one db_worker, SIGKILLed once about half the items are stored, then
    resumed by a second worker (it takes the dead one's chunk once its heartbeat is stale). The loopback
    server runs in this process and logs every request, so an item asked again after its answer was
    stored ("generated twice") is seen; "missing" is an item without its output at the end."""
    from annotations.models import Item
    from generation.fakeserver import FakeServer
    from generation.models import GenerationRecord, GenerationRun
    from generation.services import generation_run_start

    heartbeat = {"EDITLAB_WORKER_HEARTBEAT_S": "1", "EDITLAB_WORKER_STALE_S": "5"}
    project = _project(items)
    question_of = dict(Item.objects.filter(project=project).values_list("source", "pk"))
    with FakeServer(latency_s=latency) as server:
        wall0 = time.perf_counter()
        run = generation_run_start(
            project=project,
            kind="output",
            name="bench-kill",
            endpoint=server.base_url,
            model="fake",
            template_text=TEMPLATE,
            template_name="bench.txt",
            seed=1,
            concurrency=concurrency,
        )
        [first] = _workers_start(1, database_url, extra=heartbeat)
        while GenerationRecord.objects.filter(run=run).count() < items // 2:
            time.sleep(0.2)
        first_cpu = _children_cpu_s([first.pid])
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
        killed_at = time.perf_counter()
        stored_before = _stored(run.pk)
        asked_before = len(server.requests)
        [second] = _workers_start(1, database_url, first=1, extra=heartbeat)
        resumed_at = None
        try:
            while True:
                status = GenerationRun.objects.values_list("status", flat=True).get(pk=run.pk)
                if resumed_at is None and len(server.requests) > asked_before:
                    resumed_at = time.perf_counter()
                if status not in GenerationRun.GOING:
                    break
                time.sleep(0.2)
            wall = time.perf_counter() - wall0
            second_cpu = _children_cpu_s([second.pid])
        finally:
            second.terminate()
            second.wait(timeout=60)
        asked: dict[int, int] = {}
        for body in list(server.requests):
            content = body["messages"][-1]["content"]
            pk = question_of[content.split("Question: ", 1)[1].split("\nKnowledge:", 1)[0]]
            asked[pk] = asked.get(pk, 0) + 1
    done = GenerationRun.objects.get(pk=run.pk)
    outputs = Item.objects.filter(project=project, outputs__has_key="bench-kill").count()
    records = GenerationRecord.objects.filter(run=run)
    return {
        "items": items,
        "concurrency": concurrency,
        "status": done.status,
        "generated": done.generated,
        "records": records.count(),
        "records_generated": records.filter(status="generated").count(),
        "stored_before_kill": len(stored_before),
        "generated_twice": sum(1 for pk in stored_before if asked.get(pk, 0) > 1),
        "asked_again_lost_at_kill": sum(1 for pk, n in asked.items() if n > 1 and pk not in stored_before),
        "missing": items - outputs,
        "requests": sum(asked.values()),
        "wall_s": wall,
        "resume_wait_s": (resumed_at - killed_at) if resumed_at else None,
        "worker_cpu_ms_per_text": (first_cpu + second_cpu) * 1000 / max(1, done.generated),
    }


def kill_report(result: dict, *, latency: float, vendor: str) -> str:
    r = result
    return "\n".join(
        [
            f"## A {r['items']:,}-item run, one db_worker SIGKILLed mid-run, resumed by another "
            f"({datetime.now():%Y-%m-%d %H:%M}, {platform.machine()}, {os.cpu_count()} CPUs, {vendor}, "
            f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())})",
            "",
            f"Concurrency {r['concurrency']}, the loopback server answering after {latency * 1000:.0f} ms. Worker A "
            f"was killed once {r['stored_before_kill']:,} items were stored; worker B (heartbeat 1 s, stale after "
            "5 s) took A's chunk again and the rest.",
            "",
            "| status | generated | records | stored before the kill | **generated twice** | **missing** | "
            "asked again (answers the kill lost) | requests | wall s | B's first call after the kill s | "
            "worker CPU ms per text |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {r['status']} | {r['generated']:,} | {r['records']:,} | {r['stored_before_kill']:,} | "
            f"{r['generated_twice']} | {r['missing']} | {r['asked_again_lost_at_kill']} | {r['requests']:,} | "
            f"{r['wall_s']:.1f} | {r['resume_wait_s'] or float('nan'):.1f} | {r['worker_cpu_ms_per_text']:.2f} |",
        ]
    )


def report(rows, *, items: int, latency: float, vendor: str) -> str:
    lines = [
        f"## {rows[0][0] if rows else 0} db_worker(s) ({datetime.now():%Y-%m-%d %H:%M}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, {vendor}, load average at the end {' / '.join(f'{x:.1f}' for x in os.getloadavg())})",
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
    parser.add_argument(
        "--kill-resume",
        type=int,
        default=0,
        metavar="ITEMS",
        help="Instead: one run of ITEMS items at the highest --concurrency, its worker SIGKILLed mid-run.",
    )
    args = parser.parse_args()
    if (args.workers or args.kill_resume) and not args.database_url:
        parser.error("--workers and --kill-resume need --database-url (PostgreSQL shared with the workers)")
    # Read by the settings when Django starts: the backend the runs go through.
    os.environ["TASKS_BACKEND"] = "database" if args.workers or args.kill_resume else "immediate"
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(args.database_url, Path(folder))
        if args.kill_resume:
            result = kill_resume(
                items=args.kill_resume,
                latency=args.latency,
                concurrency=max(int(c) for c in args.concurrency.split(",")),
                database_url=args.database_url,
            )
            body = kill_report(result, latency=args.latency, vendor=vendor)
            print(result, body, sep="\n")
            write_section(
                result_file("generation"),
                "<!-- benchmark:generation:kill:start -->",
                "<!-- benchmark:generation:kill:end -->",
                body,
            )
            return
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
