from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models


class LoginCounter(models.Model):
    """Failed logins of one username, from one address or (address "") from everywhere.

    A row with an address counts that pair's failures in a window of a minute and remembers when
    the user last logged in from there (a known address, exempt from the username's ceiling); the
    row without an address counts the username's failures from every address in a window of an hour.
    """

    username = models.CharField(max_length=150, help_text="NFKC-normalised and case-folded, as tried")
    address = models.CharField(max_length=45, blank=True, help_text="empty: the username's ceiling")
    window_start = models.DateTimeField()
    failures = models.PositiveIntegerField(default=0)
    last_success = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["username", "address"], name="login_counter_unique")]
        indexes = [models.Index(fields=["window_start"], name="login_counter_window")]

    def __str__(self) -> str:
        return f"{self.username} from {self.address}" if self.address else f"{self.username} (all addresses)"


class Session(AbstractBaseSession):
    """Django's session row, with the id of the user logged in by it beside the encoded data.

    The id is a copy of the data's `_auth_user_id`, written with each save (editlab/sessions.py), so the
    statement that reads a request's session joins its user and the user's roles: one round trip to the
    database, where Django's session and user reads take two. The encoded data stays what decides who is
    logged in; the copy is used only when it names the same user.
    """

    user_id = models.BigIntegerField(null=True, blank=True, db_index=True)

    @classmethod
    def get_session_store_class(cls):
        from editlab.sessions import SessionStore  # noqa: PLC0415  # the store imports this model

        return SessionStore
