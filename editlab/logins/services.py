"""The login limiter: one place that every login path goes through (editlab.logins.backends).

Policy, with L = EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE and C = EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR:
- a (username, address) pair gets L failed attempts per minute, then is refused until the minute
  that began with its first failure is over;
- a username gets C failed attempts per hour from all addresses together; over that, only the
  addresses the user logged in from in the last EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS days may still
  try, so a stranger cannot lock the user out of the places they work from.

An attempt is counted as a failure *before* the password is checked, inside a transaction holding
the counters' rows, and given back when the password was right: 20 simultaneous attempts against
L = 10 check exactly 10 passwords, whatever the database.
"""

import math
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from editlab.logins.models import LoginCounter

PAIR_WINDOW = timedelta(minutes=1)
USER_WINDOW = timedelta(hours=1)
# Counters idle this long are deleted (unless they remember a successful login).
STALE_AFTER = timedelta(days=1)


@dataclass(frozen=True)
class LoginAttempt:
    username: str
    address: str
    # Seconds until this attempt would be allowed; 0 when it was let through (and counted).
    retry_after_s: int = 0
    per_username: bool = False

    @property
    def refused(self) -> bool:
        return self.retry_after_s > 0

    def message(self) -> str:
        wait = _duration(self.retry_after_s)
        if self.per_username:
            return (
                f"Too many failed login attempts for this username from several places. Try again in {wait}, "
                "from a computer you have logged in from before, or ask an admin to unlock the account."
            )
        return f"Too many failed login attempts. Wait {wait} and try again."


def normalize_username(username: str | None) -> str:
    """The key the limiter counts under: Django's login form authenticates the NFKC form, and
    usernames are unique without regard to case, so `ＡＮＮＡ`, `Anna` and `anna` share one counter."""
    # NUL cannot be stored in a PostgreSQL text column.
    return unicodedata.normalize("NFKC", username or "").casefold().replace("\x00", "")[:150]


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


def _remaining(counter: LoginCounter, window: timedelta, now: datetime) -> int:
    return max(1, math.ceil((counter.window_start + window - now).total_seconds()))


def _fresh(counter: LoginCounter, window: timedelta, now: datetime) -> None:
    if counter.window_start + window <= now:
        counter.window_start, counter.failures = now, 0


def login_attempt_begin(*, username: str | None, address: str) -> LoginAttempt:
    """Counts an attempt as failed, or refuses it (counting nothing) when a limit is reached."""
    name = normalize_username(username)
    # "" names the username's own row: a request without an address still gets a pair of its own.
    address = address[:45] or "unknown"
    for _ in range(3):
        attempt = _begin(name, address)
        if attempt is not None:
            return attempt
    raise RuntimeError("the login counters kept disappearing while being locked")


def _begin(name: str, address: str) -> LoginAttempt | None:
    now = timezone.now()
    with transaction.atomic():
        # Both rows exist before they are locked, so concurrent first attempts queue on the same rows.
        LoginCounter.objects.bulk_create(
            [
                LoginCounter(username=name, address="", window_start=now),
                LoginCounter(username=name, address=address, window_start=now),
            ],
            ignore_conflicts=True,
        )
        # One order for every request (the user row, address "", first): no deadlock between them.
        rows = list(
            LoginCounter.objects.select_for_update()
            .filter(username=name, address__in=["", address])
            .order_by("address")
        )
        if len(rows) != 2:  # deleted as stale between the insert and the lock: start again
            return None
        user_row, pair_row = rows
        _fresh(user_row, USER_WINDOW, now)
        _fresh(pair_row, PAIR_WINDOW, now)
        if pair_row.failures >= settings.EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE:
            return LoginAttempt(name, address, retry_after_s=_remaining(pair_row, PAIR_WINDOW, now))
        known_since = now - timedelta(days=settings.EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS)
        known = pair_row.last_success is not None and pair_row.last_success >= known_since
        if not known and user_row.failures >= settings.EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR:
            return LoginAttempt(name, address, retry_after_s=_remaining(user_row, USER_WINDOW, now), per_username=True)
        for row in (user_row, pair_row):
            row.failures += 1
            row.save(update_fields=["window_start", "failures"])
    return LoginAttempt(name, address)


def login_attempt_succeeded(*, attempt: LoginAttempt) -> None:
    """The password was right: the pair starts afresh and remembers the address; the username's
    ceiling gets this attempt back but keeps the failures others made."""
    now = timezone.now()
    with transaction.atomic():
        LoginCounter.objects.filter(username=attempt.username, address="").update(
            failures=Greatest(F("failures") - 1, 0)
        )
        LoginCounter.objects.filter(username=attempt.username, address=attempt.address).update(
            failures=0, window_start=now, last_success=now
        )
    _delete_stale(now)


def login_counters_reset(*, username: str, address: str | None = None) -> int:
    """Unlocks a username (every address, or one): its failure counts go to zero. Known addresses
    stay known. Returns how many counters had failures."""
    counters = LoginCounter.objects.filter(username=normalize_username(username), failures__gt=0)
    if address is not None:
        counters = counters.filter(address__in=["", address])
    return counters.update(failures=0)


def _delete_stale(now: datetime) -> None:
    known_since = now - timedelta(days=settings.EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS)
    LoginCounter.objects.filter(window_start__lt=now - STALE_AFTER).filter(
        Q(last_success__isnull=True) | Q(last_success__lt=known_since)
    ).delete()
