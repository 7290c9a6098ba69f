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

import gc
import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Value, When

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
    """Usernames with a submitted post-edit in the project: each user asked whether one exists (the search
    stops at the first), not every post-edit's annotator read (10⁶ rows for 40 names)."""
    from django.contrib.auth import get_user_model

    theirs = post_edit_queryset(project=project).order_by().filter(assignment__annotator=OuterRef("pk"))
    users = get_user_model().objects.filter(Exists(theirs)).order_by()
    return sorted(set(users.values_list("username", flat=True)))


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
    texts: bool = True,
) -> pd.DataFrame:
    """One row per submitted post-edit of the selection, with effort fields and metric values.

    Metric columns: one float column per (metric, variant) requested, named by
    metric_column(); NaN where no value is stored (or the stored value is null).
    metrics=None means every metric with a stored value in the selection.
    texts=False: in place of the texts `original` and `edited`, their lengths in characters
    (`original_length`, `edited_length`) and the edited text's words (`edited_words`, as
    metrics.analysis.word_counts counts them), computed a chunk at a time: the analysis needs no more.
    Two queries in total, whatever the size: the post-edits, then the values.
    """
    import pandas as pd

    from metrics.analysis.common import EDITED_LENGTH, ORIGINAL_LENGTH
    from metrics.analysis.conditions import WORDS

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
    # Read as columns, a chunk at a time: no Python object per row, numbers straight into arrays.
    aliases = {"origin": "origin_value", "condition": "condition_value", "definition_version": "version_value"}
    aliases.update({field: f"e_{field}" for field in EFFORT_FIELDS})
    rows = qs.values(
        **_BASE_VALUES,
        origin_value=F("origin"),
        condition_value=F("condition"),
        version_value=F("definition_version"),
        **{f"e_{f}": F(f) for f in EFFORT_FIELDS},
    ).values_list(*(aliases.get(column, column) for column in BASE_COLUMNS))
    numbers = set(EFFORT_FIELDS)
    lengths = (ORIGINAL_LENGTH, EDITED_LENGTH, WORDS)
    names = [name for column in BASE_COLUMNS for name in ((column,) if texts or column not in TEXTS else ())]
    if not texts:
        at = BASE_COLUMNS.index("original")
        names[at:at] = lengths
    parts: dict[str, list] = {name: [] for name in names}
    for chunk in column_chunks(rows, FRAME_CHUNK):
        by_name = dict(zip(BASE_COLUMNS, chunk, strict=True))
        for name in BASE_COLUMNS:
            if name in numbers:  # nullable integers: float keeps NaN for "not measured"
                parts[name].append(np.array(by_name[name], dtype=float))
            elif name == "post_edit_id":
                parts[name].append(np.array(by_name[name], dtype=np.int64))
            elif texts or name not in TEXTS:  # into pandas a chunk at a time: no list of a million objects
                parts[name].append(pd.Series(by_name[name]))
        if not texts:
            original, edited = by_name["original"], by_name["edited"]
            parts[ORIGINAL_LENGTH].append(np.fromiter((len(t or "") for t in original), np.int64, len(original)))
            parts[EDITED_LENGTH].append(np.fromiter((len(t or "") for t in edited), np.int64, len(edited)))
            parts[WORDS].append(np.fromiter((len((t or "").split()) for t in edited), np.int64, len(edited)))
    arrays = {"post_edit_id", *numbers, *(() if texts else lengths)}
    if not parts["post_edit_id"]:  # as from_records made it: no rows, every column of objects but the numbers
        frame = pd.DataFrame({name: pd.Series(dtype=object) for name in names})
        integers = {"post_edit_id", *(() if texts else lengths)}
        frame = frame.astype({name: np.int64 if name in integers else float for name in arrays})
    else:
        frame = pd.DataFrame(
            {
                name: np.concatenate(parts[name]) if name in arrays else pd.concat(parts[name], ignore_index=True)
                for name in names
            }
        )

    metric_names = list(metrics) if metrics is not None else stored_metric_names(qs)
    columns = [metric_column(m, v) for m in metric_names for v in variants]
    if not columns or frame.empty:
        for column in columns:
            frame[column] = np.nan
        return frame

    # Values streamed in chunks straight into a float matrix (no frame of strings, no pivot); each value's
    # (metric, variant) comes as its column's number, not as two strings.
    column_of = {(m, v): n for n, (m, v) in enumerate((m, v) for m in metric_names for v in variants)}
    matrix = np.full((len(frame), len(columns)), np.nan)
    rows_of = pd.Index(frame["post_edit_id"])
    number = Case(
        *(When(metric=m, variant=v, then=Value(n)) for (m, v), n in column_of.items()), output_field=IntegerField()
    )
    stored = MetricValue.objects.filter(metric__in=metric_names, variant__in=list(variants))
    if len(frame) * DENSE_SHARE >= PostEdit.objects.count():
        # Most post-edits are the selection's: one pass over the values, each kept when its post-edit is one of
        # the selection's (on SQLite a lookup per post-edit in the post-edit index reads the values in no order).
        stored = stored.alias(post_edit_scan=F("post_edit_id") + 0).filter(post_edit_scan__in=qs.values("id"))
    else:
        stored = stored.filter(post_edit__in=qs.values("id"))
    values = stored.annotate(column_number=number).values_list("post_edit_id", "column_number", "value")
    for ids, numbers_of, chunk_values in column_chunks(values, VALUE_CHUNK):
        rows_at = rows_of.get_indexer(np.array(ids, dtype=np.int64))
        matrix[rows_at, np.array(numbers_of, dtype=np.int64)] = np.array(chunk_values, dtype=float)
    for n, column in enumerate(columns):
        frame[column] = matrix[:, n]
    return frame


FRAME_CHUNK = 10_000  # post-edits read at a time
TEXTS = ("original", "edited")
DENSE_SHARE = 4  # a selection holding at least 1/DENSE_SHARE of all post-edits reads the values in one pass


def column_chunks(rows: QuerySet, chunk_size: int) -> Iterator[list[list]]:
    """A values_list QuerySet's rows, chunk_size at a time, as one list per column, each column through the
    database's and its field's converters (as QuerySet.iterator() converts rows): no list per row.

    Python's cyclic garbage collector is paused while the rows are read: the driver's row tuples (no cycles
    among them) are allocated by the million, and each full collection they trigger walks every object of the
    process (a third of the CPU time of reading 10⁶ post-edits and their 5 × 10⁶ values)."""
    from django.db import connections
    from django.db.models.sql.constants import MULTI

    compiler = rows.query.get_compiler(using=rows.db)
    chunked = connections[rows.db].features.can_use_chunked_reads
    collecting = gc.isenabled()
    gc.disable()
    try:
        results = compiler.execute_sql(MULTI, chunked_fetch=chunked, chunk_size=chunk_size)
        fields = [selected[0] for selected in compiler.select[0 : compiler.col_count]]
        converters = compiler.get_converters(fields)
        for chunk in results:
            columns = [list(column) for column in itertools.islice(zip(*chunk, strict=True), len(fields))]
            for position, (functions, expression) in converters.items():
                for function in functions:
                    columns[position] = [
                        function(value, expression, compiler.connection) for value in columns[position]
                    ]
            yield columns
    finally:
        if collecting:
            gc.enable()


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
