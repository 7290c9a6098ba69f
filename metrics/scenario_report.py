"""The report's "Synthetic edits" section: the project's synthetic edits analysed by scenario
(metrics.analysis.scenarios), beside the human effort of the report's own selection.

Shared by the report page, the analysis API (both through metrics.reports) and `analyze --scenarios`.
The distances are of the selection's variant (plain, or with the expert knowledge); the human effort
of an item is the mean target over the selection's human post-edits of it (the selection never holds
a synthetic edit: metrics.selectors.post_edit_queryset).
"""

from collections.abc import Mapping

import pandas as pd

from annotations.models import Project
from metrics.analysis.common import ITEM
from metrics.analysis.scenarios import HUMAN, ScenarioAnalysis, ScenarioSettings, analyze_scenarios, pick_reference
from metrics.analysis_options import Selection, SelectionError
from metrics.selectors_scenarios import project_has_simulated, simulated_edit_frame, simulated_scenarios

REFERENCE_PARAM = "reference"


def scenario_reference_check(*, project: Project, reference: str | None) -> str | None:
    """The reference scenario asked for, checked against the project's synthetic edits (None: the
    default, normal or else the first). Refused (a SelectionError naming the scenarios) when no
    synthetic edit was made under it."""
    reference = (reference or "").strip()
    if not reference:
        return None
    scenarios = simulated_scenarios(project=project)
    if not scenarios:
        raise SelectionError(f"{REFERENCE_PARAM}: project {project.name!r} has no synthetic edits")
    try:
        return pick_reference(scenarios, reference)
    except ValueError as exc:
        raise SelectionError(f"{REFERENCE_PARAM}: {exc}") from None


def scenario_reference_from_query(*, project: Project, query: Mapping[str, str]) -> str | None:
    """The page's and the API's `reference` parameter, checked."""
    return scenario_reference_check(project=project, reference=query.get(REFERENCE_PARAM))


def human_effort_by_item(frame: pd.DataFrame, *, target: str) -> pd.DataFrame:
    """external_id and `human`: the mean `target` of each item's post-edits in a selection's frame."""
    rows = frame[[ITEM, target]].dropna()
    return rows.groupby(ITEM)[target].mean().rename(HUMAN).reset_index()


def scenarios_build(
    *,
    selection: Selection,
    human_frame: pd.DataFrame | None = None,
    reference: str | None = None,
    settings: ScenarioSettings | None = None,
) -> ScenarioAnalysis | None:
    """The synthetic-edit analysis of the selection's project; None when it has no synthetic edit."""
    if not project_has_simulated(project=selection.project):
        return None
    frame = simulated_edit_frame(project=selection.project, variant=selection.variant)
    human = None
    if human_frame is not None and len(human_frame):
        human = human_effort_by_item(human_frame, target=selection.target_column)
    return analyze_scenarios(
        frame, settings=settings, reference=reference, human=human, human_target=selection.target_column
    )
