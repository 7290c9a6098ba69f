"""compute_metrics on the IWSLT2019 study, and export memory for 100,000 synthetic rows.

    python -m editlab.benchmarks.compute [--workers N] [--rows 100000] [--output FILE; default editlab/benchmarks/results/compute.md]
                                         [--database-url URL] [--skip-export] [--skip-study]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url
names an empty PostgreSQL database), never the project's own:
1. imports ../shared/data/iwslt2019 (format pet) and times metric_values_compute for the
   effort suite, both variants (first run, then the incremental second run, which must
   do no metric work);
2. analyses the study (targets wall_time and keystrokes) and writes the walk-through
   table;
3. builds --rows synthetic submitted post-edits with 10 metrics x 2 variants and streams
   each export format to /dev/null, measuring the peak of Python allocations
   (tracemalloc) and of the process RSS above its level before the export, for 10% of
   the rows and for all of them: flat memory means both sizes peak alike.
Numbers go to --output between markers, so re-runs replace them.
"""

import argparse
import os
import platform
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from editlab.benchmarks.analysis import study_tables  # the study's tables are the analysis benchmark's
from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, write_section

START, END = "<!-- benchmark:compute:start -->", "<!-- benchmark:compute:end -->"
STUDY_START, STUDY_END = "<!-- study:iwslt2019:start -->", "<!-- study:iwslt2019:end -->"


def _rss_kib() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


# --- 1. the study ------------------------------------------------------------------------


def study(workers: int | None) -> dict:
    from annotations.importers import import_items
    from annotations.models import Project
    from metrics.services import metric_values_compute
    from metrics.text import EFFORT_SUITE

    start = time.perf_counter()
    import_items(project="IWSLT2019", fmt="pet", path=IWSLT2019, create_project=True)
    imported = time.perf_counter() - start
    project = Project.objects.get(name="IWSLT2019")

    start = time.perf_counter()
    first = metric_values_compute(project=project, metrics=EFFORT_SUITE, processes=workers)
    first_s = time.perf_counter() - start
    per_metric = {}
    # Per-metric cost (one variant, in-process, 500 pairs) shows where the time goes.
    from metrics.selectors import post_edit_queryset
    from metrics.text import Pair, score_pairs

    sample = [
        Pair(o, e, tuple(r))
        for o, e, r in post_edit_queryset(project=project).values_list(
            "assignment__item__model_output", "text", "assignment__item__references"
        )[:500]
    ]
    for variant in ("plain", "with_references"):
        for name in EFFORT_SUITE:
            t0 = time.perf_counter()
            score_pairs(sample, [name], variant=variant, processes=1)
            per_metric[(name, variant)] = (time.perf_counter() - t0) / len(sample) * 1000

    start = time.perf_counter()
    second = metric_values_compute(project=project, metrics=EFFORT_SUITE, processes=workers)
    second_s = time.perf_counter() - start
    return {
        "import_s": imported,
        "first": first,
        "first_s": first_s,
        "second": second,
        "second_s": second_s,
        "per_metric_ms": per_metric,
        "project": project,
    }


# --- 3. export memory ------------------------------------------------------------------------


SYNTHETIC_METRICS = [f"metric_{i}" for i in range(10)]


def synthetic_project(name: str, rows: int):
    import random

    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from annotations.models import Assignment, Item, PostEdit, Project
    from metrics.models import MetricValue

    rng = random.Random(rows)
    User = get_user_model()
    annotators = [User.objects.get_or_create(username=f"synthetic{i}")[0] for i in range(8)]
    project = Project.objects.create(name=name)
    words = "the a model output post edit text metric effort keystroke time human machine sentence".split()
    batch = 5000
    now = timezone.now()
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        with transaction.atomic():
            items = Item.objects.bulk_create(
                [
                    Item(
                        project=project,
                        external_id=f"syn-{start + i}",
                        position=start + i,
                        source=" ".join(rng.choices(words, k=12)),
                        model_output=" ".join(rng.choices(words, k=rng.randint(8, 40))),
                        task_type="synthetic",
                    )
                    for i in range(n)
                ]
            )
            assignments = Assignment.objects.bulk_create(
                [
                    Assignment(item=item, annotator=annotators[(start + i) % 8], status=Assignment.SUBMITTED)
                    for i, item in enumerate(items)
                ]
            )
            post_edits = PostEdit.objects.bulk_create(
                [
                    PostEdit(
                        assignment=assignment,
                        text=assignment.item.model_output.replace("the", "a"),
                        origin=PostEdit.IMPORTED,
                        submitted_at=now,
                        wall_ms=rng.randint(1000, 90000),
                        keystrokes=rng.randint(0, 200),
                        allkeys=rng.randint(0, 300),
                    )
                    for assignment in assignments
                ]
            )
            MetricValue.objects.bulk_create(
                [
                    MetricValue(post_edit=pe, metric=m, variant=v, value=rng.random() * 50, metric_version="1")
                    for pe in post_edits
                    for m in SYNTHETIC_METRICS
                    for v in ("plain", "with_references")
                ],
                batch_size=5000,
            )
    return project


def measure_export(project, fmt: str) -> dict:
    from metrics.exports import export_spec, export_stream

    spec = export_spec(project=project)
    before = _rss_kib()
    peak_rss = before
    tracemalloc.start()
    start = time.perf_counter()
    size = 0
    with open(os.devnull, "wb") as sink:
        for chunk in export_stream(spec, fmt):
            sink.write(chunk)
            size += len(chunk)
            peak_rss = max(peak_rss, _rss_kib())
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": seconds, "bytes": size, "tracemalloc_mib": peak / 2**20, "rss_mib": (peak_rss - before) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=None, help="Scoring processes (default: all cores).")
    parser.add_argument("--rows", type=int, default=100_000, help="Synthetic post-edits for the export benchmark.")
    parser.add_argument("--output", type=Path, default=result_file("compute"))
    parser.add_argument("--database-url", default=None, help="An EMPTY database to use instead of a temporary SQLite.")
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-study", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="editlab-bench-") as folder:
        vendor = setup_django(args.database_url, Path(folder))
        machine = (
            f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores "
            f"(shared with other work while measured), {vendor}"
        )
        lines = [f"Measured by `python -m editlab.benchmarks.compute` on {machine}.", ""]
        if not args.skip_study:
            result = study(args.workers)
            first, second = result["first"], result["second"]
            lines += [
                f"- Import of iwslt2019 (format pet, {first.post_edits:,} post-edits): {result['import_s']:.1f} s.",
                f"- `compute_metrics`, effort suite ({', '.join(first.metrics)}), both variants: "
                f"{first.computed:,} values in {result['first_s']:.1f} s "
                f"({first.computed / result['first_s']:.0f} values/s).",
                f"- Second run on the unchanged project: {second.computed} values computed, "
                f"{second.up_to_date:,} up to date, in {result['second_s']:.1f} s (planning only, no metric work).",
                "- Cost per post-edit and metric in one process, ms (plain / with_references), from 500 "
                "post-edits: "
                + ", ".join(
                    f"{name} {result['per_metric_ms'][(name, 'plain')]:.2f} / "
                    f"{result['per_metric_ms'][(name, 'with_references')]:.2f}"
                    for name in first.metrics
                )
                + ".",
                "",
            ]
            print("\n".join(lines), flush=True)
            tables = study_tables(result["project"])
            print(tables, flush=True)
            write_section(args.output, STUDY_START, STUDY_END, tables)
        if not args.skip_export:
            small_rows = max(args.rows // 10, 1)
            t0 = time.perf_counter()
            small = synthetic_project("synthetic-small", small_rows)
            large = synthetic_project("synthetic-large", args.rows)
            built = time.perf_counter() - t0
            lines += [
                f"Export of synthetic projects ({len(SYNTHETIC_METRICS)} metrics x 2 variants = "
                f"{len(SYNTHETIC_METRICS) * 2} metric columns; built in {built:.0f} s), streamed to /dev/null:",
                "",
                "| format | rows | time | output | peak Python allocations (tracemalloc) | peak RSS growth |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            for fmt in ("csv", "jsonl", "parquet"):
                for rows, project in ((small_rows, small), (args.rows, large)):
                    m = measure_export(project, fmt)
                    lines.append(
                        f"| {fmt} | {rows:,} | {m['seconds']:.1f} s | {m['bytes'] / 2**20:.1f} MiB | "
                        f"{m['tracemalloc_mib']:.1f} MiB | {m['rss_mib']:.1f} MiB |"
                    )
                    print(lines[-1], flush=True)
            lines.append("")
        write_section(args.output, START, END, "\n".join(lines))
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
