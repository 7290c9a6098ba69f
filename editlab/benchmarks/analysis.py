"""Speed of the full analysis: 100,000 synthetic post-edits x 10 metrics x 2 targets.

    python -m editlab.benchmarks.analysis [--rows N] [--repeats R] [--output FILE; default editlab/benchmarks/results/analysis.md]

Times metrics.analysis.analyze (everything the report shows: Pearson/Spearman pooled and
per annotator, published-protocol and repeated-CV KNN R², Williams's tests, the metric
matrix and the effort model with drop-column contributions) once per target, and
writes the numbers into the README section file (between markers, so re-runs replace them).
"""

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from editlab.benchmarks.support import result_file, write_section
from metrics.analysis import SIMILARITY, Settings, analyze, analyze_targets

METRICS = [f"metric_{i}" for i in range(10)]
TARGETS = ["wall_ms", "keystrokes"]
START, END = "<!-- benchmark:analysis:start -->", "<!-- benchmark:analysis:end -->"


def synthetic_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    """Edits whose effort grows with a hidden amount of change, seen through noisy metrics."""
    rng = np.random.default_rng(seed)
    change = rng.gamma(2.0, 10.0, rows)
    annotators = rng.integers(0, 8, rows)
    speed = np.array([0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.3, 1.5])[annotators]
    original_length = rng.integers(20, 400, rows)
    frame = pd.DataFrame(
        {
            "annotator": [f"annotator{a}" for a in annotators],
            "original": pd.Series(original_length).map(lambda n: "x" * n),
            "edited": pd.Series(np.maximum(original_length + rng.integers(-20, 20, rows), 1)).map(lambda n: "y" * n),
            "keystrokes": np.round(change * 1.5 + rng.normal(0, 8, rows)).clip(0),
            "wall_ms": (speed * (4000 + 900 * change + 30 * original_length) * rng.lognormal(0, 0.3, rows)).round(),
        }
    )
    for i, name in enumerate(METRICS):
        noise = rng.normal(0, 2 + 3 * i, rows)
        value = change + noise if i % 3 else np.round(change + noise)  # every third metric is integer (ties)
        frame[name] = -value if i == 9 else value  # one similarity-like metric
    frame.loc[rng.random(rows) < 0.01, "metric_3"] = np.nan  # missing values exercise the dropped-row path
    return frame


def _timed(call) -> tuple[object, float, float]:
    """(result, wall seconds, CPU seconds of this process): CPU time barely depends on the
    other load of a shared machine, wall time does."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def run(rows: int, repeats: int) -> dict:
    load = os.getloadavg()[0]
    frame = synthetic_frame(rows)
    settings = Settings(cv_repeats=repeats)
    directions = {"metric_9": SIMILARITY}
    # What the report page, the analyze command and the API do: one target per call.
    one_by_one = {}
    for target in TARGETS:
        _, wall, cpu = _timed(
            lambda t=target: analyze(frame, metrics=METRICS, target=t, directions=directions, settings=settings)
        )
        one_by_one[target] = (wall, cpu)
    # Both targets in one call: the KNN neighbours are searched once per metric.
    results, wall, cpu = _timed(
        lambda: analyze_targets(frame, metrics=METRICS, targets=TARGETS, directions=directions, settings=settings)
    )
    best = {t: (r.best_metric, r.metrics[r.best_metric].knn_r2, r.effort_model.r2_cv.mean) for t, r in results.items()}
    return {
        "rows": rows,
        "repeats": repeats,
        "one_by_one": one_by_one,
        "together": (wall, cpu),
        "best": best,
        "load": load,
    }


def report(numbers: dict) -> str:
    lines = [
        START,
        f"Measured with `python -m editlab.benchmarks.analysis` ({numbers['rows']:,} synthetic post-edits, "
        f"{len(METRICS)} metrics, {len(TARGETS)} targets, 8 annotators; K=5, the 80/20 split and "
        f"{numbers['repeats']} x 5-fold CV per metric, Pearson/Spearman pooled and per annotator, Williams's tests, "
        f"the metric matrix, the effort model with drop-column contributions) "
        f"on {platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {numbers['load']:.1f} when it started (a shared machine: wall time grows with the load, "
        f"CPU time hardly does):",
        "",
        "| target | `analyze` wall (s) | CPU (s) | best metric | its 5-NN R² | effort model CV R² |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for target, (wall, cpu) in numbers["one_by_one"].items():
        name, knn, effort = numbers["best"][target]
        lines.append(f"| {target} | {wall:.2f} | {cpu:.2f} | {name} | {knn:.3f} | {effort:.3f} |")
    wall_both = sum(w for w, _ in numbers["one_by_one"].values())
    cpu_both = sum(c for _, c in numbers["one_by_one"].values())
    together_wall, together_cpu = numbers["together"]
    lines += [
        "",
        f"Both targets one after the other (as the page, command and API run them): **{wall_both:.2f} s** wall, "
        f"{cpu_both:.2f} s CPU; both in one `analyze_targets` call (KNN neighbours shared between targets): "
        f"**{together_wall:.2f} s** wall, {together_cpu:.2f} s CPU. Goal: under 10 s.",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=10, help="repeats of 5-fold cross-validation")
    parser.add_argument("--output", type=Path, default=result_file("analysis"))
    args = parser.parse_args()
    numbers = run(args.rows, args.repeats)
    section = report(numbers)
    print(section)
    write_section(args.output, START, END, section)
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
