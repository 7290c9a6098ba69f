"""A database that cannot be reached: pages answer 503 with Retry-After and a readable page, as the
API does, on SQLite and PostgreSQL.

The database is made unreachable for real: the request's connection is swapped for one whose
server cannot be reached (PostgreSQL: a port nobody listens on, the error a stopped server gives;
SQLite: a file in a folder that does not exist). The test's own connection stays as it was.
"""

import socket
from collections.abc import Iterator

import pytest
from django.db import OperationalError, connections
from django.test import Client

from annotations.models import JoinLink
from editlab.views import server_error
from tests.factories import AssignmentFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def database_down() -> Iterator[None]:
    """From here on, every request finds its database unreachable."""
    up = connections["default"]
    settings = dict(up.settings_dict)
    if up.vendor == "postgresql":
        settings.update(HOST="127.0.0.1", PORT=str(_free_port()))
    else:
        settings["NAME"] = "/nonexistent-editlab-folder/db.sqlite3"
    down = type(up)(settings, alias="default")
    connections["default"] = down
    try:
        yield
    finally:
        down.close()
        connections["default"] = up


def _is_unavailable(response) -> None:
    assert response.status_code == 503, response.content[:500]
    assert response["Retry-After"] == "2"
    body = response.content.decode()
    assert "Unavailable for a moment" in body and "could not be reached" in body
    assert "Traceback" not in body


@pytest.fixture
def pages(annotator) -> dict[str, str]:
    assignment = AssignmentFactory(annotator=annotator)
    link = JoinLink.objects.create(project=ProjectFactory(), token="t" * 24, completion_code="C0DE")
    return {
        "editor": f"/edit/{assignment.pk}/",
        "diff": f"/edit/{assignment.pk}/diff/",
        "home": "/",
        "annotate": "/annotate/",
        "join": f"/join/{link.token}/?PROLIFIC_PID=abc",
        "done": "/participant/done/",
    }


@pytest.mark.parametrize("page", ["editor", "diff", "home", "annotate", "join", "done"])
def test_a_page_answers_503_with_retry_after_when_the_database_is_down(annotator_client, pages, page, request):
    request.getfixturevalue("database_down")
    _is_unavailable(annotator_client.get(pages[page]))


def test_the_login_page_and_a_login_answer_503_when_the_database_is_down(annotator, database_down):
    client = Client()
    page = client.get("/login/")
    # The empty form needs no database; if it ever reads one, it says so the same way.
    assert page.status_code in (200, 503)
    if page.status_code == 503:
        _is_unavailable(page)
    _is_unavailable(client.post("/login/", {"username": annotator.username, "password": "whatever"}))


def test_a_logged_in_login_page_answers_503_when_the_database_is_down(annotator_client, database_down):
    _is_unavailable(annotator_client.get("/login/"))


def test_the_api_still_answers_503_in_its_shape_when_the_database_is_down(annotator_client, database_down):
    response = annotator_client.get("/api/assignments/")
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert response.json()["code"] == "unavailable"


def test_the_database_back_serves_the_page_again(annotator_client, pages):
    assert annotator_client.get(pages["editor"]).status_code == 200


def test_a_database_error_raised_outside_a_view_is_a_503_page_too(rf):
    """Django's 500 handling runs the 500 handler inside the except block: a middleware that read the
    session when the database went away gets the 503 page, anything else the 500 page."""
    request = rf.get("/annotate/")
    try:
        raise OperationalError("connection refused")
    except OperationalError:
        response = server_error(request)
    _is_unavailable(response)
    try:
        raise ValueError("a bug")
    except ValueError:
        assert server_error(request).status_code == 500
