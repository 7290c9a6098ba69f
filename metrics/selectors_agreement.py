"""Reads for agreement across overlapping work: the post-edits of a selection whose item has two or more.

One query, values as arrays: the selection is the analysis's (metrics.analysis_options.Selection: project,
annotators, task type, origin, flagged, practice left out by default; human edits only, as every analysis
reads them), narrowed to items with at least two of its post-edits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Count

from metrics.analysis_options import Selection
from metrics.selectors import post_edit_queryset


@dataclass
class OverlapRows:
    post_edit_ids: np.ndarray
    items: np.ndarray  # item ids
    external_ids: np.ndarray
    annotators: np.ndarray
    values: dict[str, np.ndarray]  # effort field -> float values (NaN: not measured)
    texts: list[str] | None  # the submitted texts, when asked for


def overlap_rows(*, selection: Selection, fields: tuple[str, ...], with_texts: bool = False) -> OverlapRows:
    """The selection's post-edits of items it holds at least twice, by item then id (one query)."""
    qs = post_edit_queryset(**selection.filters)
    shared = (
        qs.order_by().values("assignment__item").annotate(n=Count("id")).filter(n__gte=2).values("assignment__item")
    )
    columns = ["id", "assignment__item", "assignment__item__external_id", "assignment__annotator__username", *fields]
    if with_texts:
        columns.append("text")
    rows = list(qs.filter(assignment__item__in=shared).order_by("assignment__item", "id").values_list(*columns))
    width = 4 + len(fields)
    as_columns = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    return OverlapRows(
        post_edit_ids=np.asarray(as_columns[0], dtype=np.int64),
        items=np.asarray(as_columns[1], dtype=np.int64),
        external_ids=np.asarray(as_columns[2], dtype=object),
        annotators=np.asarray(as_columns[3], dtype=object),
        values={
            name: np.asarray([np.nan if v is None else v for v in as_columns[4 + k]], dtype=float)
            for k, name in enumerate(fields)
        },
        texts=[text or "" for text in as_columns[width]] if with_texts else None,
    )
