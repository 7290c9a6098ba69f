"""Speed of the text-metrics engine on the IWSLT2019 study (5,235 MT / post-edit pairs), side by side with
the published code, with identical values asserted:

1. compression per pair vs the published `compression-distance` 0.1.1 package, on an ASCII-only copy of the
   texts (the package rejects anything else);
2. the effort suite end to end through `score_pairs` (worker processes) vs a plain sequential per-pair loop
   over the same libraries;
3. one compression distance between two 1,000,000-character texts vs the published package, each in a fresh
   process, with its peak memory.

    python -m editlab.benchmarks.metrics [--data ../shared/data/iwslt2019] [--output FILE; default editlab/benchmarks/results/metrics.md]

Prints a markdown table and writes it into --output between markers, so re-runs replace it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from editlab.benchmarks.support import result_file, write_section

START, END = "<!-- benchmark:metrics:start -->", "<!-- benchmark:metrics:end -->"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "iwslt2019"
MILLION = 1_000_000


def load_pairs(folder: Path) -> list[tuple[str, str]]:
    """(MT, PE) of every row of every annotator file, in file order; the `header` file names the columns."""
    header = (folder / "header").read_text("utf-8").rstrip("\n").split("\t")
    mt, pe = header.index("<MT>"), header.index("<PE>")
    pairs = []
    for path in sorted(folder.glob("ann*")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            cells = line.split("\t")
            if len(cells) <= max(mt, pe):
                raise SystemExit(f"{path}:{number}: {len(cells)} columns, expected at least {max(mt, pe) + 1}")
            pairs.append((cells[mt], cells[pe]))
    return pairs


def ascii_copy(text: str) -> str:
    """Accents dropped (NFKD), anything else outside ASCII as '?', and DEL avoided: the package's separator
    is chr(max + 1), which must stay ASCII."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return plain.replace("\x7f", "?")


def per_pair(function: Callable[[str, str], float], pairs: list[tuple[str, str]]) -> tuple[list, float]:
    start = time.perf_counter()
    values = [function(a, b) for a, b in pairs]
    return values, time.perf_counter() - start


# --- 2. the plain sequential loop the engine is compared with -----------------------------------------------


def plain_effort_loop(pairs: list[tuple[str, str]]) -> tuple[dict[str, list[float]], float]:
    """What one would write without score_pairs: each library called per pair, in one process. Compression is
    the engine's own function, so the comparison measures only how score_pairs runs the work."""
    from cer import calculate_cer
    from rapidfuzz.distance import Levenshtein
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu.metrics import BLEU, CHRF, TER

    from metrics.text import compression_distance
    from metrics.text.ngram import _AnyScriptTokenizer

    def compression(source: str, target: str) -> float:
        return float(compression_distance(source, target))

    def charac_ter(hypothesis: str, reference: str) -> float:
        h, r = hypothesis.split(), reference.split()
        return (0.0 if not h else 1.0) if not r else float(calculate_cer(h, r))

    ter, bleu, chrf = TER(case_sensitive=True), BLEU(effective_order=True), CHRF()
    rouge = RougeScorer(["rougeL"], tokenizer=_AnyScriptTokenizer())
    out: dict[str, list[float]] = {
        name: []
        for name in ("compression", "levenshtein", "levenshtein_words", "ter", "bleu", "chrf", "rouge_l", "charac_ter")
    }
    start = time.perf_counter()
    for mt, pe in pairs:
        out["compression"].append(compression(mt, pe))
        out["levenshtein"].append(float(Levenshtein.distance(mt, pe)))
        out["levenshtein_words"].append(float(Levenshtein.distance(mt.split(), pe.split())))
        out["ter"].append(float(ter.sentence_score(pe, [mt]).score))
        out["bleu"].append(float(bleu.sentence_score(mt, [pe]).score))
        out["chrf"].append(float(chrf.sentence_score(mt, [pe]).score))
        out["rouge_l"].append(float(rouge.score(pe, mt)["rougeL"].fmeasure))
        out["charac_ter"].append(charac_ter(mt, pe))
    return out, time.perf_counter() - start


# --- calibration: how much parallel capacity the (shared) machine offers right now -----------------------------


def _burn(n: int) -> float:
    x = 0
    for i in range(n):
        x += i * i
    return float(x)


def parallel_capacity(processes: int, n: int = 10_000_000) -> float:
    """Speed-up of `processes` copies of a pure-Python CPU loop over one copy: ideally `processes`; less when
    other jobs hold cores. The effort-suite row can be no better than this."""
    import multiprocessing

    start = time.perf_counter()
    _burn(n)
    one = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        start = time.perf_counter()
        pool.map(_burn, [n] * processes)
        many = time.perf_counter() - start
    return processes * one / many


# --- 3. a million characters, each implementation in its own process ----------------------------------------


def million_texts(pairs: list[tuple[str, str]]) -> tuple[str, str]:
    """The study's MT texts end to end, and its post-edits, each cut to 1,000,000 characters (ASCII copy)."""
    mt = ascii_copy(" ".join(a for a, _ in pairs))
    pe = ascii_copy(" ".join(b for _, b in pairs))
    while len(mt) < MILLION or len(pe) < MILLION:
        mt, pe = mt + " " + mt, pe + " " + pe
    return mt[:MILLION], pe[:MILLION]


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def million_child(which: str, folder: Path) -> None:
    """Run in a fresh process: time one distance, report the rise of peak RSS over the level before it."""
    from compression_distance import compression_distance as published

    from metrics.text.compression import _one_openmp_thread, compression_distance

    _one_openmp_thread()  # the same OpenMP setting for both (see the table's note)
    original, edited = million_texts(load_pairs(folder))
    function = compression_distance if which == "editlab" else published
    before = _rss_kb("VmRSS")
    start = time.perf_counter()
    value = function(original, edited)
    seconds = time.perf_counter() - start
    print(json.dumps({"value": value, "seconds": seconds, "peak_mb": (_rss_kb("VmHWM") - before) / 1024}))


def run_million(which: str, folder: Path) -> dict:
    command = [sys.executable, "-m", "editlab.benchmarks.metrics", "--million-child", which, "--data", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the run ------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="The iwslt2019 folder.")
    parser.add_argument("--output", type=Path, default=result_file("metrics"))
    parser.add_argument("--million-child", choices=("editlab", "published"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.million_child:
        million_child(args.million_child, args.data)
        return

    from compression_distance import compression_distance as published

    from metrics.text import EFFORT_SUITE, Pair, compression_distance, score_pairs
    from metrics.text.compression import _one_openmp_thread
    from metrics.text.config import worker_count

    load_before = os.getloadavg()
    pairs = load_pairs(args.data)
    ascii_pairs = [(ascii_copy(a), ascii_copy(b)) for a, b in pairs]
    print(f"{len(pairs)} pairs; load average before: {load_before[0]:.2f}", file=sys.stderr)

    # 1. compression per pair. pydivsufsort's OpenMP runs with its default team first (for the record, on a
    # sample), then on one thread, the engine's setting, for both implementations and the plain loop below.
    sample = ascii_pairs[:500]
    _, default_team_s = per_pair(published, sample)
    _one_openmp_thread()
    published_values, published_s = per_pair(published, ascii_pairs)
    ours_values, ours_s = per_pair(compression_distance, ascii_pairs)
    assert ours_values == published_values, "compression differs from the published package"

    # 2. the effort suite, between two measurements of the machine's parallel capacity
    capacity_before = parallel_capacity(worker_count())
    plain, plain_s = plain_effort_loop(pairs)
    start = time.perf_counter()
    engine = score_pairs([Pair(a, b) for a, b in pairs], list(EFFORT_SUITE))
    engine_s = time.perf_counter() - start
    for name in EFFORT_SUITE:
        assert engine[name] == plain[name], f"{name} differs between score_pairs and the plain loop"
    capacity_after = parallel_capacity(worker_count())

    # 3. a million characters
    mine, theirs = run_million("editlab", args.data), run_million("published", args.data)
    assert mine["value"] == theirs["value"], "compression of the 1M texts differs"
    load_after = os.getloadavg()

    us = 1e6 / len(pairs)
    rows = [
        (
            "compression, per pair (ASCII copy)",
            f"{published_s * us:.0f} µs",
            f"{ours_s * us:.0f} µs",
            f"{published_s / ours_s:.2f}x",
            "2x",
        ),
        (
            f"effort suite ({len(EFFORT_SUITE)} metrics), {len(pairs):,} pairs end to end",
            f"{plain_s:.1f} s",
            f"{engine_s:.1f} s ({worker_count()} processes)",
            f"{plain_s / engine_s:.2f}x",
            "1.8x",
        ),
        (
            f"(calibration) {worker_count()} CPU-bound processes vs 1, before / after the suite",
            "",
            "",
            f"{capacity_before:.2f}x / {capacity_after:.2f}x",
            f"{worker_count()}x if the cores are free",
        ),
        (
            "compression, two 1,000,000-character texts",
            f"{theirs['seconds']:.2f} s, peak +{theirs['peak_mb']:.0f} MB",
            f"{mine['seconds']:.2f} s, peak +{mine['peak_mb']:.0f} MB",
            f"{theirs['seconds'] / mine['seconds']:.2f}x",
            "faster",
        ),
    ]
    table = "\n".join(
        [
            "| measurement | published / plain loop | editlab | speed-up | goal |",
            "|---|---|---|---|---|",
            *(f"| {' | '.join(row)} |" for row in rows),
        ]
    )
    notes = (
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, by `python -m editlab.benchmarks.metrics`; load average "
        f"{load_before[0]:.1f} before and {load_after[0]:.1f} after (the machine was shared), so treat the "
        "figures as indicative. Values are asserted identical in the same run: compression on all "
        f"{len(pairs):,} pairs and on the 1M texts ({mine['value']:,} phrases), each effort metric on every pair. "
        "Both compression implementations run libdivsufsort on one OpenMP thread, the engine's setting; with "
        f"the default team the published code took {default_team_s * 1e6 / len(sample):.0f} µs per pair "
        "(first 500 pairs). The plain loop calls the engine's own compression function, so the suite's row "
        f"measures how score_pairs runs the work: {worker_count()} processes (the caller works while the others "
        f"start), and each of the {len(set(pairs)):,} distinct pairs scored once (the plain loop scores all "
        f"{len(pairs):,}). Peak memory: rise of the process's peak RSS during the call."
    )
    section = f"{START}\n### Performance\n\n{table}\n\n{notes}\n{END}"
    print(section)
    write_section(args.output, START, END, section)


if __name__ == "__main__":
    main()
