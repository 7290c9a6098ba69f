"""What a reviewer who reruns editlab's figures would see: folds, outliers, row order, on IWSLT2019.

    python -m editlab.benchmarks.validity [--database-url URL] [--output FILE] [--metrics a,b]

IWSLT2019 (../shared/data/iwslt2019) is imported into a throwaway database (SQLite in a temporary
folder unless --database-url names an empty one), the effort suite (plain variant) computed, and the
report's frame read as the report builds it. Then, per target (keystrokes, wall time):

1. item-grouped CV R² with groups coded as scikit-learn codes them (sorted ids: what the analysis
   does) against the former coding (order of first appearance), and scikit-learn's own
   `GroupKFold(shuffle=True)` on the exported ids checked to give the analysis's folds;
2. the outlier rule's flags, and the key figures with one 13.5-hour edit put into the wall times
   (the case reported on DivEMT, whose data is not on this machine), with and without the flagged edits;
3. the published-protocol 5-NN R² in import order, sorted by segment id, and over 5 shuffled orders;
4. what the new figures cost: the analysis with and without them.
Numbers go to --output between markers (re-runs replace them).
"""

import argparse
import os
import platform
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from editlab.benchmarks.support import IWSLT2019, result_file, setup_django, timed, write_section

START, END = "<!-- benchmark:validity:start -->", "<!-- benchmark:validity:end -->"
THIRTEEN_AND_A_HALF_HOURS_MS = 13.5 * 3600 * 1000


def _fmt(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _first_appearance(ids) -> np.ndarray:
    """The former coding: groups numbered in order of first appearance."""
    return pd.factorize(pd.Series(ids).astype(str))[0]


def run(metrics: list[str] | None) -> str:
    from sklearn.model_selection import GroupKFold

    import metrics.analysis.pipeline as pipeline
    from annotations.importers import import_items
    from annotations.models import Project
    from metrics.analysis import Settings, analyze
    from metrics.analysis.folds import FoldTables
    from metrics.analysis_options import selection_build
    from metrics.selection_data import selection_data
    from metrics.services import metric_values_compute
    from metrics.text import EFFORT_SUITE

    import_items(project="IWSLT2019", fmt="pet", path=IWSLT2019, create_project=True)
    project = Project.objects.get(name="IWSLT2019")
    names = metrics or list(EFFORT_SUITE)
    metric_values_compute(project=project, metrics=names, variants=["plain"])
    data = selection_data(selection=selection_build(project=project, target="keystrokes"), use_cache=False)
    frame, directions = data.frame, data.directions
    names = data.metrics
    settings = Settings()
    lines = [
        f"IWSLT2019: {len(frame):,} post-edits of {frame['external_id'].nunique():,} segments, metrics "
        f"{', '.join(names)}; {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}.",
        "",
    ]

    # 1. folds
    ids = frame["external_id"].astype(str).to_numpy()
    tables = FoldTables(
        folds=5, repeats=10, seed=42, groups={"item": pipeline.group_codes(ids), "annotator": None}
    ).table("item", np.ones(len(frame), dtype=bool))
    assert tables is not None
    rng = np.random.RandomState(42)
    same = True
    for r in range(10):
        for fold, (_, test) in enumerate(GroupKFold(n_splits=5, shuffle=True, random_state=rng).split(ids, groups=ids)):
            same &= bool((tables[r, test] == fold).all())
    lines.append(
        "**Item-grouped CV folds.** scikit-learn's `GroupKFold(5, shuffle=True, random_state=rng)` on the "
        f"segment ids, 10 splits from one `RandomState(42)`, gives the analysis's folds: **{same}**."
    )
    analyses = {}
    for target_name, column in (("keystrokes", "keystrokes"), ("wall_time", "wall_ms")):
        new = analyze(frame, metrics=names, target=column, directions=directions, settings=settings)
        coding = pipeline.group_codes
        pipeline.group_codes = _first_appearance
        try:
            old = analyze(frame, metrics=names, target=column, directions=directions, settings=settings)
        finally:
            pipeline.group_codes = coding
        analyses[column] = new
        lines += [
            "",
            f"Target {target_name} (`{column}`): 5-NN CV R² grouped by segment (tie-averaged, 10 × 5 folds), "
            "groups coded as scikit-learn codes them (now) and in order of first appearance (before):",
            "",
            "| metric | sorted ids (sklearn's, now) | first appearance (before) | difference |",
            "|---|---:|---:|---:|",
        ]
        gaps = []
        for name in names:
            a, b = new.metrics[name].knn_r2_cv_item, old.metrics[name].knn_r2_cv_item
            if a is None or b is None:
                continue
            gaps.append(abs(a.mean - b.mean))
            lines.append(f"| {name} | {a.mean:.4f} ± {a.sd:.4f} | {b.mean:.4f} ± {b.sd:.4f} | {a.mean - b.mean:+.4f} |")
        new_model: Any = new.effort_model
        old_model: Any = old.effort_model
        em_new, em_old = new_model.r2_cv_item, old_model.r2_cv_item
        lines += [
            f"| effort model | {em_new.mean:.4f} ± {em_new.sd:.4f} | {em_old.mean:.4f} ± {em_old.sd:.4f} "
            f"| {em_new.mean - em_old.mean:+.4f} |",
            "",
            f"Largest difference over the metrics: {max(gaps):.4f}.",
        ]

    # 2. outliers
    lines += ["", "**Outliers** (modified z-score of log(1 + target) above 3.5, upper side):"]
    for column, analysis in analyses.items():
        o: Any = analysis.outliers
        lines.append(
            f"- `{column}`: {o.flagged} of {o.n} flagged (bound {_fmt(o.upper_bound, 0)}, median {_fmt(o.median, 0)})."
        )
    spiked = frame.copy()
    row = int(np.argmax(spiked["wall_ms"].to_numpy() == spiked["wall_ms"].median()))
    spiked.loc[spiked.index[row], "wall_ms"] = THIRTEEN_AND_A_HALF_HOURS_MS
    spike = analyze(spiked, metrics=names, target="wall_ms", directions=directions, settings=settings)
    clean: Any = analyses["wall_ms"]
    o = spike.outliers
    spike_model: Any = spike.effort_model
    lines += [
        "",
        f"One edit's wall time set to 13.5 h (48,600,000 ms; row {row}, a median edit): {o.flagged} flagged "
        f"(largest {', '.join(f'{v:,.0f}' for v in o.largest)} ms). Key figures with every edit, without the "
        "flagged ones (shown beside by the analysis), and on the data before the spike:",
        "",
        "| metric | r (all) | ρ (all) | CV R² (all) | r without | ρ without | CV R² without | r before the spike | "
        "CV R² before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        m: Any = spike.metrics[name]
        w, c = o.without.get(name, {}), clean.metrics[name]
        if m.knn_r2_cv is None:
            continue
        lines.append(
            f"| {name} | {_fmt(m.pearson)} | {_fmt(m.spearman)} | {_fmt(m.knn_r2_cv.mean)} | {_fmt(w.get('pearson'))} "
            f"| {_fmt(w.get('spearman'))} | {_fmt(w.get('knn_r2_cv_mean'))} | {_fmt(c.pearson)} | {_fmt(c.knn_r2_cv.mean)} |"
        )
    lines.append(
        f"| effort model | | | {_fmt(spike_model.r2_cv.mean)} | | | {_fmt(o.effort_model_r2_cv_without)} | "
        f"| {_fmt(clean.effort_model.r2_cv.mean)} |"
    )

    # 3. row order
    from metrics.analysis.knn import knn_r2_published

    lines += [
        "",
        "**Published-protocol 5-NN R² and row order** (scikit-learn's split and KNeighborsRegressor; import order "
        "= post-edit id order; sorted by segment id = stable sort on external_id; 5 shuffled orders from "
        "RandomState(42), as `knn_r2_row_orders`), beside the order-free figures:",
        "",
        "| target | metric | import order | sorted by segment id | 5 shuffled orders: mean ± sd [min, max] | "
        "tie-averaged | CV random | CV by segment |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    by_segment = frame.sort_values("external_id", kind="stable")
    for column, analysis in analyses.items():
        for name in names[:4]:
            m = analysis.metrics[name]
            rows = by_segment[[name, column]].dropna()
            sorted_r2 = knn_r2_published(rows[name].to_numpy(float), rows[column].to_numpy(float))
            orders: Any = m.knn_r2_row_orders
            lines.append(
                f"| {column} | {name} | {_fmt(m.knn_r2)} | {_fmt(sorted_r2)} | {orders.mean:.3f} ± {orders.sd:.3f} "
                f"[{min(orders.repeats):.3f}, {max(orders.repeats):.3f}] | {_fmt(m.knn_r2_tie_averaged)} | "
                f"{_fmt(m.knn_r2_cv.mean)} | {_fmt(m.knn_r2_cv_item.mean)} |"
            )

    # 4. cost
    cost = []
    for label, row_orders, data_frame in (
        ("without the row orders, no outlier", 0, frame),
        ("with the 5 row orders, no outlier", pipeline.ROW_ORDERS, frame),
        ("with the 5 row orders and the figures without 1 outlier", pipeline.ROW_ORDERS, spiked),
    ):
        kept, pipeline.ROW_ORDERS = pipeline.ROW_ORDERS, row_orders
        try:
            wall, cpu, _ = timed(partial(analyze, data_frame, metrics=names, target="wall_ms", directions=directions))
        finally:
            pipeline.ROW_ORDERS = kept
        cost.append(f"{label}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    lines += ["", "**Cost** (one target, `wall_ms`, everything on): " + "; ".join(cost) + "."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="an EMPTY database to use instead of a temporary SQLite")
    parser.add_argument("--metrics", default="", help="comma-separated metrics (default: the effort suite)")
    parser.add_argument("--output", type=Path, default=result_file("validity_figures"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="editlab-bench-") as folder:
        setup_django(args.database_url, Path(folder))
        section = run([m for m in args.metrics.split(",") if m] or None)
    print(section, flush=True)
    write_section(args.output, START, END, section)
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
