"""Writes of error-span evaluations (docs/quality.md): a rater's finished evaluation of an output or a
post-edit, every span and the ESA score checked against the project's typology first.

`evaluation_submit` stores a finished evaluation in one step; the browser task goes through the
pending evaluations `evaluation_assign` makes (annotations.services.evaluation_task: open, events,
finish); imports store theirs in bulk (annotations.importers.mqm_store).
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


def checked_spans(spans: Any, text: str, source: str, typology, prefill: list | None = None) -> list[ErrorSpan]:
    """The spans as rows (not saved), or the refusal naming the first wrong field. With `prefill` (the
    spans the task showed prefilled) a span may say which of them it started as (`prefilled`: its
    index, once at most); `edited` records whether the rater changed it."""
    if not isinstance(spans, list) or len(spans) > MAX_SPANS:
        raise _refuse("spans", f"must be a list of at most {MAX_SPANS} spans")
    rows = []
    seen_prefilled: set[int] = set()
    for n, span in enumerate(spans):
        where = f"spans[{n}]"
        if not isinstance(span, dict):
            raise _refuse(where, "must be an object with start, end, category, severity")
        allowed = {"start", "end", "category", "severity", "comment", "side"} | (
            {"prefilled"} if prefill is not None else set()
        )
        unknown = sorted(set(span) - allowed)
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
        if not isinstance(comment, str) or len(comment) > MAX_COMMENT or "\x00" in comment:
            raise _refuse(f"{where}.comment", f"must be text of at most {MAX_COMMENT} characters, without NUL")
        origin, edited = _prefilled(span, prefill, where, seen_prefilled)
        rows.append(
            ErrorSpan(
                position=n,
                side=side,
                start=span.get("start"),
                end=span.get("end"),
                category=category,
                severity=severity,
                comment=comment,
                prefilled=origin,
                edited=edited,
            )
        )
    return rows


def _prefilled(span: dict, prefill: list | None, where: str, seen: set[int]) -> tuple[int | None, bool]:
    """(the prefilled span's index or None, whether the rater changed it)."""
    index = span.get("prefilled")
    if prefill is None or index is None:
        return None, False
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(prefill):
        raise _refuse(f"{where}.prefilled", f"must be the index of a prefilled span (0 to {len(prefill) - 1})")
    if index in seen:
        raise _refuse(f"{where}.prefilled", f"prefilled span {index} is kept twice")
    seen.add(index)
    defaults = {"start": None, "end": None, "category": None, "severity": None, "comment": "", "side": "target"}
    edited = any(span.get(name, default) != prefill[index].get(name, default) for name, default in defaults.items())
    return index, edited


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
    rows = checked_spans(spans, text, item.source, typology)
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
