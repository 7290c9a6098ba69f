"""compute_metrics against the plain library loop a researcher would write, metric by metric (issue 24).

    python -m editlab.benchmarks.compute_loop [--data FOLDER] [--metrics compression,levenshtein,ter,chrf,bleu]
        [--repeat 3] [--processes 1,2] [--db-workers 1,2] [--database-url URL] [--profile METRIC]
        [--output FILE; default editlab/benchmarks/results/compute.md]

On a throwaway database (SQLite in a temporary folder unless --database-url names an empty PostgreSQL
database), the IWSLT2019 study (--data, default ../shared/data/iwslt2019: MT -> PE, 5,235 post-edits) is
imported (format pet). Then, per metric, --repeat times:

(a) the plain loop: the library called once per (MT, PE) pair over a list already in memory, with the options
    editlab uses (LOOPS below: rapidfuzz's Levenshtein.distance; sacrebleu's TER(case_sensitive=True), CHRF()
    and BLEU(effective_order=True) sentence_score; the compression distance has no library, so the loop calls
    editlab's own core, metrics.text.compression.compression_distance, pair by pair);
(b) editlab: every value of that metric removed, then `metric_values_compute` (what `compute_metrics` runs)
    for that metric, variant plain, one process: reading the texts, planning, scoring and storing.

Both are timed in wall and CPU seconds of this process (SQLite works inside it; PostgreSQL's own CPU, when it
runs on this machine, is reported apart and added to editlab's), and the ratio is of values per CPU second.
Then every metric at once with `--processes` scoring processes (CPU of this process and its pool's
processes), and, on PostgreSQL, one metric job shared by `--db-workers` `db_worker` processes.
--profile METRIC prints the top of a cProfile of (b) for that metric and stops.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from editlab.benchmarks.metrics import load_pairs
from editlab.benchmarks.support import IWSLT2019, production_settings, result_file, setup_django, write_section

DEFAULT_METRICS = "compression,levenshtein,ter,chrf,bleu"
PROJECT = "loop"

Pairs = list[tuple[str, str]]


# --- (a) the plain loops -------------------------------------------------------------------------


def _compression_loop(pairs: Pairs) -> list[float]:
    from metrics.text.compression import compression_distance  # no library computes it: editlab's core

    return [float(compression_distance(mt, pe)) for mt, pe in pairs]


def _levenshtein_loop(pairs: Pairs) -> list[float]:
    from rapidfuzz.distance import Levenshtein

    return [float(Levenshtein.distance(mt, pe)) for mt, pe in pairs]


def _levenshtein_words_loop(pairs: Pairs) -> list[float]:
    from rapidfuzz.distance import Levenshtein

    return [float(Levenshtein.distance(mt.split(), pe.split())) for mt, pe in pairs]


def _ter_loop(pairs: Pairs) -> list[float]:
    from sacrebleu.metrics import TER

    ter = TER(case_sensitive=True)
    return [ter.sentence_score(pe, [mt]).score for mt, pe in pairs]


def _chrf_loop(pairs: Pairs) -> list[float]:
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    return [chrf.sentence_score(mt, [pe]).score for mt, pe in pairs]


def _bleu_loop(pairs: Pairs) -> list[float]:
    from sacrebleu.metrics import BLEU

    bleu = BLEU(effective_order=True)
    return [bleu.sentence_score(mt, [pe]).score for mt, pe in pairs]


# What a researcher writes for each metric; editlab's value of a pair is the loop's (tests/metrics/
# test_compute_loop.py checks it), except that editlab scores two empty texts 100 for bleu and chrf.
LOOPS: dict[str, Callable[[Pairs], list[float]]] = {
    "compression": _compression_loop,
    "levenshtein": _levenshtein_loop,
    "levenshtein_words": _levenshtein_words_loop,
    "ter": _ter_loop,
    "chrf": _chrf_loop,
    "bleu": _bleu_loop,
}


# --- the study -----------------------------------------------------------------------------------


def import_study(data: Path):
    """The study as `import_items --format pet` stores it; the project."""
    from annotations.importers import import_items
    from annotations.models import Project

    import_items(project=PROJECT, fmt="pet", path=data, create_project=True)
    return Project.objects.get(name=PROJECT)


def project_pairs(project) -> Pairs:
    """(model output, post-edit text) of the project's submitted post-edits, in id order."""
    from metrics.selectors import post_edit_queryset

    return list(
        post_edit_queryset(project=project).order_by("pk").values_list("assignment__item__model_output", "text")
    )


# --- measuring -----------------------------------------------------------------------------------


def _children_cpu_s() -> float:
    """CPU seconds used by this process's live child processes (the scoring pool)."""
    me, ticks, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def _pg_cpu_s() -> float | None:
    from django.db import connection

    from editlab.benchmarks.jobs import _pg_cpu_s as pg_cpu

    return pg_cpu() if connection.vendor == "postgresql" else None


def _delete_values(project, metrics: list[str]) -> None:
    from metrics.models import MetricValue

    MetricValue.objects.filter(post_edit__assignment__item__project=project, metric__in=metrics).delete()


def time_loop(name: str, pairs: Pairs) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    values = LOOPS[name](pairs)
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "values": len(values)}


def time_editlab(project, names: list[str], *, processes: int) -> dict:
    from metrics.services import metric_values_compute

    _delete_values(project, names)
    pg, children = _pg_cpu_s(), _children_cpu_s()
    wall, cpu = time.perf_counter(), time.process_time()
    report = metric_values_compute(project=project, metrics=names, variants=["plain"], processes=processes)
    result = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "values": report.computed}
    result["children_cpu_s"] = _children_cpu_s() - children
    pg_after = _pg_cpu_s()
    result["pg_cpu_s"] = pg_after - pg if pg is not None and pg_after is not None else 0.0
    return result


def compare(project, pairs: Pairs, names: list[str], repeat: int) -> list[dict]:
    """Per metric: the loop's and editlab's median wall and CPU over `repeat` alternating runs."""
    rows = []
    for name in names:
        loops, editlabs = [], []
        for _ in range(repeat):
            loops.append(time_loop(name, pairs))
            editlabs.append(time_editlab(project, [name], processes=1))
        row = {"metric": name, "values": loops[0]["values"], "editlab_values": editlabs[0]["values"]}
        for label, runs in (("loop", loops), ("editlab", editlabs)):
            row[f"{label}_wall_s"] = statistics.median(r["wall_s"] for r in runs)
            row[f"{label}_cpu_s"] = statistics.median(r["cpu_s"] + r.get("pg_cpu_s", 0.0) for r in runs)
        row["pg_cpu_s"] = statistics.median(r["pg_cpu_s"] for r in editlabs)
        rows.append(row)
        print(_compare_line(row), flush=True)
    return rows


def _compare_line(row: dict) -> str:
    loop_rate = row["values"] / row["loop_cpu_s"]
    editlab_rate = row["editlab_values"] / row["editlab_cpu_s"]
    # what editlab adds to the library's work: reading, planning, hashing, storing
    overhead = (row["editlab_cpu_s"] - row["loop_cpu_s"]) / row["values"]
    return (
        f"| {row['metric']} | {row['values']:,} | {row['loop_wall_s']:.2f} s / {row['loop_cpu_s']:.2f} s | "
        f"{loop_rate:,.0f} | {row['editlab_wall_s']:.2f} s / {row['editlab_cpu_s']:.2f} s | {editlab_rate:,.0f} | "
        f"{editlab_rate / loop_rate:.0%} | {overhead * 1e6:.0f} µs |"
    )


def scaling(project, names: list[str], process_counts: list[int], loops_cpu_s: float) -> list[str]:
    """Every metric in one run on each count of scoring processes; `loops_cpu_s`: the plain loops' CPU, summed."""
    lines = [
        f"Every metric at once ({', '.join(names)}), variant plain, `metric_values_compute(processes=N)`, as "
        f"`compute_metrics --metrics {','.join(names)} --variant plain --processes N` runs it; the plain loops "
        f"of these metrics take {loops_cpu_s:.2f} CPU-s together:",
        "",
        "| processes | values | wall | CPU (this process + pool) | values/s wall | values per CPU-second | "
        "plain loops' CPU / editlab's | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n in process_counts:
        before = _load()
        r = time_editlab(project, names, processes=n)
        cpu = r["cpu_s"] + r["children_cpu_s"] + r["pg_cpu_s"]
        lines.append(
            f"| {n} | {r['values']:,} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} + {r['children_cpu_s']:.1f} s | "
            f"{r['values'] / r['wall_s']:,.0f} | {r['values'] / cpu:,.0f} | {loops_cpu_s / cpu:.0%} | "
            f"{before} → {_load()} |"
        )
        print(lines[-1], flush=True)
    return lines + [""]


def db_worker_scaling(project, names: list[str], counts: list[int], database_url: str, folder: Path) -> list[str]:
    """One metric job for `names` (variant plain) shared by each count of `db_worker` processes."""
    from django.conf import settings

    from editlab.benchmarks.jobs import _cpu_s, _env, _start_workers, _stop_workers
    from metrics.jobs import metric_job_create
    from metrics.models import MetricJob

    env = _env(database_url, settings.EDITLAB_METRIC_CHUNK_SIZE)
    lines = [
        f"One metric job ({', '.join(names)}, variant plain, chunks of {settings.EDITLAB_METRIC_CHUNK_SIZE} "
        "post-edits) shared by N `db_worker` processes (EDITLAB_METRIC_PROCESSES=1 each); the time runs from "
        "the job's creation to its end, the workers' start-up excluded:",
        "",
        "| db_workers | values | wall | CPU workers + PostgreSQL | values/s wall | values per CPU-second | load |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n in counts:
        _delete_values(project, names)
        started = _start_workers(n, env, folder)
        before, pg = _load(), _pg_cpu_s() or 0.0
        cpu_before = sum(_cpu_s(p.pid) for p, _ in started)
        try:
            t0 = time.perf_counter()
            job = metric_job_create(project=project, user=None, metrics=names, variants=["plain"])
            while job.status not in (MetricJob.DONE, MetricJob.FAILED):
                time.sleep(0.1)
                job.refresh_from_db()
            wall = time.perf_counter() - t0
            workers_cpu = sum(_cpu_s(p.pid) for p, _ in started) - cpu_before
            pg_cpu = (_pg_cpu_s() or 0.0) - pg
        finally:
            _stop_workers(started)
        if job.status != MetricJob.DONE:
            raise SystemExit(f"the job failed: {job.error}")
        lines.append(
            f"| {n} | {job.total:,} | {wall:.1f} s | {workers_cpu:.1f} + {pg_cpu:.1f} s | {job.total / wall:,.0f} | "
            f"{job.total / (workers_cpu + pg_cpu):,.0f} | {before} → {_load()} |"
        )
        print(lines[-1], flush=True)
    return lines + [""]


def _scored_pairs(pairs: Pairs) -> int:
    """How many pairs score_pairs scores when compute_metrics hands it the post-edits chunk by chunk."""
    from django.conf import settings

    size = settings.EDITLAB_METRIC_CHUNK_SIZE
    return sum(len(set(pairs[start : start + size])) for start in range(0, len(pairs), size))


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def profile(project, name: str) -> None:
    _delete_values(project, [name])
    from metrics.services import metric_values_compute

    profiler = cProfile.Profile()
    profiler.enable()
    metric_values_compute(project=project, metrics=[name], variants=["plain"], processes=1)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=IWSLT2019, help="The IWSLT2019 folder (PET format).")
    parser.add_argument("--metrics", default=DEFAULT_METRICS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", default="1,2", help="Scoring processes to measure, comma-separated.")
    parser.add_argument("--db-workers", default="1,2", help="db_worker counts to measure (PostgreSQL only).")
    parser.add_argument("--database-url", default=None, help="An EMPTY database instead of a temporary SQLite.")
    parser.add_argument("--profile", default=None, help="Profile editlab's run of this metric and stop.")
    parser.add_argument("--parts", default="compare,processes,db-workers", help="What to measure (default: all).")
    parser.add_argument("--output", type=Path, default=result_file("compute"))
    args = parser.parse_args()
    names = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in names if m not in LOOPS]
    if unknown:
        raise SystemExit(f"no plain loop for {', '.join(unknown)}; loops exist for {', '.join(LOOPS)}")
    if not args.data.is_dir():
        raise SystemExit(f"the study is missing: {args.data} (--data names its folder)")

    with tempfile.TemporaryDirectory(prefix="editlab-bench-loop-") as tmp:
        folder = Path(tmp)
        # Production settings: DEBUG would record every query, a cost the loop does not pay.
        url = args.database_url or f"sqlite:///{folder / 'benchmark.sqlite3'}"
        os.environ.update(production_settings(url), EDITLAB_ALLOW_SQLITE="1")
        if args.database_url:
            os.environ["TASKS_BACKEND"] = "database"  # the db_workers' job goes through the database queue
        vendor = setup_django(args.database_url, folder)
        project = import_study(args.data)
        pairs = project_pairs(project)
        if sorted(pairs) != sorted(load_pairs(args.data)):
            raise SystemExit("the imported pairs differ from the study's (MT, PE) pairs")
        from django.conf import settings

        if args.profile:
            profile(project, args.profile)
            return
        lines = [
            f"Measured by `python -m editlab.benchmarks.compute_loop` ({time.strftime('%Y-%m-%d %H:%M')} UTC) on "
            f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores shared with "
            f"other work (load {_load()} at the start), {vendor}; IWSLT2019, {len(pairs):,} post-edits "
            f"({len(set(pairs)):,} distinct pairs; editlab scores each distinct pair of a chunk once: "
            f"{_scored_pairs(pairs):,} scorings in chunks of {settings.EDITLAB_METRIC_CHUNK_SIZE}, the loop "
            f"{len(pairs):,}), variant plain, median of {args.repeat} alternating runs. CPU: this process's "
            + ("(SQLite works inside it)." if vendor == "sqlite" else "and, for editlab, PostgreSQL's server's."),
            "",
            "| metric | values | loop wall / CPU | loop values per CPU-s | editlab wall / CPU | "
            "editlab values per CPU-s | editlab / loop | editlab's CPU beyond the loop, per value |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        print("\n".join(lines), flush=True)
        parts = {part.strip() for part in args.parts.split(",")}
        rows = compare(project, pairs, names, args.repeat) if "compare" in parts else []
        lines += [_compare_line(row) for row in rows] + [""]
        if any(row["pg_cpu_s"] for row in rows):
            lines += [
                "PostgreSQL's CPU is included in editlab's: "
                + ", ".join(f"{row['metric']} {row['pg_cpu_s']:.2f} s" for row in rows)
                + ".",
                "",
            ]
        if "processes" in parts:
            lines += scaling(project, names, _ints(args.processes), sum(row["loop_cpu_s"] for row in rows))
        if vendor == "postgresql" and args.db_workers and "db-workers" in parts:
            lines += db_worker_scaling(project, names, _ints(args.db_workers), args.database_url, folder)
        start, end = f"<!-- compute-loop:{vendor}:start -->", f"<!-- compute-loop:{vendor}:end -->"
        write_section(args.output, start, end, "\n".join(lines))
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
