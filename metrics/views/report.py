"""The analysis report: which metric predicts the measured effort, with tables and plots.

Researchers and admins only: anonymous users go to the login page, annotators get 403,
an unknown project 404. The page is one GET form (project selection + target); with
htmx a change re-renders only the report body (partial "metrics/report_body.html"),
without it the form's submit button reloads the page. Plots are <img> URLs drawn by
the server (SVG or PNG), each with its numbers as CSV and JSON; the whole analysis
downloads as JSON (the analyze command's schema) and its table as CSV.
"""

import csv
import io
import json
from dataclasses import asdict
from urllib.parse import urlencode

import numpy as np
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from editlab.http import HtmxHttpRequest
from editlab.refusals import Refusal
from metrics import plots
from metrics.analysis import (
    Settings,
    condition_rows,
    correlate,
    correlation_matrix,
    fit_line,
    format_p,
    plain,
    summary_rows,
)
from metrics.analysis.conditions import CONDITION
from metrics.analysis.documents import document_columns, document_rows
from metrics.analysis.origins import origin_rows
from metrics.analysis.pipeline import ROW_ORDERS
from metrics.exports import neutralise_formula
from metrics.gold_figures import gold_table_build
from metrics.reports import (
    CHECKED,
    ORIGINS,
    Report,
    Selection,
    SelectionError,
    baseline_build,
    declared_conditions,
    documents_summarise,
    report_build,
    selection_data,
    selection_from_query,
    settings_from_query,
    settings_params,
)
from metrics.selectors import (
    TARGETS,
    VARIANTS,
    annotator_names,
    effort_points,
    metric_matrix_rows,
    projects_with_submitted,
    scatter_points,
    task_types,
)

PLOT_KINDS = ("scatter", "heatmap", "effort", "idle", "conditions")
NUMBER_FORMATS = ("csv", "json")
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


readers = role_required(ADMIN, RESEARCHER, message="Only researchers and admins may read analysis reports.")


def _safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text).strip("_") or "report"


def _query(selection: Selection, settings: Settings, baseline: str | None = None, **extra: str) -> str:
    chosen = {"baseline": baseline} if baseline else {}
    return urlencode({**selection.as_params(), **settings_params(settings), **chosen, **extra}, doseq=True)


@login_required
@require_GET
@readers
def report_projects(request: HttpRequest) -> HttpResponse:
    return render(request, "metrics/report_projects.html", {"projects": projects_with_submitted()})


@login_required
@require_GET
@readers
def report_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    context = {
        "project": project,
        "targets": list(TARGETS),
        "variants": VARIANTS,
        "origins": ORIGINS,
        "all_annotators": annotator_names(project=project),
        "task_types": task_types(project=project),
        "chosen": {
            "target": request.GET.get("target", "keystrokes"),
            "variant": request.GET.get("variant", VARIANTS[0]),
            "annotators": request.GET.getlist("annotators"),
            "task_type": request.GET.get("task_type", ""),
            "origin": request.GET.get("origin", ""),
            "exclude_flagged": request.GET.get("exclude_flagged", "") in CHECKED,
            "log_time": request.GET.get("log_time", "") in CHECKED,
            "idle_threshold": request.GET.get("idle_threshold", ""),
            "include_practice": request.GET.get("include_practice", "") in CHECKED,
            "baseline": request.GET.get("baseline", ""),
        },
        "declared_conditions": declared_conditions(project),
    }
    status = 200
    try:
        selection = selection_from_query(project=project, query=request.GET)
        settings = settings_from_query(selection=selection, query=request.GET)
        baseline = baseline_build(selection=selection, baseline=request.GET.get("baseline"))
    except SelectionError as exc:
        context["error"] = str(exc)
        status = 200 if request.htmx else 400  # htmx swaps only 2xx bodies: show the message in place
    else:
        report = report_build(selection=selection, settings=settings, baseline=baseline)
        context.update(_report_context(report, project, baseline))
    template = "metrics/report_body.html" if request.htmx else "metrics/report.html"
    return render(request, template, context, status=status)


def _report_context(report: Report, project: Project, baseline: str | None = None) -> dict:
    analysis = report.analysis
    query = _query(report.selection, analysis.settings, baseline)
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
        **_conditions_context(report, plot_urls),
        **_documents_context(report, project, query),
        **_live_vs_imported_context(report),
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


def _chosen(request: HttpRequest, project: Project) -> tuple[Selection, Settings, str | None]:
    """The request's selection, settings and baseline; a SelectionError (a Refusal) names a bad one."""
    selection = selection_from_query(project=project, query=request.GET)
    settings = settings_from_query(selection=selection, query=request.GET)
    return selection, settings, baseline_build(selection=selection, baseline=request.GET.get("baseline"))


def _csv_response(rows: list[dict], filename: str, columns: list[str] | None = None) -> HttpResponse:
    buffer = io.StringIO()
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    # RFC 4180 line ends: a cell holding a lone CR is then quoted (with "\n" it went out bare and split the row).
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([neutralise_formula(c) for c in columns])
    for row in rows:
        writer.writerow(["" if row.get(c) is None else _cell(row.get(c)) for c in columns])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


def _cell(value):
    return neutralise_formula(value) if isinstance(value, str) else value


def _json_response(data, filename: str) -> HttpResponse:
    response = JsonResponse(data, json_dumps_params={"allow_nan": False})
    response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
    return response


def _download_selection(request: HttpRequest, project: Project, fmt: str) -> tuple[Selection, Settings, str | None]:
    """A number download's selection: an unknown format is 404, a bad query a SelectionError (400)."""
    if fmt not in NUMBER_FORMATS:
        raise Http404(f"unknown format {fmt!r}")
    return _chosen(request, project)


@login_required
@require_GET
@readers
def report_data(request: HttpRequest, project_id: int, fmt: str) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    chosen = _download_selection(request, project, fmt)
    selection, settings, baseline = chosen
    report = report_build(selection=selection, settings=settings, baseline=baseline)
    filename = f"{_safe_name(project.name)}-{selection.target}-analysis"
    if fmt == "json":
        return _json_response(report.to_dict(), filename)
    return _csv_response(summary_rows(report.analysis), filename)


@login_required
@require_GET
@readers
def report_documents(request: HttpRequest, project_id: int, fmt: str) -> HttpResponse:
    """The per-document summary of the selection (no analysis needed), as CSV or JSON."""
    project = get_object_or_404(Project, pk=project_id)
    chosen = _download_selection(request, project, fmt)
    selection = chosen[0]
    documents = documents_summarise(selection=selection, data=selection_data(selection=selection))
    filename = f"{_safe_name(project.name)}-documents"
    if fmt == "json":
        return _json_response({"selection": selection.describe(), **documents.to_dict()}, filename)
    return _csv_response(document_rows(documents), filename, columns=document_columns(documents.efforts))


@login_required
@require_GET
@readers
def report_plot(request: HttpRequest, project_id: int, kind: str, fmt: str) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    if kind not in PLOT_KINDS or fmt not in (*plots.FORMATS, *NUMBER_FORMATS):
        raise Http404(f"no plot {kind}.{fmt}")
    selection, settings, baseline = _chosen(request, project)
    if kind == "conditions":
        return _conditions(selection, settings, baseline, fmt)
    draw = {"scatter": _scatter, "heatmap": _heatmap, "effort": _effort, "idle": _idle}[kind]
    return draw(selection, settings, request.GET, fmt)


class _PlotError(Refusal):
    """A plot that cannot be drawn from the selection; the message says why."""


def _figure_response(content: bytes, fmt: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=plots.FORMATS[fmt])
    response["Content-Disposition"] = f'inline; filename="{filename}.{fmt}"'
    if fmt == "svg":
        response["Content-Security-Policy"] = SVG_POLICY
    return response


def _scatter(selection: Selection, settings: Settings, query, fmt: str) -> HttpResponse:
    """Needs only the selection's data (not the whole analysis): cheap in a cold process."""
    data = selection_data(selection=selection)
    metric = query.get("metric", "")
    if metric not in data.metrics:
        raise _PlotError(
            f"metric {metric!r} has no values in this selection; choose one of: {', '.join(data.metrics) or 'none'}"
        )
    target = selection.target_column
    rows = scatter_points(data.frame, metric=metric, target=target)
    x, y = rows[metric].to_numpy(float), rows[target].to_numpy(float)
    correlation = correlate(x, y)
    filename = f"{_safe_name(selection.project.name)}-{_safe_name(metric)}-{target}"
    if fmt == "csv":
        return _csv_response(rows.to_dict("records"), filename)
    fit = fit_line(x, y)
    if fmt == "json":
        return _json_response(
            {
                "selection": selection.describe(),
                "metric": metric,
                "target": target,
                "n": int(x.size),
                "pearson": correlation.pearson,
                "pearson_ci": list(correlation.pearson_ci) if correlation.pearson_ci else None,
                "fit": {"slope": fit.slope, "intercept": fit.intercept, "residual_sd": fit.residual_sd}
                if fit
                else None,
                "points": json.loads(rows[["post_edit_id", "annotator", metric, target]].to_json(orient="records")),
            },
            filename,
        )
    r = f"r = {correlation.pearson:.3f}" if correlation.pearson is not None else "r undefined"
    content = plots.scatter(
        x,
        y,
        fit=fit,
        fmt=fmt,
        title=f"{selection.project.name}: {metric} ({r}, n = {x.size:,})",
        xlabel=f"{metric} ({data.directions.get(metric, 'effort')})",
        ylabel=target,
    )
    return _figure_response(content, fmt, filename)


def _heatmap(selection: Selection, settings: Settings, query, fmt: str) -> HttpResponse:
    """The analysis's matrix (rows with a target value), from the selection's data alone."""
    data = selection_data(selection=selection)
    matrix = correlation_matrix(metric_matrix_rows(data.frame, target=selection.target_column), data.metrics)
    filename = f"{_safe_name(selection.project.name)}-metric-matrix"
    if fmt == "csv":
        return _csv_response(
            [
                {"metric": a, **dict(zip(matrix["metrics"], row, strict=True))}
                for a, row in zip(matrix["metrics"], matrix["values"], strict=True)
            ],
            filename,
        )
    if fmt == "json":
        return _json_response({"selection": selection.describe(), **matrix}, filename)
    if len(matrix["metrics"]) < 2:
        raise _PlotError("the matrix needs at least two metrics")
    content = plots.heatmap(
        matrix["metrics"], matrix["values"], fmt=fmt, title=f"{selection.project.name}: metric x metric Pearson r"
    )
    return _figure_response(content, fmt, filename)


def _effort(selection: Selection, settings: Settings, query, fmt: str) -> HttpResponse:
    report = report_build(selection=selection, settings=settings)
    model = report.analysis.effort_model
    # The predictions, the measured values, their rows and the CV score are set together.
    if model is None or model.predicted is None or model.measured is None or model.index is None or model.r2_cv is None:
        raise _PlotError("no effort model for this selection (see the report's messages)")
    target = selection.target_column
    filename = f"{_safe_name(selection.project.name)}-effort-model-{target}"
    rows = effort_points(report.frame, index=model.index, measured=model.measured, predicted=model.predicted)
    if fmt == "csv":
        return _csv_response(rows.to_dict("records"), filename)
    if fmt == "json":
        return _json_response(
            {
                "selection": selection.describe(),
                "target": target,
                "r2_cv": {"mean": model.r2_cv.mean, "sd": model.r2_cv.sd},
                "inputs": model.inputs,
                "predictions": "out of fold, first repeat of the cross-validation",
                "points": json.loads(rows.to_json(orient="records")),
            },
            filename,
        )
    content = plots.predicted_vs_measured(
        np.asarray(model.measured),
        np.asarray(model.predicted),
        fmt=fmt,
        label=target,
        title=f"{selection.project.name}: effort model (CV R² = {model.r2_cv.mean:.3f})",
    )
    return _figure_response(content, fmt, filename)


def _idle(selection: Selection, settings: Settings, query, fmt: str) -> HttpResponse:
    """r of each metric with active time recomputed at each idle threshold (target active_time)."""
    if selection.target != "active_time":
        raise _PlotError("the idle-threshold sensitivity is drawn for the target active_time")
    sensitivity = report_build(selection=selection, settings=settings).idle_sensitivity
    if sensitivity is None or not sensitivity.n:
        raise _PlotError("no post-edit of this selection has an event log (imported edits have none)")
    filename = f"{_safe_name(selection.project.name)}-idle-threshold-sensitivity"
    if fmt == "csv":
        return _csv_response(
            [
                {"metric": name, **{f"r_at_{s:g}s": r for s, r in zip(sensitivity.thresholds_s, values, strict=True)}}
                for name, values in sensitivity.metrics.items()
            ],
            filename,
        )
    if fmt == "json":
        return _json_response({"selection": selection.describe(), **plain(asdict(sensitivity))}, filename)
    content = plots.idle_sensitivity(
        sensitivity.thresholds_s,
        sensitivity.metrics,
        fmt=fmt,
        title=f"{selection.project.name}: r with active time by idle threshold (n = {sensitivity.n:,})",
    )
    return _figure_response(content, fmt, filename)


def _conditions(selection: Selection, settings: Settings, baseline: str | None, fmt: str) -> HttpResponse:
    """Per-condition distributions of the target (the rows the condition analysis uses), with each mean's interval."""
    report = report_build(selection=selection, settings=settings, baseline=baseline)
    conditions = report.conditions
    if conditions is None or len(conditions.conditions) < 2:
        raise _PlotError("the edits of this selection were not made under two conditions or more")
    target = selection.target_column
    filename = f"{_safe_name(selection.project.name)}-conditions-{target}"
    if fmt == "csv":
        return _csv_response(condition_rows(conditions), filename)
    if fmt == "json":
        return _json_response({"selection": selection.describe(), **conditions.to_dict()}, filename)
    frame = report.frame[report.frame[CONDITION] != ""]
    groups = {
        name: frame.loc[frame[CONDITION] == name, target].dropna().to_numpy(float) for name in conditions.conditions
    }
    content = plots.condition_distributions(
        groups,
        means={s.condition: s.ci for s in conditions.summaries},
        fmt=fmt,
        title=f"{selection.project.name}: {target} by condition (baseline {conditions.baseline})",
        ylabel=target,
    )
    return _figure_response(content, fmt, filename)
