"""Editing services: open an item, ingest its event log, save drafts, submit, skip.

DECISIONS ON THE EDITOR <-> SERVER CONTRACT (binding for the browser side; everything in
/tmp/contract-events.md holds, these only settle its open points and add backward-compatible details)

Opening the editor
- The editor view calls ``post_edit_open(assignment=..., user=request.user)`` then
  ``editor_config(post_edit=..., visit=..., csrf_token=get_token(request))`` and embeds the dict it
  returns with ``{{ config|json_script:"editor-config" }}``. The config has exactly the contract keys
  (post_edit_id, page_id, next_seq, version, original, draft, idle_threshold_ms, urls{events, draft,
  submit, skip, next}, csrf_token). urls.next = the next open assignment's editor, else the annotator home.
- post_edit_open raises ``PostEditClosed`` for a submitted or skipped assignment (the view should show
  the diff / go home instead) and ``Http404`` if the assignment is not the user's.
- Opening a page ends every other open visit of this annotator (other items AND an older page load of
  the same item, e.g. a reload or a second tab).
- next_url / diff_url reverse the URL names ``editor`` (args=[assignment_id]), ``editor_diff``
  (args=[assignment_id]) and ``annotator_home``.

Endpoints (all POST; JSON with X-CSRFToken, or multipart/urlencoded with csrfmiddlewaretoken + `payload`
= the JSON as a string — accepted by ALL FOUR endpoints, so a draft can be beaconed too)
- Every error body is ``{"error": "<message>", ...}`` and, where a client must branch on it, a
  machine-readable ``"code"``. Anonymous -> 403, researcher/admin -> 403, another annotator's -> 404.
- events: a batch carries the events of ONE page load (its page_id). Pending events of an EARLIER page
  load (found in localStorage after a reload) must be sent in their own batch with THAT page load's
  page_id; the server accepts events for any visit of this post-edit, ended or not. page_id of no visit
  of this post-edit -> 400.
- events: (post_edit, seq) already stored by the SAME page_id -> a duplicate (counted, 200). Already
  stored by ANOTHER page_id (two tabs numbering from the same next_seq) -> 409
  ``{"error": ..., "code": "seq_conflict", "next_seq": k}`` and nothing of the batch stored: renumber
  the pending events from k and resend.
- events for a submitted or skipped post-edit -> 409 ``{"error": ..., "code": "closed"}``, unless every
  event of the batch is already stored (a retry) -> 200 with duplicates. The client may then drop them.
- events: the byte limit EDITLAB_EVENTS_MAX_BYTES applies to the request body; the same seq twice
  within one batch -> 400; t must be non-decreasing in seq order within the batch; seq <= 2**31-1.
- Required fields per kind (missing -> 400): keydown: key; beforeinput: it, s, e; input: it, s, len;
  select: s, e; visibility: state ("hidden"|"visible"); load: data, len. Strings may not contain NUL
  or unpaired surrogates (PostgreSQL cannot store them) -> 400.
- Two optional keys beyond the contract: `src` is also allowed on focus/blur ("window" default,
  "textarea"): only WINDOW focus/blur count as unfocused time, so log window focus/blur (reading the
  references in the same page is work). `f` (bool) on an input: `data` is the full text after the
  change; use it whenever the change is not "selection [before.s, before.e] replaced by data" (e.g.
  insertReplacementText from the spell checker, whose range is not the selection).
- draft: 409 ``{"error": "conflict", "server_text", "server_version"}`` on a stale version; a closed
  post-edit -> 409 ``{"error": ..., "code": "closed"}``.
- submit: a stale `version` also answers 409 conflict (same body as draft), so the other tab's text is
  seen before finishing. The client must have its events acknowledged up to last_seq before it calls
  submit; if some are missing the submit is still accepted (work is never refused) and flagged
  "event_gap" (the missing ranges in event_gaps). A repeated submit -> the same 200, nothing changed.
  Submitting a skipped post-edit -> 409 code "closed".
- skip: reason required (400 if blank); a repeated skip -> 200; skipping a submitted one -> 409 "closed".

Replay and effort: see annotations/replay.py and annotations/effort.py (their docstrings are the
published definition, version DEFINITION_VERSION). IME: a beforeinput of insertCompositionText may
report either the composition's range (then `data` is the whole new composition: exact) or the IME's
caret (then the server replays from the latest compositionupdate `data`); both replay.

Concurrency: every write locks the assignment and/or post-edit row (select_for_update; lock order
assignment -> post-edit -> visits), so concurrent re-sends store an event once and concurrent submits
give one result (checked by hand with 4 threads on PostgreSQL).
"""

import bisect
import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Max, TextField
from django.db.models.functions import Cast
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from annotations.effort import LogEvent, derive_effort
from annotations.models import DEFINITION_VERSION, EFFORT_FIELDS, Assignment, EditEvent, PostEdit, Visit
from annotations.replay import replay

FLAG_EVENT_GAP = "event_gap"
FLAG_REPLAY_MISMATCH = "replay_mismatch"
FLAG_WALL_CLIPPED = "wall_clipped"


class EditingError(Exception):
    """A request the services refuse; the message says why, for the client."""

    status = 400
    code = "invalid"

    def payload(self) -> dict:
        return {"error": str(self), "code": self.code}


class InvalidInput(EditingError):
    pass


class UnknownPage(EditingError):
    code = "unknown_page"


class PostEditClosed(EditingError):
    status = 409
    code = "closed"


class SeqConflict(EditingError):
    status = 409
    code = "seq_conflict"

    def __init__(self, message: str, *, next_seq: int):
        super().__init__(message)
        self.next_seq = next_seq

    def payload(self) -> dict:
        return {**super().payload(), "next_seq": self.next_seq}


class DraftConflict(EditingError):
    status = 409
    code = "conflict"

    def __init__(self, *, server_text: str, server_version: int):
        super().__init__("conflict")
        self.server_text = server_text
        self.server_version = server_version

    def payload(self) -> dict:
        return {
            "error": "conflict",
            "code": self.code,
            "server_text": self.server_text,
            "server_version": self.server_version,
        }


@dataclass(frozen=True)
class IngestResult:
    stored: int
    duplicates: int
    gaps: list[list[int]]
    max_seq: int


@dataclass(frozen=True)
class Navigation:
    next_url: str
    diff_url: str


# ---------------------------------------------------------------- URLs


def editor_url(assignment_id: int) -> str:
    return reverse("editor", args=[assignment_id])


def diff_url(assignment_id: int) -> str:
    return reverse("editor_diff", args=[assignment_id])


def next_url_for(user, *, after: Assignment | None = None) -> str:
    """The next open item's editor (in batch order), or the annotator home when none is left."""
    open_assignments = Assignment.objects.open_for(user)
    if after is not None:
        open_assignments = open_assignments.exclude(pk=after.pk)
    following = open_assignments.values_list("pk", flat=True).first()
    if following is None:
        return reverse("annotator_home")
    return editor_url(following)


# ---------------------------------------------------------------- opening


def _ensure_text(value: str, *, field: str) -> None:
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character, which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains an unpaired surrogate (broken UTF-16)") from None


@transaction.atomic
def post_edit_open(*, assignment: Assignment, user, now: datetime | None = None) -> tuple[PostEdit, Visit]:
    """Show an item to its annotator: one PostEdit (created once), one new Visit for this page load."""
    now = now or timezone.now()
    assignment = Assignment.objects.select_for_update().select_related("item").get(pk=assignment.pk)
    if assignment.annotator_id != user.pk:
        raise Http404("No such assignment.")
    if not assignment.is_open:
        raise PostEditClosed(f"this item is already {assignment.get_status_display()}")
    post_edit, _ = PostEdit.objects.get_or_create(
        assignment=assignment, defaults={"draft_text": assignment.item.model_output}
    )
    if post_edit.first_shown_at is None:
        post_edit.first_shown_at = now
        post_edit.save(update_fields=["first_shown_at", "updated"])
    if assignment.status == Assignment.PENDING:
        assignment.status = Assignment.IN_PROGRESS
        assignment.started = assignment.started or now
        assignment.save(update_fields=["status", "started"])
    # Create first, then end the others: lock order assignment -> post-edit -> visits everywhere.
    visit = Visit.objects.create(post_edit=post_edit, started_at=now, last_seen_at=now)
    Visit.objects.filter(post_edit__assignment__annotator=user, ended_at__isnull=True).exclude(pk=visit.pk).update(
        ended_at=now
    )
    post_edit.assignment = assignment
    return post_edit, visit


def next_seq_of(post_edit: PostEdit) -> int:
    top = post_edit.events.aggregate(top=Max("seq"))["top"]
    return 0 if top is None else top + 1


def editor_config(*, post_edit: PostEdit, visit: Visit, csrf_token: str) -> dict:
    """The JSON the editor page embeds (json_script id "editor-config")."""
    assignment = post_edit.assignment
    return {
        "post_edit_id": post_edit.pk,
        "page_id": str(visit.page_id),
        "next_seq": next_seq_of(post_edit),
        "version": post_edit.version,
        "original": assignment.item.model_output,
        "draft": post_edit.draft_text,
        "idle_threshold_ms": round(assignment.item.project.idle_threshold_s * 1000),
        "urls": {
            "events": reverse("api-post-edit-events", args=[post_edit.pk]),
            "draft": reverse("api-post-edit-draft", args=[post_edit.pk]),
            "submit": reverse("api-post-edit-submit", args=[post_edit.pk]),
            "skip": reverse("api-post-edit-skip", args=[post_edit.pk]),
            "next": next_url_for(assignment.annotator, after=assignment),
        },
        "csrf_token": csrf_token,
    }


# ---------------------------------------------------------------- helpers


def _locked(post_edit: PostEdit) -> PostEdit:
    return (
        PostEdit.objects.select_for_update(of=("self",))
        .select_related("assignment__item__project")
        .get(pk=post_edit.pk)
    )


def _locked_for_events(post_edit: PostEdit) -> PostEdit:
    """Locked like _locked, loading only what ingestion reads: ~half the ORM cost per batch."""
    return (
        PostEdit.objects.select_for_update(of=("self",))
        .select_related("assignment")
        .only("id", "assignment", "event_gaps", "assignment__status")
        .get(pk=post_edit.pk)
    )


def _visit_of(post_edit: PostEdit, page_id: uuid.UUID | str) -> Visit:
    try:
        return post_edit.visits.get(page_id=page_id)
    except (Visit.DoesNotExist, ValueError):
        raise UnknownPage(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}") from None


def _touch_visit(post_edit: PostEdit, page_id: uuid.UUID | str, now: datetime) -> int:
    """Mark the page load as seen now and return its visit id, in one statement (UnknownPage if the
    page_id is no page load of this post-edit). Ingestion's hot path: the ORM's get + update were two
    round trips and ~0.9 ms of CPU per batch."""
    meta = Visit._meta
    quote = connection.ops.quote_name
    try:
        page = meta.get_field("page_id").get_db_prep_value(page_id, connection)
    except (ValueError, ValidationError):
        raise UnknownPage(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}") from None
    seen = meta.get_field("last_seen_at").get_db_prep_save(now, connection)
    sql = "UPDATE {} SET {} = %s WHERE {} = %s AND {} = %s RETURNING {}".format(
        quote(meta.db_table), quote("last_seen_at"), quote("post_edit_id"), quote("page_id"), quote("id")
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [seen, post_edit.pk, page])
        row = cursor.fetchone()
    if row is None:
        raise UnknownPage(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}")
    return row[0]


def _is_closed(post_edit: PostEdit) -> bool:
    return post_edit.assignment.status in (Assignment.SUBMITTED, Assignment.SKIPPED)


def _merge_gaps(gaps: list[list[int]], *, previous_max: int, new_seqs: list[int]) -> list[list[int]]:
    """Missing seq ranges after storing new_seqs, from the recorded gaps (no scan of the log).

    Works on the arrived seqs only, so a far jump (seq 2**31 - 1) costs no more than a near one.
    """
    arrived = sorted(set(new_seqs))
    candidates = [(first, last) for first, last in gaps]
    top = arrived[-1] if arrived else previous_max
    if top > previous_max + 1:
        candidates.append((previous_max + 1, top - 1))
    merged: list[list[int]] = []
    for first, last in candidates:
        low = bisect.bisect_left(arrived, first)
        high = bisect.bisect_right(arrived, last)
        start = first
        for seq in arrived[low:high]:
            if seq > start:
                merged.append([start, seq - 1])
            start = seq + 1
        if start <= last:
            merged.append([start, last])
    return sorted(merged)


# ---------------------------------------------------------------- events


# Every column of EditEvent but the id, in the order of _event_values. A new EditEvent field must be
# added here too (the ingestion tests fail until it is).
EVENT_INSERT_COLUMNS = (
    "post_edit_id",
    "visit_id",
    "seq",
    "t_ms",
    "received_at",
    "kind",
    "key",
    "code",
    "modifiers",
    "repeat",
    "input_type",
    "sel_start",
    "sel_end",
    "data",
    "deleted",
    "length_after",
    "extra",
)


def _event_values(post_edit_id: int, visit_id: int, event: dict, received_at, extra_field) -> tuple:
    """One row for EVENT_INSERT_COLUMNS from a validated event (its values already have the column types)."""
    extra = {name: event[name] for name in ("state", "src", "f") if name in event}
    return (
        post_edit_id,
        visit_id,
        event["seq"],
        event["t"],
        received_at,
        event["k"],
        event.get("key", ""),
        event.get("code", ""),
        event.get("mods", 0),
        event.get("rep", False),
        event.get("it", ""),
        event.get("s"),
        event.get("e"),
        event.get("data", ""),
        "",
        event.get("len"),
        extra_field.get_db_prep_save(extra, connection),
    )


def _insert_events(post_edit: PostEdit, visit_id: int, events: list[dict], now: datetime) -> None:
    """INSERT the events with multi-row INSERT statements (one per batch on PostgreSQL).

    The hot path of ingestion (~100 batches/s with 200 annotators): bulk_create's per-field
    preparation of model instances cost ~1.3 ms of CPU per 20-event batch, and one INSERT per row
    (executemany) made PostgreSQL parse and plan every row; here only the two values that need a
    backend adapter (the time, once; the JSON `extra`) go through their fields.
    """
    if not events:
        return
    meta = EditEvent._meta
    quote = connection.ops.quote_name
    received_at = meta.get_field("received_at").get_db_prep_save(now, connection)
    extra_field = meta.get_field("extra")
    rows = [_event_values(post_edit.pk, visit_id, event, received_at, extra_field) for event in events]
    head = "INSERT INTO {} ({}) VALUES ".format(
        quote(meta.db_table), ", ".join(quote(name) for name in EVENT_INSERT_COLUMNS)
    )
    placeholders = "({})".format(", ".join(["%s"] * len(EVENT_INSERT_COLUMNS)))
    fields = [meta.get_field(name.removesuffix("_id")) for name in EVENT_INSERT_COLUMNS]
    size = max(1, connection.ops.bulk_batch_size(fields, rows))  # SQLite caps the parameters
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            cursor.execute(head + ", ".join([placeholders] * len(chunk)), [value for row in chunk for value in row])


def _stored_seqs_and_top(post_edit_id: int, seqs: list[int]) -> dict[int, int | None]:
    """{seq: visit id} of the stored events in the batch's seq range, plus the top stored seq's row.

    One plain statement, the hot path of ingestion (~100 batches/s with 200 annotators): the ORM's
    compilation cost ~1 ms of CPU per batch. Both parts ORDER BY seq so that PostgreSQL walks the
    (post_edit, seq) index: when the statistics do not know a new post-edit yet (rows=1), it would
    otherwise take the post_edit index and filter all the post-edit's events, every batch (1.3 ms
    instead of 0.06 ms at 8,000 events). The top row is always in the result, so the max of its
    keys is the top seq; callers keep the seqs they sent.
    """
    quote = connection.ops.quote_name
    table, seq, post_edit, visit = (
        quote(name) for name in (EditEvent._meta.db_table, "seq", "post_edit_id", "visit_id")
    )
    top = (
        f"SELECT {seq}, {visit} FROM (SELECT {seq}, {visit} FROM {table} WHERE {post_edit} = %s "
        f"ORDER BY {seq} DESC LIMIT 1) AS top_row"
    )
    sql, params = top, [post_edit_id]
    if seqs:
        in_range = (
            f"SELECT {seq}, {visit} FROM (SELECT {seq}, {visit} FROM {table} WHERE {post_edit} = %s "
            f"AND {seq} BETWEEN %s AND %s ORDER BY {seq}) AS batch_rows"
        )
        sql, params = f"{in_range} UNION ALL {top}", [post_edit_id, min(seqs), max(seqs), post_edit_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())


@transaction.atomic
def post_edit_ingest_events(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, events: list[dict], now: datetime | None = None
) -> IngestResult:
    """Store a validated batch (contract EVENT dicts) once; record gaps. All or nothing."""
    now = now or timezone.now()
    post_edit = _locked_for_events(post_edit)
    visit_id = _touch_visit(post_edit, page_id, now)  # rolled back with the batch if it is refused
    seqs = [event["seq"] for event in events]
    found = _stored_seqs_and_top(post_edit.pk, seqs)
    previous_max = max(found, default=-1)
    requested = set(seqs)
    stored_pages = {seq: visit_id for seq, visit_id in found.items() if seq in requested}
    foreign = sorted(seq for seq, stored_visit in stored_pages.items() if stored_visit != visit_id)
    if foreign:
        raise SeqConflict(
            f"seq {foreign[0]} is already taken by another page load of this post-edit (another tab?); "
            f"renumber the pending events from {previous_max + 1} and send them again",
            next_seq=previous_max + 1,
        )
    fresh = [event for event in events if event["seq"] not in stored_pages]
    if fresh and _is_closed(post_edit):
        raise PostEditClosed(
            f"post-edit {post_edit.pk} is already {post_edit.assignment.get_status_display()}; it accepts no new events"
        )
    _insert_events(post_edit, visit_id, fresh, now)
    gaps = _merge_gaps(post_edit.event_gaps, previous_max=previous_max, new_seqs=[e["seq"] for e in fresh])
    if gaps != post_edit.event_gaps:
        post_edit.event_gaps = gaps
        post_edit.save(update_fields=["event_gaps", "updated"])
    return IngestResult(
        stored=len(fresh),
        duplicates=len(events) - len(fresh),
        gaps=gaps,
        max_seq=max([previous_max, *seqs]),
    )


# ---------------------------------------------------------------- drafts


@transaction.atomic
def post_edit_save_draft(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, text: str, version: int, now: datetime | None = None
) -> int:
    """Save the draft if `version` is the stored one; returns the new version."""
    now = now or timezone.now()
    _ensure_text(text, field="text")
    post_edit = _locked(post_edit)
    visit = _visit_of(post_edit, page_id)
    if _is_closed(post_edit):
        raise PostEditClosed(f"post-edit {post_edit.pk} is already {post_edit.assignment.get_status_display()}")
    if version != post_edit.version:
        raise DraftConflict(server_text=post_edit.draft_text, server_version=post_edit.version)
    post_edit.draft_text = text
    post_edit.version += 1
    post_edit.save(update_fields=["draft_text", "version", "updated"])
    Visit.objects.filter(pk=visit.pk).update(last_seen_at=now)
    return post_edit.version


# ---------------------------------------------------------------- submit


def _ms(delta) -> float:
    return delta.total_seconds() * 1000.0


def visit_server_span_ms(visit: Visit) -> float:
    """Server-observed span of a visit: start .. last request, cut where another page was opened."""
    end = visit.last_seen_at
    if visit.ended_at is not None and visit.ended_at < end:
        end = visit.ended_at
    return max(0.0, _ms(end - visit.started_at))


LOG_COLUMNS = (
    "seq",
    "t_ms",
    "kind",
    "visit_id",
    "key",
    "code",
    "modifiers",
    "repeat",
    "input_type",
    "sel_start",
    "sel_end",
    "data",
    "length_after",
    "extra_text",
)


def stored_log(post_edit: PostEdit) -> list[LogEvent]:
    """The post-edit's events in seq order, as the pure effort/replay functions take them."""
    # Column values, not model instances, and `extra` as text (nearly always "{}"): a long log
    # loads several times faster than through the JSON and UUID field converters.
    pages = {pk: str(page_id) for pk, page_id in post_edit.visits.values_list("pk", "page_id")}
    rows = post_edit.events.order_by("seq").annotate(extra_text=Cast("extra", TextField())).values_list(*LOG_COLUMNS)
    log = []
    for seq, t_ms, kind, visit_id, key, code, modifiers, repeat, input_type, s, e, data, length, extra_text in rows:
        extra = json.loads(extra_text) if extra_text and extra_text != "{}" else {}
        log.append(
            LogEvent(
                seq=seq,
                t=t_ms,
                k=kind,
                page=pages.get(visit_id, ""),
                key=key,
                code=code,
                mods=modifiers,
                rep=repeat,
                it=input_type,
                s=s,
                e=e,
                data=data,
                len=length,
                state=extra.get("state", ""),
                src=extra.get("src", ""),
                f=bool(extra.get("f", False)),
            )
        )
    return log


def _navigation(post_edit: PostEdit) -> Navigation:
    assignment = post_edit.assignment
    return Navigation(next_url=next_url_for(assignment.annotator, after=assignment), diff_url=diff_url(assignment.pk))


@transaction.atomic
def post_edit_submit(
    *,
    post_edit: PostEdit,
    page_id: uuid.UUID | str,
    text: str,
    version: int,
    last_seq: int,
    now: datetime | None = None,
) -> Navigation:
    """Finish the edit: derive effort from the stored log, replay it, clip by server time. Idempotent."""
    now = now or timezone.now()
    _ensure_text(text, field="text")
    assignment = Assignment.objects.select_for_update().get(pk=post_edit.assignment_id)
    post_edit = _locked(post_edit)
    if assignment.status == Assignment.SUBMITTED:
        return _navigation(post_edit)
    if assignment.status == Assignment.SKIPPED:
        raise PostEditClosed(f"post-edit {post_edit.pk} was skipped; it cannot be submitted")
    visit = _visit_of(post_edit, page_id)
    if version != post_edit.version:
        raise DraftConflict(server_text=post_edit.draft_text, server_version=post_edit.version)

    visit.last_seen_at = now
    visit.ended_at = visit.ended_at or now
    visit.save(update_fields=["last_seen_at", "ended_at"])
    visits = list(post_edit.visits.all())
    tolerance = settings.EDITLAB_CLOCK_TOLERANCE_MS
    limits = {str(v.page_id): visit_server_span_ms(v) + tolerance for v in visits}
    events = stored_log(post_edit)
    effort = derive_effort(
        events,
        idle_threshold_ms=post_edit.assignment.item.project.idle_threshold_s * 1000.0,
        visit_limits_ms=limits,
    )
    result = replay(post_edit.original, events, final_text=text)

    for name in EFFORT_FIELDS:
        setattr(post_edit, name, getattr(effort, name))
    if effort.clipped_ms > 0:
        post_edit.add_flag(FLAG_WALL_CLIPPED)
    post_edit.replay_ok = result.ok
    post_edit.replay_divergence = result.divergence
    if not result.ok:
        post_edit.add_flag(FLAG_REPLAY_MISMATCH)
    max_seq = max((event.seq for event in events), default=-1)
    if last_seq > max_seq:
        post_edit.event_gaps = sorted([*post_edit.event_gaps, [max_seq + 1, last_seq]])
    if post_edit.event_gaps:
        post_edit.add_flag(FLAG_EVENT_GAP)
    post_edit.text = text
    post_edit.draft_text = text
    post_edit.submitted_at = now
    post_edit.server_elapsed_ms = round(sum(visit_server_span_ms(v) for v in visits))
    post_edit.definition_version = DEFINITION_VERSION
    post_edit.save()

    assignment.status = Assignment.SUBMITTED
    assignment.finished = now
    assignment.save(update_fields=["status", "finished"])
    post_edit.assignment = assignment
    return _navigation(post_edit)


# ---------------------------------------------------------------- skip


@transaction.atomic
def post_edit_skip(*, post_edit: PostEdit, page_id: uuid.UUID | str, reason: str, now: datetime | None = None) -> str:
    """Give the item up with a reason; returns the next URL. Events and draft are kept."""
    now = now or timezone.now()
    reason = reason.strip()
    if not reason:
        raise InvalidInput("reason: say why you skip this item")
    _ensure_text(reason, field="reason")
    assignment = Assignment.objects.select_for_update().get(pk=post_edit.assignment_id)
    post_edit = _locked(post_edit)
    if assignment.status == Assignment.SUBMITTED:
        raise PostEditClosed(f"post-edit {post_edit.pk} is already submitted; it cannot be skipped")
    visit = _visit_of(post_edit, page_id)
    if assignment.status != Assignment.SKIPPED:
        assignment.status = Assignment.SKIPPED
        assignment.skip_reason = reason
        assignment.finished = now
        assignment.save(update_fields=["status", "skip_reason", "finished"])
        Visit.objects.filter(pk=visit.pk).update(last_seen_at=now, ended_at=visit.ended_at or now)
    return next_url_for(assignment.annotator, after=assignment)
