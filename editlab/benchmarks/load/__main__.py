"""`python -m editlab.benchmarks.load`: the whole run (see the package's docstring)."""

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from pathlib import Path

from editlab.benchmarks.load import __doc__ as load_doc
from editlab.benchmarks.load.checker import check_exactly_once, seed
from editlab.benchmarks.load.client import Account, LoadPlan, run_load
from editlab.benchmarks.load.harness import (
    CpuMeter,
    Gunicorn,
    Postgres,
    Profiler,
    profile_summary,
    server_environment,
    server_settings,
)
from editlab.benchmarks.load.report import END, START, autovacuum_timeline, log_autovacuum, report, server_times
from editlab.benchmarks.support import result_file, write_section

# ---------------------------------------------------------------- the benchmark


def _setup_django(settings: dict[str, str]) -> None:
    """This process (the seeding and the checks) with the same settings as the measured app."""
    os.environ.update(settings)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # DEBUG is off: the app serves the collected, hashed static files (as a deployment does).
    call_command("collectstatic", interactive=False, verbosity=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=load_doc.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load after every login")
    parser.add_argument("--workers", type=int, default=8)
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
    parser.add_argument(
        "--output", type=Path, default=result_file("load"), help="markdown file for the report (between markers)"
    )
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
    plan = LoadPlan(
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
            settings = server_settings(database_url, folder_path / "static")
            env = server_environment(settings)
            _setup_django(settings)
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
        write_section(args.output, START, END, text[text.index(START) : text.index(END) + len(END)])
    return 0 if ok else 1


async def _measured(
    gunicorn: Gunicorn, postgres: Postgres, accounts: list[Account], plan: LoadPlan, *, profile: Path | None = None
):
    """run_load, with the CPU meter and the access-log offset taken when the run phase starts."""
    trees = {"app (gunicorn)": [gunicorn.pid], "PostgreSQL": postgres.pids(), "load client": [os.getpid()]}
    started: dict = {}

    def on_run_start() -> None:
        started["offset"] = gunicorn.access_log.stat().st_size if gunicorn.access_log.exists() else 0
        started["wall"] = time.time()
        started["meter"] = CpuMeter(trees, alone=("load client",))
        if profile is not None:
            started["profiler"] = Profiler(gunicorn.pid, profile)

    try:
        result = await run_load(gunicorn.base_url, accounts, plan, on_run_start=on_run_start)
    finally:
        if "profiler" in started:
            started["profiler"].stop()
    return result, started["meter"].stop(), started["offset"], started["wall"]


if __name__ == "__main__":
    sys.exit(main())
