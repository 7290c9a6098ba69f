"""The login limiter (editlab/logins): every login path, the normalised username, the real client
address, atomic under concurrency, and a policy that a stranger cannot use against a named user."""

import re
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from editlab.logins.models import LoginCounter
from tests.factories import PASSWORD, UserFactory


def _post(client: Client, username: str, password: str, path: str = "/login/"):
    return client.post(path, {"username": username, "password": password})


def _fail(client: Client, username: str, times: int, path: str = "/login/") -> None:
    for _ in range(times):
        assert _post(client, username, "wrong", path).status_code == 200


def _logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _wait_stated(response) -> int:
    match = re.search(r"Wait (\d+) seconds", response.content.decode())
    assert match, response.content.decode()
    return int(match.group(1))


def test_a_user_logs_in_with_the_right_password(annotator):
    response = Client().post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_it_limits_failed_logins_per_username_and_address_and_states_the_true_wait(annotator):
    client = Client()
    _fail(client, annotator.username, 3)
    response = _post(client, annotator.username, PASSWORD)
    assert response.status_code == 429
    assert not _logged_in(client)
    counter = LoginCounter.objects.get(username="anna", address="127.0.0.1")
    remaining = (counter.window_start + timedelta(minutes=1) - timezone.now()).total_seconds()
    assert 0 < remaining <= 60
    assert _wait_stated(response) == int(response["Retry-After"])
    assert abs(_wait_stated(response) - remaining) <= 1
    # The refused attempt was not counted: the wait does not grow while the user keeps trying.
    assert LoginCounter.objects.get(pk=counter.pk).failures == 3


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_the_wait_ends_when_the_minute_of_the_first_failure_is_over(annotator):
    client = Client()
    _fail(client, annotator.username, 3)
    assert _post(client, annotator.username, PASSWORD).status_code == 429
    LoginCounter.objects.update(window_start=timezone.now() - timedelta(seconds=61))
    assert _post(client, annotator.username, PASSWORD).status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_the_admin_sites_login_is_limited_by_the_same_counter(admin_user):
    client = Client()
    _fail(client, admin_user.username, 2, path="/admin/login/")
    _fail(client, admin_user.username, 1, path="/login/")
    response = _post(client, admin_user.username, PASSWORD, path="/admin/login/")
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.content.decode()
    assert not _logged_in(client)
    assert _post(client, admin_user.username, PASSWORD, path="/login/").status_code == 429


def test_the_admin_sites_login_still_logs_in(admin_user):
    client = Client()
    response = _post(client, admin_user.username, PASSWORD, path="/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert _logged_in(client)


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
@pytest.mark.parametrize("spelling", ["ａｎｎａ", "ANNA", "Ａｎｎａ"])
def test_other_spellings_of_a_username_share_its_counter(annotator, spelling):
    client = Client()
    _fail(client, "anna", 3)
    response = _post(client, spelling, PASSWORD)
    assert response.status_code == 429
    assert not _logged_in(client)


def test_the_full_width_spelling_logs_in_as_django_normalises_it(annotator):
    # Why the limiter must normalise: Django's login form authenticates the NFKC form.
    client = Client()
    assert _post(client, "ａｎｎａ", PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3, EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR=5)
def test_a_stranger_cannot_lock_a_named_user_out_of_an_address_they_use(annotator):
    home = Client(REMOTE_ADDR="192.0.2.10")
    assert _post(home, "anna", PASSWORD).status_code == 302  # anna works from here
    first, second = Client(REMOTE_ADDR="198.51.100.1"), Client(REMOTE_ADDR="198.51.100.2")
    _fail(first, "anna", 3)
    assert _post(first, "anna", PASSWORD).status_code == 429  # this pair's limit
    _fail(second, "anna", 2)
    assert _post(second, "anna", PASSWORD).status_code == 429  # the username's ceiling of 5
    assert LoginCounter.objects.get(username="anna", address="").failures == 5
    # Anna's own address still gets in.
    again = Client(REMOTE_ADDR="192.0.2.10")
    assert _post(again, "anna", PASSWORD).status_code == 302
    assert _logged_in(again)


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_a_strangers_failures_do_not_lock_the_user_out_of_another_address(annotator):
    stranger = Client(REMOTE_ADDR="198.51.100.1")
    _fail(stranger, "anna", 3)
    assert _post(stranger, "anna", PASSWORD).status_code == 429
    new_place = Client(REMOTE_ADDR="203.0.113.77")  # never used before
    assert _post(new_place, "anna", PASSWORD).status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_failures_on_unknown_names_do_not_lock_other_users_of_the_address(annotator):
    office = Client(REMOTE_ADDR="10.9.8.7")
    for name in ("x1", "x2", "x3", "x4", "x5"):
        _fail(office, name, 3)
    assert _post(office, "anna", PASSWORD).status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3, EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR=6)
def test_the_username_ceiling_holds_against_many_addresses(annotator):
    for n in range(3):
        _fail(Client(REMOTE_ADDR=f"198.51.100.{n}"), "anna", 2)
    # 6 failures from three addresses: a fourth, never-used address is refused for the hour.
    response = _post(Client(REMOTE_ADDR="203.0.113.9"), "anna", PASSWORD)
    assert response.status_code == 429
    assert "from several places" in response.content.decode()
    assert 3300 < int(response["Retry-After"]) <= 3600


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3, EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR=6)
def test_an_admin_unlocks_an_account_with_the_command(annotator):
    for n in range(3):
        _fail(Client(REMOTE_ADDR=f"198.51.100.{n}"), "anna", 2)
    assert _post(Client(REMOTE_ADDR="198.51.100.0"), "anna", PASSWORD).status_code == 429
    call_command("login_unlock", "ANNA")
    assert _post(Client(REMOTE_ADDR="198.51.100.0"), "anna", PASSWORD).status_code == 302


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_an_admin_unlocks_an_account_in_the_admin_site(annotator, admin_client):
    _fail(Client(), "anna", 3)
    assert _post(Client(), "anna", PASSWORD).status_code == 429
    ids = list(LoginCounter.objects.filter(username="anna").values_list("pk", flat=True))
    response = admin_client.post(
        "/admin/logins/logincounter/", {"action": "unlock", "_selected_action": [str(pk) for pk in ids]}
    )
    assert response.status_code == 302
    assert _post(Client(), "anna", PASSWORD).status_code == 302


def test_other_roles_cannot_unlock_in_the_admin_site(annotator, researcher_client):
    _fail(Client(), "anna", 1)
    pk = LoginCounter.objects.get(username="anna", address="127.0.0.1").pk
    response = researcher_client.post("/admin/logins/logincounter/", {"action": "unlock", "_selected_action": [pk]})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert LoginCounter.objects.get(pk=pk).failures == 1


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3, TRUSTED_PROXIES=["127.0.0.1"])
def test_behind_a_trusted_proxy_the_forwarded_address_is_the_client(annotator, other_annotator):
    # Every request comes from the proxy (127.0.0.1); the header names the real client.
    attacker = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.5")
    _fail(attacker, "anna", 3)
    assert _post(attacker, "anna", PASSWORD).status_code == 429
    assert LoginCounter.objects.filter(username="anna", address="198.51.100.5").exists()
    colleague = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert _post(colleague, "anna", PASSWORD).status_code == 302
    # The attacker cannot escape its counter by writing its own X-Forwarded-For: the proxy appends.
    spoof = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.8, 198.51.100.5")
    assert _post(spoof, "anna", PASSWORD).status_code == 429


@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=3)
def test_without_trusted_proxies_the_header_is_ignored(annotator):
    for n in range(3):
        _post(Client(HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"), "anna", "wrong")
    assert LoginCounter.objects.get(username="anna", address="127.0.0.1").failures == 3
    assert _post(Client(HTTP_X_FORWARDED_FOR="203.0.113.1"), "anna", PASSWORD).status_code == 429


@pytest.mark.parametrize(
    "username", ["", " ", "a" * 5000, "\x00anna", "<script>alert(1)</script>", "𝕒𝕟𝕟𝕒", "ANNA\u0301", "١٢٣"]
)
def test_hostile_usernames_get_the_form_again(annotator, username):
    response = _post(Client(), username, "wrong")
    assert response.status_code == 200
    for stored in LoginCounter.objects.values_list("username", flat=True):
        assert len(stored) <= 150 and "\x00" not in stored


def test_login_requires_the_csrf_token(annotator):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 403


def test_migrate_alone_gives_a_working_login(process_db_template, tmp_path):
    """No createcachetable: the limiter's table comes with the migrations (the template database
    is made by `migrate` alone)."""
    from tests.editlab.app_process import copy_of, run_script

    database = copy_of(process_db_template, tmp_path, "fresh.sqlite3")
    status = run_script(
        database,
        "from django.test import Client\n"
        "import json\n"
        "response = Client().post('/login/', {'username': 'nobody', 'password': 'wrong'}, REMOTE_ADDR='127.0.0.1')\n"
        "print(json.dumps(response.status_code))",
        ALLOWED_HOSTS="testserver",
    )
    assert status == 200
    tables = run_script(
        database,
        "import json\nfrom django.db import connection\nprint(json.dumps(connection.introspection.table_names()))",
    )
    assert "logins_logincounter" in tables and "editlab_cache" not in tables


# --------------------------------------------------------------------------- concurrency


def _parallel(post_one, count: int) -> list[int]:
    barrier = threading.Barrier(count)
    statuses: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        status = post_one()
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


# serialized_rollback: the flush after this test must bring back the migrations' rows (role groups,
# content types) for the serialized-rollback tests that follow.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@override_settings(EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE=10)
def test_twenty_parallel_wrong_attempts_check_only_ten_passwords(process_db_template, tmp_path):
    """20 wrong passwords at once from one address: exactly 10 are checked (200, the form again),
    the other 10 are refused (429). On PostgreSQL the test client runs in 20 threads against the
    suite's database; on SQLite a threaded app server works on a database file (the suite's
    in-memory database cannot take concurrent writers)."""
    if connection.vendor == "postgresql":
        UserFactory(username="anna", role="annotator")

        def post_one() -> int:
            try:
                return (
                    Client(REMOTE_ADDR="198.51.100.7")
                    .post("/login/", {"username": "anna", "password": "x"})
                    .status_code
                )
            finally:
                connection.close()

        statuses = _parallel(post_one, 20)
        failures = LoginCounter.objects.get(username="anna", address="198.51.100.7").failures
    else:
        statuses, failures = _parallel_against_a_sqlite_server(process_db_template, tmp_path)
    assert sorted(statuses) == [200] * 10 + [429] * 10
    assert failures == 10


def _parallel_against_a_sqlite_server(template, tmp_path) -> tuple[list[int], int]:
    import http.cookiejar
    import urllib.parse
    import urllib.request

    from tests.editlab.app_process import AppServer, copy_of, free_port, query

    database = copy_of(template, tmp_path, "parallel.sqlite3")
    server = AppServer(database, free_port(), tmp_path / "server.log")
    server.start()
    try:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page = opener.open(f"{server.url}/login/").read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({"username": "anna", "password": "x", "csrfmiddlewaretoken": token}).encode()

        def post_one() -> int:
            try:
                return opener.open(f"{server.url}/login/", body, timeout=60).status
            except urllib.error.HTTPError as error:
                return error.code

        statuses = _parallel(post_one, 20)
    finally:
        server.kill()
    rows = query(database, "SELECT failures FROM logins_logincounter WHERE username = 'anna' AND address = '127.0.0.1'")
    return statuses, rows[0][0]
