"""Reads of a project's error-span evaluations (MQM, ESA) for the scores and the WMT TSV export."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from annotations.models import ErrorSpan, Evaluation, Project
from metrics.analysis.mqm import Rating

CHUNK = 2000


@dataclass(frozen=True)
class EvaluationRecord:
    """One submitted evaluation of a system's output, with what the WMT TSV row needs."""

    system: str
    doc: str
    doc_id: str
    seg_id: str
    rater: str
    source: str
    text: str
    esa_score: float | None
    spans: tuple[ErrorSpan, ...]


def evaluation_records(project: Project) -> Iterator[EvaluationRecord]:
    """The project's submitted evaluations of outputs, in the order they were stored, a chunk at a time."""
    evaluations = (
        Evaluation.objects.filter(item__project=project, status=Evaluation.SUBMITTED, post_edit__isnull=True)
        .order_by("id")
        .values_list(
            "id",
            "system",
            "item__document",
            "item__meta",
            "item__external_id",
            "rater__username",
            "item__source",
            "text",
            "esa_score",
        )
    )
    last = 0
    while True:
        chunk = list(evaluations.filter(id__gt=last)[:CHUNK])
        if not chunk:
            return
        last = chunk[-1][0]
        spans: dict[int, list[ErrorSpan]] = {}
        for span in ErrorSpan.objects.filter(evaluation_id__in=[row[0] for row in chunk]).order_by(
            "evaluation_id", "position"
        ):
            spans.setdefault(span.evaluation_id, []).append(span)
        for pk, system, doc, meta, seg_id, rater, source, text, esa in chunk:
            doc_id = meta.get("doc_id", "") if isinstance(meta, dict) else ""
            yield EvaluationRecord(system, doc, str(doc_id), seg_id, rater, source, text, esa, tuple(spans.get(pk, ())))


def ratings(project: Project) -> list[Rating]:
    """Every submitted evaluation of an output as a Rating (its errors' categories and severities)."""
    return [
        Rating(
            system=record.system,
            segment=record.seg_id,
            rater=record.rater,
            errors=tuple((span.category, span.severity) for span in record.spans),
        )
        for record in evaluation_records(project)
    ]
