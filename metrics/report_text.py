"""The report as plain-text tables, for the analyze command's `--format table` (the report page's
numbers, aligned in columns, with the notes that explain them).
"""

from metrics.analysis import Analysis, ConditionAnalysis, condition_rows, format_p
from metrics.analysis.documents import DocumentsSummary
from metrics.analysis.origins import OriginComparison, origin_rows
from metrics.reports import IdleSensitivity

FORMATS = ("table", "json", "csv", "conditions-csv")


def live_vs_imported_table(comparison: OriginComparison) -> str:
    source = f" (imported from {comparison.source_project})" if comparison.source_project else ""
    title = (
        f"Live and imported on {comparison.shared_items} shared items{source}: {comparison.live_post_edits} live, "
        f"{comparison.imported_post_edits} imported post-edits; difference = live - imported per item, "
        f"{comparison.confidence:g} bootstrap CI over items ({comparison.resamples} resamples, seed {comparison.seed}):"
    )
    lines = [title]
    rows = [["effort", "items", "live mean", "imported mean", "difference", "95% CI"]]
    for row in origin_rows(comparison):
        ci = f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]" if row["ci_low"] is not None else "-"
        rows.append(
            [
                row["effort"],
                str(row["n_items"]),
                num(row["live_mean"], 1),
                num(row["imported_mean"], 1),
                num(row["difference"], 1),
                ci,
            ]
        )
    if len(rows) > 1:
        lines += ["", align(rows)]
    if comparison.correlations:
        table = [["metric", "r live", "n live", "r imported", "n imported"]]
        for name, by_origin in comparison.correlations.items():
            live, imported = by_origin["live"], by_origin["imported"]
            table.append([name, num(live.pearson), str(live.n), num(imported.pearson), str(imported.n)])
        lines += ["", align(table)]
    lines += [f"  - {message}" for message in comparison.messages]
    return "\n".join(lines)


def documents_table(documents: DocumentsSummary) -> str:
    header = ["document", "segments", "post-edits", "annotators", "conditions", "words"]
    header += [f"{column} {part}" for column in documents.efforts for part in ("total", "mean")]
    rows = [header]
    for doc in documents.documents:
        efforts = [doc.effort[column] for column in documents.efforts]
        rows.append(
            [
                doc.document,
                str(doc.segments),
                str(doc.post_edits),
                str(doc.annotators),
                ",".join(doc.conditions) or "-",
                str(doc.words),
                *[cell for e in efforts for cell in (num(e.total, 0), num(e.mean, 1))],
            ]
        )
    lines = [align(rows)] if documents.documents else []
    lines += [f"  - {message}" for message in documents.messages]
    return "\n".join(lines)


def num(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def align(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def metric_table(analysis: Analysis) -> str:
    header = [
        "metric",
        "direction",
        "n",
        "dropped",
        "pearson",
        "95% CI",
        "p",
        "spearman",
        "kendall",
        "knn_r2",
        "knn_r2_orders",
        "knn_r2_ties",
        "knn_r2_cv",
        "cv_item",
        "cv_annotator",
        "williams_p",
        "bootstrap Δr [95%]",
        *[f"r[{a}]" for a in analysis.annotators],
    ]
    rows = [header]
    for name, m in analysis.metrics.items():
        ci = f"[{m.pearson_ci[0]:.3f}, {m.pearson_ci[1]:.3f}]" if m.pearson_ci else "-"
        if name == analysis.best_metric:
            williams = "best"
        elif m.williams_vs_best:
            williams = format_p(m.williams_vs_best.p) + (" *" if m.williams_vs_best.significant else "")
        else:
            williams = "-"
        rows.append(
            [
                name,
                m.direction,
                str(m.n),
                str(m.dropped),
                num(m.pearson),
                ci,
                format_p(m.pearson_p),
                num(m.spearman),
                num(m.kendall),
                num(m.knn_r2),
                cv(m.knn_r2_row_orders),
                num(m.knn_r2_tie_averaged),
                cv(m.knn_r2_cv),
                cv(m.knn_r2_cv_item) + (" !" if m.cv_optimistic else ""),
                cv(m.knn_r2_cv_annotator),
                williams,
                bootstrap(m, best=name == analysis.best_metric),
                *[num(m.pearson_per_annotator.get(a)) for a in analysis.annotators],
            ]
        )
    if len(rows) == 1:
        return "No metric values to analyse."
    return align(rows) + "\n\n" + KNN_NOTE


KNN_NOTE = (
    "knn_r2: the published protocol as scikit-learn runs it (KNeighborsRegressor on train_test_split of the rows in "
    "import order); knn_r2_ties: the same split with the training points tied at the K-th distance sharing its "
    "weight. They differ when metric values tie (integers): scikit-learn keeps whichever tied neighbours its tree "
    "returns, so its figure depends on row order (through the ties and through which rows the split draws): "
    "knn_r2_orders is the same protocol's mean ± sd over shuffled row orders. Trust knn_r2_ties and the CV columns "
    "(tie-averaged, folds independent of the row order), not knn_r2 alone. '!' marks a random CV more than the flag "
    "threshold above the item-grouped one (edits of one item on both sides of a split)."
)


def outliers_table(analysis: Analysis) -> str:
    outliers = analysis.outliers
    if outliers is None:
        return ""
    title = f"Outliers of {analysis.target}: {outliers.flagged} of {outliers.n} edits flagged ({outliers.rule}"
    if outliers.upper_bound is not None:
        title += f"; flagged above {outliers.upper_bound:.4g}"
    title += ")."
    if not outliers.flagged:
        return title + "".join(f"\n  - {message}" for message in outliers.messages)
    largest = ", ".join(f"{v:g}" for v in outliers.largest)
    title += (
        f" Largest: {largest}. Key figures with every edit and without them "
        f"(CV with {outliers.cv_repeats_without} repeats):"
    )
    rows = [["metric", "pearson", "without", "spearman", "without", "knn_r2_ties", "without", "knn_r2_cv", "without"]]
    for name, m in analysis.metrics.items():
        w = outliers.without.get(name, {})
        rows.append(
            [
                name,
                num(m.pearson),
                num(w.get("pearson")),
                num(m.spearman),
                num(w.get("spearman")),
                num(m.knn_r2_tie_averaged),
                num(w.get("knn_r2_tie_averaged")),
                num(m.knn_r2_cv.mean if m.knn_r2_cv else None),
                num(w.get("knn_r2_cv_mean")),
            ]
        )
    model = analysis.effort_model
    lines = [title, "", align(rows)]
    if model is not None and model.r2_cv is not None:
        lines.append(
            f"Effort model CV R²: {model.r2_cv.mean:.3f} with every edit, "
            f"{num(outliers.effort_model_r2_cv_without)} without them."
        )
    return "\n".join(lines)


def bootstrap(m, *, best: bool) -> str:
    if best:
        return "best"
    boot = m.bootstrap_vs_best
    if boot is None:
        return "-"
    return f"{boot.difference:.3f} [{boot.ci[0]:.3f}, {boot.ci[1]:.3f}]" + (" *" if boot.excludes_zero else "")


def mixed_table(analysis: Analysis) -> str:
    fitted = {name: m.mixed for name, m in analysis.metrics.items() if m.mixed is not None}
    if not fitted:
        return "Mixed-effects models: off (--no-mixed)." if not analysis.settings.mixed_models else ""
    factors = sorted({f for model in fitted.values() for f in model.groups})
    rows = [
        ["metric", "n", "β (sd per sd)", "β 95% CI (t)", "df", "p (t)", "R²m", "R²c"]
        + [*[f"var[{f}]" for f in factors], "var[residual]", "REML criterion", "warnings"]
    ]
    for name, model in fitted.items():
        ci = f"[{model.ci[0]:.3f}, {model.ci[1]:.3f}]" if model.ci else "-"
        rows.append(
            [
                name,
                str(model.n),
                num(model.coefficient),
                ci,
                num(model.df, 1),
                format_p(model.p),
                num(model.r2_marginal),
                num(model.r2_conditional),
                *[num(model.variances.get(f)) for f in factors],
                num(model.variances.get("residual")),
                num(model.reml_criterion, 2) + ("" if model.converged else " (not converged)"),
                "; ".join(model.warnings) or "-",
            ]
        )
    first = next(iter(fitted.values()))
    title = (
        f"Mixed-effects models ({first.formula.replace(f'z({next(iter(fitted))})', 'z(metric)')}, REML; "
        "β = standardised slope: target sds per metric sd; CI and p from t on Satterthwaite's df, as lmerTest; "
        "R² marginal/conditional after Nakagawa & Schielzeth):"
    )
    return title + "\n\n" + align(rows)


def conditions_table(conditions: ConditionAnalysis) -> str:
    unit = conditions.bootstrap_unit
    header = [
        "condition",
        "n",
        "items",
        "annotators",
        "mean (arithmetic)",
        f"mean 95% CI ({unit} bootstrap)",
        "median",
        "words/hour",
    ]
    header += [f"effect vs baseline ({conditions.target})", "effect 95% CI", "effect p"]
    log = conditions.log_model is not None
    if log:
        header += ["time ratio (geometric means)", "time ratio 95% CI", "time ratio p"]
    rows = [header]
    for row in condition_rows(conditions):
        baseline = "baseline" if row["baseline"] else "-"
        cells = [
            row["condition"],
            str(row["n"]),
            str(row["items"]),
            str(row["annotators"]),
            num(row["mean"]),
            interval(row["mean_ci_low"], row["mean_ci_high"]),
            num(row["median"]),
            num(row["words_per_hour"], 1),
            num(row["effect"]) if row["effect"] is not None else baseline,
            interval(row["effect_ci_low"], row["effect_ci_high"]),
            format_p(row["effect_p"]),
        ]
        if log:
            cells += [
                num(row["time_ratio"]) if row["time_ratio"] is not None else baseline,
                interval(row["time_ratio_ci_low"], row["time_ratio_ci_high"]),
                format_p(row["log_effect_p"]),
            ]
        rows.append(cells)
    model = conditions.model
    formula = f"{model.formula}, REML" if model else "no model"
    item_effect = f"; item random effect: {model.item_effect}" if model and model.item_effect else ""
    title = (
        f"Conditions (target {conditions.target}; baseline {conditions.baseline}; mixed model {formula}{item_effect}; "
        f"words/hour = words of the edited text over summed {conditions.time}):"
    )
    notes = [CONDITIONS_NOTE]
    if log:
        notes.append(TIME_RATIO_NOTE)
    return title + "\n\n" + align(rows) + "\n\n" + "\n".join(notes)


CONDITIONS_NOTE = (
    "mean: the arithmetic mean of the condition's edits; effect: the condition's fixed coefficient in the mixed "
    "model, in the target's units, against the baseline (Wald 95% CI and p)."
)
TIME_RATIO_NOTE = (
    "time ratio: exp(effect) of the model of log(time), a ratio of geometric means (typical edit against the "
    "baseline's), not of the arithmetic means beside it."
)


def interval(low, high) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def sensitivity_table(sensitivity: IdleSensitivity) -> str:
    header = ["metric", *[f"r@{s:g}s" for s in sensitivity.thresholds_s]]
    rows = [header]
    for name, values in sensitivity.metrics.items():
        rows.append([name, *[num(v) for v in values]])
    rows.append(["mean active s", *[num(None if v is None else v / 1000, 1) for v in sensitivity.mean_active_ms]])
    title = (
        f"Idle threshold sensitivity: r with active time recomputed from the event logs ({sensitivity.n} post-edits "
        f"with a log; {sensitivity.without_log} without one left out; at the project's {sensitivity.project_threshold_s:g}"
        f" s, {sensitivity.stored_equal} of {sensitivity.stored_checked} recomputed values equal the stored ones):"
    )
    return title + "\n\n" + align(rows)


def cv(score) -> str:
    if score is None:
        return "-"
    return f"{score.mean:.3f} ± {score.sd:.3f}" if score.sd is not None else f"{score.mean:.3f} (one split)"


def effort_table(analysis: Analysis) -> str:
    model = analysis.effort_model
    if model is None or model.r2_cv is None:
        reasons = " ".join(model.messages) if model else ""
        return f"Effort model: none for this selection. {reasons}".rstrip()
    settings = analysis.settings
    lines = [
        f"Effort model (OLS on metrics + text lengths + annotator, {settings.cv_folds}-fold CV x "
        f"{settings.cv_repeats}): R² = {cv(model.r2_cv)} on {model.n} post-edits",
        f"  grouped by item: {cv(model.r2_cv_item)}; by annotator (without the annotator input): "
        f"{cv(model.r2_cv_annotator)}",
        "",
    ]
    rows = [["input", "contribution (ΔR² when left out)", "coefficient (target units per input sd)"]]
    for name in model.inputs:
        rows.append([name, num(model.contributions.get(name), 4), num(model.coefficients.get(name))])
    return "\n".join(lines) + align(rows)
