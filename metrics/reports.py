"""The report: a selection's analysis with everything around it (idle-threshold sensitivity,
conditions, documents, live against imported), built from its cached data.

Shared by the report page, the analyze command and the analysis API, so the three always analyse
the same rows the same way (their options come through metrics.analysis_options).
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

import pandas as pd

from annotations.models import PostEdit
from metrics.analysis import (
    Analysis,
    ConditionAnalysis,
    Settings,
    analyze,
    analyze_conditions,
    correlations_with,
    jsonable,
)
from metrics.analysis.conditions import CONDITION
from metrics.analysis.documents import DocumentsSummary, document_summary
from metrics.analysis.origins import OriginComparison, compare_origins
from metrics.analysis.scenarios import ScenarioAnalysis
from metrics.analysis_options import Selection, declared_conditions
from metrics.scenario_report import scenarios_build
from metrics.selection_data import (
    STORED_ACTIVE,
    SelectionData,
    cache_key,
    cached,
    fingerprint,
    selection_data,
    stored_current,
)
from metrics.selectors import (
    active_times,
    copied_from,
    project_has_documents,
)
from metrics.selectors_scenarios import simulated_fingerprint


@dataclass
class IdleSensitivity:
    """Pearson r of each metric with active time recomputed from the event logs at each idle threshold."""

    thresholds_s: list[float]
    project_threshold_s: float
    n: int  # post-edits with an event log and the metric values (the rows every r is computed on)
    without_log: int  # post-edits of the selection without an event log (imported): left out
    mean_active_ms: list[float | None]  # at each threshold
    metrics: dict[str, list[float | None]]  # metric -> r at each threshold
    stored_checked: int  # recomputed at the project's threshold and compared with the stored value ...
    stored_equal: int  # ... and equal to it (stored under the current definition version)


@dataclass
class Report:
    selection: Selection
    analysis: Analysis
    frame: pd.DataFrame  # SelectionData.frame
    metrics: list[str]
    directions: dict[str, str]
    messages: list[str] = field(default_factory=list)
    flagged: int = 0  # flagged post-edits in the selection (before any exclusion)
    idle_sensitivity: IdleSensitivity | None = None
    practice: int = 0  # post-edits of practice items in the selection (before any exclusion)
    conditions: ConditionAnalysis | None = None  # when the selection's edits carry conditions
    documents: DocumentsSummary | None = None  # when the project's items belong to documents
    live_vs_imported: OriginComparison | None = None  # when live and imported post-edits can be compared
    scenarios: ScenarioAnalysis | None = None  # when the project has synthetic edits (an LLM's, by scenario)
    fingerprint: str = ""  # the selection's data when it was built (selection_data.fingerprint); not in the JSON

    def to_dict(self) -> dict:
        data = self.analysis.to_dict()
        data["documents"] = self.documents.to_dict() if self.documents else None
        data["live_vs_imported"] = self.live_vs_imported.to_dict() if self.live_vs_imported else None
        data["selection"] = self.selection.describe()
        data["messages"] = self.messages + data["messages"]
        data["flagged"] = {"in_selection": self.flagged, "excluded": self.selection.exclude_flagged}
        data["practice"] = {"in_selection": self.practice, "excluded": not self.selection.include_practice}
        data["conditions"] = self.conditions.to_dict() if self.conditions else None
        data["idle_sensitivity"] = jsonable(asdict(self.idle_sensitivity)) if self.idle_sensitivity else None
        data["scenarios"] = self.scenarios.to_dict() if self.scenarios else None
        return data


def report_build(
    *,
    selection: Selection,
    settings: Settings | None = None,
    baseline: str | None = None,
    use_cache: bool = True,
    scenario_reference: str | None = None,
) -> Report:
    """The analysis of a selection, from the cache when its data has not changed; with the
    comparison of conditions when its edits carry any (against `baseline`, checked by baseline_build)
    and the synthetic-edit analysis when the project has synthetic edits (against `scenario_reference`,
    checked by metrics.scenario_report.scenario_reference_check)."""
    settings = settings or Settings()
    # A copy's report compares it with its source (live_vs_imported): the source's data is part of the key.
    source = comparison_source(selection)
    fingerprints = [fingerprint(s) for s in (selection, source) if s is not None]
    fingerprints.append(simulated_fingerprint(project=selection.project, variant=selection.variant))
    key = cache_key("report", selection.describe(), repr(settings), baseline, scenario_reference, *fingerprints)

    def compute() -> Report:
        data = selection_data(selection=selection, use_cache=use_cache, known_fingerprint=fingerprints[0])
        analysis = analyze(
            data.frame,
            metrics=data.metrics,
            target=selection.target_column,
            directions=data.directions,
            settings=settings,
        )
        return Report(
            selection=selection,
            analysis=analysis,
            frame=data.frame,
            metrics=data.metrics,
            directions=data.directions,
            messages=data.messages,
            flagged=data.flagged,
            idle_sensitivity=idle_sensitivity(selection=selection, data=data)
            if selection.target == "active_time"
            else None,
            practice=data.practice,
            conditions=_conditions(selection=selection, data=data, settings=settings, baseline=baseline),
            documents=documents_build(selection=selection, data=data),
            live_vs_imported=live_vs_imported_build(
                selection=selection, data=data, settings=settings, use_cache=use_cache
            ),
            scenarios=scenarios_build(selection=selection, human_frame=data.frame, reference=scenario_reference),
            fingerprint=fingerprints[0],
        )

    return cached(key, compute, use_cache)


def _conditions(
    *, selection: Selection, data: "SelectionData", settings: Settings, baseline: str | None
) -> ConditionAnalysis | None:
    if not (data.frame[CONDITION] != "").any():
        return None
    return analyze_conditions(
        data.frame,
        target=selection.target_column,
        declared=declared_conditions(selection.project),
        baseline=baseline,
        time="active_ms" if selection.target == "active_time" else "wall_ms",
        settings=settings,
    )


def documents_build(*, selection: Selection, data: SelectionData) -> DocumentsSummary | None:
    """The selection's per-document summary; None when no item of the project has a document."""
    if not project_has_documents(project=selection.project):
        return None
    return documents_summarise(selection=selection, data=data)


def documents_summarise(*, selection: Selection, data: SelectionData) -> DocumentsSummary:
    """The selection's per-document summary, empty (with a message) when no item has a document."""
    summary = document_summary(data.frame, include_practice=selection.include_practice)
    if not selection.include_practice:  # the selection's rows hold none of them already
        summary.note_practice_left_out(data.practice)
    return summary


def comparison_source(selection: Selection) -> Selection | None:
    """For a copied project (annotations.services.copying), the selection of its source's imported
    post-edits: the same target, variant, task type and exclusions, any annotator."""
    source = copied_from(project=selection.project)
    if source is None:
        return None
    return replace(selection, project=source, annotators=(), origin=PostEdit.IMPORTED)


def live_vs_imported_build(
    *, selection: Selection, data: SelectionData, settings: Settings, use_cache: bool = True
) -> OriginComparison | None:
    """Live against imported effort on the shared items: the project's own post-edits of both origins,
    or, for a copy, its live post-edits against its source's imported ones (matched by external id).
    None when the selection has no post-edit of one of the two origins."""
    frame, metrics, source_name, source_practice = data.frame, data.metrics, None, 0
    source = comparison_source(selection)
    if source is not None:
        source_data = selection_data(selection=source, use_cache=use_cache)
        source_practice = source_data.practice
        metrics = [name for name in metrics if name in source_data.metrics]
        own = frame[frame["origin"] == PostEdit.LIVE]
        theirs = source_data.frame[source_data.frame["origin"] == PostEdit.IMPORTED]
        frame = pd.concat([own, theirs], ignore_index=True) if len(theirs) else own
        source_name = source.project.name
    if not {PostEdit.LIVE, PostEdit.IMPORTED} <= set(frame["origin"]):
        return None
    comparison = compare_origins(
        frame,
        target=selection.target_column,
        metrics=metrics,
        include_practice=selection.include_practice,
        settings=settings,
    )
    if not selection.include_practice:  # the selections' rows hold none of them already
        comparison.note_practice_left_out(data.practice + source_practice)
    if source_name is not None:
        comparison.source_project = source_name
        comparison.messages.insert(
            0, f"live post-edits of this copy against the imported post-edits of {source_name!r}, by external id"
        )
    return comparison


SENSITIVITY_THRESHOLDS_S = (5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def idle_sensitivity(
    *, selection: Selection, data: SelectionData, thresholds_s: Sequence[float] = SENSITIVITY_THRESHOLDS_S
) -> IdleSensitivity:
    """r of every metric with active time recomputed from the stored event logs at each threshold (and at the
    project's own, to check the recomputation against the stored values)."""
    project_threshold = float(selection.project.idle_threshold_s)
    columns = list(dict.fromkeys([*thresholds_s, project_threshold]))
    times = active_times(post_edit_ids=data.frame["post_edit_id"].tolist(), thresholds_s=columns)
    rows = data.frame.merge(times, left_on="post_edit_id", right_index=True, how="inner")
    stored = stored_current(rows)
    equal = int((rows.loc[stored, project_threshold] == rows.loc[stored, STORED_ACTIVE]).sum())
    complete = rows.dropna(subset=data.metrics) if data.metrics else rows
    return IdleSensitivity(
        thresholds_s=list(thresholds_s),
        project_threshold_s=project_threshold,
        n=len(complete),
        without_log=len(data.frame) - len(rows),
        mean_active_ms=[float(complete[s].mean()) if len(complete) else None for s in thresholds_s],
        metrics=correlations_with(complete, metrics=data.metrics, targets=list(thresholds_s)),
        stored_checked=int(stored.sum()),
        stored_equal=equal,
    )
