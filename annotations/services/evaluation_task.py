"""The error-span task in the browser (docs/quality.md, "The evaluation task"): pending evaluations made
for raters, opened, logged event by event exactly once, and finished with every span checked.

- `evaluation_assign` makes pending evaluations: every rater gets each item's output of the named
  systems, or every submitted post-edit of the project they did not write; ESA^AI prefills the item's
  highlights over that output as spans the rater keeps, edits or deletes.
- `evaluation_open` starts the clock (the first display is `started_at`) and names the page load.
- `evaluation_ingest_events` stores a batch of the page's log: a seq already stored from the same page
  load is skipped (a batch sent twice is stored once), one stored from another page load is a conflict.
- `evaluation_finish` stores the spans and score, and the wall and active time derived from the log.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotations.effort.times import split_visits, visit_times, whole_ms
from annotations.log_event import LogEvent
from annotations.models import Assignment, ErrorSpan, Evaluation, EvaluationEvent, Item, PostEdit, Project
from annotations.roles import is_annotator
from annotations.services.errors import ServiceError
from annotations.services.evaluations import checked_spans
from annotations.typology import NON_TRANSLATION, SEVERITIES, TypologyError, check_esa

EVENT_KINDS = frozenset(
    {
        "load",
        "visibility",
        "focus",
        "blur",
        "keydown",
        "mousedown",
        "select",
        "chooser_open",
        "chooser_close",
        "span_add",
        "span_edit",
        "span_delete",
        "score",
        "submit",
    }
)
MAX_EVENTS_PER_BATCH = 500
MAX_EVENT_DATA_CHARS = 2000
MAX_SEQ = 2**31 - 1
MAX_T_MS = 1e10
CONDITION_MAX = 100
# The server's clock bounds the client's: the log may claim this much more than passed on the server.
CLOCK_TOLERANCE_MS = 2000


class EvaluationClosed(ServiceError):
    status = 409
    code = "closed"


class EvaluationSeqConflict(ServiceError):
    """Another page load of the same evaluation logged these seqs: the client renumbers after next_seq."""

    status = 409
    code = "seq_conflict"

    def __init__(self, message: str, *, next_seq: int) -> None:
        super().__init__(message)
        self.next_seq = next_seq

    def data(self) -> dict[str, Any]:
        return {"next_seq": self.next_seq}


class EvaluationEventsMissing(EvaluationSeqConflict):
    """A submit naming a last seq the server has not stored yet: the client sends the rest first."""

    code = "events_missing"


def _refuse(field: str, message: str) -> ServiceError:
    return ServiceError(f"{field}: {message}")


# --------------------------------------------------------------------------- assigning


def prefill_from_highlights(item: Item, system: str, typology) -> list[dict]:
    """The item's highlights over the output `system` as spans (ESA^AI): a label naming a severity
    (minor, major, critical) gives that severity; one naming a category of the typology, that category;
    any other label is kept as the comment. A category the label does not give is "Other" (the first
    category when the typology has no "Other"); a severity, minor."""
    from annotations.design import DesignError, parse_spans

    text = item.outputs.get(system) if isinstance(item.outputs, dict) else None
    raw = item.highlights.get(system) if isinstance(item.highlights, dict) else None
    if not isinstance(text, str) or not raw:
        return []
    try:
        spans = parse_spans(raw, text)
    except DesignError:
        return []
    fallback = "Other" if "Other" in typology.categories else typology.categories[0]
    prefill = []
    for start, end, label in spans:
        severity = label.lower() if label.lower() in SEVERITIES else "minor"
        category = label if label in typology.categories else fallback
        comment = "" if label.lower() in SEVERITIES or label in typology.categories else label
        prefill.append({"start": start, "end": end, "category": category, "severity": severity, "comment": comment})
    return prefill


@transaction.atomic
def evaluation_assign(
    *,
    project: Project,
    raters: list,
    systems: Iterable[str] = (),
    post_edits: bool = False,
    protocol: str = Evaluation.MQM,
    condition: str = "",
    prefill: bool = False,
) -> int:
    """Pending evaluations for each rater: of every item's output of each of `systems`, or (post_edits)
    of every submitted post-edit of the project its rater did not write. Evaluations a rater already has
    are kept as they are (re-runnable). Returns how many were made."""
    systems = list(systems)
    twice = sorted({name for name in systems if systems.count(name) > 1})
    if twice:
        raise _refuse("systems", f"listed twice: {', '.join(twice)}")
    raters = list({user.pk: user for user in raters}.values())
    if protocol not in (Evaluation.MQM, Evaluation.ESA):
        raise _refuse("protocol", "must be mqm or esa")
    if not raters:
        raise _refuse("raters", "name at least one rater")
    not_annotators = [user.username for user in raters if not is_annotator(user) or not user.is_active]
    if not_annotators:
        raise _refuse("raters", f"not active annotators: {', '.join(not_annotators)}")
    if bool(systems) == post_edits:
        raise _refuse("systems", "evaluate either outputs (name their systems) or post-edits, one of them")
    if len(condition) > CONDITION_MAX:
        raise _refuse("condition", f"must be a name of at most {CONDITION_MAX} characters")
    if prefill and post_edits:
        raise _refuse("prefill", "highlights lie over outputs: post-edits are evaluated without prefilled spans")
    try:
        typology = project.typology()
    except TypologyError as exc:
        raise _refuse(exc.field, exc.message) from None
    existing: set[tuple[int, int, str, int | None]] = set(
        Evaluation.objects.filter(item__project=project, rater__in=raters).values_list(
            "item_id", "rater_id", "system", "post_edit_id"
        )
    )
    rows: list[Evaluation] = []
    common = {"protocol": protocol, "condition": condition, "status": Evaluation.PENDING}
    if post_edits:
        done = PostEdit.objects.filter(
            assignment__item__project=project,
            assignment__item__practice=False,
            assignment__status=Assignment.SUBMITTED,
            origin=PostEdit.LIVE,
        ).select_related("assignment")
        for post_edit in done.order_by("assignment__item__position", "pk"):
            for rater in raters:
                key = (post_edit.assignment.item_id, rater.pk, "", post_edit.pk)
                if post_edit.assignment.annotator_id != rater.pk and key not in existing:
                    rows.append(
                        Evaluation(item_id=key[0], rater=rater, post_edit=post_edit, text=post_edit.text, **common)
                    )
    else:
        items = list(project.items.filter(practice=False).order_by("position", "id"))
        missing = [
            name for name in systems if not any(isinstance(i.outputs, dict) and name in i.outputs for i in items)
        ]
        if missing:
            raise _refuse("systems", f"no item has an output {missing[0]!r}")
        for item in items:
            for system in systems:
                output = item.outputs.get(system) if isinstance(item.outputs, dict) else None
                if not isinstance(output, str):
                    continue
                spans = prefill_from_highlights(item, system, typology) if prefill else []
                for rater in raters:
                    if (item.pk, rater.pk, system, None) not in existing:
                        rows.append(
                            Evaluation(item=item, rater=rater, system=system, text=output, prefill=spans, **common)
                        )
    Evaluation.objects.bulk_create(rows)
    return len(rows)


# --------------------------------------------------------------------------- opening


def _locked(evaluation: Evaluation, rater) -> Evaluation:
    locked = Evaluation.objects.select_for_update().select_related("item__project").get(pk=evaluation.pk)
    if locked.rater_id != rater.pk:
        raise _refuse("rater", "this evaluation is another rater's")
    if locked.status == Evaluation.SUBMITTED:
        raise EvaluationClosed("evaluation: already submitted")
    return locked


def next_seq_of(evaluation: Evaluation) -> int:
    top = evaluation.events.aggregate(top=Max("seq"))["top"]
    return 0 if top is None else top + 1


@transaction.atomic
def evaluation_open(*, evaluation: Evaluation, rater) -> tuple[Evaluation, str, int]:
    """The evaluation in progress (its clock started at the first display), a new page load's id and
    the seq its log starts from."""
    locked = _locked(evaluation, rater)
    if locked.status == Evaluation.PENDING:
        locked.status = Evaluation.IN_PROGRESS
        locked.started_at = timezone.now()
        locked.save(update_fields=["status", "started_at"])
    return locked, str(uuid.uuid4()), next_seq_of(locked)


# --------------------------------------------------------------------------- the log


def _page_id(value: Any) -> uuid.UUID:
    try:
        if isinstance(value, str) and len(value) <= 64:
            return uuid.UUID(value)
    except ValueError:
        pass
    raise _refuse("page_id", "must be the page load's id (a UUID)")


def _event_rows(evaluation: Evaluation, page_id: uuid.UUID, events: Any) -> list[EvaluationEvent]:
    if not isinstance(events, list) or not 1 <= len(events) <= MAX_EVENTS_PER_BATCH:
        raise _refuse("events", f"must be a list of 1 to {MAX_EVENTS_PER_BATCH} events")
    rows = []
    seqs: set[int] = set()
    for n, event in enumerate(events):
        where = f"events[{n}]"
        if not isinstance(event, dict):
            raise _refuse(where, "must be an object with seq, t, k")
        seq, t, kind = event.get("seq"), event.get("t"), event.get("k")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
            raise _refuse(f"{where}.seq", f"must be a whole number from 0 to {MAX_SEQ}")
        if seq in seqs:
            raise _refuse(f"{where}.seq", f"seq {seq} appears twice in the batch")
        seqs.add(seq)
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 <= t <= MAX_T_MS:
            raise _refuse(f"{where}.t", "must be a time in ms (a finite number >= 0)")
        if kind not in EVENT_KINDS:
            raise _refuse(f"{where}.k", f"must be one of {', '.join(sorted(EVENT_KINDS))}")
        data = {key: value for key, value in event.items() if key not in ("seq", "t", "k")}
        if len(repr(data)) > MAX_EVENT_DATA_CHARS:
            raise _refuse(where, f"carries more than {MAX_EVENT_DATA_CHARS} characters of data")
        rows.append(
            EvaluationEvent(evaluation=evaluation, page_id=page_id, seq=seq, t_ms=float(t), kind=kind, data=data)
        )
    return rows


@transaction.atomic
def evaluation_ingest_events(*, evaluation: Evaluation, rater, page_id: Any, events: Any) -> dict:
    """Store a batch exactly once: {"stored": new events, "next_seq": the seq after the last stored}."""
    page = _page_id(page_id)
    locked = _locked(evaluation, rater)
    rows = _event_rows(locked, page, events)
    stored = dict(
        EvaluationEvent.objects.filter(evaluation=locked, seq__in=[row.seq for row in rows]).values_list(
            "seq", "page_id"
        )
    )
    taken = sorted(seq for seq, other in stored.items() if other != page)
    if taken:
        raise EvaluationSeqConflict(
            f"events: seq {taken[0]} was logged by another page load of this evaluation", next_seq=next_seq_of(locked)
        )
    new = [row for row in rows if row.seq not in stored]
    EvaluationEvent.objects.bulk_create(new)
    return {"stored": len(new), "next_seq": next_seq_of(locked)}


def log_times(events: Iterable[EvaluationEvent], *, idle_threshold_ms: float) -> tuple[float, float]:
    """(wall, active) ms of an evaluation's log, summed over its page loads as the editor's are
    (annotations.effort.times: idle gaps, hidden tab and unfocused window are not active). Client time
    does not run backwards within a page load: an event earlier than one before it counts at that time."""
    latest: dict[str, float] = {}
    log = []
    for event in sorted(events, key=lambda e: e.seq):
        page = str(event.page_id)
        t_ms = max(event.t_ms, latest.get(page, event.t_ms))
        latest[page] = t_ms
        data = event.data if isinstance(event.data, dict) else {}
        log.append(
            LogEvent(
                seq=event.seq,
                t_ms=t_ms,
                kind=event.kind,
                visit=page,
                state=str(data.get("state", "")),
                source=str(data.get("source", "")),
            )
        )
    wall = active = 0.0
    for visit in split_visits(log):
        times = visit_times(visit, idle_threshold_ms=idle_threshold_ms, limit_ms=None)
        wall += times.wall
        active += times.active
    return wall, active


# --------------------------------------------------------------------------- finishing


@transaction.atomic
def evaluation_finish(
    *, evaluation: Evaluation, rater, page_id: Any, last_seq: Any, spans: Any, esa_score: Any = None
) -> Evaluation:
    """Submit the task: the spans (prefilled ones say which they started as) and, for ESA, the score;
    wall and active time from the log, bounded by the server's time since the first display. Refuses,
    naming the field, before anything is stored; a log that lacks events up to `last_seq` is refused
    with the seq to send from."""
    locked = _locked(evaluation, rater)
    _page_id(page_id)
    if isinstance(last_seq, bool) or not isinstance(last_seq, int) or not -1 <= last_seq <= MAX_SEQ:
        raise _refuse("last_seq", "must be the seq of the page's last event (-1: none)")
    item = locked.item
    try:
        typology = item.project.typology()
        score = check_esa(esa_score)
    except TypologyError as exc:
        raise _refuse(exc.field, exc.message) from None
    if locked.protocol == Evaluation.ESA and score is None:
        raise _refuse("esa_score", "an ESA evaluation needs a score from 0 to 100")
    if locked.protocol == Evaluation.MQM and score is not None:
        raise _refuse("esa_score", "an MQM evaluation takes no score")
    prefill = locked.prefill if isinstance(locked.prefill, list) else []
    rows = checked_spans(spans, locked.text, item.source, typology, prefill)
    events = list(EvaluationEvent.objects.filter(evaluation=locked, seq__lte=last_seq))
    if len(events) != last_seq + 1:
        raise EvaluationEventsMissing(
            f"last_seq: events up to {last_seq} are not all stored yet", next_seq=next_seq_of(locked)
        )
    now = timezone.now()
    wall, active = log_times(events, idle_threshold_ms=item.project.idle_threshold_ms)
    if locked.started_at is not None:
        server_ms = (now - locked.started_at).total_seconds() * 1000.0 + CLOCK_TOLERANCE_MS
        wall = min(wall, server_ms)
    locked.esa_score = score
    locked.status = Evaluation.SUBMITTED
    locked.submitted_at = now
    locked.wall_ms = whole_ms(wall)
    locked.active_ms = min(whole_ms(active), locked.wall_ms)
    locked.save(update_fields=["esa_score", "status", "submitted_at", "wall_ms", "active_ms"])
    for row in rows:
        row.evaluation = locked
    ErrorSpan.objects.bulk_create(rows)
    return locked


def uses_non_translation(typology) -> bool:
    """Whether the chooser offers "Non-translation" (the typology has the category)."""
    return NON_TRANSLATION in typology.categories
