"""The report's synthetic-edit plots: `scenarios` (each scenario against the reference, Figure 3) and
`scenario_distances` (the distance distributions per scenario, Figure 2), each with its numbers as CSV
and JSON. A project without synthetic edits is a refusal naming why."""

from collections.abc import Callable

from django.http import HttpResponse

from editlab.refusals import Refusal
from metrics import plots
from metrics.analysis.scenarios import DISTANCE, SCENARIO, ScenarioAnalysis, comparison_rows, per_item
from metrics.analysis_options import Selection
from metrics.plots_scenarios import against_reference
from metrics.scenario_report import scenarios_build
from metrics.selectors_scenarios import simulated_edit_frame
from metrics.views.downloads import csv_response, json_response, safe_name

SCENARIO_PLOTS = ("scenarios", "scenario_distances")


class ScenarioPlotError(Refusal):
    """A synthetic-edit plot that cannot be drawn; the message says why."""


def _analysis(selection: Selection, reference: str | None) -> ScenarioAnalysis:
    analysis = scenarios_build(selection=selection, reference=reference)
    if analysis is None:
        raise ScenarioPlotError(f"project {selection.project.name!r} has no synthetic edits")
    return analysis


def scenario_plot(
    selection: Selection,
    reference: str | None,
    kind: str,
    fmt: str,
    *,
    figure_response: Callable[[bytes, str, str], HttpResponse],
) -> HttpResponse:
    """The plot `kind` (or its numbers); `figure_response` turns drawn bytes into the answer."""
    analysis = _analysis(selection, reference)
    label = f"compression distance ({selection.variant})"
    name = safe_name(selection.project.name)
    if kind == "scenarios":
        filename = f"{name}-scenarios-against-{safe_name(analysis.reference)}"
        if fmt == "csv":
            return csv_response(comparison_rows(analysis), filename)
        if fmt == "json":
            return json_response({"selection": selection.describe(), **analysis.to_dict()}, filename)
        if not analysis.comparisons:
            raise ScenarioPlotError("only one scenario: nothing to draw against the reference")
        content = against_reference(
            analysis.comparisons,
            fmt=fmt,
            label=label,
            title=f"{selection.project.name}: each scenario against {analysis.reference}",
        )
        return figure_response(content, fmt, filename)
    items, _ = per_item(simulated_edit_frame(project=selection.project, variant=selection.variant))
    filename = f"{name}-scenario-distances"
    if fmt == "csv":
        return csv_response(items.to_dict(orient="records"), filename)
    if fmt == "json":
        return json_response(
            {"selection": selection.describe(), "summaries": analysis.to_dict()["summaries"]}, filename
        )
    groups = {
        scenario: items.loc[items[SCENARIO] == scenario, DISTANCE].dropna().to_numpy(float)
        for scenario in analysis.scenarios
    }
    content = plots.condition_distributions(
        groups, fmt=fmt, title=f"{selection.project.name}: distance by scenario", ylabel=label
    )
    return figure_response(content, fmt, filename)
