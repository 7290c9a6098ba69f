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
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd
from django.db.models import Count, Max

from annotations.models import PostEdit, Project
from metrics.analysis import EDITED_LENGTH, ORIGINAL_LENGTH, Analysis, Settings, analyze
from metrics.models import MetricValue
from metrics.selectors import (
    TARGETS,
    VARIANTS,
    annotator_names,
    metric_column,
    post_edit_frame,
    post_edit_queryset,
    stored_metric_names,
)

CACHE_ENTRIES = 8
ORIGINS = (PostEdit.LIVE, PostEdit.IMPORTED)
# Columns kept beside the analysis for plots and downloads (texts are dropped: big).
KEPT_COLUMNS = ("post_edit_id", "external_id", "annotator")


class SelectionError(ValueError):
    """A selection parameter is invalid; the message names it."""


@dataclass(frozen=True)
class Selection:
    project: Project
    target: str
    variant: str = MetricValue.PLAIN
    annotators: tuple[str, ...] = ()
    task_type: str = ""
    origin: str = ""

    @property
    def target_column(self) -> str:
        return TARGETS[self.target]

    def as_params(self) -> dict[str, str | list[str]]:
        """Query parameters that rebuild this selection (for links and plot URLs)."""
        params: dict[str, str | list[str]] = {"target": self.target, "variant": self.variant}
        if self.annotators:
            params["annotators"] = list(self.annotators)
        if self.task_type:
            params["task_type"] = self.task_type
        if self.origin:
            params["origin"] = self.origin
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
        }


@dataclass
class Report:
    selection: Selection
    analysis: Analysis
    frame: pd.DataFrame  # SelectionData.frame
    metrics: list[str]
    directions: dict[str, str]
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = self.analysis.to_dict()
        data["selection"] = self.selection.describe()
        data["messages"] = self.messages + data["messages"]
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
    )


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
    )


def _fingerprint(selection: Selection) -> str:
    post_edits = post_edit_queryset(
        project=selection.project,
        annotators=selection.annotators or None,
        task_type=selection.task_type or None,
        origin=selection.origin or None,
    )
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


def selection_data(*, selection: Selection, use_cache: bool = True) -> SelectionData:
    """The selection's data frame, from the cache when its data has not changed."""
    where = {**selection.describe(), "target": None, "target_column": None}
    key = _cache_key("selection", where, _fingerprint(selection))
    return _cached(key, lambda: _load(selection), use_cache)


def report_build(*, selection: Selection, settings: Settings | None = None, use_cache: bool = True) -> Report:
    """The analysis of a selection, from the cache when its data has not changed."""
    settings = settings or Settings()
    key = _cache_key("report", selection.describe(), repr(settings), _fingerprint(selection))

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
        )

    return _cached(key, compute, use_cache)


def _load(selection: Selection) -> SelectionData:
    filters = {
        "project": selection.project,
        "annotators": selection.annotators or None,
        "task_type": selection.task_type or None,
        "origin": selection.origin or None,
    }
    names = stored_metric_names(post_edit_queryset(**filters))
    frame = post_edit_frame(**filters, metrics=names, variants=(selection.variant,))
    frame = frame.rename(columns={metric_column(name, selection.variant): name for name in names})
    frame[ORIGINAL_LENGTH] = frame["original"].fillna("").str.len()
    frame[EDITED_LENGTH] = frame["edited"].fillna("").str.len()
    messages = []
    empty = [name for name in names if frame[name].isna().all()]
    if empty:
        messages.append(f"no {selection.variant} values for {', '.join(empty)} in this selection: left out")
    if not names:
        messages.append("no metric values are stored for this selection yet: compute them on the Metrics page")
    metrics = [name for name in names if name not in empty]
    kept = frame[[*KEPT_COLUMNS, *TARGETS.values(), ORIGINAL_LENGTH, EDITED_LENGTH, *metrics]].copy()
    return SelectionData(frame=kept, metrics=metrics, directions=_directions(metrics), messages=messages)
