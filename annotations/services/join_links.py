"""Crowd participants' links: a project's participation link (/join/<token>/), its settings checked,
opened and revoked, and the platform ids it carries.

- A JoinLink admits people sent by a crowd platform (Prolific by default): the platform puts its
  participant, study and session ids in the link's query string under the names the link was
  opened with. A project has at most one open link; revoking it admits nobody new (people who
  joined keep working: their session, or the link again with their id).
- Ids are compared by their key, NFKC then case folding (`platform_key`): an id as given, in upper
  case or in full-width letters is one participant (annotations/services/participants.py joins them).
"""

import re
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from annotations.models import JoinLink, Project
from annotations.services.errors import ServiceError
from annotations.services.participant_design import participant_design

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


def _completion_code(value: str, name: str = "completion_code") -> str:
    code = (value or "").strip()
    if len(code) > COMPLETION_CODE_MAX:
        raise ServiceError(f"{name}: at most {COMPLETION_CODE_MAX} characters (got {len(code):,})")
    if not code.isprintable():
        bad = next(char for char in code if not char.isprintable())
        raise ServiceError(f"{name}: contains a character that cannot be shown ({_describe(bad)})")
    return code


def _completion_url(value: str, name: str = "completion_url") -> str:
    url = (value or "").strip()
    if not url:
        return ""
    if len(url) > COMPLETION_URL_MAX:
        raise ServiceError(f"{name}: at most {COMPLETION_URL_MAX} characters (got {len(url):,})")
    try:
        URLValidator(schemes=["http", "https"])(url.replace(CODE_PLACEHOLDER, "CODE"))
    except ValidationError:
        raise ServiceError(
            f"{name}: must be a full http:// or https:// address, e.g. "
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
    failed_code: str = "",
    failed_url: str = "",
    max_failed_checks: int = 0,
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
    failed = _completion_code(failed_code, "failed_code")
    failed_address = _completion_url(failed_url, "failed_url")
    checks = _whole(max_failed_checks, name="max_failed_checks", low=0, high=MAX_SKIPS, hint=" (0: every check passed)")
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
        failed_code=failed,
        failed_url=failed_address,
        max_failed_checks=checks,
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


def completion_redirect(join_link: JoinLink | None) -> str:
    """Where a complete participant is sent: the link's completion URL, its {code} replaced by the
    completion code; "" when the link has no URL (the page shows the code)."""
    if join_link is None or not join_link.completion_url:
        return ""
    return join_link.completion_url.replace(CODE_PLACEHOLDER, quote(join_link.completion_code, safe=""))


def failed_redirect(join_link: JoinLink | None) -> str:
    """Where a participant who failed the attention checks is sent: the link's failed URL, its
    {code} replaced by the failed code; "" when the link has none."""
    if join_link is None or not join_link.failed_url:
        return ""
    return join_link.failed_url.replace(CODE_PLACEHOLDER, quote(join_link.failed_code, safe=""))
