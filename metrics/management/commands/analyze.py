"""python manage.py analyze --project NAME --target TARGET [--variant V] [--annotators a,b]
[--task-type T] [--origin O] [--format table|json|csv]

Prints the analysis of a project's submitted post-edits (the report page's numbers):
per metric Pearson r (p, 95% CI, per annotator), Spearman rho, 5-NN R² (published split
and repeated CV), Williams's test against the best metric, the metric matrix and the
effort model. The JSON schema is documented in the README ("Analysis JSON").
"""

import csv
import io
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Project
from metrics.analysis import Analysis, Settings, format_p, summary_rows
from metrics.exports import neutralise_formula
from metrics.reports import ORIGINS, Report, SelectionError, report_build, selection_build
from metrics.selectors import TARGETS, VARIANTS

FORMATS = ("table", "json", "csv")


class Command(BaseCommand):
    help = "Print which metric predicts the measured effort for a project (correlations, KNN R², effort model)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--target", required=True, choices=list(TARGETS))
        parser.add_argument("--variant", default=VARIANTS[0], choices=list(VARIANTS))
        parser.add_argument("--annotators", default="", help="comma-separated usernames (default: all)")
        parser.add_argument("--task-type", default="", help="only items of this task type")
        parser.add_argument("--origin", default="", choices=["", *ORIGINS])
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--k", type=int, default=5, help="neighbours for KNN regression (default 5)")
        parser.add_argument("--test-size", type=float, default=0.2, help="published protocol's test share (0.2)")
        parser.add_argument("--seed", type=int, default=42, help="split and CV seed (42)")
        parser.add_argument("--cv-repeats", type=int, default=10, help="repeats of 5-fold cross-validation (10)")

    def handle(self, *args, **options) -> None:
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            known = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"no project named {options['project']!r} (projects: {known})") from None
        try:
            settings = Settings(
                k=options["k"], test_size=options["test_size"], seed=options["seed"], cv_repeats=options["cv_repeats"]
            )
            selection = selection_build(
                project=project,
                target=options["target"],
                variant=options["variant"],
                annotators=options["annotators"],
                task_type=options["task_type"],
                origin=options["origin"],
            )
        except (SelectionError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        report = report_build(selection=selection, settings=settings, use_cache=False)
        {"json": self._json, "csv": self._csv, "table": self._table}[options["format"]](report)

    def _json(self, report: Report) -> None:
        self.stdout.write(json.dumps(report.to_dict(), indent=2, allow_nan=False))

    def _csv(self, report: Report) -> None:
        rows = summary_rows(report.analysis)
        columns = list(dict.fromkeys(key for row in rows for key in row)) or ["metric"]
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
        messages = (
            report.messages
            + analysis.messages
            + [f"{name}: {message}" for name, result in analysis.metrics.items() for message in result.messages]
        )
        if messages:
            out("")
            out("Messages:")
            for message in messages:
                out(f"  - {message}")


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
        "knn_r2",
        "knn_r2_cv",
        "williams_p",
        *[f"r[{a}]" for a in analysis.annotators],
    ]
    rows = [header]
    for name, m in analysis.metrics.items():
        ci = f"[{m.pearson_ci[0]:.3f}, {m.pearson_ci[1]:.3f}]" if m.pearson_ci else "-"
        cv = f"{m.knn_r2_cv.mean:.3f} ± {m.knn_r2_cv.sd:.3f}" if m.knn_r2_cv else "-"
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
                _num(m.knn_r2),
                cv,
                williams,
                *[_num(m.pearson_per_annotator.get(a)) for a in analysis.annotators],
            ]
        )
    if len(rows) == 1:
        return "No metric values to analyse."
    return _align(rows)


def _effort_table(analysis: Analysis) -> str:
    model = analysis.effort_model
    if model is None or model.r2_cv is None:
        reasons = " ".join(model.messages) if model else ""
        return f"Effort model: none for this selection. {reasons}".rstrip()
    settings = analysis.settings
    lines = [
        f"Effort model (OLS on metrics + text lengths + annotator, {settings.cv_folds}-fold CV x "
        f"{settings.cv_repeats}): R² = {model.r2_cv.mean:.3f} ± {model.r2_cv.sd:.3f} on {model.n} post-edits",
        "",
    ]
    rows = [["input", "contribution (ΔR² when left out)", "standardised coefficient"]]
    for name in model.inputs:
        rows.append([name, _num(model.contributions.get(name), 4), _num(model.coefficients.get(name))])
    return "\n".join(lines) + _align(rows)
