"""editlab's MQM scores against the published ones: a WMT MQM TSV imported, scored, and compared row by row
with the release's avg_seg_scores file (google/wmt-mqm-human-evaluation).

    python -m editlab.benchmarks.mqm_published MQM_TSV AVG_SEG_SCORES_TSV [--rename ref=ref-A,...]
        [--category Fluency/Display ...] [--database-url URL] [--output FILE; default editlab/benchmarks/results/mqm.md]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url names an empty
PostgreSQL database). The release's data is never part of this repository: fetch it and name its files.
--rename maps a system name of the TSV to the scores file's (the TED files call ref-A "ref");
--category adds a category the release uses beyond the MQM core typology. The comparison: every scored
(system, segment) against the published row; "None" rows (segments nobody rated for that system) are
counted apart; equal means |ours - published| <= 1e-9 after ours is rounded as the file rounds (6 decimals),
and the raw maximum difference is given too. The exported TSV is compared with the imported file.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

from editlab.benchmarks.support import result_file, setup_django, write_section

START, END = "<!-- benchmark:mqm:start -->", "<!-- benchmark:mqm:end -->"


def published_scores(path: Path) -> dict[tuple[str, str], str]:
    """(system, seg_id) -> the score as written ('None' for an unrated segment); the file separates its
    columns by tabs or spaces, its header by spaces."""
    scores = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            system, score, seg_id = line.split()
            scores[(system, seg_id)] = score
    return scores


def compare(tsv: Path, avg: Path, rename: dict[str, str], categories: list[str]) -> dict:
    from annotations.importers import import_items
    from annotations.models import Project
    from annotations.typology import MQM_CORE
    from metrics.analysis.mqm import published, segment_scores
    from metrics.exports_mqm import mqm_export_stream
    from metrics.selectors_quality import ratings

    project = Project.objects.create(name="mqm-published", quality={"categories": [*MQM_CORE, *categories]})
    start = time.perf_counter()
    report = import_items(project=project, fmt="mqm", path=tsv)
    imported = time.perf_counter() - start
    start = time.perf_counter()
    ours = segment_scores(ratings(project), project.typology().weights)
    scored = time.perf_counter() - start
    theirs = published_scores(avg)
    counts: Counter[str] = Counter()
    max_raw = max_rounded = 0.0
    for (system, seg_id), score in ours.items():
        key = (rename.get(system, system), seg_id)
        if key not in theirs:
            counts["ours only"] += 1
            continue
        if theirs[key] == "None":
            counts["ours, published None"] += 1
            continue
        value = published(score)
        raw = abs(value - float(theirs[key]))
        rounded = abs(float(f"{value:.6f}") - float(theirs[key]))
        max_raw, max_rounded = max(max_raw, raw), max(max_rounded, rounded)
        counts["compared"] += 1
        counts["equal"] += rounded <= 1e-9
        counts["same text"] += f"{value:.6f}" == theirs[key]
    mapped = {(rename.get(s, s), g) for s, g in ours}
    counts["published only, None"] = sum(1 for k, v in theirs.items() if k not in mapped and v == "None")
    counts["published only, scored"] = sum(1 for k, v in theirs.items() if k not in mapped and v != "None")
    exported = b"".join(mqm_export_stream(project))
    return {
        "report": report,
        "counts": counts,
        "max_raw": max_raw,
        "max_rounded": max_rounded,
        "import_s": imported,
        "score_s": scored,
        "round_trip": exported == tsv.read_bytes(),
        "rows": tsv.read_bytes().count(b"\n") - 1,
    }


def table(vendor: str, name: str, result: dict) -> str:
    counts, report = result["counts"], result["report"]
    return "\n".join(
        [
            f"### {name}",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
            f"database {vendor}.",
            "",
            "| figure | value |",
            "|---|---|",
            f"| TSV rows | {result['rows']:,} |",
            f"| items, ratings, error spans imported | {report.items_created:,}, {report.evaluations_created:,},"
            f" {report.error_spans_created:,} |",
            f"| import time | {result['import_s']:.2f} s |",
            f"| scoring time (read + segment scores) | {result['score_s']:.2f} s |",
            f"| (system, segment) scores compared | {counts['compared']:,} |",
            f"| equal to 1e-9 (ours at the file's 6 decimals) | {counts['equal']:,} |",
            f"| written identically (`%.6f`) | {counts['same text']:,} |",
            f"| max abs difference, ours unrounded | {result['max_raw']:.3g} |",
            f"| published `None` (no rating), not in the TSV | {counts['published only, None']:,} |",
            f"| published scores we lack / scores the file lacks | {counts['published only, scored']:,} /"
            f" {counts['ours only'] + counts['ours, published None']:,} |",
            f"| `export --format mqm` byte-identical to the imported TSV | {'yes' if result['round_trip'] else 'no'} |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tsv", type=Path, help="the release's MQM TSV, e.g. ted/ende/mqm_ted_ende.tsv")
    parser.add_argument("avg", type=Path, help="its avg_seg_scores file, e.g. ted/ende/mqm_ted_ende.avg_seg_scores.tsv")
    parser.add_argument("--rename", default="", help="TSV=SCORES system names, comma-separated (ref=ref-A)")
    parser.add_argument("--category", action="append", default=[], help="a category beyond the MQM core")
    parser.add_argument("--database-url", help="An empty PostgreSQL database (default: a temporary SQLite file).")
    parser.add_argument("--output", type=Path, default=result_file("mqm"), help="markdown file (between markers)")
    args = parser.parse_args()
    rename = dict(pair.split("=", 1) for pair in args.rename.split(",") if pair)
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(args.database_url, Path(folder))
        result = compare(args.tsv, args.avg, rename, args.category)
    text = table(vendor, args.tsv.name, result)
    print(text)
    if args.output:
        marker = args.tsv.name.split(".")[0]
        write_section(args.output, START.replace("mqm", marker), END.replace("mqm", marker), text)


if __name__ == "__main__":
    main()
