"""Agreement over 100,000 post-edits with overlap 3 (synthetic): alpha, ICC and output distances.

    python -m editlab.benchmarks.agreement [--post-edits N] [--output FILE]

33,334 items, each post-edited by 3 of 60 editors (a 3-sentence-long text of ~20 words, each editor changing
a few words); keystrokes as effort. Timed, one process, wall clock, best of 3 runs: Krippendorff's alpha
(interval, the one-pass formula), the six ICCs (complete-case, 3 raters per item: the editors are numbered
per item, first/second/third), the pairs (metrics.analysis.output_agreement.overlap_pairs), and the output
distances with compression distance (both ways, 2 x 100,000 pairs); TER and chrF, ~0.3 ms a pair, on a
2,000-pair sample, extrapolated. Goal: alpha + ICC + compression under 10 s.
Then, through the database (a throwaway SQLite unless --database-url; --skip-iwslt to leave it out): IWSLT2019
imported, and `agreement_build` (the one query, alpha, ICC, output distances) timed as `analyze --agreement`
runs it, with compression only and with all three distances. Numbers go to --output between markers (re-runs
replace them).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, timed, write_section
from metrics.analysis.agreement import icc_oneway, intraclass, krippendorff_alpha
from metrics.analysis.output_agreement import output_distances, overlap_pairs

START, END = "<!-- benchmark:agreement:start -->", "<!-- benchmark:agreement:end -->"
DB_START, DB_END = "<!-- benchmark:agreement-iwslt:start -->", "<!-- benchmark:agreement-iwslt:end -->"
OVERLAP = 3
EDITORS = 60
WORDS = [f"w{k}" for k in range(2000)]


def synthetic(post_edits: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    items = -(-post_edits // OVERLAP)
    units = np.repeat(np.arange(items), OVERLAP)[:post_edits]
    slot = np.tile(np.arange(OVERLAP), items)[:post_edits]  # first, second, third editor of the item
    editors = np.array([f"ed{(u * 7 + s * 13) % EDITORS}" for u, s in zip(units, slot, strict=True)])
    difficulty = rng.gamma(2.0, 40.0, items)
    keystrokes = np.round(difficulty[units] * rng.lognormal(0.0, 0.4, post_edits))
    base = [rng.choice(WORDS, 20).tolist() for _ in range(items)]
    texts = []
    for u in units.tolist():
        words = list(base[u])
        for position in rng.integers(0, 20, 3):
            words[position] = WORDS[int(rng.integers(0, len(WORDS)))]
        texts.append(" ".join(words))
    return units, editors, slot, keystrokes, texts


T = TypeVar("T")


def best_of(runs: int, work: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = work()
    times = [time.perf_counter() - start]
    for _ in range(runs - 1):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--post-edits", type=int, default=100_000)
    parser.add_argument("--output", type=Path, default=result_file("agreement"))
    parser.add_argument("--skip-iwslt", action="store_true")
    parser.add_argument("--database-url", default=None, help="an EMPTY database to use instead of a temporary SQLite")
    args = parser.parse_args()
    synthetic_run(args)
    if not args.skip_iwslt:
        with tempfile.TemporaryDirectory(prefix="editlab-bench-") as folder:
            vendor = setup_django(args.database_url, Path(folder))
            body = iwslt_run(vendor)
        write_section(args.output, DB_START, DB_END, body)
        print(body)


def iwslt_run(vendor: str) -> str:
    from annotations.importers import import_items
    from annotations.models import Project
    from metrics.agreement_report import DISTANCES, agreement_build
    from metrics.analysis_options import selection_build

    import_items(project="IWSLT2019", fmt="pet", path=IWSLT2019, create_project=True)
    selection = selection_build(project=Project.objects.get(name="IWSLT2019"), target="keystrokes")
    load = os.getloadavg()[0]
    lines = [
        f"IWSLT2019 through the database ({vendor}): 5,235 post-edits, 1,047 items x 5 editors, 10,470 pairs; "
        f"load average {load:.2f}. `agreement_build(selection=..., distances=...)`, target keystrokes, one run.",
        "",
        "| distances | wall (s) | CPU (s) | alpha | compression mean |",
        "|---|---|---|---|---|",
    ]
    for distances in (("compression",), DISTANCES):
        wall, cpu, data = timed(partial(agreement_build, selection=selection, distances=distances))
        lines.append(
            f"| {', '.join(distances)} | {wall:.2f} | {cpu:.2f} | {data['effort']['alpha']['alpha']:.6f} | "
            f"{data['output'][0]['mean']:.4f} |"
        )
    return "\n".join(lines)


def synthetic_run(args: argparse.Namespace) -> None:
    from metrics.text import METRICS

    compression = METRICS["compression"].batch
    assert compression is not None
    load_before = os.getloadavg()
    units, editors, slot, keystrokes, texts = synthetic(args.post_edits)
    t_alpha, alpha = best_of(3, lambda: krippendorff_alpha(units, keystrokes))
    t_icc, icc = best_of(3, lambda: intraclass(units, slot, keystrokes))
    t_oneway, oneway = best_of(3, lambda: icc_oneway(units, keystrokes))
    assert alpha.alpha is not None and icc is not None and oneway.value is not None
    t_pairs, pairs = best_of(3, lambda: overlap_pairs(units, editors))
    t_out, outs = best_of(
        3,
        lambda: output_distances(
            units, editors, texts, distances={"compression": compression}, directions={"compression": "effort"}
        ),
    )
    sample = [(texts[i], texts[j]) for i, j in zip(pairs[0][:2000].tolist(), pairs[1][:2000].tolist(), strict=True)]
    slow = {}
    for name in ("ter", "chrf"):
        func = METRICS[name].func
        start = time.perf_counter()
        for a, b in sample:
            func(a, b)
            func(b, a)
        slow[name] = (time.perf_counter() - start) / len(sample)
    load_after = os.getloadavg()
    (out,) = outs
    n_pairs = int(pairs[0].size)
    total = t_alpha + t_icc + t_oneway + t_out
    body = "\n".join(
        [
            f"{args.post_edits:,} post-edits, {int(np.unique(units).size):,} items, overlap {OVERLAP}, "
            f"{EDITORS} editors; {n_pairs:,} pairs. {platform.processor() or platform.machine()}, Python "
            f"{platform.python_version()}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
            "(2 cores shared by 7 helpers). Wall clock, best of 3.",
            "",
            "| step | time (s) | result |",
            "|---|---|---|",
            f"| Krippendorff's alpha, interval, one pass | {t_alpha:.3f} | alpha {alpha.alpha:.4f} on "
            f"{alpha.pairable:,} values |",
            f"| six ICCs, F-based CIs | {t_icc:.3f} | ICC(2,1) {icc.values['ICC(2,1)']:.4f}, {icc.items:,} items |",
            f"| ICC(1) one-way, unequal groups | {t_oneway:.3f} | {oneway.value:.4f}, n0 {oneway.n0:.3f} |",
            f"| pairs of one item by two editors | {t_pairs:.3f} | {n_pairs:,} |",
            f"| output distances, compression, both ways (includes the pairs) | {t_out:.3f} | mean "
            f"{out.mean:.3f}, {len(out.editors)} editors, {sum(e.flagged for e in out.editors)} flagged |",
            f"| **alpha + ICCs + compression** | **{total:.3f}** | goal < 10 s: {'met' if total < 10 else 'missed'} |",
            *(
                f"| {name}, both ways, per pair (2,000-pair sample) | {per * 1000:.3f} ms | "
                f"{per * n_pairs:.0f} s extrapolated to {n_pairs:,} pairs |"
                for name, per in slow.items()
            ),
        ]
    )
    write_section(args.output, START, END, body)
    print(body)


if __name__ == "__main__":
    main()
