"""Named users per role, shared by every test module.

Permission tests use these five: anonymous (the plain `client`), annotator A
(`annotator`), annotator B (`other_annotator`), `researcher` and `admin_user`
(overriding pytest-django's superuser); each has a logged-in `<name>_client`.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client

from tests.browser_support import browser, context, item_for, site  # noqa: F401 - fixtures of the live-server tests
from tests.factories import PASSWORD, UserFactory

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    # PBKDF2 costs ~0.3 s per user on this machine; tests create and log in many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data folder is missing: {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def annotator(db):
    return UserFactory(username="anna", role="annotator")


@pytest.fixture
def other_annotator(db):
    return UserFactory(username="bob", role="annotator")


@pytest.fixture
def researcher(db):
    return UserFactory(username="rita", role="researcher")


@pytest.fixture
def admin_user(db):
    return UserFactory(username="adam", role="admin")


def _logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def annotator_client(annotator) -> Client:
    return _logged_in(annotator)


@pytest.fixture
def other_annotator_client(other_annotator) -> Client:
    return _logged_in(other_annotator)


@pytest.fixture
def researcher_client(researcher) -> Client:
    return _logged_in(researcher)


@pytest.fixture
def admin_client(admin_user) -> Client:
    """Overrides pytest-django's: logged in as the admin-role user, not a bare superuser."""
    return _logged_in(admin_user)


# The roles of a permission test as the tests name them, each by the fixture of its logged-in client.
ROLE_CLIENTS = {
    "anonymous": "client",
    "anna": "annotator_client",
    "bob": "other_annotator_client",
    "researcher": "researcher_client",
    "admin": "admin_client",
}


@pytest.fixture
def client_as(request) -> Callable[[str], Client]:
    """The logged-in client of a role named as in ROLE_CLIENTS (anonymous, anna, bob, researcher, admin)."""
    return lambda role: request.getfixturevalue(ROLE_CLIENTS[role])
