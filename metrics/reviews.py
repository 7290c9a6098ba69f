"""Reviews of a project as researchers read them: each submitted review's effort (the reviewer's time
and keys, derived as every post-edit's) and how far the reviewer's text is from the annotator's
(compression distance and TER, metrics.text, with the annotator's text as the original), on the review
summary page and as the export's review columns.

Reviews are never post-edits of the first pass: metrics.selectors.post_edit_queryset leaves them out of
every existing figure; this module is where they are counted.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F

from annotations.models import Assignment, PostEdit, Project

# The export's review columns, after every other column (README: export columns).
REVIEW_COLUMNS = (
    "review_round",
    "review_decision",
    "review_reason",
    "review_wall_ms",
    "review_active_ms",
    "review_keystrokes",
    "review_allkeys",
    "review_compression",
    "review_ter",
)
REVIEW_TEXT_COLUMNS = ("review_decision", "review_reason")
REVIEW_INT_COLUMNS = ("review_round", "review_wall_ms", "review_active_ms", "review_keystrokes", "review_allkeys")
REVIEW_FLOAT_COLUMNS = ("review_compression", "review_ter")
EMPTY_REVIEW: dict[str, object] = dict.fromkeys(REVIEW_COLUMNS)


def review_distances(annotator_text: str, reviewer_text: str) -> tuple[float, float]:
    """(compression distance, TER %) from the annotator's text to the reviewer's."""
    from metrics.text.compression import compression_distance
    from metrics.text.edit import ter

    return float(compression_distance(annotator_text, reviewer_text)), ter(annotator_text, reviewer_text)


@dataclass(frozen=True)
class ReviewRow:
    review_id: int
    post_edit_id: int  # the reviewed post-edit
    external_id: str
    annotator: str
    reviewer: str
    round: int
    decision: str  # "", accepted, returned
    reason: str
    decided_at: datetime | None
    wall_ms: int | None
    active_ms: int | None
    keystrokes: int | None
    allkeys: int | None
    compression: float
    ter: float


_FIELDS = {
    "review_id": F("assignment_id"),
    "reviewed_id": F("assignment__reviews_id"),
    "external_id": F("assignment__item__external_id"),
    "annotator": F("assignment__reviews__assignment__annotator__username"),
    "reviewer": F("assignment__annotator__username"),
    "decision": F("assignment__review_decision"),
    "reason": F("assignment__review_reason"),
    "decided_at": F("assignment__review_decided_at"),
}


def _submitted_reviews(post_edits):
    return post_edits.reviews().completed()


def _rows(queryset) -> Iterable[ReviewRow]:
    for row in queryset.values(
        "start_override", "text", "extra", "wall_ms", "active_ms", "keystrokes", "allkeys", **_FIELDS
    ):
        compression, ter_value = review_distances(row["start_override"] or "", row["text"] or "")
        given = row["extra"].get("reviewed", {}) if isinstance(row["extra"], dict) else {}
        yield ReviewRow(
            review_id=row["review_id"],
            post_edit_id=row["reviewed_id"],
            external_id=row["external_id"],
            annotator=row["annotator"],
            reviewer=row["reviewer"],
            round=int(given.get("round", 1)),
            decision=row["decision"],
            reason=row["reason"],
            decided_at=row["decided_at"],
            wall_ms=row["wall_ms"],
            active_ms=row["active_ms"],
            keystrokes=row["keystrokes"],
            allkeys=row["allkeys"],
            compression=compression,
            ter=ter_value,
        )


def review_rows(*, project: Project) -> list[ReviewRow]:
    """The project's submitted reviews, in the order they were taken."""
    queryset = _submitted_reviews(PostEdit.objects.filter(assignment__item__project=project)).order_by("assignment_id")
    return list(_rows(queryset))


def project_has_reviews(project: Project) -> bool:
    return Assignment.objects.reviews().filter(item__project=project).exists()


@dataclass(frozen=True)
class ReviewSummary:
    rows: list[ReviewRow]
    reviews: int
    accepted: int
    returned: int
    undecided: int
    waiting: int  # submitted first-pass post-edits with no review taken yet
    mean_wall_ms: float | None
    median_wall_ms: float | None
    mean_active_ms: float | None
    mean_keystrokes: float | None
    mean_compression: float | None
    mean_ter: float | None


def _mean(values: Sequence[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.fmean(present) if present else None


def review_summary(*, project: Project) -> ReviewSummary:
    rows = review_rows(project=project)
    reviewed = Assignment.objects.reviews().filter(item__project=project).values("reviews_id")
    waiting = (
        PostEdit.objects.completed()
        .first_pass()
        .human()
        .filter(assignment__item__project=project, assignment__item__practice=False)
        .exclude(pk__in=reviewed)
        .count()
    )
    walls = [row.wall_ms for row in rows if row.wall_ms is not None]
    return ReviewSummary(
        rows=rows,
        reviews=len(rows),
        accepted=sum(row.decision == Assignment.ACCEPTED for row in rows),
        returned=sum(row.decision == Assignment.RETURNED for row in rows),
        undecided=sum(not row.decision for row in rows),
        waiting=waiting,
        mean_wall_ms=_mean(walls),
        median_wall_ms=statistics.median(walls) if walls else None,
        mean_active_ms=_mean([row.active_ms for row in rows]),
        mean_keystrokes=_mean([row.keystrokes for row in rows]),
        mean_compression=_mean([row.compression for row in rows]),
        mean_ter=_mean([row.ter for row in rows]),
    )


def review_columns(post_edit_ids: Sequence[int]) -> dict[int, dict[str, object]]:
    """The export's review columns of each reviewed post-edit among `post_edit_ids`: its latest
    submitted review (one query for the page)."""
    queryset = _submitted_reviews(PostEdit.objects.filter(assignment__reviews_id__in=list(post_edit_ids))).order_by(
        "assignment_id"
    )
    latest: dict[int, dict[str, object]] = {}
    for row in _rows(queryset):  # in the order they were taken: the latest wins
        latest[row.post_edit_id] = {
            "review_round": row.round,
            "review_decision": row.decision,
            "review_reason": row.reason,
            "review_wall_ms": row.wall_ms,
            "review_active_ms": row.active_ms,
            "review_keystrokes": row.keystrokes,
            "review_allkeys": row.allkeys,
            "review_compression": row.compression,
            "review_ter": row.ter,
        }
    return latest
