"""Part 3 of the metrics benchmark (editlab.benchmarks.metrics): one compression distance between two
1,000,000-character texts, by the published package, editlab's fallback and editlab's compiled code, each in a
fresh process, with its peak memory.

    python -m editlab.benchmarks.metrics_million {published,fallback,compiled} --data FOLDER

runs one implementation once and prints its JSON line; the metrics benchmark calls it --repeat times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from editlab.benchmarks.metrics import MILLION, ascii_copy, load_pairs


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


def _reset_peak_rss() -> None:
    """Peak RSS (VmHWM) back to the current RSS (Linux), so that the peak measured is the call's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # then the peak may include building the texts; the rise is an upper bound


MILLION_IMPLEMENTATIONS = ("published", "fallback", "compiled")


def million_child(which: str, folder: Path) -> None:
    """Run in a fresh process: time one distance, report the rise of peak RSS over the level before it. Each
    implementation in its default environment (the fallback sets pydivsufsort's OpenMP team to one thread)."""
    import gc

    from compression_distance import compression_distance as published

    from metrics.text.compression import _native, _python_distance

    original, edited = million_texts(load_pairs(folder))
    if which == "compiled":
        native = _native()
        if native is None:
            raise SystemExit("the compiled compression extension is not built: pip install -e . (with gcc present)")
        function = native.distance
    else:
        function = {"published": published, "fallback": _python_distance}[which]
    gc.collect()
    _reset_peak_rss()
    before = _rss_kb("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    value = function(original, edited)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = (_rss_kb("VmHWM") - before) / 1024
    print(json.dumps({"value": value, "seconds": seconds, "cpu": cpu, "peak_mb": peak_mb}))


def run_million(which: str, folder: Path) -> dict:
    command = [sys.executable, "-m", "editlab.benchmarks.metrics_million", which, "--data", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    return json.loads(done.stdout.strip().splitlines()[-1])


def million_rounds(folder: Path, repeat: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {which: [] for which in MILLION_IMPLEMENTATIONS}
    for _ in range(repeat):
        for which in MILLION_IMPLEMENTATIONS:
            runs[which].append(run_million(which, folder))
    values = {run["value"] for each in runs.values() for run in each}
    assert len(values) == 1, f"compression of the 1M texts differs: {values}"
    return runs


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=MILLION_IMPLEMENTATIONS)
    parser.add_argument("--data", type=Path, required=True, help="The iwslt2019 folder.")
    args = parser.parse_args()
    million_child(args.which, args.data)
