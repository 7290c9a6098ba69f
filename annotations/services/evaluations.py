"""Writes of error-span evaluations (docs/quality.md): a rater's finished evaluation of an output or a
post-edit, every span and the ESA score checked against the project's typology first.

The browser task (marking spans, timed and logged like post-editing) submits through
`evaluation_submit`; imports store theirs in bulk (annotations.importers.mqm_store).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotations.models import ErrorSpan, Evaluation, Item, PostEdit
from annotations.services.errors import ServiceError
from annotations.typology import SEVERITIES, TypologyError, check_esa, check_span

MAX_SPANS = 1000
MAX_COMMENT = 10_000


def _refuse(field: str, message: str) -> ServiceError:
    return ServiceError(f"{field}: {message}")


def _spans(spans: Any, text: str, source: str, typology) -> list[ErrorSpan]:
    if not isinstance(spans, list) or len(spans) > MAX_SPANS:
        raise _refuse("spans", f"must be a list of at most {MAX_SPANS} spans")
    rows = []
    for n, span in enumerate(spans):
        where = f"spans[{n}]"
        if not isinstance(span, dict):
            raise _refuse(where, "must be an object with start, end, category, severity")
        unknown = sorted(set(span) - {"start", "end", "category", "severity", "comment", "side"})
        if unknown:
            raise _refuse(f"{where}.{unknown[0]}", "is not a span field")
        side = span.get("side", ErrorSpan.TARGET)
        if side not in (ErrorSpan.TARGET, ErrorSpan.SOURCE):
            raise _refuse(f"{where}.side", "must be target or source")
        category, severity, comment = span.get("category"), span.get("severity"), span.get("comment", "")
        try:
            check_span(span.get("start"), span.get("end"), len(text if side == ErrorSpan.TARGET else source), where)
            if not isinstance(category, str):
                raise TypologyError("must be a category name", "category")
            typology.check_category(category)
        except TypologyError as exc:
            raise _refuse(exc.field if exc.field.startswith("spans") else f"{where}.{exc.field}", exc.message) from None
        if severity not in SEVERITIES:
            raise _refuse(f"{where}.severity", f"must be one of {', '.join(SEVERITIES)}")
        if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
            raise _refuse(f"{where}.comment", f"must be text of at most {MAX_COMMENT} characters")
        rows.append(
            ErrorSpan(
                position=n,
                side=side,
                start=span.get("start"),
                end=span.get("end"),
                category=category,
                severity=severity,
                comment=comment,
            )
        )
    return rows


def evaluation_submit(
    *,
    item: Item,
    rater,
    spans: Any,
    esa_score: Any = None,
    system: str = "",
    post_edit: PostEdit | None = None,
    started_at: datetime | None = None,
    wall_ms: Any = None,
    active_ms: Any = None,
) -> Evaluation:
    """Store a submitted evaluation of the item's output `system`, or of `post_edit`; refuses (naming the
    field: `spans[2].end`, `esa_score`) before writing anything."""
    if (post_edit is None) == (not system):
        raise _refuse("system", "evaluate either an output (system) or a post-edit, one of them")
    if post_edit is not None:
        if post_edit.assignment.item_id != item.pk:
            raise _refuse("post_edit", "is not a post-edit of this item")
        text = post_edit.text
    else:
        output = item.outputs.get(system) if isinstance(item.outputs, dict) else None
        if not isinstance(output, str):
            raise _refuse("system", f"the item has no output {system!r}")
        text = output
    try:
        typology = item.project.typology()
        score = check_esa(esa_score)
    except TypologyError as exc:
        raise _refuse(exc.field, exc.message) from None
    rows = _spans(spans, text, item.source, typology)
    for name, value in (("wall_ms", wall_ms), ("active_ms", active_ms)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise _refuse(name, "must be a whole number of milliseconds >= 0")
    with transaction.atomic():
        if Evaluation.objects.filter(item=item, rater=rater, system=system, post_edit=post_edit).exists():
            raise _refuse("rater", "has already evaluated this text")
        evaluation = Evaluation.objects.create(
            item=item,
            rater=rater,
            system=system,
            post_edit=post_edit,
            text=text,
            esa_score=score,
            status=Evaluation.SUBMITTED,
            started_at=started_at,
            submitted_at=timezone.now(),
            wall_ms=wall_ms,
            active_ms=active_ms,
        )
        for row in rows:
            row.evaluation = evaluation
        ErrorSpan.objects.bulk_create(rows)
    return evaluation
