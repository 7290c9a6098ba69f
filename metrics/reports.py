"""The ORM side of the analysis report: a selection -> its data frame -> metrics.analysis.

Shared by the report page, the analyze command and the analysis API, so the three
always analyse the same rows the same way. Results are kept in a small per-process LRU
under a key that includes a fingerprint of the selection's data (post-edits and metric
values: count and latest change), so a recomputed metric or a new submission is never
served stale, and the page's plots (one request each) reuse one analysis. Per process,
not Django's cache: the project's default cache is the database, and a report holds a
data frame (megabytes for 100,000 edits) that is not worth pickling into it; another
app process simply recomputes.
"""

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import pandas as pd
from django.db.models import Count, Max

from annotations.design import DesignError
from annotations.models import DEFINITION_VERSION, PostEdit, Project
from editlab.refusals import Refusal
from metrics.analysis import (
    DEFAULT_SETTINGS,
    EDITED_LENGTH,
    ORIGINAL_LENGTH,
    Analysis,
    BaselineError,
    ConditionAnalysis,
    Settings,
    analyze,
    analyze_conditions,
    correlations_with,
    plain,
    word_counts,
)
from metrics.analysis.conditions import CONDITION, WORDS, pick_baseline
from metrics.analysis.documents import DocumentsSummary, document_summary
from metrics.analysis.origins import OriginComparison, compare_origins
from metrics.models import MetricValue
from metrics.selectors import (
    TARGETS,
    VARIANTS,
    active_times,
    annotator_names,
    copied_from,
    flagged_count,
    metric_column,
    post_edit_frame,
    post_edit_queryset,
    practice_count,
    project_has_documents,
    stored_metric_names,
)

CACHE_ENTRIES = 8
ORIGINS = (PostEdit.LIVE, PostEdit.IMPORTED)
# Columns kept beside the analysis for plots and downloads (texts are dropped: big).
KEPT_COLUMNS = ("post_edit_id", "external_id", "annotator")
# Kept for the per-document summary and the live-vs-imported comparison.
DESIGN_KEPT_COLUMNS = ("document", "practice", "origin")


class SelectionError(Refusal, ValueError):
    """A selection parameter is invalid; the message names it."""


@dataclass(frozen=True)
class Selection:
    project: Project
    target: str
    variant: str = MetricValue.PLAIN
    annotators: tuple[str, ...] = ()
    task_type: str = ""
    origin: str = ""
    exclude_flagged: bool = False
    idle_threshold_s: float | None = None  # active time recomputed from the event logs at this threshold
    include_practice: bool = False  # practice items' post-edits are left out unless asked for

    @property
    def target_column(self) -> str:
        return TARGETS[self.target]

    @property
    def filters(self) -> dict:
        """The post_edit_queryset / post_edit_frame arguments of this selection."""
        return {
            "project": self.project,
            "annotators": self.annotators or None,
            "task_type": self.task_type or None,
            "origin": self.origin or None,
            "exclude_flagged": self.exclude_flagged,
            "include_practice": self.include_practice,
        }

    def as_params(self) -> dict[str, str | list[str]]:
        """Query parameters that rebuild this selection (for links and plot URLs)."""
        params: dict[str, str | list[str]] = {"target": self.target, "variant": self.variant}
        if self.annotators:
            params["annotators"] = list(self.annotators)
        if self.task_type:
            params["task_type"] = self.task_type
        if self.origin:
            params["origin"] = self.origin
        if self.exclude_flagged:
            params["exclude_flagged"] = "1"
        if self.idle_threshold_s is not None:
            params["idle_threshold"] = f"{self.idle_threshold_s:g}"
        if self.include_practice:
            params["include_practice"] = "1"
        return params

    def describe(self) -> dict:
        return {
            "project": self.project.name,
            "project_id": self.project.pk,
            "target": self.target,
            "target_column": self.target_column,
            "variant": self.variant,
            "annotators": list(self.annotators),
            "task_type": self.task_type or None,
            "origin": self.origin or None,
            "exclude_flagged": self.exclude_flagged,
            "idle_threshold_s": self.idle_threshold_s,
            "include_practice": self.include_practice,
        }


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

    def to_dict(self) -> dict:
        data = self.analysis.to_dict()
        data["documents"] = self.documents.to_dict() if self.documents else None
        data["live_vs_imported"] = self.live_vs_imported.to_dict() if self.live_vs_imported else None
        data["selection"] = self.selection.describe()
        data["messages"] = self.messages + data["messages"]
        data["flagged"] = {"in_selection": self.flagged, "excluded": self.selection.exclude_flagged}
        data["practice"] = {"in_selection": self.practice, "excluded": not self.selection.include_practice}
        data["conditions"] = self.conditions.to_dict() if self.conditions else None
        data["idle_sensitivity"] = plain(asdict(self.idle_sensitivity)) if self.idle_sensitivity else None
        return data


def _split_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Annotators as a list, or one comma-separated string (the command line, the API)."""
    if not value:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(name.strip() for item in items for name in item.split(",") if name.strip()))


def selection_build(
    *,
    project: Project,
    target: str | None,
    variant: str | None = None,
    annotators: str | Sequence[str] | None = None,
    task_type: str | None = None,
    origin: str | None = None,
    exclude_flagged: bool = False,
    idle_threshold_s: float | str | None = None,
    include_practice: bool = False,
) -> Selection:
    """Validate the selection parameters; a SelectionError names the bad one and the choices."""
    texts = {
        "target": target,
        "variant": variant,
        "task_type": task_type,
        "origin": origin,
        "annotators": ",".join(annotators) if annotators and not isinstance(annotators, str) else annotators,
    }
    for name, text in texts.items():
        if text and "\x00" in text:  # PostgreSQL refuses NUL in text: say so instead of failing
            raise SelectionError(f"{name} contains a NUL character")
    target = (target or "").strip()
    if target not in TARGETS:
        raise SelectionError(f"target {target!r} is not one of: {', '.join(TARGETS)}")
    variant = (variant or MetricValue.PLAIN).strip()
    if variant not in VARIANTS:
        raise SelectionError(f"variant {variant!r} is not one of: {', '.join(VARIANTS)}")
    origin = (origin or "").strip()
    if origin and origin not in ORIGINS:
        raise SelectionError(f"origin {origin!r} is not one of: {', '.join(ORIGINS)}")
    names = _split_names(annotators)
    if names:
        known = set(annotator_names(project=project))
        unknown = [name for name in names if name not in known]
        if unknown:
            raise SelectionError(f"annotator {unknown[0]!r} has no submitted post-edit in project {project.name!r}")
    return Selection(
        project=project,
        target=target,
        variant=variant,
        annotators=names,
        task_type=(task_type or "").strip(),
        origin=origin,
        exclude_flagged=bool(exclude_flagged),
        idle_threshold_s=_idle_threshold(idle_threshold_s, target),
        include_practice=bool(include_practice),
    )


MAX_IDLE_THRESHOLD_S = 86_400.0


def _idle_threshold(value: float | str | None, target: str) -> float | None:
    """Seconds, for the active_time target only; a SelectionError says what is wrong with it."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise SelectionError(f"idle threshold {str(value)[:40]!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_IDLE_THRESHOLD_S:
        raise SelectionError(f"idle threshold must be more than 0 and at most {MAX_IDLE_THRESHOLD_S:g} seconds")
    if target != "active_time":
        raise SelectionError("an idle threshold applies to the active_time target only")
    return seconds


TIME_TARGETS = ("wall_time", "active_time")


def settings_build(
    *,
    selection: Selection,
    k: int = DEFAULT_SETTINGS.k,
    test_size: float = DEFAULT_SETTINGS.test_size,
    seed: int = DEFAULT_SETTINGS.seed,
    cv_repeats: int = DEFAULT_SETTINGS.cv_repeats,
    log_time: bool = False,
    mixed_models: bool = True,
) -> Settings:
    """The analysis settings for a selection; a SelectionError names a bad one."""
    if log_time and selection.target not in TIME_TARGETS:
        raise SelectionError(
            f"log time applies to the time targets ({', '.join(TIME_TARGETS)}), not to {selection.target}"
        )
    try:
        return Settings(
            k=k,
            test_size=test_size,
            seed=seed,
            cv_repeats=cv_repeats,
            log_target=log_time,
            mixed_models=mixed_models,
        )
    except ValueError as exc:
        raise SelectionError(str(exc)) from None


def selection_from_query(*, project: Project, query: Mapping) -> Selection:
    """From request.GET (or any QueryDict-like mapping with getlist)."""
    getlist = getattr(query, "getlist", None)
    annotators = getlist("annotators") if getlist else query.get("annotators")
    return selection_build(
        project=project,
        target=query.get("target") or "keystrokes",
        variant=query.get("variant"),
        annotators=annotators,
        task_type=query.get("task_type"),
        origin=query.get("origin"),
        exclude_flagged=query.get("exclude_flagged", "") in CHECKED,
        idle_threshold_s=query.get("idle_threshold"),
        include_practice=query.get("include_practice", "") in CHECKED,
    )


CHECKED = ("1", "on", "true")


MAX_BASELINE = 200


def declared_conditions(project: Project) -> list[str]:
    """The project's declared condition names, in order (none when the stored JSON is malformed)."""
    try:
        return [condition.name for condition in project.declared_conditions()]
    except DesignError:
        return []


def baseline_build(*, selection: Selection, baseline: str | None) -> str | None:
    """The baseline condition asked for (None: the first declared one); a SelectionError when it is
    neither declared nor the condition of an edit in the selection, listing the valid ones."""
    baseline = (baseline or "").strip()
    if not baseline:
        return None
    if "\x00" in baseline:
        raise SelectionError("baseline contains a NUL character")
    present = post_edit_queryset(**selection.filters).exclude(condition="").values_list(CONDITION, flat=True)
    try:
        return pick_baseline(
            baseline[: MAX_BASELINE + 1],
            conditions=sorted(set(present)),
            declared=declared_conditions(selection.project),
        )
    except BaselineError as exc:
        raise SelectionError(str(exc)) from None


def analysis_request_build(*, project: Project, params: Mapping) -> tuple[Selection, Settings, str | None]:
    """The selection, settings and baseline of one analysis request, from the already-checked
    options the API and the analyze command share (the same names in both); a SelectionError names
    what is wrong."""
    selection = selection_build(
        project=project,
        target=params["target"],
        variant=params["variant"],
        annotators=params["annotators"],
        task_type=params["task_type"],
        origin=params["origin"],
        exclude_flagged=params["exclude_flagged"],
        idle_threshold_s=params["idle_threshold"],
        include_practice=params["include_practice"],
    )
    baseline = baseline_build(selection=selection, baseline=params["baseline"])
    settings = settings_build(
        selection=selection,
        k=params["k"],
        test_size=params["test_size"],
        seed=params["seed"],
        cv_repeats=params["cv_repeats"],
        log_time=params["log_time"],
        mixed_models=params["mixed_models"],
    )
    return selection, settings, baseline


def settings_from_query(*, selection: Selection, query: Mapping) -> Settings:
    """The report page's settings: the defaults, and log(time) for the mixed models when asked."""
    return settings_build(selection=selection, log_time=query.get("log_time", "") in CHECKED)


def settings_params(settings: Settings) -> dict[str, str]:
    """Query parameters that rebuild the page's settings (for links and plot URLs)."""
    return {"log_time": "1"} if settings.log_target else {}


def _fingerprint(selection: Selection) -> str:
    post_edits = post_edit_queryset(**selection.filters)
    edits = post_edits.aggregate(n=Count("id"), changed=Max("updated"))
    values = MetricValue.objects.filter(post_edit__in=post_edits.values("id"), variant=selection.variant).aggregate(
        n=Count("id"), changed=Max("computed_at")
    )
    return json.dumps([edits["n"], str(edits["changed"]), values["n"], str(values["changed"])])


def _cache_key(kind: str, *parts) -> str:
    raw = json.dumps([kind, *parts], sort_keys=True, default=str)
    return f"editlab:{kind}:" + hashlib.sha256(raw.encode()).hexdigest()


def _directions(metrics: Sequence[str]) -> dict[str, str]:
    from metrics.text import METRICS

    return {name: METRICS[name].direction for name in metrics if name in METRICS}


_cache: OrderedDict[str, object] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _cached(key: str, compute, use_cache: bool):
    if use_cache:
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    value = compute()
    if use_cache:
        with _cache_lock:
            _cache[key] = value
            while len(_cache) > CACHE_ENTRIES:
                _cache.popitem(last=False)
    return value


@dataclass
class SelectionData:
    """The selection's rows, target-independent: ids, annotator, the four target fields,
    text lengths and one column per metric of the chosen variant (plain names)."""

    frame: pd.DataFrame
    metrics: list[str]
    directions: dict[str, str]
    messages: list[str]
    flagged: int = 0
    practice: int = 0  # practice post-edits in the selection, whether left out or not


def selection_data(*, selection: Selection, use_cache: bool = True) -> SelectionData:
    """The selection's data frame, from the cache when its data has not changed."""
    where = {**selection.describe(), "target": None, "target_column": None}
    key = _cache_key("selection", where, _fingerprint(selection))
    return _cached(key, lambda: _load(selection), use_cache)


def report_build(
    *, selection: Selection, settings: Settings | None = None, baseline: str | None = None, use_cache: bool = True
) -> Report:
    """The analysis of a selection, from the cache when its data has not changed; with the
    comparison of conditions when its edits carry any (against `baseline`, checked by baseline_build)."""
    settings = settings or Settings()
    # A copy's report compares it with its source (live_vs_imported): the source's data is part of the key.
    source = comparison_source(selection)
    fingerprints = [_fingerprint(s) for s in (selection, source) if s is not None]
    key = _cache_key("report", selection.describe(), repr(settings), baseline, *fingerprints)

    def compute() -> Report:
        data = selection_data(selection=selection, use_cache=use_cache)
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
        )

    return _cached(key, compute, use_cache)


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
    stored = _stored_current(rows)
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


STORED_ACTIVE = "stored_active_ms"  # the stored value, kept when the selection's active_ms is recomputed


def _stored_current(rows: pd.DataFrame) -> pd.Series:
    """Rows whose stored active time was derived under the current effort definition."""
    return (rows["definition_version"] == DEFINITION_VERSION) & rows[STORED_ACTIVE].notna()


def _load(selection: Selection) -> SelectionData:
    filters = selection.filters
    names = stored_metric_names(post_edit_queryset(**filters))
    frame = post_edit_frame(**filters, metrics=names, variants=(selection.variant,))
    frame = frame.rename(columns={metric_column(name, selection.variant): name for name in names})
    frame[ORIGINAL_LENGTH] = frame["original"].fillna("").str.len()
    frame[EDITED_LENGTH] = frame["edited"].fillna("").str.len()
    frame[WORDS] = word_counts(frame["edited"])
    frame[CONDITION] = frame[CONDITION].fillna("").astype(str)
    messages = []
    empty = [name for name in names if frame[name].isna().all()]
    if empty:
        messages.append(f"no {selection.variant} values for {', '.join(empty)} in this selection: left out")
    if not names:
        messages.append("no metric values are stored for this selection yet: compute them on the Metrics page")
    metrics = [name for name in names if name not in empty]
    flagged = flagged_count(post_edit_queryset(**{**filters, "exclude_flagged": False}))
    if flagged and selection.exclude_flagged:
        messages.append(f"{flagged} flagged post-edit{'s' if flagged > 1 else ''} left out (exclude flagged)")
    elif flagged:
        messages.append(
            f"{flagged} of {len(frame)} post-edits in this selection are flagged (clipped time, replay mismatch, "
            "event gap, uncorroborated keys, keys beyond the human rate, ...): they are included; exclude flagged "
            "leaves them out"
        )
    practice = practice_count(post_edit_queryset(**{**filters, "include_practice": True}))
    if practice and not selection.include_practice:
        messages.append(
            f"{practice} post-edit{'s' if practice > 1 else ''} of practice items left out (include practice keeps them)"
        )
    frame[STORED_ACTIVE] = frame["active_ms"]
    if selection.idle_threshold_s is not None:
        messages += _recompute_active(frame, selection.idle_threshold_s)
    kept = frame[
        [
            *KEPT_COLUMNS,
            *DESIGN_KEPT_COLUMNS,
            *TARGETS.values(),
            STORED_ACTIVE,
            "definition_version",
            ORIGINAL_LENGTH,
            EDITED_LENGTH,
            CONDITION,
            WORDS,
            *metrics,
        ]
    ]
    return SelectionData(
        frame=kept.copy(),
        metrics=metrics,
        directions=_directions(metrics),
        messages=messages,
        flagged=flagged,
        practice=practice,
    )


def _recompute_active(frame: pd.DataFrame, seconds: float) -> list[str]:
    """Replace the stored active time by the one recomputed from each event log at `seconds`; post-edits
    without a log get none (they are counted, never given an invented value)."""
    times = active_times(post_edit_ids=frame["post_edit_id"].tolist(), thresholds_s=[seconds])[seconds]
    frame["active_ms"] = frame["post_edit_id"].map(times).astype(float).to_numpy()
    missing = int(frame["active_ms"].isna().sum())
    messages = [f"active time recomputed from the event logs with an idle threshold of {seconds:g} s"]
    if missing:
        messages.append(
            f"{missing} of {len(frame)} post-edits have no event log (imported from a finished study, or never "
            f"logged): no active time at {seconds:g} s, left out"
        )
    return messages
