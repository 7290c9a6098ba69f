"""The gold-metric table of a selection: editlab's per-example means beside EditEval's corpus figures.

Read by the report page (partial metrics/partials/gold_table.html) and the API (GET /api/projects/<id>/gold/).
The examples are the selection's submitted post-edits whose item has gold edits, in post-edit id order (the
order matters to EditEval's GLEU, which draws gold edits by position); each is (model output, post-edit,
gold edits), what the stored gold-based values were computed from. The means are over the stored values of
the metric's current version (older ones are counted as stale, left out); the `editeval` figures are computed
from the texts (metrics.text.editeval) and kept per process for identical texts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Protocol

from django.db.models import Avg, Count

from annotations.models import Project
from metrics.models import MetricValue
from metrics.selectors import post_edit_queryset
from metrics.text import METRICS
from metrics.text.editeval import EDITEVAL_NAMES, Example, Figure, editeval_figures

ORDER = "post-edit id"
# Where the two figures are on different scales, said beside them.
NOTES = {"ibleu": "mean on 0-100 (sacrebleu sentence BLEU); editeval on 0-1, as EditEval reports it"}


class SelectionLike(Protocol):
    """What the gold table reads of a selection (read-only: a frozen dataclass fits)."""

    @property
    def project(self) -> Project: ...
    @property
    def annotators(self) -> tuple[str, ...]: ...
    @property
    def task_type(self) -> str: ...
    @property
    def origin(self) -> str: ...


@dataclass(frozen=True)
class GoldRow:
    metric: str
    editeval_name: str  # what EditEval's report calls the figure
    n: int  # examples: post-edits with gold edits
    n_values: int  # stored values of the current version
    stale: int  # stored values of an older version, left out of the mean
    mean: float | None
    editeval: float | None
    editeval_undefined: str
    note: str = ""


@dataclass(frozen=True)
class GoldTable:
    n: int
    rows: list[GoldRow]
    order: str = ORDER
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "order": self.order,
            "metrics": [asdict(row) for row in self.rows],
            "messages": list(self.messages),
        }


def _gold_texts(value) -> tuple[str, ...]:
    # As the metric computation reads Item.gold_edits (metrics.services), so both see the same gold edits.
    if not value:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


@lru_cache(maxsize=8)
def _figures(examples: tuple[Example, ...]) -> tuple[Figure, ...]:
    return tuple(editeval_figures(examples))


def gold_table_build(*, selection: SelectionLike) -> GoldTable | None:
    """The table for the selection's post-edits with gold edits; None when none has any."""
    post_edits = post_edit_queryset(
        project=selection.project,
        annotators=selection.annotators or None,
        task_type=selection.task_type or None,
        origin=selection.origin or None,
    ).exclude(assignment__item__gold_edits=[])
    rows = post_edits.values_list("assignment__item__model_output", "text", "assignment__item__gold_edits")
    examples = tuple(
        Example(original or "", edited or "", gold)
        for original, edited, gold in ((o, e, _gold_texts(g)) for o, e, g in rows)
        if gold
    )
    if not examples:
        return None
    figures = {figure.metric: figure for figure in _figures(examples)}
    stored: dict[str, dict[str, tuple[int, float | None]]] = {}
    for metric, version, count, average in (
        MetricValue.objects.filter(
            post_edit__in=post_edits.values("id"), metric__in=list(EDITEVAL_NAMES), variant=MetricValue.PLAIN
        )
        .values_list("metric", "metric_version")
        .annotate(count=Count("value"), average=Avg("value"))
        .order_by()
    ):
        stored.setdefault(metric, {})[version] = (count, average)
    table_rows, messages = [], []
    for metric, editeval_name in EDITEVAL_NAMES.items():
        by_version = stored.get(metric, {})
        count, average = by_version.get(str(METRICS[metric].version), (0, None))
        stale = sum(c for version, (c, _) in by_version.items() if version != str(METRICS[metric].version))
        figure = figures[metric]
        table_rows.append(
            GoldRow(
                metric=metric,
                editeval_name=editeval_name,
                n=figure.n,
                n_values=count,
                stale=stale,
                mean=None if average is None else float(average),
                editeval=figure.value,
                editeval_undefined=figure.undefined,
                note=NOTES.get(metric, ""),
            )
        )
        if stale:
            messages.append(
                f"{stale} stored {metric} value(s) of an older version left out of the mean: recompute them"
            )
    missing = [row.metric for row in table_rows if row.n_values < row.n]
    if missing:
        messages.append(
            f"per-example values are missing for some post-edits ({', '.join(missing)}): compute metrics to complete "
            "the means; the editeval figures use every post-edit with gold edits"
        )
    return GoldTable(n=len(examples), rows=table_rows, messages=messages)
