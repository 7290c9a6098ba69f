"""Crowd participants: the accounts a participation link makes (annotations/services/join_links.py),
the work each one gets (annotations/services/participant_design.py), and when they are done.

- Joining with an id creates, once, an annotator-role account bound to it (Participant; an
  unusable password: the link is the only way in), in the next free slot of the project's design,
  and gives it its queue (practice items first). Joining again with the same id resumes: never a
  second account or slot. Ids are compared by their key, NFKC then case folding (`platform_key`):
  an id as given, in upper case or in full-width letters is one participant. Slots are taken
  under the project's row lock; the unique (project, slot of a held slot) and (project, key)
  constraints are the backstop.
- A participant whose work is all submitted (or skipped) is complete: Participant.completed_at is
  set. The code is earned when at most the link's `max_skips` non-practice items were skipped
  (default 0: every non-practice item submitted): the completion page shows the link's code or
  sends them to its completion URL. Otherwise (outcome no_code) the page says why there is no code
  and asks them to return the study on the platform, and the slot is released. One who failed more
  attention checks than the link's `max_failed_checks` (annotations/services/participants_checks.py)
  gets the link's failed code or URL instead (outcome failed_check; the slot is released).
- A slot held without activity (joining, opening an item, a batch of events, a submit or skip)
  for the link's `idle_minutes` (default 30; 0: never) is released when a newcomer joins: its open
  work is closed as skipped (reason said), the participant's outcome is idle, and the newcomer
  takes the slot and its queue. Released slots count for neither max_participants nor the design.
- Start is rate-limited per client address (JoinCounter: a window of an hour), whatever the link;
  a Start that is refused (bad ids, closed, full, not ready, too many) is not counted.
"""

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, QuerySet
from django.utils import timezone

from annotations.models import Assignment, JoinCounter, JoinLink, Participant, Project
from annotations.roles import ANNOTATOR, set_role
from annotations.services.errors import ServiceError
from annotations.services.join_links import IDLE_MINUTES_DEFAULT, PlatformIds, platform_id_error, platform_key
from annotations.services.participant_design import SlotDesign, participant_design
from annotations.services.participants_checks import failed_checks

JOIN_WINDOW = timedelta(hours=1)
STALE_AFTER = timedelta(days=1)


class JoinRefused(ServiceError):
    """The link admits nobody (closed), the study has all its participants (full), the project
    cannot give a participant work (not_ready), or the client's address pressed Start too often
    (too_many, with the wait). The message is meant for the participant."""

    STATUS = {"closed": 410, "released": 410, "full": 409, "not_ready": 503, "too_many": 429}

    def __init__(self, code: str, message: str, *, retry_after_s: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.status = self.STATUS[code]
        self.retry_after_s = retry_after_s


# --------------------------------------------------------------------------- joining


@dataclass(frozen=True)
class JoinResult:
    participant: Participant
    created: bool


@transaction.atomic
def participant_join(*, join_link: JoinLink, ids: PlatformIds) -> JoinResult:
    """The participant with this platform id in the link's project, created with its slot and
    queue on its first join; JoinRefused when the link is closed, the study full or not ready."""
    _check_ids(ids)
    key = platform_key(ids.participant)
    # One join at a time per project: the slot count and the free slot are read under this lock.
    project = Project.objects.select_for_update().get(pk=join_link.project_id)
    link = JoinLink.objects.get(pk=join_link.pk)
    existing = Participant.objects.select_related("user", "join_link").filter(project=project, platform_key=key).first()
    if existing is not None:
        if not existing.user.is_active:
            raise JoinRefused("closed", "Your participation in this study has been ended by the researchers.")
        if existing.outcome == Participant.IDLE:
            raise JoinRefused("released", released_message(existing))
        return JoinResult(existing, created=False)
    now = timezone.now()
    _release(idle_participants(project=project, now=now), now=now)
    design, slot = _admission(link, project)
    user = _participant_account(project, slot)
    participant = Participant.objects.create(
        user=user,
        project=project,
        join_link=link,
        platform_id=ids.participant,
        platform_key=key,
        study_id=ids.study,
        session_id=ids.session,
        slot=slot,
    )
    Assignment.objects.bulk_create(
        [
            Assignment(item_id=item_id, annotator=user, condition=condition, queue_position=position)
            for position, (item_id, condition) in enumerate(design.queue(slot))
        ],
        batch_size=1000,
    )
    return JoinResult(participant, created=True)


FULL = "This study has all the participants it needs. Thank you for your interest!"


def _admission(link: JoinLink, project: Project, *, releasable: Sequence[Participant] = ()) -> tuple[SlotDesign, int]:
    """The design and the free slot a newcomer would get (counting `releasable` ones as free);
    JoinRefused when there is none."""
    if link.revoked_at is not None:
        raise JoinRefused("closed", "This study link is closed: the study takes no new participants.")
    freed = {participant.pk for participant in releasable}
    held = project.participants.filter(released_at__isnull=True).exclude(pk__in=freed)
    if link.max_participants is not None and held.filter(join_link=link).count() >= link.max_participants:
        raise JoinRefused("full", FULL)
    try:
        design = participant_design(project=project)
    except ServiceError as exc:
        raise JoinRefused("not_ready", f"This study is not ready to take participants yet ({exc}).") from None
    slot = design.slot_for(set(held.values_list("slot", flat=True)))
    if slot is None:
        raise JoinRefused("full", FULL)
    return design, slot


def join_refusal(*, join_link: JoinLink) -> JoinRefused | None:
    """Why the link would turn a newcomer away now, or None (read without locks, for the welcome
    page; Start decides again under the project's lock)."""
    project = join_link.project
    try:
        _admission(join_link, project, releasable=idle_participants(project=project, now=timezone.now()))
    except JoinRefused as refusal:
        return refusal
    return None


# --------------------------------------------------------------------------- idle slots


def idle_participants(*, project: Project, now: datetime) -> list[Participant]:
    """The project's participants holding a slot with open work (one who finished it all keeps the
    slot, whether or not it opened the completion page) and no activity for their link's
    idle_minutes: joining, opening an item, a batch of events, a submit or a skip (the latest of
    those is `last_active`, annotated on each)."""
    open_work = Assignment.objects.filter(annotator=OuterRef("user_id")).open()
    holding = project.participants.filter(Exists(open_work), released_at__isnull=True, completed_at=None)
    idle = []
    for participant in with_last_activity(holding):
        minutes = participant.join_link.idle_minutes if participant.join_link is not None else IDLE_MINUTES_DEFAULT
        last = participant.last_active or participant.joined_at
        if minutes and last <= now - timedelta(minutes=minutes):
            idle.append(participant)
    return idle


def with_last_activity(participants: QuerySet) -> list[Participant]:
    """The participants, each with `last_active`: the latest time the server saw them work."""
    work = "user__assignments"
    rows = participants.select_related("join_link").annotate(
        last_seen=Max(f"{work}__post_edit__visits__last_seen_at"),
        last_started=Max(f"{work}__started"),
        last_finished=Max(f"{work}__finished"),
    )
    found = []
    for participant in rows:
        times = [participant.joined_at, participant.last_seen, participant.last_started, participant.last_finished]
        participant.last_active = max(t for t in times if t is not None)
        found.append(participant)
    return found


def _release(participants: Sequence[Participant], *, now: datetime) -> int:
    """Gives up the slots of idle participants (under the project's lock): their open work is
    closed as skipped with the reason, their outcome is idle. Rows locked and checked again, so a
    participant who completed meanwhile keeps its slot. How many were released."""
    if not participants:
        return 0
    ids = [participant.pk for participant in participants]
    locked = list(
        Participant.objects.select_for_update().filter(pk__in=ids, released_at__isnull=True, completed_at=None)
    )
    for participant in locked:
        minutes = participant.join_link.idle_minutes if participant.join_link is not None else IDLE_MINUTES_DEFAULT
        Assignment.objects.open_for(participant.user_id).update(
            status=Assignment.SKIPPED,
            skip_reason=f"released: no activity for {minutes} minutes; the slot went to another participant",
            finished=now,
        )
    Participant.objects.filter(pk__in=[p.pk for p in locked]).update(released_at=now, outcome=Participant.IDLE)
    return len(locked)


def participant_status(participant: Participant, *, now: datetime) -> str:
    """What the Participants page says of a participant's slot (`last_active` annotated)."""
    if participant.outcome == Participant.CODE:
        return "earned the code"
    if participant.outcome == Participant.NO_CODE:
        return "finished without the code (too many skipped); slot released"
    if participant.outcome == Participant.IDLE:
        return f"released as idle at {participant.released_at:%Y-%m-%d %H:%M} UTC"
    if participant.outcome == Participant.FAILED:
        return "failed the attention checks: given the failed code; slot released"
    if participant.outcome == Participant.DECLINED:
        return "declined consent: no work recorded; slot released"
    if getattr(participant, "assigned", 1) == getattr(participant, "submitted", 0) + getattr(participant, "skipped", 0):
        return "all work done; the completion page decides the code when they open it"
    minutes = participant.join_link.idle_minutes if participant.join_link is not None else IDLE_MINUTES_DEFAULT
    last = participant.last_active or participant.joined_at
    if minutes and last <= now - timedelta(minutes=minutes):
        return f"idle over {minutes} min: released when someone joins"
    return "working"


RETURN_NOTE = (
    "Please return the study on the platform you came from (on Prolific: open the study and choose "
    "\u201cReturn submission\u201d), so that your place goes to someone else."
)


def released_message(participant: Participant) -> str:
    minutes = participant.join_link.idle_minutes if participant.join_link is not None else IDLE_MINUTES_DEFAULT
    return (
        f"Your place in this study was released after {minutes} minutes without activity, and its items were "
        f"given to another participant, so there is no completion code for you. {RETURN_NOTE}"
    )


@transaction.atomic
def participant_start(*, join_link: JoinLink, ids: PlatformIds, address: str) -> JoinResult:
    """Start pressed from `address`: the Start is counted against the address's limit and the
    participant joined (or resumed) in one transaction, so a refused Start (too many from the
    address, closed, full, not ready) changes nothing; JoinRefused says which."""
    attempt = join_attempt_begin(address=address)
    if attempt.refused:
        raise JoinRefused("too_many", attempt.message(), retry_after_s=attempt.retry_after_s)
    return participant_join(join_link=join_link, ids=ids)


def _check_ids(ids: PlatformIds) -> None:
    if not ids.participant:
        raise ServiceError("participant: the participant id is missing")
    for value, name in ((ids.participant, "participant"), (ids.study, "study"), (ids.session, "session")):
        error = platform_id_error(value, name=name) if value else None
        if error:
            raise ServiceError(error)


def _participant_account(project: Project, slot: int):
    """An annotator account no one can log into with a password: the link is its only way in. Its
    name says nothing of the person (p<project>-<slot>-<random>)."""
    User = get_user_model()
    username = f"p{project.pk}-{slot}-{secrets.token_hex(3)}"
    while User.objects.filter(username=username).exists():
        username = f"p{project.pk}-{slot}-{secrets.token_hex(3)}"
    user = User(username=username)
    user.set_unusable_password()
    user.save()
    set_role(user, ANNOTATOR)
    return user


# --------------------------------------------------------------------------- completing


@transaction.atomic
def participant_complete(*, participant: Participant) -> bool:
    """Marks the participant complete once none of its work is open, with its outcome: the code
    when it skipped at most the link's max_skips non-practice items, else no code (and its slot is
    released). Whether the participant has nothing left to do (complete, or released as idle)."""
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.completed_at is not None or participant.outcome == Participant.IDLE:
        return True
    if Assignment.objects.open_for(participant.user_id).exists():
        return False
    now = timezone.now()
    participant.completed_at = now
    if completion_shortfall(participant) is not None:
        participant.outcome, participant.released_at = Participant.NO_CODE, now
    elif failed_checks(participant):
        participant.outcome, participant.released_at = Participant.FAILED, now
    else:
        participant.outcome = Participant.CODE
    participant.save(update_fields=["completed_at", "outcome", "released_at"])
    return True


def completion_shortfall(participant: Participant) -> str | None:
    """Why the participant's work does not earn the completion code (for the participant), or None."""
    allowed = participant.join_link.max_skips if participant.join_link is not None else 0
    items = Assignment.objects.filter(annotator_id=participant.user_id, item__practice=False)
    skipped = items.filter(status=Assignment.SKIPPED).count()
    if skipped <= allowed:
        return None
    rule = "every item submitted" if allowed == 0 else f"at most {allowed} item{'s' if allowed != 1 else ''} skipped"
    return (
        f"You skipped {skipped} of the study's {items.count()} items. The completion code of this study is for "
        f"{rule}, so there is no code for you. {RETURN_NOTE}"
    )


# --------------------------------------------------------------------------- the rate limit


@dataclass(frozen=True)
class JoinAttempt:
    address: str
    retry_after_s: int = 0  # 0: allowed (and counted)

    @property
    def refused(self) -> bool:
        return self.retry_after_s > 0

    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after_s / 60))
        return (
            f"Too many participants started from your network address in the last hour. Please wait "
            f"{minutes} minute{'s' if minutes != 1 else ''} and open the study link again."
        )


def join_attempt_begin(*, address: str) -> JoinAttempt:
    """Counts a Start from `address`, or refuses it (counting nothing) when the address has used
    EDITLAB_JOIN_STARTS_PER_HOUR in the window that began with its first. Within a transaction
    (participant_start), the count is undone with it."""
    address = address[:45] or "unknown"
    for _ in range(3):
        attempt = _begin(address)
        if attempt is not None:
            return attempt
    raise RuntimeError("the join counter kept disappearing while being locked")


def _begin(address: str) -> JoinAttempt | None:
    now = timezone.now()
    with transaction.atomic():
        # The row exists before it is locked, so concurrent first starts queue on the same row.
        JoinCounter.objects.bulk_create([JoinCounter(address=address, window_start=now)], ignore_conflicts=True)
        counter = JoinCounter.objects.select_for_update().filter(address=address).first()
        if counter is None:  # deleted as stale between the insert and the lock: start again
            return None
        if counter.window_start + JOIN_WINDOW <= now:
            counter.window_start, counter.starts = now, 0
        if counter.starts >= settings.EDITLAB_JOIN_STARTS_PER_HOUR:
            wait = math.ceil((counter.window_start + JOIN_WINDOW - now).total_seconds())
            return JoinAttempt(address, retry_after_s=max(1, wait))
        counter.starts += 1
        counter.save(update_fields=["window_start", "starts"])
    JoinCounter.objects.filter(window_start__lt=now - STALE_AFTER).delete()
    return JoinAttempt(address)
