"""The analysis report: which metric predicts the measured effort, with tables and plots.

Researchers and admins only: anonymous users go to the login page, annotators get 403,
an unknown project 404. The page is one GET form (project selection + target); with
htmx a change re-renders only the report body (partial "metrics/report_body.html"),
without it the form's submit button reloads the page. Plots are <img> URLs drawn by
the server (SVG or PNG), each with its numbers as CSV and JSON; the whole analysis
downloads as JSON (the analyze command's schema) and its table as CSV.
"""

from dataclasses import asdict, dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from editlab.http import HtmxHttpRequest, render_page, wants_fragment
from editlab.refusals import attempt
from metrics.agreement_downloads import CSV_COLUMNS, agreement_csv_rows
from metrics.agreement_report import PAGE_DISTANCES, agreement_build, agreement_section
from metrics.analysis import (
    Settings,
    condition_rows,
    format_p,
    summary_rows,
)
from metrics.analysis.documents import document_columns, document_rows
from metrics.analysis.origins import origin_rows
from metrics.analysis.pipeline import ROW_ORDERS
from metrics.analysis.scenarios import comparison_rows
from metrics.analysis_options import (
    FLAG_VALUES,
    ORIGINS,
    PAGE_TARGET,
    Selection,
    analysis_request_from_query,
    declared_conditions,
    settings_params,
    target_groups,
)
from metrics.gold_figures import gold_table_build
from metrics.reports import Report, documents_summarise, report_build
from metrics.scenario_report import scenario_reference_from_query
from metrics.selection_data import selection_data
from metrics.selectors import (
    TARGETS,
    VARIANTS,
    annotator_names,
    metrics_per_project,
    projects_with_submitted,
    report_loading_text,
    task_types,
)
from metrics.selectors_scenarios import simulated_scenarios
from metrics.views.downloads import csv_response, json_response, safe_name

NUMBER_FORMATS = ("csv", "json")


@dataclass(frozen=True)
class ReportListRow:
    """A project on the reports list, with what its report link says while the report computes."""

    pk: int
    name: str
    submitted: int
    loading: str


readers = role_required(ADMIN, RESEARCHER, message="Only researchers and admins may read analysis reports.")


def _query(selection: Selection, settings: Settings, baseline: str | None = None, **extra: str) -> str:
    chosen = {"baseline": baseline} if baseline else {}
    return urlencode({**selection.as_params(), **settings_params(settings), **chosen, **extra}, doseq=True)


def _checked(value: str) -> bool:
    """A flag as the form shows it back (the parse itself, strict, is analysis_request_from_query's)."""
    return FLAG_VALUES.get(value.strip().lower(), False)


@login_required
@require_GET
@readers
def report_projects(request: HttpRequest) -> HttpResponse:
    projects = list(projects_with_submitted())
    metrics = metrics_per_project([project.pk for project in projects])
    rows = []
    for project in projects:
        submitted: int = project.submitted  # type: ignore[attr-defined]  # projects_with_submitted's annotate(); the stubs type no annotation
        loading = report_loading_text(metrics=metrics.get(project.pk, 0), post_edits=submitted)
        rows.append(ReportListRow(pk=project.pk, name=project.name, submitted=submitted, loading=loading))
    return render(request, "metrics/report_projects.html", {"projects": rows})


@login_required
@require_GET
@readers
def report_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    context = {
        "project": project,
        "target_groups": target_groups(
            targets=list(TARGETS),
            chosen=request.GET.get("target", PAGE_TARGET),
            thresholds=request.GET.get("pause_thresholds"),
        ),
        "variants": VARIANTS,
        "origins": ORIGINS,
        "all_annotators": annotator_names(project=project),
        "task_types": task_types(project=project),
        "chosen": {
            "target": request.GET.get("target", PAGE_TARGET),
            "pause_thresholds": request.GET.get("pause_thresholds", ""),
            "variant": request.GET.get("variant", VARIANTS[0]),
            "annotators": request.GET.getlist("annotators"),
            "task_type": request.GET.get("task_type", ""),
            "origin": request.GET.get("origin", ""),
            "exclude_flagged": _checked(request.GET.get("exclude_flagged", "")),
            "log_time": _checked(request.GET.get("log_time", "")),
            "idle_threshold": request.GET.get("idle_threshold", ""),
            "include_practice": _checked(request.GET.get("include_practice", "")),
            "baseline": request.GET.get("baseline", ""),
            "reference": request.GET.get("reference", ""),
        },
        "declared_conditions": declared_conditions(project),
        "scenario_names": simulated_scenarios(project=project),
    }
    status = 200
    chosen = attempt(_report_request, project=project, query=request.GET)
    if chosen.refusal is not None:
        context["error"] = str(chosen.refusal)
        status = 200 if wants_fragment(request) else 400  # htmx swaps only 2xx bodies: show the message in place
    else:
        selection, settings, baseline, reference = chosen.value
        report = report_build(selection=selection, settings=settings, baseline=baseline, scenario_reference=reference)
        context.update(_report_context(report, project, baseline, reference))
        context["loading"] = report_loading_text(
            metrics=len(report.analysis.metrics), post_edits=report.analysis.n_rows
        )
    return render_page(request, "metrics/report.html", "metrics/report_body.html", context, status=status)


def _report_request(*, project: Project, query) -> tuple:
    """(selection, settings, baseline, scenario reference) the query asks for."""
    selection, settings, baseline = analysis_request_from_query(project=project, query=query)
    return selection, settings, baseline, scenario_reference_from_query(project=project, query=query)


def rank_and_footnote(rows: list[dict]) -> list[dict]:
    """Give each row its `rank` by oriented r (1 = best; None without an r; ties share the better rank) and its
    `notes` as footnote references, and order the rows by rank (those without one last, in their order);
    returns the footnotes, each text once with the metrics it concerns."""
    ranked = sorted((row["pearson_oriented"], row["metric"]) for row in rows if row["pearson_oriented"] is not None)
    ranked.reverse()
    rank_of: dict[float, int] = {}
    for position, (value, _) in enumerate(ranked, start=1):
        rank_of.setdefault(value, position)
    footnotes: dict[str, dict] = {}
    for row in rows:
        oriented = row["pearson_oriented"]
        row["rank"] = rank_of[oriented] if oriented is not None else None
        row["notes"] = []
        for text in row["messages"]:
            note = footnotes.setdefault(text, {"number": len(footnotes) + 1, "text": text, "metrics": []})
            note["metrics"].append(row["metric"])
            row["notes"].append(note)
    order = {id(row): position for position, row in enumerate(rows)}
    rows.sort(key=lambda row: (row["rank"] is None, row["rank"] or 0, order[id(row)]))
    return list(footnotes.values())


def _report_context(
    report: Report, project: Project, baseline: str | None = None, reference: str | None = None
) -> dict:
    analysis = report.analysis
    query = _query(report.selection, analysis.settings, baseline, **({"reference": reference} if reference else {}))
    plot_base = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "KIND", "fmt": "FMT"})

    def plot_urls(kind: str, **extra: str) -> dict:
        q = _query(report.selection, analysis.settings, baseline, **extra)
        base = plot_base.replace("KIND", kind)
        return {fmt: f"{base.replace('FMT', fmt)}?{q}" for fmt in ("svg", "png", "csv", "json")}

    rows = []
    for row, (name, result) in zip(summary_rows(analysis), analysis.metrics.items(), strict=True):
        rows.append(
            {
                **row,
                "pearson_p_text": format_p(row["pearson_p"]),
                "williams_p_text": format_p(row["williams_p"]),
                "per_annotator": [result.pearson_per_annotator.get(a) for a in analysis.annotators],
                "messages": result.messages,
                "plots": plot_urls("scatter", metric=name) if result.pearson is not None else None,
            }
        )
    footnotes = rank_and_footnote(rows)
    model = analysis.effort_model
    contributions = []
    if model is not None:
        contributions = [
            {"input": name, "contribution": model.contributions.get(name), "coefficient": model.coefficients.get(name)}
            for name in model.inputs
        ]
    mixed_factors = sorted({f for r in analysis.metrics.values() if r.mixed for f in r.mixed.groups})
    mixed_rows = [
        {
            "metric": name,
            "formula": result.mixed.formula.replace(f"z({name})", "z(metric)"),
            "n": result.mixed.n,
            "groups": result.mixed.groups,
            "coefficient": result.mixed.coefficient,
            "ci": result.mixed.ci,
            "df": result.mixed.df,
            "p_text": format_p(result.mixed.p),
            "reml_criterion": result.mixed.reml_criterion,
            "converged": result.mixed.converged,
            "warnings": result.mixed.warnings,
            "r2_marginal": result.mixed.r2_marginal,
            "r2_conditional": result.mixed.r2_conditional,
            "factor_variances": [result.mixed.variances.get(factor) for factor in mixed_factors],
            "residual": result.mixed.variances.get("residual"),
            "messages": result.mixed.messages,
        }
        for name, result in analysis.metrics.items()
        if result.mixed is not None
    ]
    data_base = reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "FMT"})
    return {
        "report": report,
        "analysis": analysis,
        "selection": report.selection,
        "rows": rows,
        "footnotes": footnotes,
        "messages_all": report.messages + analysis.messages,
        "model": model,
        "contributions": contributions,
        "mixed_rows": mixed_rows,
        "mixed_factors": mixed_factors,
        "heatmap": plot_urls("heatmap") if len(report.metrics) > 1 else None,
        "effort_plot": plot_urls("effort") if model is not None and model.r2_cv is not None else None,
        "sensitivity": report.idle_sensitivity,
        "sensitivity_rows": [
            {"metric": name, "values": values} for name, values in report.idle_sensitivity.metrics.items()
        ]
        if report.idle_sensitivity
        else [],
        "idle_plot": plot_urls("idle") if report.idle_sensitivity and report.idle_sensitivity.n else None,
        "flagged": report.flagged,
        "row_orders": ROW_ORDERS,
        "data_urls": {fmt: f"{data_base.replace('FMT', fmt)}?{query}" for fmt in NUMBER_FORMATS},
        "query": query,
        "gold": gold_table_build(selection=report.selection),
        "agreement": agreement_section(selection=report.selection, fingerprint=report.fingerprint or None),
        **_conditions_context(report, plot_urls),
        **_documents_context(report, project, query),
        **_live_vs_imported_context(report),
        **_scenarios_context(report, plot_urls, reference),
    }


def _scenarios_context(report: Report, plot_urls, reference: str | None) -> dict:
    """The Synthetic edits section: shown when the project has synthetic edits."""
    scenarios = report.scenarios
    if scenarios is None:
        return {"scenarios": None}
    chosen = {"reference": reference} if reference else {}
    return {
        "scenarios": scenarios,
        "scenario_plots": {
            "scenarios": plot_urls("scenarios", **chosen) if scenarios.comparisons else None,
            "scenario_distances": plot_urls("scenario_distances", **chosen),
        },
        "scenario_rows": [
            {**row, "wilcoxon_p_text": format_p(row["wilcoxon_p"])} for row in comparison_rows(scenarios)
        ],
        "scenario_messages": scenarios.messages
        + [f"{c.scenario}: {message}" for c in scenarios.comparisons for message in c.messages],
    }


def _live_vs_imported_context(report: Report) -> dict:
    comparison = report.live_vs_imported
    if comparison is None:
        return {"live_vs_imported": None}
    return {
        "live_vs_imported": comparison,
        "origin_effort_rows": origin_rows(comparison),
        "origin_correlation_rows": [
            {"metric": name, "live": by_origin["live"], "imported": by_origin["imported"]}
            for name, by_origin in comparison.correlations.items()
        ],
    }


def _documents_context(report: Report, project: Project, query: str) -> dict:
    documents = report.documents
    if documents is None:
        return {"documents": None}
    base = reverse("metrics-report-documents", kwargs={"project_id": project.pk, "fmt": "FMT"})
    return {
        "documents": documents,
        "document_rows": [
            {**asdict(doc), "efforts": [doc.effort[column] for column in documents.efforts]}
            for doc in documents.documents
        ],
        "documents_urls": {fmt: f"{base.replace('FMT', fmt)}?{query}" for fmt in NUMBER_FORMATS},
    }


def _conditions_context(report: Report, plot_urls) -> dict:
    """The Conditions section: shown when the selection's edits were made under two conditions or more."""
    conditions = report.conditions
    if conditions is None or len(conditions.conditions) < 2:
        return {"conditions": None}
    models = [m for m in (conditions.model, conditions.log_model) if m is not None]
    return {
        "conditions": conditions,
        "condition_rows": [
            {**row, "effect_p_text": format_p(row["effect_p"]), "log_effect_p_text": format_p(row["log_effect_p"])}
            for row in condition_rows(conditions)
        ],
        "condition_messages": conditions.messages
        + [f"{m.formula}: {text}" for m in models for text in m.messages + m.warnings],
        "conditions_plot": plot_urls("conditions"),
    }


def report_options(request: HttpRequest, project: Project) -> tuple[Selection, Settings, str | None]:
    """The request's selection, settings and baseline; a SelectionError (a Refusal) names a bad one."""
    return analysis_request_from_query(project=project, query=request.GET)


def _download_selection(request: HttpRequest, project: Project, fmt: str) -> tuple[Selection, Settings, str | None]:
    """A number download's selection: an unknown format is 404, a bad query a SelectionError (400)."""
    if fmt not in NUMBER_FORMATS:
        raise Http404(f"unknown format {fmt!r}")
    return report_options(request, project)


@login_required
@require_GET
@readers
def report_data(request: HttpRequest, project_id: int, fmt: str) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    chosen = _download_selection(request, project, fmt)
    selection, settings, baseline = chosen
    reference = scenario_reference_from_query(project=project, query=request.GET)
    report = report_build(selection=selection, settings=settings, baseline=baseline, scenario_reference=reference)
    filename = f"{safe_name(project.name)}-{selection.target}-analysis"
    if fmt == "json":
        return json_response(report.to_dict(), filename)
    return csv_response(summary_rows(report.analysis), filename)


@login_required
@require_GET
@readers
def report_documents(request: HttpRequest, project_id: int, fmt: str) -> HttpResponse:
    """The per-document summary of the selection (no analysis needed), as CSV or JSON."""
    project = get_object_or_404(Project, pk=project_id)
    chosen = _download_selection(request, project, fmt)
    selection = chosen[0]
    documents = documents_summarise(selection=selection, data=selection_data(selection=selection))
    filename = f"{safe_name(project.name)}-documents"
    if fmt == "json":
        return json_response({"selection": selection.describe(), **documents.to_dict()}, filename)
    return csv_response(document_rows(documents), filename, columns=document_columns(documents.efforts))


@login_required
@require_GET
@readers
def report_agreement(request: HttpRequest, project_id: int, fmt: str) -> HttpResponse:
    """The report's Agreement section for the same selection: JSON with its definitions, or CSV rows
    (metrics.agreement_downloads). A target without stored effort, or an idle threshold, is a 400 naming it."""
    project = get_object_or_404(Project, pk=project_id)
    selection = _download_selection(request, project, fmt)[0]
    agreement = agreement_build(selection=selection, distances=PAGE_DISTANCES)
    filename = f"{safe_name(project.name)}-{selection.target}-agreement"
    if fmt == "json":
        return json_response(agreement, filename)
    return csv_response(agreement_csv_rows(selection=selection, agreement=agreement), filename, columns=CSV_COLUMNS)
