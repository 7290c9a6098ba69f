"""Reads of the measuring side: the post-edits researchers analyse and export, as a QuerySet or
a data frame, and the frames the report's plots draw.

Shared by the compute side (services, exports) and the analysis side (reports, analyze, the
report page): one definition of "the post-edits of a selection", of its row order and of the
metric column names.

Row order is import order: post-edits by id. Importers create a study's post-edits in the order
they read its rows (a PET study: the post-editors' files by name, each file line by line), so
the frame's rows are the published files' rows, concatenated; live post-edits come in the order
they were first opened. The published protocol's split (metrics.analysis.knn) depends on this
order, as scikit-learn's train_test_split does on the order of the rows it is given.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from django.db.models import Count, F, Q, QuerySet

from annotations.editing.selectors import recomputed_active_ms
from annotations.models import EFFORT_FIELDS, Assignment, PostEdit, Project, start_text_of_post_edit
from editlab import limits
from metrics.models import MetricValue

if TYPE_CHECKING:  # the frames' functions import pandas when called: the apps' start does not pay for it
    import pandas as pd

# Analysis target -> the PostEdit effort field it reads.
TARGETS = {"wall_time": "wall_ms", "active_time": "active_ms", "keystrokes": "keystrokes", "allkeys": "allkeys"}

VARIANTS = (MetricValue.PLAIN, MetricValue.WITH_REFERENCES)
VALUE_CHUNK = 50_000  # metric values read and placed at a time

# Columns of post_edit_frame before the metric columns, in order.
BASE_COLUMNS = (
    "post_edit_id",
    "external_id",
    "annotator",
    "task_type",
    "origin",
    "condition",
    "practice",
    "document",
    "definition_version",
    "original",
    "edited",
    *EFFORT_FIELDS,
)

_BASE_VALUES = {
    "post_edit_id": F("id"),
    "external_id": F("assignment__item__external_id"),
    "annotator": F("assignment__annotator__username"),
    "task_type": F("assignment__item__task_type"),
    "practice": F("assignment__item__practice"),
    "document": F("assignment__item__document"),
    "original": start_text_of_post_edit(),
    "edited": F("text"),
}


def projects_with_submitted() -> QuerySet[Project]:
    """Every project by name, each with `submitted`: how many of its assignments are submitted."""
    done = Q(items__assignments__status=Assignment.SUBMITTED, items__assignments__reviews__isnull=True)
    return Project.objects.annotate(submitted=Count("items__assignments", filter=done)).order_by("name")


def metrics_per_project(project_ids: Sequence[int]) -> dict[int, int]:
    """How many metrics have a stored value in each project (one grouped query); a project without any is left out."""
    rows = (
        MetricValue.objects.filter(post_edit__assignment__item__project_id__in=list(project_ids))
        .values_list("post_edit__assignment__item__project_id")
        .annotate(n=Count("metric", distinct=True))
        .order_by()
    )
    return {project_id: n for project_id, n in rows}


def report_loading_text(*, metrics: int, post_edits: int) -> str:
    """What a page says while a report computes: "Computing correlations for 5 metrics over 5,235 post-edits…"."""
    metric_word = "metric" if metrics == 1 else "metrics"
    post_edit_word = "post-edit" if post_edits == 1 else "post-edits"
    return f"Computing correlations for {metrics:,} {metric_word} over {post_edits:,} {post_edit_word}…"


def metric_column(metric: str, variant: str) -> str:
    """`compression` for the plain variant, `compression__with_references` for the other."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    return metric if variant == MetricValue.PLAIN else f"{metric}__{variant}"


def post_edit_queryset(
    *,
    project: Project,
    annotators: Sequence[str] | None = None,
    task_type: str | None = None,
    origin: str | None = None,
    exclude_flagged: bool = False,
    include_practice: bool = True,
    include_simulated: bool = False,
) -> QuerySet[PostEdit]:
    """The submitted post-edits of the selection, in import order (by id: stable across calls).

    exclude_flagged leaves out every post-edit with a flag (PostEdit.flags not empty: clipped time,
    replay mismatch, event gap, uncorroborated keys, ...). include_practice=False leaves out the
    post-edits of practice items (Item.practice); the analysis does by default, the default here
    keeps every caller's rows as they were. An LLM's simulated edits (no time, no keys) are left out
    of every human analysis and export unless include_simulated (metric computation asks for them)."""
    # First-pass post-edits only: a reviewer's edit of a submitted post-edit is a review (reviews.py).
    qs = PostEdit.objects.completed().first_pass().filter(assignment__item__project=project)
    if not include_simulated:
        qs = qs.human()
    if exclude_flagged:
        qs = qs.filter(flags=[])
    if not include_practice:
        qs = qs.filter(assignment__item__practice=False)
    if annotators:
        qs = qs.filter(assignment__annotator__username__in=list(annotators))
    if task_type:
        qs = qs.filter(assignment__item__task_type=task_type)
    if origin:
        qs = qs.filter(origin=origin)
    return qs.order_by("id")


def annotator_names(*, project: Project) -> list[str]:
    """Usernames with a submitted post-edit in the project."""
    return sorted(set(post_edit_queryset(project=project).values_list("assignment__annotator__username", flat=True)))


def task_types(*, project: Project) -> list[str]:
    qs = post_edit_queryset(project=project).exclude(assignment__item__task_type="")
    return sorted(set(qs.values_list("assignment__item__task_type", flat=True)))


def project_get(*, project_id: int) -> Project | None:
    """The project, or None (also for ids no database column can hold)."""
    if not 0 < project_id <= limits.MAX_ID:
        return None
    return Project.objects.filter(pk=project_id).first()


def stored_metric_names(post_edits: QuerySet[PostEdit]) -> list[str]:
    """Metric names with at least one stored value for these post-edits, in registry order."""
    names = set(
        MetricValue.objects.filter(post_edit__in=post_edits.values("id")).values_list("metric", flat=True).distinct()
    )
    return _registry_order(names)


def _registry_order(names: set[str]) -> list[str]:
    try:
        from metrics.text import METRICS
    except ImportError:  # the engine is optional here: fall back to alphabetical order
        METRICS = {}
    known = [name for name in METRICS if name in names]
    return known + sorted(names - set(known))


def post_edit_frame(
    *,
    project: Project,
    annotators: Sequence[str] | None = None,
    task_type: str | None = None,
    origin: str | None = None,
    exclude_flagged: bool = False,
    include_practice: bool = True,
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] = VARIANTS,
) -> pd.DataFrame:
    """One row per submitted post-edit of the selection, with effort fields and metric values.

    Metric columns: one float column per (metric, variant) requested, named by
    metric_column(); NaN where no value is stored (or the stored value is null).
    metrics=None means every metric with a stored value in the selection.
    Two queries in total, whatever the size: the post-edits, then the values (pivoted).
    """
    import pandas as pd

    for variant in variants:
        metric_column("x", variant)  # validates
    qs = post_edit_queryset(
        project=project,
        annotators=annotators,
        task_type=task_type,
        origin=origin,
        exclude_flagged=exclude_flagged,
        include_practice=include_practice,
    )
    # Tuples in BASE_COLUMNS' order, streamed into the frame: no dict per row, no second copy.
    aliases = {"origin": "origin_value", "condition": "condition_value", "definition_version": "version_value"}
    aliases.update({field: f"e_{field}" for field in EFFORT_FIELDS})
    rows = qs.values(
        **_BASE_VALUES,
        origin_value=F("origin"),
        condition_value=F("condition"),
        version_value=F("definition_version"),
        **{f"e_{f}": F(f) for f in EFFORT_FIELDS},
    ).values_list(*(aliases.get(column, column) for column in BASE_COLUMNS))
    frame = pd.DataFrame.from_records(rows.iterator(chunk_size=10_000), columns=list(BASE_COLUMNS))
    # Effort fields are nullable integers: float keeps NaN for "not measured".
    for field in EFFORT_FIELDS:
        frame[field] = pd.to_numeric(frame[field], errors="coerce").astype(float)
    frame["post_edit_id"] = frame["post_edit_id"].astype("int64")

    metric_names = list(metrics) if metrics is not None else stored_metric_names(qs)
    columns = [metric_column(m, v) for m in metric_names for v in variants]
    if not metric_names or frame.empty:
        for column in columns:
            frame[column] = np.nan
        return frame

    # Values streamed in chunks straight into a float matrix (no frame of strings, no pivot).
    column_of = {(m, v): n for n, (m, v) in enumerate((m, v) for m in metric_names for v in variants)}
    matrix = np.full((len(frame), len(columns)), np.nan)
    rows_of = pd.Index(frame["post_edit_id"])
    values = (
        MetricValue.objects.filter(post_edit__in=qs.values("id"), metric__in=metric_names, variant__in=list(variants))
        .values_list("post_edit_id", "metric", "variant", "value")
        .iterator(chunk_size=VALUE_CHUNK)
    )
    while chunk := list(itertools.islice(values, VALUE_CHUNK)):
        rows = rows_of.get_indexer([post_edit_id for post_edit_id, _, _, _ in chunk])
        cols = [column_of[(metric, variant)] for _, metric, variant, _ in chunk]
        matrix[rows, cols] = [np.nan if value is None else value for _, _, _, value in chunk]
    for n, column in enumerate(columns):
        frame[column] = matrix[:, n]
    return frame


# --- the report's plot frames (from a selection's frame, no further query) -------------------------------------------

POINT_COLUMNS = ("post_edit_id", "external_id", "annotator")


def scatter_points(frame: pd.DataFrame, *, metric: str, target: str) -> pd.DataFrame:
    """The rows a scatter plot of `metric` against `target` draws: both values present."""
    return frame.dropna(subset=[metric, target])[[*POINT_COLUMNS, metric, target]]


def metric_matrix_rows(frame: pd.DataFrame, *, target: str) -> pd.DataFrame:
    """The rows the analysis's metric x metric matrix is computed on: those with a target value."""
    return frame[frame[target].notna()]


def effort_points(
    frame: pd.DataFrame, *, index: np.ndarray, measured: np.ndarray, predicted: np.ndarray
) -> pd.DataFrame:
    """The effort model's rows (`index` labels of the selection's frame) with measured and
    out-of-fold predicted values, for its predicted-vs-measured plot."""
    rows = frame.loc[index, list(POINT_COLUMNS)].copy()
    rows["measured"] = measured
    rows["predicted"] = predicted
    return rows


# --- active time recomputed from the stored event logs ---------------------------------------------------------------


def flagged_count(post_edits: QuerySet[PostEdit]) -> int:
    return post_edits.exclude(flags=[]).count()


def copied_from(*, project: Project) -> Project | None:
    """The project this one was copied from (Project.meta["copied_from"], set by project_copy_items),
    or None: not a copy, or its source is gone."""
    origin = project.meta.get("copied_from") if isinstance(project.meta, dict) else None
    source_id = origin.get("project_id") if isinstance(origin, dict) else None
    if not isinstance(source_id, int) or isinstance(source_id, bool) or source_id == project.pk:
        return None
    return project_get(project_id=source_id)


def project_has_documents(*, project: Project) -> bool:
    """Whether any item of the project belongs to a document."""
    return project.items.exclude(document="").exists()


def practice_count(post_edits: QuerySet[PostEdit]) -> int:
    """How many of these post-edits are of practice items (Item.practice)."""
    return post_edits.filter(assignment__item__practice=True).count()


def active_times(*, post_edit_ids: Sequence[int], thresholds_s: Sequence[float]) -> pd.DataFrame:
    """Active time (ms) of each live post-edit with a stored event log, recomputed for every idle
    threshold (seconds): one column per threshold, indexed by post_edit_id; post-edits without a
    log (imported ones, or never logged) are not in it. The stored effort values are not touched."""
    import pandas as pd

    logged = (
        PostEdit.objects.filter(id__in=list(post_edit_ids), origin=PostEdit.LIVE, events__isnull=False)
        .distinct()
        .order_by("id")
        .prefetch_related("visits")
    )
    rows = {}
    for post_edit in logged:
        rows[post_edit.id] = recomputed_active_ms(
            post_edit, idle_thresholds_ms=[seconds * 1000.0 for seconds in thresholds_s]
        )
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(thresholds_s), dtype=float)
    frame.index.name = "post_edit_id"
    return frame
