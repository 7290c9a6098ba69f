"""Speed of the analysis, and the IWSLT2019 study's tables.

    python -m editlab.benchmarks.analysis [--rows N] [--repeats R] [--skip-synthetic] [--skip-iwslt]
                                          [--database-url URL] [--output FILE]

1. Synthetic: --rows post-edits (25% of that many items, 4 edits each; 8 annotators) x 10 metrics x
   2 targets. Times metrics.analysis.analyze per target without the mixed models (Pearson,
   Spearman, Kendall pooled and per annotator; the published protocol with scikit-learn and the
   tie-averaged split; random, item-grouped and annotator-grouped repeated CV; Williams's tests and
   the paired item bootstrap; the metric matrix; the effort model with its contributions and
   grouped CV), both targets in one analyze_targets call, and then the same with the mixed models.
2. IWSLT2019 (../shared/data/iwslt2019) in a throwaway database (SQLite in a temporary folder unless
   --database-url names an empty one): import, compute the effort suite (both variants), then time the
   report as the page builds it -- metrics.reports.report_build for keystrokes and for wall time,
   everything on, from an empty cache (the data read from the database included) -- and write the
   study's tables (both variants).
Numbers go to --output between markers (re-runs replace them); the README quotes them.
"""

import argparse
import os
import platform
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, timed, write_section
from metrics.analysis import SIMILARITY, Analysis, Settings, analyze, analyze_targets

METRICS = [f"metric_{i}" for i in range(10)]
TARGETS = ["wall_ms", "keystrokes"]
START, END = "<!-- benchmark:analysis:start -->", "<!-- benchmark:analysis:end -->"
STUDY_START, STUDY_END = "<!-- study:iwslt2019:start -->", "<!-- study:iwslt2019:end -->"
STUDY_SPEED_START, STUDY_SPEED_END = "<!-- benchmark:analysis-iwslt:start -->", "<!-- benchmark:analysis-iwslt:end -->"


def synthetic_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    """Edits whose effort grows with a hidden amount of change, seen through noisy metrics; every
    item is post-edited by four of the eight annotators, and has a difficulty of its own."""
    rng = np.random.default_rng(seed)
    items = max(rows // 4, 1)
    item = rng.permutation(np.arange(rows) % items)
    change = rng.gamma(2.0, 10.0, items)[item] * rng.lognormal(0, 0.2, rows)
    difficulty = rng.normal(0, 6, items)[item]
    annotators = rng.integers(0, 8, rows)
    speed = np.array([0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.3, 1.5])[annotators]
    original_length = rng.integers(20, 400, items)[item]
    frame = pd.DataFrame(
        {
            "annotator": [f"annotator{a}" for a in annotators],
            "external_id": [f"item{i}" for i in item],
            "original": pd.Series(original_length).map(lambda n: "x" * n),
            "edited": pd.Series(np.maximum(original_length + rng.integers(-20, 20, rows), 1)).map(lambda n: "y" * n),
            "keystrokes": np.round(change * 1.5 + difficulty + rng.normal(0, 8, rows)).clip(0),
            "wall_ms": (
                speed * (4000 + 900 * change + 300 * difficulty.clip(-10) + 30 * original_length)
                * rng.lognormal(0, 0.3, rows)
            ).round(),
        }
    )  # fmt: skip
    for i, name in enumerate(METRICS):
        noise = rng.normal(0, 2 + 3 * i, rows)
        value = change + noise if i % 3 else np.round(change + noise)  # every third metric is integer (ties)
        frame[name] = -value if i == 9 else value  # one similarity-like metric
    frame.loc[rng.random(rows) < 0.01, "metric_3"] = np.nan  # missing values exercise the dropped-row path
    return frame


# --- 1. synthetic --------------------------------------------------------------------------------------------------


def synthetic(rows: int, repeats: int) -> dict:
    load = os.getloadavg()[0]
    frame = synthetic_frame(rows)
    directions = {"metric_9": SIMILARITY}
    numbers: dict = {"rows": rows, "repeats": repeats, "items": frame["external_id"].nunique(), "load": load}
    for mixed in (False, True):
        settings = Settings(cv_repeats=repeats, mixed_models=mixed)
        # What the report page, the analyze command and the API do: one target per call.
        one_by_one = {}
        for target in TARGETS:
            wall, cpu, result = timed(
                partial(analyze, frame, metrics=METRICS, target=target, directions=directions, settings=settings)
            )
            one_by_one[target] = (wall, cpu, result)
        # Both targets in one call: the KNN neighbours are searched once per metric.
        wall, cpu, _ = timed(
            partial(analyze_targets, frame, metrics=METRICS, targets=TARGETS, directions=directions, settings=settings)
        )
        numbers["mixed" if mixed else "plain"] = {"one_by_one": one_by_one, "together": (wall, cpu)}
    numbers["load_after"] = os.getloadavg()[0]
    return numbers


def synthetic_report(numbers: dict) -> str:
    lines = [
        f"Measured with `python -m editlab.benchmarks.analysis` ({numbers['rows']:,} synthetic post-edits of "
        f"{numbers['items']:,} items, 10 metrics, 2 targets, 8 annotators; K=5, the 80/20 split with scikit-learn "
        f"and tie-averaged, {numbers['repeats']} x 5-fold CV random, by item and by annotator per metric, "
        "Pearson/Spearman/Kendall pooled and per annotator, Williams's tests and the 1,000-resample item "
        "bootstrap, the metric matrix, the effort model with drop-column contributions and grouped CV) on "
        f"{platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{numbers['load']:.1f} when it started and {numbers['load_after']:.1f} when it ended (a shared machine: "
        "wall time grows with the load, CPU time hardly does):",
        "",
        "| target | without mixed models: wall (s) | CPU (s) | with mixed models: wall (s) | CPU (s) | best metric "
        "| its 5-NN R² (published) | its mixed-model R² marginal / conditional | effort model CV R² (random / item) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for target in TARGETS:
        wall, cpu, _ = numbers["plain"]["one_by_one"][target]
        mixed_wall, mixed_cpu, analysis = numbers["mixed"]["one_by_one"][target]
        best = analysis.metrics[analysis.best_metric]
        model = analysis.effort_model
        lines.append(
            f"| {target} | {wall:.2f} | {cpu:.2f} | {mixed_wall:.2f} | {mixed_cpu:.2f} | {analysis.best_metric} | "
            f"{best.knn_r2:.3f} | {best.mixed.r2_marginal:.3f} / {best.mixed.r2_conditional:.3f} | "
            f"{model.r2_cv.mean:.3f} / {model.r2_cv_item.mean:.3f} |"
        )
    plain_wall = sum(w for w, _, _ in numbers["plain"]["one_by_one"].values())
    plain_cpu = sum(c for _, c, _ in numbers["plain"]["one_by_one"].values())
    mixed_wall = sum(w for w, _, _ in numbers["mixed"]["one_by_one"].values())
    mixed_cpu = sum(c for _, c, _ in numbers["mixed"]["one_by_one"].values())
    together_wall, together_cpu = numbers["plain"]["together"]
    lines += [
        "",
        f"Both targets one after the other (as the page, command and API run them), without the mixed models: "
        f"**{plain_wall:.2f} s** wall, {plain_cpu:.2f} s CPU (goal: under 10 s); in one `analyze_targets` call "
        f"(KNN neighbours shared between targets): {together_wall:.2f} s wall, {together_cpu:.2f} s CPU. With the "
        f"mixed models (20 crossed fits, annotator and item): {mixed_wall:.2f} s wall, {mixed_cpu:.2f} s CPU, "
        f"so the mixed models add {mixed_cpu - plain_cpu:.2f} s CPU.",
    ]
    return "\n".join(lines)


# --- 2. IWSLT2019 --------------------------------------------------------------------------------------------------


def iwslt(workers: int | None) -> dict:
    from annotations.importers import import_items
    from annotations.models import Project
    from metrics.analysis_options import selection_build
    from metrics.reports import report_build
    from metrics.selection_data import clear_cache
    from metrics.services import metric_values_compute
    from metrics.text import EFFORT_SUITE

    import_items(project="IWSLT2019", fmt="pet", path=IWSLT2019, create_project=True)
    project = Project.objects.get(name="IWSLT2019")
    metric_values_compute(project=project, metrics=EFFORT_SUITE, processes=workers)
    load = os.getloadavg()[0]
    clear_cache()
    timings = {}
    reports = {}
    for target in ("keystrokes", "wall_time"):
        selection = selection_build(project=project, target=target)
        wall, cpu, reports[target] = timed(partial(report_build, selection=selection))
        timings[target] = (wall, cpu)
    return {"project": project, "timings": timings, "reports": reports, "load": load, "load_after": os.getloadavg()[0]}


def iwslt_speed(numbers: dict) -> str:
    timings = numbers["timings"]
    wall = sum(w for w, _ in timings.values())
    cpu = sum(c for _, c in timings.values())
    parts = ", ".join(f"{target} {w:.2f} s wall / {c:.2f} s CPU" for target, (w, c) in timings.items())
    return (
        "The full IWSLT2019 report (5,235 post-edits, 8 metrics, everything above including the 8 crossed mixed "
        "models and the bootstrap per target), built as the report page builds it (`metrics.reports.report_build`, "
        f"the data read from the database) for both targets from an empty cache: **{wall:.2f} s** wall, {cpu:.2f} s "
        f"CPU ({parts}; goal: under 10 s), load average {numbers['load']:.1f} before and "
        f"{numbers['load_after']:.1f} after, measured by `python -m editlab.benchmarks.analysis`."
    )


def _fmt(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _cv(score) -> str:
    if score is None:
        return "—"
    return f"{score.mean:.3f}" + (f" ± {score.sd:.3f}" if score.sd is not None else "")


def study_tables(project) -> str:
    """The README's IWSLT2019 tables: per target, the correlations, then the predictions."""
    from metrics.selectors import TARGETS as FIELDS
    from metrics.selectors import metric_column, post_edit_frame
    from metrics.text import EFFORT_SUITE
    from metrics.text import METRICS as REGISTRY

    variants = ("plain", "with_references")
    frame = post_edit_frame(project=project, metrics=EFFORT_SUITE)
    columns = [metric_column(m, v) for m in EFFORT_SUITE for v in variants]
    directions = {metric_column(m, v): REGISTRY[m].direction for m in EFFORT_SUITE for v in variants}
    targets = {"wall_time": FIELDS["wall_time"], "keystrokes": FIELDS["keystrokes"]}
    results = analyze_targets(frame, metrics=columns, targets=list(targets.values()), directions=directions)
    annotators = sorted(frame["annotator"].unique())
    out = [
        f"{len(frame):,} post-edits of {frame['external_id'].nunique():,} segments by {len(annotators)} post-editors "
        f"({', '.join(annotators)}), rows in import order. Similarity metrics (bleu, chrf, rouge_l) correlate "
        "negatively by nature. First table: Pearson r per post-editor and pooled, Kendall's τ, and the best "
        "metric's oriented r minus this one's with its 95% interval from 1,000 resamples of whole segments "
        "(`*`: above 0) beside Williams's one-sided p. Second table: 5-NN R² with the published protocol "
        "(scikit-learn, 80/20 split, seed 42) and tie-averaged on the same split; repeated 5-fold CV "
        "(tie-averaged, 10 repeats, mean ± sd) with random folds, folds grouped by segment and by post-editor "
        "(each left out once: one split); the mixed model z(target) ~ z(metric) + (1 | post-editor) + "
        "(1 | segment): the metric's standardised coefficient, R² marginal and conditional.",
        "",
    ]
    for label, field in targets.items():
        analysis = results[field]
        out += [f"**Target {label}** (`{field}`, {analysis.n_used:,} edits)", ""]
        out += _correlation_table(analysis, columns, annotators)
        out += [""]
        out += _prediction_table(analysis, columns)
        model = analysis.effort_model
        if model is not None and model.r2_cv is not None:
            top = sorted(model.contributions.items(), key=lambda kv: -kv[1])[:3]
            out += [
                "",
                f"Effort model (all metrics above + text lengths + post-editor): CV R² {_cv(model.r2_cv)}; "
                f"grouped by segment {_cv(model.r2_cv_item)}; by post-editor (without the post-editor input) "
                f"{_cv(model.r2_cv_annotator)}; largest contributions: "
                + ", ".join(f"{k} {v:+.3f}" for k, v in top)
                + ".",
            ]
        out += [f"Best metric (oriented pooled r): {analysis.best_metric}.", ""]
    return "\n".join(out)


def _correlation_table(analysis: Analysis, columns: list[str], annotators: list[str]) -> list[str]:
    lines = [
        "| metric | " + " | ".join(annotators) + " | pooled r | τ | Williams p | Δr to the best, bootstrap [95%] |",
        "|---|" + "---:|" * (len(annotators) + 4),
    ]
    for column in columns:
        m = analysis.metrics[column]
        per = [_fmt(m.pearson_per_annotator.get(a)) for a in annotators]
        if column == analysis.best_metric:
            williams = boot = "best"
        else:
            williams = f"{m.williams_vs_best.p:.2g}" if m.williams_vs_best else "—"
            b = m.bootstrap_vs_best
            boot = (
                f"{b.difference:.3f} [{b.ci[0]:.3f}, {b.ci[1]:.3f}]" + (" *" if b.excludes_zero else "") if b else "—"
            )
        lines.append(
            f"| {column} | " + " | ".join(per) + f" | {_fmt(m.pearson)} | {_fmt(m.kendall)} | {williams} | {boot} |"
        )
    return lines


def _prediction_table(analysis: Analysis, columns: list[str]) -> list[str]:
    lines = [
        "| metric | 5-NN R² (published protocol) | tie-averaged | CV random | CV by segment | CV by post-editor "
        "| mixed coefficient [95% CI] | mixed R² marginal | conditional |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for column in columns:
        m = analysis.metrics[column]
        mixed = m.mixed
        coefficient = f"{mixed.coefficient:.3f} [{mixed.ci[0]:.3f}, {mixed.ci[1]:.3f}]" if mixed and mixed.ci else "—"
        flag = " ⚑" if m.cv_optimistic else ""
        lines.append(
            f"| {column} | {_fmt(m.knn_r2)} | {_fmt(m.knn_r2_tie_averaged)} | {_cv(m.knn_r2_cv)}{flag} | "
            f"{_cv(m.knn_r2_cv_item)} | {_cv(m.knn_r2_cv_annotator)} | {coefficient} | "
            f"{_fmt(mixed.r2_marginal if mixed else None)} | {_fmt(mixed.r2_conditional if mixed else None)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=10, help="repeats of 5-fold cross-validation")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--skip-iwslt", action="store_true")
    parser.add_argument("--workers", type=int, default=None, help="scoring processes for IWSLT2019 (default: all)")
    parser.add_argument("--database-url", default=None, help="an EMPTY database to use instead of a temporary SQLite")
    parser.add_argument("--output", type=Path, default=result_file("analysis"))
    args = parser.parse_args()
    if not args.skip_synthetic:
        section = synthetic_report(synthetic(args.rows, args.repeats))
        print(section, flush=True)
        write_section(args.output, START, END, section)
    if not args.skip_iwslt:
        with tempfile.TemporaryDirectory(prefix="editlab-bench-") as folder:
            setup_django(args.database_url, Path(folder))
            numbers = iwslt(args.workers)
            speed = iwslt_speed(numbers)
            print(speed, flush=True)
            write_section(args.output, STUDY_SPEED_START, STUDY_SPEED_END, speed)
            tables = study_tables(numbers["project"])
            print(tables, flush=True)
            write_section(args.output, STUDY_START, STUDY_END, tables)
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
