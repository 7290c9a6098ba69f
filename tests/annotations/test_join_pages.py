"""The participation link's pages (/join/<token>/, /participant/done/) and the project's Participants
page: a welcome page that creates nothing, Start (a POST with CSRF) that joins or resumes, polite
refusals with their status, hostile ids, the rate limit, completion; and simultaneous joins."""

import json
import re
import threading
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from annotations.editing.lifecycle import post_edit_open, post_edit_submit
from annotations.models import Assignment, JoinCounter, JoinLink, Participant, PostEdit, Project
from annotations.services.join_links import join_link_open, join_link_revoke
from tests.factories import ItemFactory, ProjectFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "plain", "output": "sysA", "highlights": False},
    {"name": "marked", "output": "sysA", "highlights": True},
]
PID = "5f8e9a0b1c2d3e4f5a6b7c8d"


def study(documents: int = 2, segments: int = 2, **project) -> Project:
    project = ProjectFactory(
        conditions=CONDITIONS, design=Project.DESIGN_LATIN_SQUARE, guidelines="Fix **every** error.", **project
    )
    ItemFactory(project=project, external_id="practice", practice=True, model_output="Practice text.")
    for d in range(documents):
        for s in range(segments):
            ItemFactory(
                project=project,
                external_id=f"d{d}-s{s}",
                document=f"doc{d}",
                document_position=s,
                outputs={"sysA": f"Output {d}.{s}."},
            )
    return project


@pytest.fixture
def link() -> JoinLink:
    return join_link_open(project=study(), completion_code="C0DE1234")


def join_url(link: JoinLink, pid: str | None = PID, **extra: str) -> str:
    query = {} if pid is None else {"PROLIFIC_PID": pid}
    query.update({"STUDY_ID": "study-1", "SESSION_ID": "session-1"}, **extra)
    return f"{reverse('join', args=[link.token])}?{urlencode(query)}"


def nothing_created() -> bool:
    return not Participant.objects.exists() and not get_user_model().objects.filter(participant__isnull=False).exists()


def message_of(response) -> str:
    match = re.search(r'<p id="problem-message">(.*?)</p>', response.content.decode(), re.S)
    assert match, response.content.decode()[:2000]
    return match.group(1)


def session_user(client: Client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def first_open(user) -> Assignment:
    return Assignment.objects.open_for(user).first()


# --------------------------------------------------------------------------- the welcome page


def test_the_welcome_page_shows_the_start_button_and_creates_nothing(link):
    response = Client().get(join_url(link))
    assert response.status_code == 200
    body = response.content.decode()
    assert f'<strong id="participant-id">{PID}</strong>' in body
    assert 'id="start"' in body and "csrfmiddlewaretoken" in body
    assert "Fix <strong>every</strong> error." in body  # the guidelines
    assert link.project.name not in body  # the project's name is the researchers' own
    assert "no-store" in response["Cache-Control"]
    assert nothing_created()


def test_a_link_preview_or_prefetcher_creates_nothing(link):
    assert Client().head(join_url(link)).status_code == 200
    assert Client().get(join_url(link), HTTP_PURPOSE="prefetch").status_code == 200
    assert nothing_created()


def test_start_creates_the_participant_logs_it_in_and_opens_the_practice_item(link):
    client = Client(enforce_csrf_checks=True)
    page = client.get(join_url(link))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = client.post(join_url(link), {"csrfmiddlewaretoken": token})
    participant = Participant.objects.get()
    assert (participant.platform_id, participant.study_id, participant.session_id) == (PID, "study-1", "session-1")
    assert participant.join_link == link and participant.slot == 0
    assert session_user(client) == participant.user
    practice = first_open(participant.user)
    assert practice.item.practice and practice.condition == ""
    assert response.status_code == 302 and response["Location"] == reverse("editor", args=[practice.pk])
    editor = client.get(response["Location"])
    assert editor.status_code == 200 and 'id="practice-note"' in editor.content.decode()


def test_start_without_the_csrf_token_is_refused_and_creates_nothing(link):
    response = Client(enforce_csrf_checks=True).post(join_url(link))
    assert response.status_code == 403
    assert nothing_created()


def test_repeated_starts_make_one_participant(link):
    client = Client()
    locations = {client.post(join_url(link))["Location"] for _ in range(3)}
    other_browser = Client().post(join_url(link))
    assert len(locations) == 1 and other_browser["Location"] in locations
    assert Participant.objects.count() == 1
    assert Assignment.objects.count() == 5


def test_the_same_browser_goes_back_to_its_work_on_a_plain_get(link):
    client = Client()
    client.post(join_url(link))
    participant = Participant.objects.get()
    target = reverse("editor", args=[first_open(participant.user).pk])
    for url in (join_url(link), join_url(link, pid=None)):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"] == target


def test_someone_else_in_the_same_browser_gets_the_welcome_page_with_a_warning(link, annotator_client):
    client = Client()
    client.post(join_url(link))
    response = client.get(join_url(link, pid="another-person"))
    assert response.status_code == 200
    assert 'id="other-account"' in response.content.decode()
    response = annotator_client.get(join_url(link))
    assert "This browser is logged in as anna" in response.content.decode()
    annotator_client.post(join_url(link))
    assert session_user(annotator_client).participant.platform_id == PID  # anna's session was replaced


def test_a_returning_participant_from_another_browser_is_welcomed_back(link):
    Client().post(join_url(link))
    response = Client().get(join_url(link))
    assert response.status_code == 200 and "Welcome back" in response.content.decode()
    join_link_revoke(join_link=link)
    response = Client().get(join_url(link))  # revoked: who joined still comes back
    assert response.status_code == 200 and ">Continue<" in response.content.decode()
    assert Client().post(join_url(link)).status_code == 302


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, "PROLIFIC_PID: the link carries no participant id"),
        ({"PROLIFIC_PID": ""}, "PROLIFIC_PID: the link carries no participant id"),
        ({"PROLIFIC_PID": "x" * 1000}, "PROLIFIC_PID: an id has at most 200 characters; this one has 1,000"),
        ({"PROLIFIC_PID": "ab\x00cd"}, "this one contains U+0000"),
        ({"PROLIFIC_PID": "ab\u202ecd"}, "this one contains U+202E RIGHT-TO-LEFT OVERRIDE"),
        ({"PROLIFIC_PID": "<script>alert(1)</script>"}, "this one contains U+003C LESS-THAN SIGN"),
        ({"PROLIFIC_PID": "pid", "STUDY_ID": "<b>x</b>"}, "STUDY_ID: an id holds letters"),
        ({"PROLIFIC_PID": "pid", "SESSION_ID": "s" * 1000}, "SESSION_ID: an id has at most 200 characters"),
    ],
)
@pytest.mark.parametrize("method", ["get", "post"])
def test_bad_ids_get_a_page_naming_the_parameter(link, query, expected, method):
    url = f"{reverse('join', args=[link.token])}?{urlencode(query)}"
    response = getattr(Client(), method)(url)
    assert response.status_code == 400
    assert expected in message_of(response)
    assert "<script>alert" not in response.content.decode()
    assert nothing_created()


def test_an_id_given_twice_is_refused(link):
    url = f"{reverse('join', args=[link.token])}?PROLIFIC_PID=a&PROLIFIC_PID=b"
    response = Client().post(url)
    assert response.status_code == 400 and "PROLIFIC_PID: given 2 times" in message_of(response)


def test_undecodable_bytes_in_an_id_are_refused(link):
    url = f"{reverse('join', args=[link.token])}?PROLIFIC_PID=%ED%A0%80%FF"
    response = Client().post(url)
    assert response.status_code == 400 and "PROLIFIC_PID: an id holds letters" in message_of(response)
    assert nothing_created()


@pytest.mark.parametrize(
    "token",
    ["unknown-token-of-the-right-length-xx", "short", "x" * 65, "x" * 500, "%00" * 20, quote("ü" * 40), "a.b" * 10],
)
@pytest.mark.parametrize("method", ["get", "post"])
def test_unknown_tokens_are_404_pages(link, token, method):
    response = getattr(Client(), method)(f"/join/{token}/?PROLIFIC_PID={PID}")
    assert response.status_code == 404
    assert "This study link does not exist" in message_of(response)
    assert nothing_created()


def test_a_revoked_link_says_so_to_newcomers(link):
    join_link_revoke(join_link=link)
    for method in ("get", "post"):
        response = getattr(Client(), method)(join_url(link))
        assert response.status_code == 410
        assert "This study link is closed" in message_of(response)
    assert nothing_created()


def test_a_full_study_says_so():
    link = join_link_open(project=study(), completion_code="C", max_participants=1)
    Client().post(join_url(link, pid="first"))
    for method in ("get", "post"):
        response = getattr(Client(), method)(join_url(link, pid="second"))
        assert response.status_code == 409
        assert "This study has all the participants it needs" in message_of(response)
    assert Participant.objects.count() == 1


def test_a_study_that_cannot_give_work_says_it_is_not_ready(link):
    link.project.items.filter(practice=False).delete()
    response = Client().post(join_url(link))
    assert response.status_code == 503
    assert "This study is not ready to take participants yet (documents:" in message_of(response)
    assert nothing_created()


def test_another_projects_link_makes_a_separate_participant(link):
    other = join_link_open(project=study(), completion_code="OTHER")
    Client().post(join_url(link))
    Client().post(join_url(other))
    first, second = Participant.objects.order_by("pk")
    assert (first.project, second.project) == (link.project, other.project)
    assert first.user != second.user and first.platform_id == second.platform_id == PID


@override_settings(EDITLAB_JOIN_STARTS_PER_HOUR=2)
def test_starts_are_rate_limited_per_client_address_with_a_429_page(link):
    for n in range(2):
        assert Client(REMOTE_ADDR="203.0.113.5").post(join_url(link, pid=f"p{n}")).status_code == 302
    response = Client(REMOTE_ADDR="203.0.113.5").post(join_url(link, pid="p2"))
    assert response.status_code == 429
    assert 3500 < int(response["Retry-After"]) <= 3600
    assert "Too many participants started from your network address" in message_of(response)
    assert Client(REMOTE_ADDR="203.0.113.6").post(join_url(link, pid="p2")).status_code == 302
    assert Participant.objects.count() == 3
    # The welcome page itself is not limited (it creates nothing).
    assert Client(REMOTE_ADDR="203.0.113.5").get(join_url(link, pid="p9")).status_code == 200


@override_settings(EDITLAB_JOIN_STARTS_PER_HOUR=1)
def test_refused_starts_change_nothing_not_even_the_count(link):
    """A Start refused for its ids, a closed link or a full study stores nothing, the address's count
    included: only Starts that join or resume use the limit."""
    closed = join_link_open(project=study(), completion_code="C")
    join_link_revoke(join_link=closed)
    full = join_link_open(project=study(), completion_code="C", max_participants=1)
    Client(REMOTE_ADDR="198.51.100.99").post(join_url(full, pid="someone"))
    address = {"REMOTE_ADDR": "203.0.113.7"}
    assert Client(**address).post(join_url(link, pid="<b>")).status_code == 400
    assert Client(**address).post(join_url(closed)).status_code == 410
    assert Client(**address).post(join_url(full)).status_code == 409
    assert not JoinCounter.objects.filter(address="203.0.113.7").exists()
    assert Client(**address).post(join_url(link)).status_code == 302
    assert Client(**address).post(join_url(link, pid="second")).status_code == 429
    assert JoinCounter.objects.get(address="203.0.113.7").starts == 1
    assert list(Participant.objects.values_list("platform_id", flat=True).order_by("pk")) == ["someone", PID]


@override_settings(EDITLAB_JOIN_STARTS_PER_HOUR=1, TRUSTED_PROXIES=["127.0.0.1"])
def test_behind_a_trusted_proxy_the_forwarded_address_is_limited(link):
    proxied = {"REMOTE_ADDR": "127.0.0.1"}
    assert Client(**proxied, HTTP_X_FORWARDED_FOR="198.51.100.1").post(join_url(link, pid="a")).status_code == 302
    assert Client(**proxied, HTTP_X_FORWARDED_FOR="198.51.100.2").post(join_url(link, pid="b")).status_code == 302
    assert Client(**proxied, HTTP_X_FORWARDED_FOR="198.51.100.1").post(join_url(link, pid="c")).status_code == 429


# --------------------------------------------------------------------------- participants see their own work only


def test_a_participant_sees_only_its_own_work(link):
    alice, bob = Client(), Client()
    alice.post(join_url(link, pid="alice"))
    bob.post(join_url(link, pid="bob"))
    bobs = first_open(session_user(bob))
    assert alice.get(reverse("editor", args=[bobs.pk])).status_code == 404
    assert alice.get(reverse("editor_diff", args=[bobs.pk])).status_code == 404
    assert alice.get(reverse("manage-participation", args=[link.project.pk])).status_code == 403
    assert alice.get(reverse("api-participants", args=[link.project.pk])).status_code == 403
    ids = {row["id"] for row in alice.get(reverse("api-assignments")).json()["results"]}
    assert ids == set(Assignment.objects.filter(annotator=session_user(alice)).values_list("pk", flat=True))


# --------------------------------------------------------------------------- completion


def finish_all(user) -> str:
    """Submits every open item of the user unchanged; the last submit's next URL."""
    next_url = ""
    while (assignment := first_open(user)) is not None:
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        next_url = post_edit_submit(
            post_edit=post_edit,
            page_id=visit.page_id,
            text=post_edit.draft_text,
            version=post_edit.version,
            last_seq=-1,
        ).next_url
    return next_url


def test_after_the_last_item_the_participant_gets_the_completion_code(link):
    client = Client()
    client.post(join_url(link))
    user = session_user(client)
    assert client.get(reverse("participant-done")).status_code == 302  # work is still open: back to it
    assert finish_all(user) == reverse("participant-done")
    response = client.get(reverse("participant-done"))
    assert response.status_code == 200
    assert '<code id="completion-code">C0DE1234</code>' in response.content.decode()
    participant = Participant.objects.get()
    assert participant.completed_at is not None
    assert PostEdit.objects.filter(assignment__annotator=user, submitted_at__isnull=False).count() == 5
    # Coming back later: the link, the annotator home and the home page all lead to the code.
    for url in (join_url(link), reverse("annotator_home"), reverse("home")):
        response = client.get(url, follow=True)
        assert '<code id="completion-code">C0DE1234</code>' in response.content.decode(), url


def test_the_editors_submit_answer_leads_to_the_completion_page(link):
    client = Client()
    client.post(join_url(link))
    user = session_user(client)
    *_, last = Assignment.objects.filter(annotator=user)
    Assignment.objects.filter(annotator=user).exclude(pk=last.pk).update(status=Assignment.SUBMITTED)
    client.get(reverse("editor", args=[last.pk]))
    post_edit = PostEdit.objects.get(assignment=last)
    visit = post_edit.visits.get()
    payload = {
        "page_id": str(visit.page_id),
        "text": post_edit.draft_text,
        "version": post_edit.version,
        "last_seq": -1,
    }
    response = client.post(
        reverse("api-post-edit-submit", args=[post_edit.pk]), json.dumps(payload), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["next_url"] == reverse("participant-done")


def test_a_completion_url_redirects_with_the_code_where_it_asks_for_it():
    link = join_link_open(
        project=study(), completion_code="C0DE 1", completion_url="https://example.org/return?cc={code}&x=1"
    )
    client = Client()
    client.post(join_url(link))
    finish_all(session_user(client))
    response = client.get(reverse("participant-done"))
    assert response.status_code == 302
    assert response["Location"] == "https://example.org/return?cc=C0DE%201&x=1"
    assert Participant.objects.get().completed_at is not None


def test_the_completion_page_is_for_participants_only(annotator_client, researcher_client, admin_client):
    for client in (annotator_client, researcher_client, admin_client):
        assert client.get(reverse("participant-done")).status_code == 404
    assert Client().get(reverse("participant-done"))["Location"].startswith(reverse("login"))


def test_an_annotator_without_open_work_still_gets_the_annotator_home(annotator_client):
    response = annotator_client.get(reverse("annotator_home"))
    assert response.status_code == 200


# --------------------------------------------------------------------------- the Participants page


def test_the_participants_page_shows_the_link_to_paste_and_who_joined(link, researcher_client):
    Client().post(join_url(link))
    response = researcher_client.get(reverse("manage-participation", args=[link.project.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert f"http://testserver/join/{link.token}/" in body
    assert "?PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}" in body
    assert PID in body and "session-1" in body
    assert "Latin square: 1 practice item first, then all 2 documents" in " ".join(body.split())
    assert 'id="revoke"' not in body  # researchers read; no buttons


def test_an_admin_opens_and_revokes_a_link_on_the_page(admin_client):
    project = study()
    url = reverse("manage-participation-open", args=[project.pk])
    data = {
        "completion_code": "ABC",
        "completion_url": "",
        "max_participants": "20",
        "participant_param": "PROLIFIC_PID",
        "study_param": "STUDY_ID",
        "session_param": "",
    }
    response = admin_client.post(url, data)
    assert response.status_code == 302
    link = JoinLink.objects.get()
    assert (link.completion_code, link.max_participants) == ("ABC", 20)
    assert link.params == {"participant": "PROLIFIC_PID", "study": "STUDY_ID", "session": ""}
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert 'id="revoke"' in page and "Open a participation link" not in page
    response = admin_client.post(reverse("manage-participation-revoke", args=[project.pk, link.pk]))
    assert response.status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "Open a participation link" in page and "Revoked links" in page


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"completion_code": ""}, "completion_code", "give a completion code, a completion URL or both"),
        ({"completion_url": "javascript:alert(1)"}, "completion_url", "must be a full http:// or https:// address"),
        ({"max_participants": "99999999999999999999"}, "max_participants", "less than or equal to 1000000"),
        ({"max_participants": "-3"}, "max_participants", "greater than or equal to 1"),
        ({"participant_param": "<b>"}, "participant_param", "a query parameter name is 1-64 letters"),
        ({"study_param": "PROLIFIC_PID"}, None, "params: each id needs a query parameter name of its own"),
        ({"completion_code": "x" * 1000}, "completion_code", "at most 200 characters"),
    ],
)
def test_bad_settings_on_the_page_answer_400_with_the_message(admin_client, data, field, message):
    project = study()
    form = {"completion_code": "ABC", "participant_param": "PROLIFIC_PID", "study_param": "", "session_param": ""}
    response = admin_client.post(reverse("manage-participation-open", args=[project.pk]), {**form, **data})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert message in " ".join(errors.get(field or "__all__", [])), errors
    assert not JoinLink.objects.exists()


def test_the_page_says_why_participants_cannot_join_yet(admin_client):
    project = ProjectFactory(design=Project.DESIGN_LATIN_SQUARE)
    body = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "Participants cannot join yet: conditions: a Latin-square project needs conditions" in body
    response = admin_client.post(
        reverse("manage-participation-open", args=[project.pk]), {"completion_code": "A", "participant_param": "P"}
    )
    assert response.status_code == 400 and not JoinLink.objects.exists()


def test_another_projects_link_cannot_be_revoked_through_this_project(admin_client, link):
    other = study()
    response = admin_client.post(reverse("manage-participation-revoke", args=[other.pk, link.pk]))
    assert response.status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None


# --------------------------------------------------------------------------- simultaneous joins


@pytest.fixture(scope="module")
def join_db_template(tmp_path_factory) -> Path:
    """A migrated database file for the SQLite branch (tests/editlab/app_process.py)."""
    from tests.editlab.app_process import make_template

    return make_template(tmp_path_factory.mktemp("join-db"))


def _parallel(work, count: int) -> list:
    barrier = threading.Barrier(count)
    results: list = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        barrier.wait()
        result = work(n)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


# serialized_rollback: the flush after this test must bring back the migrations' rows (role groups).
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_simultaneous_joins_never_share_a_slot(join_db_template, tmp_path):
    """12 Starts at once, two of them with the same id: 11 participants in slots 0..10, each with its
    own queue. On PostgreSQL the test client runs in 12 threads against the suite's database; on
    SQLite a threaded app server works on a database file (the in-memory one takes no concurrent
    writers)."""
    if connection.vendor == "postgresql":
        link = join_link_open(project=study(documents=3), completion_code="C")

        def start(n: int) -> int:
            try:
                pid = "same" if n < 2 else f"pid{n}"
                return Client(REMOTE_ADDR=f"192.0.2.{n}").post(join_url(link, pid=pid)).status_code
            finally:
                connection.close()

        statuses = _parallel(start, 12)
        slots = sorted(Participant.objects.values_list("slot", flat=True))
        queues = len(set(Assignment.objects.values_list("annotator", flat=True)))
    else:
        statuses, slots, queues = _parallel_against_a_sqlite_server(join_db_template, tmp_path)
    assert statuses == [302] * 12
    assert slots == list(range(11))
    assert queues == 11


def _parallel_against_a_sqlite_server(template, tmp_path) -> tuple[list[int], list[int], int]:
    import http.cookiejar
    import urllib.error

    from tests.editlab.app_process import AppServer, copy_of, free_port, query, run_script

    database = copy_of(template, tmp_path, "joins.sqlite3")
    token = run_script(
        database,
        "import json\n"
        "from annotations.models import Project\n"
        "from annotations.services.join_links import join_link_open\n"
        "from tests.factories import ItemFactory, ProjectFactory\n"
        f"project = ProjectFactory(conditions={CONDITIONS!r}, design='latin-square')\n"
        "for d in range(3):\n"
        "    ItemFactory(project=project, external_id=f'd{d}', document=f'doc{d}', document_position=0,"
        " outputs={'sysA': 'x'})\n"
        "print(json.dumps(join_link_open(project=project, completion_code='C').token))",
    )
    server = AppServer(database, free_port(), tmp_path / "server.log")
    server.start()
    try:
        openers = []
        for n in range(12):
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
            pid = "same" if n < 2 else f"pid{n}"
            url = f"{server.url}/join/{token}/?PROLIFIC_PID={pid}"
            page = opener.open(url).read().decode()
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
            openers.append((opener, url, urlencode({"csrfmiddlewaretoken": csrf}).encode()))

        def start(n: int) -> int:
            opener, url, body = openers[n]
            try:
                return opener.open(url, body, timeout=60).status
            except urllib.error.HTTPError as error:
                return error.code

        statuses = _parallel(start, 12)
    finally:
        server.kill()
    slots = [row[0] for row in query(database, "SELECT slot FROM annotations_participant ORDER BY slot")]
    queues = query(database, "SELECT COUNT(DISTINCT annotator_id) FROM annotations_assignment")[0][0]
    return statuses, slots, queues


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Keeps the 302 of Start as the answer (an HTTPError; the editor behind it is another request)."""

    def redirect_request(self, *args, **kwargs) -> None:
        return None


def test_markup_in_the_links_settings_and_ids_is_shown_as_text(admin_client):
    markup = "<img src=x onerror=alert(1)>"
    project = study()
    Project.objects.filter(pk=project.pk).update(guidelines=f"Guidelines {markup} [x](javascript:alert(1))")
    link = join_link_open(project=project, completion_code=markup, completion_url="https://example.org/?q=<b>")
    client = Client()
    welcome = client.get(join_url(link, STUDY_ID="st")).content.decode()
    assert markup not in welcome and "javascript:alert" not in welcome
    client.post(join_url(link))
    finish_all(session_user(client))
    join_link_revoke(join_link=link)
    link.completion_url = ""
    link.save(update_fields=["completion_url"])
    done = client.get(reverse("participant-done")).content.decode()
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    for body in (done, page):
        assert markup not in body and "&lt;img src=x onerror=alert(1)&gt;" in body
