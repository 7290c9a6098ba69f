"""A study at scale as a user runs it: import, metrics, analysis and export of N finished post-edits.

    python -m editlab.benchmarks.scale --post-edits N [--database-url URL] [--steps import,metrics,analyze,export,pages]
        [--metrics compression,levenshtein,ter,chrf,bleu] [--pages manage-items,manage-item] [--output FILE]
        [--keep-database FILE]

Writes a quoted TSV of N finished post-edits: IWSLT2019's 5,235 post-edits (segment, MT, post-edit,
time and effort counts) replicated until there are N, each replica's items with their own ids and
its five editors drawn from 40 annotators. Then, each step as the user types it, in a child process
on a throwaway database (a SQLite file unless --database-url names an empty PostgreSQL database):
`import_items --format table`, `compute_metrics`, `analyze --target wall_time --no-mixed` and
`export` in every format, then the pages a researcher opens on the project (Django's test client,
three times each: status, queries, first and median time, CPU time of the process: SQLite's work
included, less sensitive to a busy machine). For each step: wall time, CPU and the child's peak RSS (getrusage of the
child: its whole life, Django's imports included; an empty `manage.py check` is given for
comparison). Numbers go to --output between markers named by N and the database. --keep-database copies
the SQLite file, as the last step left it, to FILE (for scale_copies or a later run; the default keeps nothing).
"""

import argparse
import csv
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from editlab.benchmarks.support import IWSLT2019, production_settings, result_file, write_section

ANNOTATORS = 40
COUNTS = (
    "letters",
    "digits",
    "spaces",
    "symbols",
    "navigation",
    "erase",
    "commands",
    "visible",
    "keystrokes",
    "allkeys",
)
COLUMNS = ("external_id", "source", "model_output", "edited", "annotator", "wall_ms", *COUNTS)
PROJECT = "scale"
FORMATS = ("parquet", "csv", "jsonl")
# The pages a researcher or admin opens on the project: (URL name, what it takes: nothing, the project's id,
# or the project's and its middle item's id, a query string). The items browser is opened on its first page,
# a page in the middle (the keyset marker of the middle item or post-edit) and filtered.
PAGES = (
    ("manage-projects", "", ""),
    ("manage-project-edit", "project", ""),
    ("manage-batches", "project", ""),
    ("manage-design", "project", ""),
    ("manage-progress", "project", ""),
    ("manage-items", "project", ""),
    ("manage-items", "project", "?after={item}"),
    ("manage-items", "project", "?view=post-edits"),
    ("manage-items", "project", "?view=post-edits&after={assignment}"),
    ("manage-items", "project", "?view=post-edits&annotator=editor-7&status=submitted&q=r1"),
    ("manage-items", "project", "?flag=(none)&condition=(none)"),
    ("manage-item", "item", ""),
    ("metrics-projects", "", ""),
    ("metrics-project", "project", ""),
    ("metrics-reports", "", ""),
    ("metrics-report", "project", ""),
)


def iwslt_rows() -> list[dict[str, str]]:
    """IWSLT2019's post-edits, one dict per row (the five editors' files, in order)."""
    names = [name.strip("<>") for name in (IWSLT2019 / "header").read_text().strip().split("\t")]
    rows = []
    for editor in range(5):
        with (IWSLT2019 / f"ann{editor}").open(encoding="utf-8", newline="") as handle:
            for values in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                row = dict(zip(names, values, strict=True))
                row["editor"] = str(editor)
                rows.append(row)
    return rows


def write_study(path: Path, post_edits: int) -> int:
    """The TSV of `post_edits` finished post-edits (quoted as csv.writer's excel-tab writes); its size in bytes."""
    rows = iwslt_rows()
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, dialect="excel-tab")
        writer.writerow(COLUMNS)
        for n in range(post_edits):
            replica, index = divmod(n, len(rows))
            row = rows[index]
            annotator = (replica * 5 + int(row["editor"])) % ANNOTATORS
            writer.writerow(
                [
                    f"r{replica}:{row['file_name']}:{row['line_in_file']}",
                    row["S"],
                    row["MT"],
                    row["PE"],
                    f"editor-{annotator}",
                    row["time"],
                    *(row[name] for name in COUNTS),
                ]
            )
    return path.stat().st_size


def run_step(name: str, arguments: list[str], env: dict[str, str]) -> dict:
    """One manage.py command in a child process: wall s, CPU s, peak RSS MB, its last output line."""
    command = [sys.executable, "manage.py", *arguments]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = process.stdout.read().decode(errors="replace") if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{name} failed ({status}): {output[-2000:]}")
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return {
        "step": name,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "said": lines[-1][:120] if lines else "",
    }


def pages_child() -> None:
    """Open each page of PAGES three times as a superuser (Django's test client, in this process):
    print one JSON line per page with its status, its queries and its wall times in ms."""
    import json
    import statistics

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotations.models import Assignment, Project

    project = Project.objects.get(name=PROJECT)
    items = project.items.order_by("position", "id").values_list("id", flat=True)
    middle_item = items[items.count() // 2]
    assignments = Assignment.objects.filter(item__project=project).order_by("id").values_list("id", flat=True)
    middle_assignment = assignments[assignments.count() // 2]
    only = set(filter(None, os.environ.get("SCALE_PAGES", "").split(",")))
    user = get_user_model().objects.filter(username="scale-admin").first()
    if user is None:
        user = get_user_model().objects.create_superuser("scale-admin", "admin@example.org", None)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    for name, takes, query in PAGES:
        if only and name not in only:
            continue
        kwargs = {"project_id": project.pk} if takes else None
        if takes == "item":
            kwargs = {"project_id": project.pk, "item_id": middle_item}
        url = reverse(name, kwargs=kwargs) + query.format(item=middle_item, assignment=middle_assignment)
        times, cpu, statuses, counts = [], [], [], []
        for _ in range(3):
            with CaptureQueriesContext(connection) as queries:
                began, began_cpu = time.perf_counter(), time.process_time()
                statuses.append(client.get(url).status_code)
                times.append((time.perf_counter() - began) * 1000)
                cpu.append((time.process_time() - began_cpu) * 1000)  # SQLite runs in this process: its work counts
            counts.append(len(queries))
        print(
            json.dumps(
                {"page": url, "status": statuses[-1], "queries": counts[-1], "first_ms": times[0],
                 "median_ms": statistics.median(times), "cpu_ms": statistics.median(cpu)}
            ),
            flush=True,
        )  # fmt: skip


def run_pages(env: dict[str, str]) -> list[str]:
    """The pages' table, from pages_child in a child process (DEBUG off, so queries are counted by
    CaptureQueriesContext, not by the debug log)."""
    import json

    static = tempfile.mkdtemp(prefix="scale-static-")
    env = {**env, "STATIC_ROOT": static}  # production serves collectstatic's manifest
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env=env, check=True)
    command = [sys.executable, "-m", "editlab.benchmarks.scale", "--pages-child"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    shutil.rmtree(static, ignore_errors=True)
    if result.returncode != 0:
        raise SystemExit(f"the pages child failed: {result.stderr[-2000:]}")
    lines = [
        "",
        "| page | status | queries | first ms | median of 3 ms | CPU ms (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for line in result.stdout.strip().splitlines():
        page = json.loads(line)
        lines.append(
            f"| {page['page']} | {page['status']} | {page['queries']} | {page['first_ms']:.0f} "
            f"| {page['median_ms']:.0f} | {page['cpu_ms']:.0f} |"
        )
    return lines


def run(post_edits: int, database_url: str | None, steps: list[str], metrics: str, folder: Path) -> list[str]:
    study = folder / "study.tsv"
    began = time.perf_counter()
    size = write_study(study, post_edits)
    written = time.perf_counter() - began
    url = database_url or f"sqlite:///{folder / 'scale.sqlite3'}"
    # The file may be over the default import limit (50 MiB): the limit is raised to the file's size.
    limit = str(max(size, 50 * 1024 * 1024))
    env = {**os.environ, **production_settings(url), "EDITLAB_ALLOW_SQLITE": "1", "EDITLAB_IMPORT_MAX_BYTES": limit}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, check=True)
    results = [run_step("manage.py check (Django alone)", ["check"], env)]
    if "import" in steps:
        results.append(
            run_step(
                "import_items --format table",
                ["import_items", str(study), "--project", PROJECT, "--create-project", "--format", "table"],
                env,
            )
        )
    if "metrics" in steps:
        results.append(
            run_step(
                f"compute_metrics {metrics}",
                ["compute_metrics", "--project", PROJECT, "--metrics", metrics, "--no-progress"],
                env,
            )
        )
    if "analyze" in steps:
        results.append(
            run_step(
                "analyze --target wall_time --no-mixed",
                ["analyze", "--project", PROJECT, "--target", "wall_time", "--no-mixed", "--format", "json"],
                env,
            )
        )
    if "export" in steps:
        for fmt in FORMATS:
            out = folder / f"export.{fmt}"
            results.append(
                run_step(
                    f"export --format {fmt}",
                    ["export", "--project", PROJECT, "--format", fmt, "--output", str(out)],
                    env,
                )
            )
            results[-1]["said"] = f"{out.stat().st_size / 1e6:.1f} MB"
            out.unlink()
    pages = run_pages(env) if "pages" in steps else []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    lines = [
        f"{post_edits:,} finished post-edits ({size / 1e6:.0f} MB TSV, written in {written:.0f} s), "
        f"{'PostgreSQL' if database_url else 'SQLite'}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load} at the end ({time.strftime('%Y-%m-%d %H:%M')} UTC)",
        "",
        "| step | wall s | CPU s (child) | peak RSS MB | last line / file |",
        "|---|---:|---:|---:|---|",
    ]
    for result in results:
        said = result["said"].replace("|", "/")
        lines.append(
            f"| {result['step']} | {result['wall_s']:.1f} | {result['cpu_s']:.1f} | {result['peak_mb']:.0f} | {said} |"
        )
    return lines + pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--post-edits", type=int, default=100_000)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: a SQLite file)")
    parser.add_argument("--steps", default="import,metrics,analyze,export,pages")
    parser.add_argument("--metrics", default="compression,levenshtein,ter,chrf,bleu")
    parser.add_argument("--output", type=Path, default=result_file("scale"))
    parser.add_argument("--pages", default="", help="only these pages' URL names, comma-separated (default: all)")
    parser.add_argument("--keep-database", type=Path, help="copy the SQLite file to this path at the end")
    parser.add_argument("--pages-child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.pages_child:
        pages_child()
        return
    if options.keep_database and options.database_url:
        parser.error("--keep-database keeps the SQLite file: not with --database-url")
    os.environ["SCALE_PAGES"] = options.pages  # read by the pages child
    steps = [step.strip() for step in options.steps.split(",") if step.strip()]
    with tempfile.TemporaryDirectory() as folder:
        lines = run(options.post_edits, options.database_url, steps, options.metrics, Path(folder))
        if options.keep_database:
            shutil.copyfile(Path(folder) / "scale.sqlite3", options.keep_database)
    database = "postgresql" if options.database_url else "sqlite"
    start = f"<!-- scale:{options.post_edits}:{database}:start -->"
    end = f"<!-- scale:{options.post_edits}:{database}:end -->"
    body = "\n".join([start, *lines, end])
    print(body)
    write_section(options.output, start, end, body)


if __name__ == "__main__":
    main()
