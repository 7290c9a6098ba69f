import pytest
from django.test import Client, override_settings

from tests.factories import PASSWORD


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    from django.core.cache import cache

    cache.clear()


def test_a_user_logs_in_with_the_right_password(annotator):
    response = Client().post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_it_rate_limits_failed_logins_per_username(annotator):
    client = Client()
    for _ in range(3):
        response = client.post("/login/", {"username": annotator.username, "password": "wrong"})
        assert response.status_code == 200
    response = client.post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 429
    assert b"Too many failed login attempts" in response.content
    assert "_auth_user_id" not in client.session


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_it_rate_limits_failed_logins_per_address(annotator, other_annotator):
    client = Client(REMOTE_ADDR="10.9.8.7")
    for name in ("x1", "x2", "x3"):
        client.post("/login/", {"username": name, "password": "wrong"})
    response = client.post("/login/", {"username": other_annotator.username, "password": PASSWORD})
    assert response.status_code == 429
    other_address = Client(REMOTE_ADDR="10.9.8.8")
    assert (
        other_address.post("/login/", {"username": other_annotator.username, "password": PASSWORD}).status_code == 302
    )


def test_login_requires_the_csrf_token(annotator):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 403
