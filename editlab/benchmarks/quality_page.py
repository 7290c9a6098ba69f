"""The quality page's cost at the size of a WMT release: a synthetic MQM TSV (seeded) imported into a throwaway
database, then the page's data (metrics.quality_page.quality_data), the whole page and a filtered page timed.

    python -m editlab.benchmarks.quality_page [--systems 10] [--segments 740] [--raters 1] [--repeat 3]
        [--database-url URL] [--output FILE; default editlab/benchmarks/results/quality.md]

The default size is the TED en-de release's (7,406 ratings: 10 systems x ~740 segments, one rater each).
Each rating has 0-3 errors of the MQM core with WMT's severities; spans lie in the target, some overlapping.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

from editlab.benchmarks.support import result_file, setup_django, write_section

START, END = "<!-- benchmark:quality_page:start -->", "<!-- benchmark:quality_page:end -->"
HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n"
CATEGORIES = ("Accuracy/Mistranslation", "Fluency/Grammar", "Fluency/Punctuation", "Style/Awkward", "Accuracy/Omission")
SEVERITIES = ("Minor", "Minor", "Major", "Critical")


def synthetic_tsv(systems: int, segments: int, raters: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = "the committee approved a new budget for the coming year after long debate".split()
    lines = [HEADER]
    for segment in range(1, segments + 1):
        source = " ".join(rng.choice(words) for _ in range(12))
        doc = f"doc{segment // 20}"
        for system in range(systems):
            target = " ".join(rng.choice(words) for _ in range(12))
            for rater in range(raters):
                head = f"sys{system}\t{doc}\t{segment // 20}\t{segment}\trater{rater}\t{source}"
                errors = rng.choice((0, 0, 1, 1, 2, 3))
                if not errors:
                    lines.append(f"{head}\t{target}\tNo-error\tNo-error\t\n")
                for _ in range(errors):
                    start = rng.randrange(0, len(target) - 5)
                    end = rng.randrange(start + 1, min(len(target), start + 30))
                    marked = target[:start] + "<v>" + target[start:end] + "</v>" + target[end:]
                    lines.append(f"{head}\t{marked}\t{rng.choice(CATEGORIES)}\t{rng.choice(SEVERITIES)}\t\n")
    return "".join(lines)


def measure(tsv: Path, repeat: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotations.importers import import_items
    from annotations.models import Project
    from annotations.roles import set_role
    from metrics.quality_page import quality_data

    start = time.perf_counter()
    report = import_items(project="quality-bench", fmt="mqm", path=tsv, create_project=True)
    imported = time.perf_counter() - start
    project = Project.objects.get(name="quality-bench")
    user = get_user_model().objects.create(username="bench-researcher")
    set_role(user, "researcher")
    client = Client()
    client.force_login(user)
    url = reverse("metrics-quality", kwargs={"project_id": project.pk})
    timings: dict[str, list[float]] = {"data": [], "page": [], "filtered": [], "page 20": []}
    queries = 0
    data = quality_data(project=project, query={})  # a first read (the database's caches warm)
    for _ in range(repeat):
        start = time.perf_counter()
        data = quality_data(project=project, query={})
        timings["data"].append(time.perf_counter() - start)
        for label, query in (("page", ""), ("filtered", "?system=sys1&severity=major"), ("page 20", "?page=20")):
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                response = client.get(url + query)
            timings[label].append(time.perf_counter() - start)
            assert response.status_code == 200, (label, response.status_code)
            if label == "page":
                queries = len(captured)
    return {
        "report": report,
        "import_s": imported,
        "timings": timings,
        "queries": queries,
        "ratings": data.ratings,
        "segments": data.segments,
        "systems": len(data.systems),
        "pairs": len(data.comparisons or []),
    }


def table(vendor: str, args: argparse.Namespace, result: dict) -> str:
    report = result["report"]
    lines = [
        f"### {args.systems} systems x {args.segments} segments x {args.raters} rater(s), synthetic (seed 7)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
        f"database {vendor}; best and median of {args.repeat} runs.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| ratings, error spans imported | {report.evaluations_created:,}, {report.error_spans_created:,} |",
        f"| import time | {result['import_s']:.2f} s |",
        f"| rated system segments, systems, pairs compared | {result['segments']:,}, {result['systems']}, "
        f"{result['pairs']} |",
        f"| queries for the whole page | {result['queries']} |",
    ]
    labels = {
        "data": "quality_data (read, score, breakdown, comparisons, agreement)",
        "page": "GET the whole page (first 25 segments)",
        "filtered": "GET ?system=sys1&severity=major",
        "page 20": "GET ?page=20",
    }
    for key, label in labels.items():
        values = sorted(result["timings"][key])
        lines.append(f"| {label} | {values[0]:.2f} s (median {values[len(values) // 2]:.2f} s) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--segments", type=int, default=740)
    parser.add_argument("--raters", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", help="An empty PostgreSQL database (default: a temporary SQLite file).")
    parser.add_argument("--output", type=Path, default=result_file("quality"), help="markdown file (between markers)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tsv = Path(folder) / "synthetic.tsv"
        tsv.write_text(synthetic_tsv(args.systems, args.segments, args.raters), encoding="utf-8")
        vendor = setup_django(args.database_url, Path(folder))
        result = measure(tsv, args.repeat)
    text = table(vendor, args, result)
    print(text)
    if args.output:
        write_section(args.output, START, END, text)


if __name__ == "__main__":
    main()
