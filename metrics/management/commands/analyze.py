"""python manage.py analyze --project NAME --target TARGET [--variant V] [--annotators a,b]
[--task-type T] [--origin O] [--exclude-flagged] [--include-practice] [--idle-threshold S] [--log-time]
[--no-mixed] [--baseline CONDITION] [--format table|json|csv|conditions-csv] [--by-document]
[--scenarios [--reference SCENARIO]] [--agreement [--distances compression,ter,chrf]]
[--pause-thresholds 200,500,1000,2000] [--mqm [--format table|json|tsv]]

Prints the analysis of a project's submitted post-edits (the report page's numbers):
per metric Pearson r (p, 95% CI, per annotator), Spearman rho, 5-NN R² (published split
and repeated CV), Williams's test against the best metric, the metric matrix and the
effort model; when the edits were made under conditions, effort per condition and each
condition's effect against the baseline (--baseline, default the first declared condition).
Practice items' post-edits are left out unless --include-practice. The JSON schema is
documented in the README ("Analysis JSON"); conditions-csv prints one row per condition.
A target is an effort field (wall_time, active_time, keystrokes, allkeys) or a process measure computed
from the event logs (docs/process.md: iki_median, revisions, product_process_ratio, ..., or at a pause
threshold in ms: pause_count@1000, pause_ms@1000, p_bursts@1000, r_bursts@1000, ...); for a measure at a
threshold the table also shows it at every --pause-thresholds threshold, per condition.
With --by-document it prints the per-document summary instead (no analysis is run; --target is then
optional: the summary holds every effort column, whatever the target).
With --scenarios it prints the synthetic-edit analysis instead (metrics.scenario_report): each scenario's
distance distributions and its comparison with the reference scenario (--reference, default normal);
--target (default wall_time) is then the human effort each scenario's distance is correlated with.
With --agreement it prints the agreement of items done by two or more annotators instead (docs/agreement.md):
Krippendorff's alpha and the ICCs on --target, and the distances between their post-edits (--distances).
With --mqm it prints the MQM and ESA scores of the project's evaluations instead (docs/quality.md): per
system and per rater; --format tsv writes one row per system and segment as WMT's *.avg_seg_scores.tsv.
"""

import csv
import io
import json

from django.core.management.base import CommandError, CommandParser

from annotations.models import Project
from editlab.commands import DataCommand
from metrics.agreement_report import agreement_build, agreement_rows, distances_parse
from metrics.agreement_text import agreement_table
from metrics.analysis import condition_rows, summary_rows
from metrics.analysis.documents import document_columns, document_rows
from metrics.analysis.scenarios import comparison_rows
from metrics.analysis_options import (
    ORIGINS,
    AnalysisOptionsSerializer,
    Selection,
    SelectionError,
    analysis_options_check,
    analysis_request_build,
)
from metrics.exports import neutralise_formula
from metrics.exports_mqm import avg_seg_scores_tsv
from metrics.quality_report import mqm_summary, mqm_table
from metrics.report_text import (
    conditions_table,
    documents_table,
    effort_table,
    live_vs_imported_table,
    metric_table,
    mixed_table,
    outliers_table,
    sensitivity_table,
)
from metrics.reports import Report, documents_build, report_build
from metrics.scenario_report import scenario_reference_check, scenarios_build
from metrics.scenario_text import scenarios_table
from metrics.selection_data import selection_data
from metrics.selectors import TARGETS, VARIANTS
from metrics.selectors_process import by_threshold


def threshold_table(rows: list[dict], *, target: str) -> str:
    """A threshold target's measure at each pause threshold (columns), per condition (rows; all first)."""
    columns = [name for name in rows[0] if name not in ("condition", "n")]
    lines = [f"{target.partition('@')[0]} at each pause threshold (mean per post-edit with a log)"]
    lines.append("  ".join([f"{'condition':<20}", f"{'n':>6}", *(f"{name:>22}" for name in columns)]))
    for row in rows:
        cells = ["-" if row[name] is None else f"{row[name]:.4g}" for name in columns]
        lines.append("  ".join([f"{row['condition'] or '(all)':<20}", f"{row['n']:>6}", *(f"{c:>22}" for c in cells)]))
    return "\n".join(lines)


FORMATS = ("table", "text", "json", "csv", "conditions-csv", "tsv")
SCENARIO_TARGET = "wall_time"  # the human effort --scenarios correlates with when no --target is given
NUMBERS = (
    ("--k", "k", "neighbours for KNN regression"),
    ("--test-size", "test_size", "the published protocol's test share"),
    ("--seed", "seed", "split and CV seed"),
    ("--cv-repeats", "cv_repeats", "repeats of 5-fold cross-validation"),
)
# The command's options as the serializer's fields (the flags only when given: their defaults are the serializer's).
TEXTS = ("target", "variant", "annotators", "task_type", "origin", "idle_threshold", "baseline", "pause_thresholds")
FLAGS = ("exclude_flagged", "log_time", "include_practice")


def command_options(options: dict) -> dict:
    """The analyze command's options as the data of the one serializer (metrics.analysis_options)."""
    data = {name: options[name] for name in (*TEXTS, *(name for _, name, _ in NUMBERS)) if options[name] is not None}
    data.update({name: True for name in FLAGS if options[name]})
    if options["no_mixed"]:
        data["mixed_models"] = False
    return data


class Command(DataCommand):
    help = "Print which metric predicts the measured effort for a project (correlations, KNN R², effort model)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--target",
            default=None,
            help=f"the effort to predict: {', '.join(TARGETS)}, or a process measure such as pause_count@1000 "
            "(docs/process.md; required unless --by-document)",
        )
        parser.add_argument(
            "--pause-thresholds",
            default=None,
            metavar="MS,MS,...",
            help="pause thresholds in ms of a process target's table (default 200,500,1000,2000)",
        )
        parser.add_argument("--variant", default=VARIANTS[0], choices=list(VARIANTS))
        parser.add_argument("--annotators", default="", help="comma-separated usernames (default: all)")
        parser.add_argument("--task-type", default="", help="only items of this task type")
        parser.add_argument("--origin", default="", choices=["", *ORIGINS])
        parser.add_argument("--format", default="table", choices=FORMATS)
        fields = AnalysisOptionsSerializer().fields  # the defaults and ranges of the page and the API
        for flag, name, what in NUMBERS:
            field = fields[name]
            low, high = getattr(field, "min_value", None), getattr(field, "max_value", None)
            parser.add_argument(
                flag,
                default=None,
                help=f"{what} (default {field.default}, from {low} to {high})",
            )
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
        parser.add_argument(
            "--scenarios",
            action="store_true",
            help="print the synthetic-edit analysis (distances by scenario, each against the reference scenario)",
        )
        parser.add_argument(
            "--reference",
            default="",
            metavar="SCENARIO",
            help="with --scenarios: the scenario the others are compared with (default normal, else the first)",
        )

        parser.add_argument(
            "--agreement",
            action="store_true",
            help="print the agreement of items done by two or more annotators (alpha, ICC, output distances)",
        )
        parser.add_argument(
            "--distances",
            default=None,
            metavar="NAME,NAME",
            help="with --agreement: the output distances, of compression,ter,chrf (default compression)",
        )

        parser.add_argument(
            "--mqm",
            action="store_true",
            help="print the MQM/ESA scores of the project's evaluations (--format tsv: WMT's avg_seg_scores)",
        )

    def handle(self, *args, **options) -> None:
        if options["mqm"]:
            self._mqm(options)
            return
        if options["format"] == "tsv":
            raise CommandError("--format tsv goes with --mqm")
        if options["distances"] is not None and not options["agreement"]:
            raise CommandError("--distances applies to --agreement only")
        if options["agreement"] and (options["scenarios"] or options["by_document"]):
            raise CommandError("choose one of --agreement, --scenarios and --by-document")
        if options["reference"] and not options["scenarios"]:
            raise CommandError("--reference applies to --scenarios only")
        if options["scenarios"] and options["by_document"]:
            raise CommandError("choose one of --scenarios and --by-document")
        if options["target"] is None and options["scenarios"]:
            options["target"] = SCENARIO_TARGET
        if options["pause_thresholds"] is not None and not options["pause_thresholds"].strip():
            raise CommandError("--pause-thresholds is empty: give thresholds in ms, 200,500,1000,2000 for one")
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
                project=project, params=analysis_options_check(command_options(options))
            )
        except (SelectionError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["by_document"]:
            self._documents(selection, options["format"])
            return
        if options["scenarios"]:
            self._scenarios(selection, options["reference"], options["format"])
            return
        if options["agreement"]:
            self._agreement(selection, options["distances"], options["format"])
            return
        report = report_build(selection=selection, settings=settings, baseline=baseline, use_cache=False)
        formats = {"json": self._json, "csv": self._csv, "table": self._table, "text": self._table}
        formats["conditions-csv"] = self._conditions_csv
        formats[options["format"]](report)

    def _mqm(self, options: dict) -> None:
        if options["agreement"] or options["scenarios"] or options["by_document"]:
            raise CommandError("--mqm goes alone: not with --agreement, --scenarios or --by-document")
        if options["format"] not in ("table", "text", "json", "tsv"):
            raise CommandError("--mqm prints --format table, json or tsv")
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            raise CommandError(f"no project named {options['project']!r}") from None
        if options["format"] == "tsv":
            self.stdout.write(avg_seg_scores_tsv(project), ending="")
            return
        summary = mqm_summary(project)
        if options["format"] == "json":
            self.stdout.write(json.dumps(summary, indent=2, allow_nan=False))
        else:
            self.stdout.write(mqm_table(summary))

    def _documents(self, selection: Selection, fmt: str) -> None:
        documents = documents_build(selection=selection, data=selection_data(selection=selection, use_cache=False))
        if documents is None:
            raise CommandError(f"no item of project {selection.project.name!r} belongs to a document")
        if fmt == "json":
            self.stdout.write(json.dumps(documents.to_dict(), indent=2, allow_nan=False))
        elif fmt in ("csv", "conditions-csv"):
            self._write_csv(document_rows(documents), first="document", columns=document_columns(documents.efforts))
        else:
            self.stdout.write(documents_table(documents))

    def _scenarios(self, selection: Selection, reference: str, fmt: str) -> None:
        if fmt == "conditions-csv":
            raise CommandError("--format conditions-csv does not apply to --scenarios: choose table, json or csv")
        try:
            chosen = scenario_reference_check(project=selection.project, reference=reference)
        except SelectionError as exc:
            raise CommandError(str(exc)) from None
        human = selection_data(selection=selection, use_cache=False).frame
        analysis = scenarios_build(selection=selection, human_frame=human, reference=chosen)
        if analysis is None:
            raise CommandError(
                f"project {selection.project.name!r} has no synthetic edits (store some with simulate_edits)"
            )
        if fmt == "json":
            data = {"selection": selection.describe(), **analysis.to_dict()}
            self.stdout.write(json.dumps(data, indent=2, allow_nan=False))
        elif fmt == "csv":
            self._write_csv(comparison_rows(analysis), first="scenario")
        else:
            self.stdout.write(f"Project {selection.project.name}")
            self.stdout.write(scenarios_table(analysis, variant=selection.variant))

    def _agreement(self, selection: Selection, distances: str | None, fmt: str) -> None:
        if fmt == "conditions-csv":
            raise CommandError("--format conditions-csv does not apply to --agreement: choose text, json or csv")
        try:
            agreement = agreement_build(selection=selection, distances=distances_parse(distances))
        except SelectionError as exc:
            raise CommandError(str(exc)) from None
        if fmt == "json":
            self.stdout.write(json.dumps(agreement, indent=2, allow_nan=False))
        elif fmt == "csv":
            self._write_csv(agreement_rows(agreement), first="figure")
        else:
            self.stdout.write(agreement_table(agreement))

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
        out(metric_table(analysis))
        out("")
        out(effort_table(analysis))
        outliers = outliers_table(analysis)
        if outliers:
            out("")
            out(outliers)
        mixed = mixed_table(analysis)
        if mixed:
            out("")
            out(mixed)
        if report.idle_sensitivity is not None:
            out("")
            out(sensitivity_table(report.idle_sensitivity))
        conditions = report.conditions
        if conditions is not None and len(conditions.conditions) >= 2:
            out("")
            out(conditions_table(conditions))
        thresholds = (
            by_threshold(report.frame, target=selection.target_column, thresholds_ms=selection.pause_thresholds_ms)
            if selection.target_column not in TARGETS.values()
            else []
        )
        if thresholds:
            out("")
            out(threshold_table(thresholds, target=selection.target))
        if report.live_vs_imported is not None:
            out("")
            out(live_vs_imported_table(report.live_vs_imported))
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
