"""Speed of the text-metrics engine on the IWSLT2019 study (5,235 MT / post-edit pairs), side by side with
the published code, with identical values asserted:

1. compression per pair vs the published `compression-distance` 0.1.1 package, on an ASCII-only copy of the
   texts (the package rejects anything else), both in their default environment, in --repeat interleaved
   rounds (best and median); editlab also one call for all pairs, on the original Unicode texts, and through
   its pure-Python fallback (the previous implementation);
2. the effort suite end to end through `score_pairs` (worker processes) vs a plain sequential per-pair loop
   over the same libraries;
3. one compression distance between two 1,000,000-character texts: the published package, editlab's
   fallback and editlab's compiled code, each --repeat times in a fresh process, with its peak memory
   (editlab.benchmarks.metrics_million).

    python -m editlab.benchmarks.metrics [--data ../shared/data/iwslt2019] [--repeat 5]
        [--output FILE; default editlab/benchmarks/results/metrics.md]

Prints a markdown table and writes it into --output between markers, so re-runs replace it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from editlab.benchmarks.support import result_file, write_section

START, END = "<!-- benchmark:metrics:start -->", "<!-- benchmark:metrics:end -->"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "iwslt2019"
MILLION = 1_000_000


def _load_remark(peak: float) -> str:
    """What the load average says of the figures: with more runnable processes than cores, other work
    shared the machine, and wall times (the published code's OpenMP team above all) suffer."""
    cores = os.cpu_count() or 1
    if peak > cores:
        return " (the machine was shared), so treat the figures as indicative"
    return f" (load average at most {cores} on {cores} cores: nothing else competed for long)"


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


def in_one_call(function: Callable[[list], list], pairs: list[tuple[str, str]]) -> tuple[list, float]:
    start = time.perf_counter()
    values = function(pairs)
    return values, time.perf_counter() - start


def with_cpu(run: Callable[[], tuple[list, float]]) -> tuple[list, float, float]:
    """run()'s values and wall seconds, and the CPU seconds of the whole process meanwhile (every thread's: an
    OpenMP team's included), which a busy machine distorts less than wall time."""
    cpu = time.process_time()
    values, wall = run()
    return values, wall, time.process_time() - cpu


def compression_rounds(pairs: list[tuple[str, str]], ascii_pairs: list[tuple[str, str]], repeat: int) -> dict:
    """Seconds per round of each compression implementation on all pairs, rounds interleaved so that a change of
    load hits all alike; values asserted identical in every round.

    The published package runs in its default environment (pydivsufsort's OpenMP team as it comes). Its team's
    threads spin for a while after each call, taking a core, so each round measures editlab first and rests a
    second after the published package. The fallback sets the team to one thread for the rest of the process,
    hence its rounds come last."""
    from compression_distance import compression_distance as published

    from metrics.text.compression import _native, _python_distance, compression_distance, compression_distances

    if _native() is None:
        raise SystemExit("the compiled compression extension is not built: pip install -e . (with gcc present)")
    names = ("published", "call", "batch", "unicode call", "unicode batch")
    seconds: dict[str, list[float]] = {name: [] for name in (*names, *(f"{name} cpu" for name in names))}
    expected = [published(a, b) for a, b in ascii_pairs]
    unicode_values: list = []  # the last round's: the fallback's reference
    time.sleep(1.0)
    for _ in range(repeat):
        for name, run in (
            ("call", lambda: per_pair(compression_distance, ascii_pairs)),
            ("batch", lambda: in_one_call(compression_distances, ascii_pairs)),
            ("published", lambda: per_pair(published, ascii_pairs)),
        ):
            values, elapsed, cpu = with_cpu(run)
            assert values == expected, f"compression ({name}) differs from the published package"
            seconds[name].append(elapsed)
            seconds[f"{name} cpu"].append(cpu)
        time.sleep(1.0)  # the published package's OpenMP threads stop spinning
        unicode_values, elapsed, cpu = with_cpu(lambda: per_pair(compression_distance, pairs))
        seconds["unicode call"].append(elapsed)
        seconds["unicode call cpu"].append(cpu)
        batch_values, elapsed, cpu = with_cpu(lambda: in_one_call(compression_distances, pairs))
        assert batch_values == unicode_values
        seconds["unicode batch"].append(elapsed)
        seconds["unicode batch cpu"].append(cpu)
    seconds["fallback"] = []
    for _ in range(repeat):
        values, elapsed = per_pair(_python_distance, pairs)
        assert values == unicode_values, "the compiled and the pure-Python compression differ"
        seconds["fallback"].append(elapsed)
    # the published code with pydivsufsort on one OpenMP thread (the fallback's setting): no idle team spinning
    seconds["published, 1 thread"] = []
    for _ in range(repeat):
        values, elapsed = per_pair(published, ascii_pairs)
        assert values == expected
        seconds["published, 1 thread"].append(elapsed)
    return seconds


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


def best_median(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


# --- the run ------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="The iwslt2019 folder.")
    parser.add_argument("--repeat", type=int, default=5, help="Rounds of the compression measurements.")
    parser.add_argument("--limit", type=int, help="Only the first N pairs (a quick check; the README uses all).")
    parser.add_argument("--output", type=Path, default=result_file("metrics"))
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    from metrics.text import EFFORT_SUITE, Pair, score_pairs
    from metrics.text.config import process_count

    load_before = os.getloadavg()
    pairs = load_pairs(args.data)[: args.limit]
    ascii_pairs = [(ascii_copy(a), ascii_copy(b)) for a, b in pairs]
    print(f"{len(pairs)} pairs; load average before: {load_before[0]:.2f}", file=sys.stderr)

    # 1. compression per pair
    rounds = compression_rounds(pairs, ascii_pairs, args.repeat)
    load_compression = os.getloadavg()

    # 2. the effort suite, between two measurements of the machine's parallel capacity
    capacity_before = parallel_capacity(process_count())
    plain, plain_s = plain_effort_loop(pairs)
    start = time.perf_counter()
    engine = score_pairs([Pair(a, b) for a, b in pairs], list(EFFORT_SUITE))
    engine_s = time.perf_counter() - start
    for name in EFFORT_SUITE:
        assert engine[name] == plain[name], f"{name} differs between score_pairs and the plain loop"
    capacity_after = parallel_capacity(process_count())

    # 3. a million characters
    from editlab.benchmarks.metrics_million import million_rounds  # it imports this module's readers

    million = million_rounds(args.data, args.repeat)
    load_after = os.getloadavg()

    us = 1e6 / len(pairs)

    def per_pair_cell(name: str) -> str:
        best, median = best_median(rounds[name])
        return f"{median * us:.1f} µs (best {best * us:.1f})"

    def speed_up(name: str, base: str = "published") -> str:
        return f"**{best_median(rounds[base])[1] / best_median(rounds[name])[1]:.0f}x**"

    def million_seconds(which: str, key: str = "seconds") -> float:
        return statistics.median(run[key] for run in million[which])

    def million_cell(which: str) -> str:
        best = min(run["seconds"] for run in million[which])
        peak = statistics.median(run["peak_mb"] for run in million[which])
        return (
            f"{million_seconds(which):.3f} s (best {best:.3f}; CPU {million_seconds(which, 'cpu'):.3f} s), "
            f"peak +{peak:.0f} MB"
        )

    def million_speed_up(which: str, base: str) -> str:
        return f"{million_seconds(base) / million_seconds(which):.2f}x"

    published_cell = per_pair_cell("published")
    rows = [
        (
            f"compression per pair, {len(pairs):,} pairs (ASCII copy), one call each",
            published_cell,
            per_pair_cell("call"),
            speed_up("call"),
            "20x",
        ),
        (
            "the same, all pairs in one call (`compression_distances`)",
            published_cell,
            per_pair_cell("batch"),
            speed_up("batch"),
            "20x",
        ),
        (
            "the same pairs, published package on one OpenMP thread (no idle team spinning) vs one call each",
            per_pair_cell("published, 1 thread"),
            per_pair_cell("call"),
            speed_up("call", "published, 1 thread"),
            "",
        ),
        (
            "compression per pair, original texts (Unicode), one call each",
            "(ASCII only)",
            per_pair_cell("unicode call"),
            "",
            "",
        ),
        (
            "the same, all pairs in one call",
            "",
            per_pair_cell("unicode batch"),
            "",
            "",
        ),
        (
            "the same, editlab's pure-Python fallback (the previous implementation)",
            "",
            per_pair_cell("fallback"),
            f"compiled: {speed_up('unicode call', 'fallback')}",
            "",
        ),
        (
            f"effort suite ({len(EFFORT_SUITE)} metrics), {len(pairs):,} pairs end to end",
            f"{plain_s:.1f} s",
            f"{engine_s:.1f} s ({process_count()} processes)",
            f"{plain_s / engine_s:.2f}x",
            "1.8x",
        ),
        (
            f"(calibration) {process_count()} CPU-bound processes vs 1, before / after the suite",
            "",
            "",
            f"{capacity_before:.2f}x / {capacity_after:.2f}x",
            f"{process_count()}x if the cores are free",
        ),
        (
            "compression, two 1,000,000-character texts (fresh process each)",
            million_cell("published"),
            million_cell("compiled"),
            million_speed_up("compiled", "published"),
            "faster",
        ),
        (
            "the same, editlab's pure-Python fallback (the previous implementation)",
            "",
            million_cell("fallback"),
            f"compiled: {million_speed_up('compiled', 'fallback')}",
            "compiled at least as fast",
        ),
    ]
    table = "\n".join(
        [
            "| measurement | published / plain loop | editlab | speed-up | goal |",
            "|---|---|---|---|---|",
            *(f"| {' | '.join(row)} |" for row in rows),
        ]
    )
    phrases = million["compiled"][0]["value"]
    notes = (
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, by `python -m editlab.benchmarks.metrics --repeat {args.repeat}`; load "
        f"average {load_before[0]:.1f} before, {load_compression[0]:.1f} after the per-pair rounds and "
        f"{load_after[0]:.1f} at the end{_load_remark(max(load_before[0], load_compression[0], load_after[0]))}. Times are "
        f"medians (and best) of {args.repeat} rounds (per-pair rounds interleaved; each 1M run in a fresh "
        "process); speed-ups compare medians. Values are asserted identical in every round: compression on all "
        f"{len(pairs):,} pairs (compiled, one call each and all at once, the fallback and the published package) "
        f"and on the 1M texts ({phrases:,} phrases), each effort metric on every pair. Default environment for "
        "every implementation: the published package with pydivsufsort's default OpenMP team (one thread per "
        "core; on a busy machine its idle threads spinning between calls cost dearly, hence the row on one "
        "thread, measured after the others, as the fallback sets it); the compiled code uses no OpenMP. The plain loop calls the engine's own compression function, so the suite's row "
        f"measures how score_pairs runs the work: {process_count()} processes (the caller works while the others "
        f"start), and each of the {len(set(pairs)):,} distinct pairs scored once (the plain loop scores all "
        f"{len(pairs):,}). Peak memory: rise of the process's peak RSS during the call (median of the runs). "
        "CPU time per pair (the process's, all threads; median), less distorted by other jobs than wall time: "
        f"published {statistics.median(rounds['published cpu']) * us:.0f} µs, editlab one call each "
        f"{statistics.median(rounds['call cpu']) * us:.1f} µs, all in one call "
        f"{statistics.median(rounds['batch cpu']) * us:.1f} µs "
        f"({statistics.median(rounds['published cpu']) / statistics.median(rounds['call cpu']):.0f}x)."
    )
    section = f"{START}\n### Performance\n\n{table}\n\n{notes}\n{END}"
    print(section)
    write_section(args.output, START, END, section)


if __name__ == "__main__":
    main()
