"""Speed of the `pet` importer on the whole IWSLT2019 study (1,047 items, 5,235 post-edits).

    python -m editlab.benchmarks.import_iwslt [--repeats 3] [--database-url URL] [--output FILE; default editlab/benchmarks/results/import_iwslt.md]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url
names an empty PostgreSQL database), never the project's own. Each repeat imports the
study into a new project with fresh annotator accounts (first import), then imports it
again (every row skipped as already present). Prints a markdown table; with --output
the table replaces the text between markers in that file.
"""

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, write_section

if TYPE_CHECKING:  # imported at run time only once Django is set up
    from annotations.importers.store import ImportReport

START, END = "<!-- benchmark:import:start -->", "<!-- benchmark:import:end -->"


def _timed(**kwargs) -> tuple[float, "ImportReport"]:
    from annotations.importers import import_items

    start = time.perf_counter()
    report = import_items(fmt="pet", path=IWSLT2019, create_project=True, **kwargs)
    return time.perf_counter() - start, report


def run(repeats: int) -> tuple[list[float], list[float]]:
    first, again = [], []
    for n in range(repeats):
        seconds, report = _timed(project=f"IWSLT2019 run {n}", annotator_prefix=f"run{n}-")
        assert (report.items_created, report.post_edits_created) == (1047, 5235), report.summary()
        first.append(seconds)
        seconds, report = _timed(project=f"IWSLT2019 run {n}", annotator_prefix=f"run{n}-")
        assert (report.items_skipped, report.post_edits_skipped) == (1047, 5235), report.summary()
        again.append(seconds)
    return first, again


def table(vendor: str, first: list[float], again: list[float]) -> str:
    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"

    return "\n".join(
        [
            f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
            f"database {vendor}; median of {len(first)} runs.",
            "",
            "| import of iwslt2019 (1,047 items, 5,235 post-edits, 5 annotators) | time |",
            "|---|---|",
            f"| first import (everything created) | {cell(first)} |",
            f"| re-import (everything skipped) | {cell(again)} |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--database-url", help="An empty PostgreSQL database (default: a temporary SQLite file).")
    parser.add_argument(
        "--output", type=Path, default=result_file("import_iwslt"), help="markdown file for the table (between markers)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(args.database_url, Path(folder))
        first, again = run(args.repeats)
    text = table(vendor, first, again)
    print(text)
    if args.output:
        write_section(args.output, START, END, text)


if __name__ == "__main__":
    main()
