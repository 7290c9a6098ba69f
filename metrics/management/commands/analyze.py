"""python manage.py analyze --project NAME --target TARGET [--variant V] [--annotators a,b]
[--task-type T] [--origin O] [--exclude-flagged] [--include-practice] [--idle-threshold S] [--log-time]
[--no-mixed] [--baseline CONDITION] [--format table|json|csv|conditions-csv] [--by-document]

Prints the analysis of a project's submitted post-edits (the report page's numbers):
per metric Pearson r (p, 95% CI, per annotator), Spearman rho, 5-NN R² (published split
and repeated CV), Williams's test against the best metric, the metric matrix and the
effort model; when the edits were made under conditions, effort per condition and each
condition's effect against the baseline (--baseline, default the first declared condition).
Practice items' post-edits are left out unless --include-practice. The JSON schema is
documented in the README ("Analysis JSON"); conditions-csv prints one row per condition.
With --by-document it prints the per-document summary instead (no analysis is run; --target is then
optional: the summary holds every effort column, whatever the target).
"""

import csv
import io
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Project
from metrics.analysis import Analysis, ConditionAnalysis, condition_rows, format_p, summary_rows
from metrics.analysis.documents import DocumentsSummary, document_columns, document_rows
from metrics.analysis.origins import OriginComparison, origin_rows
from metrics.exports import neutralise_formula
from metrics.reports import (
    ORIGINS,
    IdleSensitivity,
    Report,
    Selection,
    SelectionError,
    analysis_request_build,
    documents_build,
    report_build,
    selection_data,
)
from metrics.selectors import TARGETS, VARIANTS

FORMATS = ("table", "json", "csv", "conditions-csv")


class Command(BaseCommand):
    help = "Print which metric predicts the measured effort for a project (correlations, KNN R², effort model)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--target",
            default=None,
            choices=list(TARGETS),
            help="the effort to predict (required unless --by-document)",
        )
        parser.add_argument("--variant", default=VARIANTS[0], choices=list(VARIANTS))
        parser.add_argument("--annotators", default="", help="comma-separated usernames (default: all)")
        parser.add_argument("--task-type", default="", help="only items of this task type")
        parser.add_argument("--origin", default="", choices=["", *ORIGINS])
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--k", type=int, default=5, help="neighbours for KNN regression (default 5)")
        parser.add_argument("--test-size", type=float, default=0.2, help="published protocol's test share (0.2)")
        parser.add_argument("--seed", type=int, default=42, help="split and CV seed (42)")
        parser.add_argument("--cv-repeats", type=int, default=10, help="repeats of 5-fold cross-validation (10)")
        parser.add_argument(
            "--exclude-flagged", action="store_true", help="leave out flagged post-edits (clipped time, replay ...)"
        )
        parser.add_argument(
            "--idle-threshold",
            default=None,
            metavar="SECONDS",
            help="with --target active_time: recompute active time from the event logs at this idle threshold",
        )
        parser.add_argument("--log-time", action="store_true", help="mixed models of log(time) (time targets only)")
        parser.add_argument("--no-mixed", action="store_true", help="skip the mixed-effects models")
        parser.add_argument(
            "--include-practice",
            action="store_true",
            help="keep the post-edits of practice items (left out by default)",
        )
        parser.add_argument(
            "--baseline",
            default="",
            metavar="CONDITION",
            help="the condition the others are compared with (default: the first declared condition)",
        )
        parser.add_argument(
            "--by-document",
            action="store_true",
            help="print the per-document summary (segments, post-edits, annotators, conditions, words, effort)",
        )

    def handle(self, *args, **options) -> None:
        if options["target"] is None:
            if not options["by_document"]:
                raise CommandError(
                    f"--target is required (one of: {', '.join(TARGETS)}); only --by-document goes without it"
                )
            # The per-document frame is the same for every target (selection_data leaves the target out).
            options["target"] = next(iter(TARGETS))
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            known = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"no project named {options['project']!r} (projects: {known})") from None
        try:
            selection, settings, baseline = analysis_request_build(
                project=project, params={**options, "mixed_models": not options["no_mixed"]}
            )
        except (SelectionError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["by_document"]:
            self._documents(selection, options["format"])
            return
        report = report_build(selection=selection, settings=settings, baseline=baseline, use_cache=False)
        formats = {"json": self._json, "csv": self._csv, "table": self._table, "conditions-csv": self._conditions_csv}
        formats[options["format"]](report)

    def _documents(self, selection: Selection, fmt: str) -> None:
        documents = documents_build(selection=selection, data=selection_data(selection=selection, use_cache=False))
        if documents is None:
            raise CommandError(f"no item of project {selection.project.name!r} belongs to a document")
        if fmt == "json":
            self.stdout.write(json.dumps(documents.to_dict(), indent=2, allow_nan=False))
        elif fmt in ("csv", "conditions-csv"):
            self._write_csv(document_rows(documents), first="document", columns=document_columns(documents.efforts))
        else:
            self.stdout.write(_documents_table(documents))

    def _json(self, report: Report) -> None:
        self.stdout.write(json.dumps(report.to_dict(), indent=2, allow_nan=False))

    def _csv(self, report: Report) -> None:
        self._write_csv(summary_rows(report.analysis), first="metric")

    def _conditions_csv(self, report: Report) -> None:
        self._write_csv(condition_rows(report.conditions) if report.conditions else [], first="condition")

    def _write_csv(self, rows: list[dict], *, first: str, columns: list[str] | None = None) -> None:
        columns = columns or list(dict.fromkeys(key for row in rows for key in row)) or [first]
        buffer = io.StringIO()
        # RFC 4180 line ends: a cell holding a lone CR is then quoted (with "\n" it went out bare and split the row).
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [
                    "" if row.get(c) is None else neutralise_formula(row[c]) if isinstance(row[c], str) else row[c]
                    for c in columns
                ]
            )
        self.stdout.write(buffer.getvalue(), ending="")

    def _table(self, report: Report) -> None:
        analysis = report.analysis
        selection = report.selection
        out = self.stdout.write
        out(
            f"Project {selection.project.name} · target {selection.target} ({selection.target_column}) · variant "
            f"{selection.variant} · {analysis.n_used} of {analysis.n_rows} post-edits · annotators: "
            f"{', '.join(analysis.annotators) or 'none'}"
        )
        if analysis.best_metric:
            out(f"Best metric: {analysis.best_metric} ({analysis.best_by})")
        out("")
        out(_metric_table(analysis))
        out("")
        out(_effort_table(analysis))
        outliers = _outliers_table(analysis)
        if outliers:
            out("")
            out(outliers)
        mixed = _mixed_table(analysis)
        if mixed:
            out("")
            out(mixed)
        if report.idle_sensitivity is not None:
            out("")
            out(_sensitivity_table(report.idle_sensitivity))
        conditions = report.conditions
        if conditions is not None and len(conditions.conditions) >= 2:
            out("")
            out(_conditions_table(conditions))
        if report.live_vs_imported is not None:
            out("")
            out(_live_vs_imported_table(report.live_vs_imported))
        messages = (
            report.messages
            + analysis.messages
            + (conditions.messages if conditions else [])
            + [
                f"{model.formula}: {message}"
                for model in ((conditions.model, conditions.log_model) if conditions else ())
                if model
                for message in model.messages + model.warnings
            ]
            + [
                f"{model.formula}: {effect.condition}: {warning}"
                for model in ((conditions.model, conditions.log_model) if conditions else ())
                if model
                for effect in model.effects
                for warning in effect.warnings
            ]
            + [f"{name}: {message}" for name, result in analysis.metrics.items() for message in result.messages]
        )
        if messages:
            out("")
            out("Messages:")
            for message in messages:
                out(f"  - {message}")


def _live_vs_imported_table(comparison: OriginComparison) -> str:
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
                _num(row["live_mean"], 1),
                _num(row["imported_mean"], 1),
                _num(row["difference"], 1),
                ci,
            ]
        )
    if len(rows) > 1:
        lines += ["", _align(rows)]
    if comparison.correlations:
        table = [["metric", "r live", "n live", "r imported", "n imported"]]
        for name, by_origin in comparison.correlations.items():
            live, imported = by_origin["live"], by_origin["imported"]
            table.append([name, _num(live.pearson), str(live.n), _num(imported.pearson), str(imported.n)])
        lines += ["", _align(table)]
    lines += [f"  - {message}" for message in comparison.messages]
    return "\n".join(lines)


def _documents_table(documents: DocumentsSummary) -> str:
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
                *[cell for e in efforts for cell in (_num(e.total, 0), _num(e.mean, 1))],
            ]
        )
    lines = [_align(rows)] if documents.documents else []
    lines += [f"  - {message}" for message in documents.messages]
    return "\n".join(lines)


def _num(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _align(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _metric_table(analysis: Analysis) -> str:
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
                _num(m.pearson),
                ci,
                format_p(m.pearson_p),
                _num(m.spearman),
                _num(m.kendall),
                _num(m.knn_r2),
                _cv(m.knn_r2_row_orders),
                _num(m.knn_r2_tie_averaged),
                _cv(m.knn_r2_cv),
                _cv(m.knn_r2_cv_item) + (" !" if m.cv_optimistic else ""),
                _cv(m.knn_r2_cv_annotator),
                williams,
                _bootstrap(m, best=name == analysis.best_metric),
                *[_num(m.pearson_per_annotator.get(a)) for a in analysis.annotators],
            ]
        )
    if len(rows) == 1:
        return "No metric values to analyse."
    return _align(rows) + "\n\n" + KNN_NOTE


KNN_NOTE = (
    "knn_r2: the published protocol as scikit-learn runs it (KNeighborsRegressor on train_test_split of the rows in "
    "import order); knn_r2_ties: the same split with the training points tied at the K-th distance sharing its "
    "weight. They differ when metric values tie (integers): scikit-learn keeps whichever tied neighbours its tree "
    "returns, so its figure depends on row order (through the ties and through which rows the split draws): "
    "knn_r2_orders is the same protocol's mean ± sd over shuffled row orders. Trust knn_r2_ties and the CV columns "
    "(tie-averaged, folds independent of the row order), not knn_r2 alone. '!' marks a random CV more than the flag "
    "threshold above the item-grouped one (edits of one item on both sides of a split)."
)


def _outliers_table(analysis: Analysis) -> str:
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
                _num(m.pearson),
                _num(w.get("pearson")),
                _num(m.spearman),
                _num(w.get("spearman")),
                _num(m.knn_r2_tie_averaged),
                _num(w.get("knn_r2_tie_averaged")),
                _num(m.knn_r2_cv.mean if m.knn_r2_cv else None),
                _num(w.get("knn_r2_cv_mean")),
            ]
        )
    model = analysis.effort_model
    lines = [title, "", _align(rows)]
    if model is not None and model.r2_cv is not None:
        lines.append(
            f"Effort model CV R²: {model.r2_cv.mean:.3f} with every edit, "
            f"{_num(outliers.effort_model_r2_cv_without)} without them."
        )
    return "\n".join(lines)


def _bootstrap(m, *, best: bool) -> str:
    if best:
        return "best"
    boot = m.bootstrap_vs_best
    if boot is None:
        return "-"
    return f"{boot.difference:.3f} [{boot.ci[0]:.3f}, {boot.ci[1]:.3f}]" + (" *" if boot.excludes_zero else "")


def _mixed_table(analysis: Analysis) -> str:
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
                _num(model.coefficient),
                ci,
                _num(model.df, 1),
                format_p(model.p),
                _num(model.r2_marginal),
                _num(model.r2_conditional),
                *[_num(model.variances.get(f)) for f in factors],
                _num(model.variances.get("residual")),
                _num(model.reml_criterion, 2) + ("" if model.converged else " (not converged)"),
                "; ".join(model.warnings) or "-",
            ]
        )
    first = next(iter(fitted.values()))
    title = (
        f"Mixed-effects models ({first.formula.replace(f'z({next(iter(fitted))})', 'z(metric)')}, REML; "
        "β = standardised slope: target sds per metric sd; CI and p from t on Satterthwaite's df, as lmerTest; "
        "R² marginal/conditional after Nakagawa & Schielzeth):"
    )
    return title + "\n\n" + _align(rows)


def _conditions_table(conditions: ConditionAnalysis) -> str:
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
            _num(row["mean"]),
            _interval(row["mean_ci_low"], row["mean_ci_high"]),
            _num(row["median"]),
            _num(row["words_per_hour"], 1),
            _num(row["effect"]) if row["effect"] is not None else baseline,
            _interval(row["effect_ci_low"], row["effect_ci_high"]),
            format_p(row["effect_p"]),
        ]
        if log:
            cells += [
                _num(row["time_ratio"]) if row["time_ratio"] is not None else baseline,
                _interval(row["time_ratio_ci_low"], row["time_ratio_ci_high"]),
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
    return title + "\n\n" + _align(rows) + "\n\n" + "\n".join(notes)


CONDITIONS_NOTE = (
    "mean: the arithmetic mean of the condition's edits; effect: the condition's fixed coefficient in the mixed "
    "model, in the target's units, against the baseline (Wald 95% CI and p)."
)
TIME_RATIO_NOTE = (
    "time ratio: exp(effect) of the model of log(time), a ratio of geometric means (typical edit against the "
    "baseline's), not of the arithmetic means beside it."
)


def _interval(low, high) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _sensitivity_table(sensitivity: IdleSensitivity) -> str:
    header = ["metric", *[f"r@{s:g}s" for s in sensitivity.thresholds_s]]
    rows = [header]
    for name, values in sensitivity.metrics.items():
        rows.append([name, *[_num(v) for v in values]])
    rows.append(["mean active s", *[_num(None if v is None else v / 1000, 1) for v in sensitivity.mean_active_ms]])
    title = (
        f"Idle threshold sensitivity: r with active time recomputed from the event logs ({sensitivity.n} post-edits "
        f"with a log; {sensitivity.without_log} without one left out; at the project's {sensitivity.project_threshold_s:g}"
        f" s, {sensitivity.stored_equal} of {sensitivity.stored_checked} recomputed values equal the stored ones):"
    )
    return title + "\n\n" + _align(rows)


def _cv(score) -> str:
    if score is None:
        return "-"
    return f"{score.mean:.3f} ± {score.sd:.3f}" if score.sd is not None else f"{score.mean:.3f} (one split)"


def _effort_table(analysis: Analysis) -> str:
    model = analysis.effort_model
    if model is None or model.r2_cv is None:
        reasons = " ".join(model.messages) if model else ""
        return f"Effort model: none for this selection. {reasons}".rstrip()
    settings = analysis.settings
    lines = [
        f"Effort model (OLS on metrics + text lengths + annotator, {settings.cv_folds}-fold CV x "
        f"{settings.cv_repeats}): R² = {_cv(model.r2_cv)} on {model.n} post-edits",
        f"  grouped by item: {_cv(model.r2_cv_item)}; by annotator (without the annotator input): "
        f"{_cv(model.r2_cv_annotator)}",
        "",
    ]
    rows = [["input", "contribution (ΔR² when left out)", "coefficient (target units per input sd)"]]
    for name in model.inputs:
        rows.append([name, _num(model.contributions.get(name), 4), _num(model.coefficients.get(name))])
    return "\n".join(lines) + _align(rows)
