"""Crowd participants: a project's participation link (/join/<token>/), the accounts it makes, the
work each one gets, and when they are done.

- A JoinLink admits people sent by a crowd platform (Prolific by default): the platform puts its
  participant, study and session ids in the link's query string under the names the link was
  opened with. A project has at most one open link; revoking it admits nobody new (people who
  joined keep working: their session, or the link again with their id).
- Joining with an id creates, once, an annotator-role account bound to it (Participant; an
  unusable password: the link is the only way in), in the next free slot of the project's design,
  and gives it its queue (practice items first). Joining again with the same id resumes: never a
  second account or slot. Ids are compared by their key, NFKC then case folding (`platform_key`):
  an id as given, in upper case or in full-width letters is one participant. Slots are taken
  under the project's row lock; the unique (project, slot of a held slot) and (project, key)
  constraints are the backstop.
- Latin-square projects (project.design == "latin-square"): slot s gets the Latin-square row s
  (annotations/design.py) over the project's documents and conditions (those of the project's
  last Latin-square assignment, or every declared one). The slots after those of the annotators
  named in that assignment are the participants', so lab and crowd together stay balanced.
- Simple projects: slot s gets batch s mod B (the batches holding non-practice items, in the
  order they were made), or every non-practice item when the project has no such batch; each
  batch goes to `overlap` participants, so the study is full after B x overlap.
- A participant whose work is all submitted (or skipped) is complete: Participant.completed_at is
  set. The code is earned when at most the link's `max_skips` non-practice items were skipped
  (default 0: every non-practice item submitted): the completion page shows the link's code or
  sends them to its completion URL. Otherwise (outcome no_code) the page says why there is no code
  and asks them to return the study on the platform, and the slot is released.
- A slot held without activity (joining, opening an item, a batch of events, a submit or skip)
  for the link's `idle_minutes` (default 30; 0: never) is released when a newcomer joins: its open
  work is closed as skipped (reason said), the participant's outcome is idle, and the newcomer
  takes the slot and its queue. Released slots count for neither max_participants nor the design.
- Start is rate-limited per client address (JoinCounter: a window of an hour), whatever the link;
  a Start that is refused (bad ids, closed, full, not ready, too many) is not counted.
"""

import math
import re
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, QuerySet
from django.utils import timezone

from annotations.design import DesignError, latin_square_row
from annotations.models import Assignment, JoinCounter, JoinLink, Participant, Project
from annotations.roles import ANNOTATOR, set_role
from annotations.selectors import Document, project_documents
from annotations.services.errors import ServiceError
from annotations.services.studies import study_queue

# What each query parameter carries, and Prolific's names for them (the default).
PARAM_ROLES = ("participant", "study", "session")
DEFAULT_PARAMS = {"participant": "PROLIFIC_PID", "study": "STUDY_ID", "session": "SESSION_ID"}
PARAM_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
# Platform ids: letters and digits of any script, and - _ . : @ + ~ (Prolific's are 24 hex digits).
# No markup, spaces, control or format characters (bidi overrides, zero-width), no combining marks;
# ids are compared by platform_key (NFKC, case folded), so one person cannot come in under two spellings.
PLATFORM_ID = re.compile(r"[\w\-.:@+~]+")
PLATFORM_ID_MAX = 200  # Participant.platform_id
COMPLETION_CODE_MAX = 200  # JoinLink.completion_code
COMPLETION_URL_MAX = 2000  # JoinLink.completion_url
CODE_PLACEHOLDER = "{code}"
MAX_PARTICIPANTS = 1_000_000
TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,64}")
IDLE_MINUTES_DEFAULT = 30
IDLE_MINUTES_MAX = 7 * 24 * 60
MAX_SKIPS = 1_000_000
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


# --------------------------------------------------------------------------- checking input


def _describe(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}{' ' + name if name else ''}"


def platform_id_error(value: str, *, name: str) -> str | None:
    """Why `value` is no acceptable platform id (named after its query parameter), or None."""
    if len(value) > PLATFORM_ID_MAX:
        return f"{name}: an id has at most {PLATFORM_ID_MAX} characters; this one has {len(value):,}"
    if not PLATFORM_ID.fullmatch(value):
        bad = next(char for char in value if not PLATFORM_ID.fullmatch(char))
        return f"{name}: an id holds letters, digits and - _ . : @ + ~ only; this one contains {_describe(bad)}"
    if len(platform_key(value)) > KEY_MAX:
        return f"{name}: this id grows past {KEY_MAX} characters when compatibility characters are spelled out"
    return None


def platform_key(value: str) -> str:
    """How ids are compared: NFKC, then case folding, to a fixed point ("ABC", "abc" and full-width
    "ＡＢＣ" are one key). Two spellings of one id are one participant."""
    for _ in range(4):
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())
        if folded == value:
            break
        value = folded
    return value


KEY_MAX = 220  # Participant.platform_key


@dataclass(frozen=True)
class PlatformIds:
    participant: str
    study: str = ""
    session: str = ""


def platform_ids(*, join_link: JoinLink, query: Mapping[str, Sequence[str]]) -> PlatformIds:
    """The ids the platform put in the link's query string (`query`: each name's values, as
    QueryDict.lists() gives them), under the link's parameter names; ServiceError naming the
    parameter when one is missing, given twice or malformed."""
    names = join_params(join_link.params or None)
    found: dict[str, str] = {}
    for role in PARAM_ROLES:
        name = names[role]
        if not name:
            found[role] = ""
            continue
        values = list(query.get(name, []))
        if len(values) > 1:
            raise ServiceError(f"{name}: given {len(values)} times in the link; the platform gives it once")
        value = values[0].strip() if values else ""
        if not value:
            if role == "participant":
                raise ServiceError(
                    f"{name}: the link carries no participant id. Open the study from the page of the platform "
                    "you came from (e.g. Prolific), which adds your id to the link."
                )
            found[role] = ""
            continue
        error = platform_id_error(value, name=name)
        if error:
            raise ServiceError(error)
        found[role] = value
    return PlatformIds(found["participant"], found["study"], found["session"])


def join_params(value: Any) -> dict[str, str]:
    """The query parameter names of a link: {"participant", "study", "session"}; absent ones are
    Prolific's, an empty study or session name is not read, the participant's is required."""
    if value is None:
        return dict(DEFAULT_PARAMS)
    if not isinstance(value, Mapping):
        raise ServiceError('params: must be an object {"participant": NAME, "study": NAME, "session": NAME}')
    unknown = sorted(str(key) for key in value if key not in PARAM_ROLES)
    if unknown:
        raise ServiceError(f"params: unknown key(s) {', '.join(unknown)}; the keys are participant, study, session")
    names: dict[str, str] = {}
    for role in PARAM_ROLES:
        name = value.get(role, DEFAULT_PARAMS[role])
        if name is None:
            name = ""
        if not isinstance(name, str):
            raise ServiceError(f"params.{role}: must be a query parameter name (text)")
        name = name.strip()
        if role == "participant" and not name:
            raise ServiceError("params.participant: name the query parameter that carries the participant id")
        if name and not PARAM_NAME.fullmatch(name):
            raise ServiceError(
                f"params.{role}: a query parameter name is 1-64 letters (a-z, A-Z), digits, '_', '.' or '-'"
            )
        names[role] = name
    used = [name for name in names.values() if name]
    if len(set(used)) != len(used):
        raise ServiceError("params: each id needs a query parameter name of its own")
    return names


def _completion_code(value: str) -> str:
    code = (value or "").strip()
    if len(code) > COMPLETION_CODE_MAX:
        raise ServiceError(f"completion_code: at most {COMPLETION_CODE_MAX} characters (got {len(code):,})")
    if not code.isprintable():
        bad = next(char for char in code if not char.isprintable())
        raise ServiceError(f"completion_code: contains a character that cannot be shown ({_describe(bad)})")
    return code


def _completion_url(value: str) -> str:
    url = (value or "").strip()
    if not url:
        return ""
    if len(url) > COMPLETION_URL_MAX:
        raise ServiceError(f"completion_url: at most {COMPLETION_URL_MAX} characters (got {len(url):,})")
    try:
        URLValidator(schemes=["http", "https"])(url.replace(CODE_PLACEHOLDER, "CODE"))
    except ValidationError:
        raise ServiceError(
            "completion_url: must be a full http:// or https:// address, e.g. "
            "https://app.prolific.com/submissions/complete?cc=C1234ABC"
        ) from None
    return url


def _whole(value: object, *, name: str, low: int, high: int, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ServiceError(f"{name}: a whole number from {low} to {high:,}{hint}")
    return value


def _max_participants(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PARTICIPANTS:
        raise ServiceError(f"max_participants: a whole number from 1 to {MAX_PARTICIPANTS:,}, or empty for no limit")
    return value


# --------------------------------------------------------------------------- the design's slots


@dataclass(frozen=True)
class SlotDesign:
    """How a project gives work to its participants: slot -> queue of (item id, condition)."""

    kind: str
    first_slot: int
    capacity: int | None  # how many slots the design has (None: no end)
    practice_ids: tuple[int, ...]
    documents: tuple[Document, ...] = ()  # latin-square
    conditions: tuple[str, ...] = ()  # latin-square
    units: tuple[tuple[int, ...], ...] = field(default_factory=tuple)  # simple: what each slot may get

    def queue(self, slot: int) -> list[tuple[int, str]]:
        if self.kind == Project.DESIGN_LATIN_SQUARE:
            row = latin_square_row(slot, documents=[d.key for d in self.documents], conditions=self.conditions)
            items_of = {document.key: document.item_ids for document in self.documents}
            return study_queue(practice_ids=self.practice_ids, items_of=items_of, row=row)
        practice = set(self.practice_ids)
        unit = self.units[(slot - self.first_slot) % len(self.units)]
        return [(item_id, "") for item_id in (*self.practice_ids, *(i for i in unit if i not in practice))]

    def slot_for(self, taken: set[int]) -> int | None:
        """The first free slot, or None when the design has none left."""
        slot = self.first_slot
        while slot in taken:
            slot += 1
        if self.capacity is not None and slot >= self.first_slot + self.capacity:
            return None
        return slot


def _last_latin_square(project: Project) -> dict:
    designs = project.meta.get("designs") if isinstance(project.meta, dict) else None
    if not isinstance(designs, list):
        return {}
    latin = [d for d in designs if isinstance(d, dict) and d.get("design") == Project.DESIGN_LATIN_SQUARE]
    return latin[-1] if latin else {}


def participant_design(*, project: Project) -> SlotDesign:
    """What the project's participants get, slot by slot; ServiceError saying what is missing."""
    practice_ids = tuple(
        item_id for document in project_documents(project=project, practice=True) for item_id in document.item_ids
    )
    if project.design == Project.DESIGN_LATIN_SQUARE:
        return _latin_square_design(project, practice_ids)
    batches = [
        tuple(batch.items.filter(practice=False).order_by("batch_position", "id").values_list("id", flat=True))
        for batch in project.batches.order_by("id")
    ]
    units = tuple(unit for unit in batches if unit)
    if not units:
        everything = tuple(item_id for document in project_documents(project=project) for item_id in document.item_ids)
        if not everything:
            raise ServiceError("design: the project has no items to edit besides practice items; import some first")
        units = (everything,)
    return SlotDesign(
        kind=Project.DESIGN_SIMPLE,
        first_slot=0,
        capacity=len(units) * project.overlap,
        practice_ids=practice_ids,
        units=units,
    )


def _latin_square_design(project: Project, practice_ids: tuple[int, ...]) -> SlotDesign:
    try:
        declared = [condition.name for condition in project.declared_conditions()]
    except DesignError as exc:
        raise ServiceError(str(exc)) from None
    last = _last_latin_square(project)
    chosen = [name for name in last.get("conditions") or [] if isinstance(name, str)] or declared
    unknown = [name for name in chosen if name not in declared]
    if unknown:
        raise ServiceError(
            f"conditions: the last Latin-square assignment used {', '.join(map(repr, unknown))}, which the project "
            "no longer declares; declare it again or assign the design anew"
        )
    if not chosen:
        raise ServiceError("conditions: a Latin-square project needs conditions; declare them on the project first")
    documents = tuple(project_documents(project=project))
    if not documents:
        raise ServiceError("documents: the project has no documents to edit besides practice items; import some first")
    if len(documents) < len(chosen):
        raise ServiceError(
            f"documents: {len(documents)} document(s) for {len(chosen)} conditions: for every participant to meet "
            f"every condition, at least {len(chosen)} documents are needed; import more or use fewer conditions"
        )
    annotators = last.get("annotators")
    return SlotDesign(
        kind=Project.DESIGN_LATIN_SQUARE,
        first_slot=len(annotators) if isinstance(annotators, list) else 0,
        capacity=None,
        practice_ids=practice_ids,
        documents=documents,
        conditions=tuple(chosen),
    )


# --------------------------------------------------------------------------- the link


@transaction.atomic
def join_link_open(
    *,
    project: Project,
    completion_code: str = "",
    completion_url: str = "",
    max_participants: int | None = None,
    params: Mapping[str, Any] | None = None,
    max_skips: int = 0,
    idle_minutes: int = IDLE_MINUTES_DEFAULT,
) -> JoinLink:
    """A new participation link for the project; refused while another one is open, or when the
    project cannot give participants work yet (the message says what is missing)."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    code = _completion_code(completion_code)
    url = _completion_url(completion_url)
    if not code and not url:
        raise ServiceError(
            "completion_code: give a completion code, a completion URL or both: participants need one to be paid"
        )
    limit = _max_participants(max_participants)
    skips = _whole(max_skips, name="max_skips", low=0, high=MAX_SKIPS, hint=" (0: every item submitted)")
    idle = _whole(idle_minutes, name="idle_minutes", low=0, high=IDLE_MINUTES_MAX, hint=" (0: never released)")
    names = join_params(params)
    participant_design(project=project)
    if project.join_links.filter(revoked_at__isnull=True).exists():
        raise ServiceError("project: already has an open participation link; revoke it first to open a new one")
    return JoinLink.objects.create(
        project=project,
        token=secrets.token_urlsafe(24),
        max_participants=limit,
        max_skips=skips,
        idle_minutes=idle,
        completion_code=code,
        completion_url=url,
        params=names,
    )


@transaction.atomic
def join_link_revoke(*, join_link: JoinLink) -> JoinLink:
    """The link admits nobody new from now on (idempotent); who joined keeps their work."""
    join_link = JoinLink.objects.select_for_update().get(pk=join_link.pk)
    if join_link.revoked_at is None:
        join_link.revoked_at = timezone.now()
        join_link.save(update_fields=["revoked_at"])
    return join_link


def join_link_by_token(token: str) -> JoinLink | None:
    """The link with this token (None for anything else, without a query for what cannot be one)."""
    if not TOKEN.fullmatch(token):
        return None
    return JoinLink.objects.select_related("project").filter(token=token).first()


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
    open_work = Assignment.objects.filter(
        annotator=OuterRef("user_id"), status__in=[Assignment.PENDING, Assignment.IN_PROGRESS]
    )
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
    if completion_shortfall(participant) is None:
        participant.outcome = Participant.CODE
    else:
        participant.outcome, participant.released_at = Participant.NO_CODE, now
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


def completion_redirect(join_link: JoinLink | None) -> str:
    """Where a complete participant is sent: the link's completion URL, its {code} replaced by the
    completion code; "" when the link has no URL (the page shows the code)."""
    if join_link is None or not join_link.completion_url:
        return ""
    return join_link.completion_url.replace(CODE_PLACEHOLDER, quote(join_link.completion_code, safe=""))


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
