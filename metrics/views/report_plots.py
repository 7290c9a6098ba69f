"""The report's plots: each drawn by the server (SVG or PNG) from the selection, with its numbers as
CSV and JSON. One GET per plot (the page's <img> URLs); a plot that cannot be drawn is a refusal
naming why.
"""

import json
from dataclasses import asdict

import numpy as np
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from annotations.models import Project
from editlab.refusals import Refusal
from metrics import plots
from metrics.analysis import (
    Settings,
    condition_rows,
    correlate,
    correlation_matrix,
    fit_line,
    jsonable,
)
from metrics.analysis.conditions import CONDITION
from metrics.analysis_options import Selection
from metrics.reports import report_build
from metrics.scenario_report import scenario_reference_from_query
from metrics.selection_data import selection_data
from metrics.selectors import (
    effort_points,
    metric_matrix_rows,
    scatter_points,
)
from metrics.views.downloads import csv_response, json_response, safe_name
from metrics.views.report import NUMBER_FORMATS, readers, report_options
from metrics.views.report_scenario_plots import SCENARIO_PLOTS, scenario_plot

PLOT_KINDS = ("scatter", "heatmap", "effort", "idle", "conditions", *SCENARIO_PLOTS)
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


@login_required
@require_GET
@readers
def report_plot(request: HttpRequest, project_id: int, kind: str, fmt: str) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    if kind not in PLOT_KINDS or fmt not in (*plots.FORMATS, *NUMBER_FORMATS):
        raise Http404(f"no plot {kind}.{fmt}")
    selection, settings, baseline = report_options(request, project)
    if kind == "conditions":
        return _conditions(selection, settings, baseline, fmt)
    if kind in SCENARIO_PLOTS:
        reference = scenario_reference_from_query(project=project, query=request.GET)
        return scenario_plot(selection, reference, kind, fmt, figure_response=_figure_response)
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
    filename = f"{safe_name(selection.project.name)}-{safe_name(metric)}-{target}"
    if fmt == "csv":
        return csv_response(rows.to_dict("records"), filename)
    fit = fit_line(x, y)
    if fmt == "json":
        return json_response(
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
    filename = f"{safe_name(selection.project.name)}-metric-matrix"
    if fmt == "csv":
        return csv_response(
            [
                {"metric": a, **dict(zip(matrix["metrics"], row, strict=True))}
                for a, row in zip(matrix["metrics"], matrix["values"], strict=True)
            ],
            filename,
        )
    if fmt == "json":
        return json_response({"selection": selection.describe(), **matrix}, filename)
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
    filename = f"{safe_name(selection.project.name)}-effort-model-{target}"
    rows = effort_points(report.frame, index=model.index, measured=model.measured, predicted=model.predicted)
    if fmt == "csv":
        return csv_response(rows.to_dict("records"), filename)
    if fmt == "json":
        return json_response(
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
    filename = f"{safe_name(selection.project.name)}-idle-threshold-sensitivity"
    if fmt == "csv":
        return csv_response(
            [
                {"metric": name, **{f"r_at_{s:g}s": r for s, r in zip(sensitivity.thresholds_s, values, strict=True)}}
                for name, values in sensitivity.metrics.items()
            ],
            filename,
        )
    if fmt == "json":
        return json_response({"selection": selection.describe(), **jsonable(asdict(sensitivity))}, filename)
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
    filename = f"{safe_name(selection.project.name)}-conditions-{target}"
    if fmt == "csv":
        return csv_response(condition_rows(conditions), filename)
    if fmt == "json":
        return json_response({"selection": selection.describe(), **conditions.to_dict()}, filename)
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
