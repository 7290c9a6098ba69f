"""What a crowd participant's completion code certifies (issue 18, section 4), on SQLite and
PostgreSQL: the code needs the work (at most the link's max_skips skipped), one id spelled any way
is one participant (NFKC + case folding), and an idle slot is released to the next newcomer."""

import json
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.editing.lifecycle import post_edit_open, post_edit_skip
from annotations.models import Assignment, JoinLink, Participant, Visit
from annotations.services.join_links import PlatformIds, join_link_open, platform_id_error, platform_key
from annotations.services.participants import JoinRefused, participant_join
from tests.annotations.test_join_pages import (  # noqa: F401 - join_db_template is a fixture
    _NoRedirect,
    _parallel,
    finish_all,
    join_url,
    session_user,
    study,
)
from tests.annotations.test_join_pages import join_db_template as join_db_template  # a fixture

pytestmark = pytest.mark.django_db

PID = "5f8e9a0b1c2d3e4f5a6b7c8d"
FULL_WIDTH = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})


def skip_all(user, reason: str = "x") -> str:
    next_url = ""
    while (assignment := Assignment.objects.open_for(user).first()) is not None:
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        next_url = post_edit_skip(post_edit=post_edit, page_id=visit.page_id, reason=reason)
    return next_url


def started(link: JoinLink, pid: str = PID) -> Client:
    client = Client()
    assert client.post(join_url(link, pid=pid)).status_code == 302
    return client


# --------------------------------------------------------------------------- the code needs the work


def test_skipping_every_item_with_reason_x_gets_no_code_but_the_way_back():
    link = join_link_open(
        project=study(), completion_code="C0DE1234", completion_url="https://app.prolific.com/complete?cc={code}"
    )
    client = started(link)
    user = session_user(client)
    assert skip_all(user, "x") == reverse("participant-done")
    done = client.get(reverse("participant-done"))
    body = done.content.decode()
    assert done.status_code == 200  # not the redirect to the completion URL with the code
    assert "C0DE1234" not in body and "prolific.com/complete" not in body
    assert "You skipped 4 of the study&#x27;s 4 items" in body and "every item submitted" in body
    assert "Return submission" in body
    participant = Participant.objects.get()
    assert participant.outcome == Participant.NO_CODE and participant.released_at is not None
    # Coming back does not turn it into a code.
    again = client.get(join_url(link), follow=True).content.decode()
    assert "C0DE1234" not in again and "no completion code" in again.lower()


def test_practice_items_skipped_do_not_count_and_submitted_work_earns_the_code():
    link = join_link_open(project=study(), completion_code="C0DE1234")
    client = started(link)
    user = session_user(client)
    practice = Assignment.objects.get(annotator=user, item__practice=True)
    post_edit, visit = post_edit_open(assignment=practice, user=user)
    post_edit_skip(post_edit=post_edit, page_id=visit.page_id, reason="x")
    finish_all(user)
    assert '<code id="completion-code">C0DE1234</code>' in client.get(reverse("participant-done")).content.decode()
    assert Participant.objects.get().outcome == Participant.CODE


@pytest.mark.parametrize(("skips", "earned"), [(2, True), (3, False)])
def test_the_link_may_allow_n_skips(skips, earned):
    link = join_link_open(project=study(), completion_code="C0DE1234", max_skips=2)
    client = started(link)
    user = session_user(client)
    items = list(Assignment.objects.filter(annotator=user, item__practice=False))
    for assignment in items[:skips]:
        post_edit, visit = post_edit_open(assignment=assignment, user=user)
        post_edit_skip(post_edit=post_edit, page_id=visit.page_id, reason="unclear")
    finish_all(user)
    body = client.get(reverse("participant-done")).content.decode()
    assert ('<code id="completion-code">C0DE1234</code>' in body) is earned
    if not earned:
        assert "You skipped 3 of the study&#x27;s 4 items" in body and "at most 2 items skipped" in body


def test_the_participants_page_and_api_show_the_rule_and_each_outcome(admin_client):
    project = study()
    link = join_link_open(project=project, completion_code="C", max_skips=1, idle_minutes=45)
    for pid, finish in (("skipper", skip_all), ("worker", finish_all)):
        client = started(link, pid)
        finish(session_user(client))
        client.get(reverse("participant-done"))
    finish_all(session_user(started(link, "finished-tab-closed")))
    started(link, "idler")
    Participant.objects.filter(platform_id="idler").update(joined_at=timezone.now() - timedelta(minutes=46))
    page = admin_client.get(reverse("manage-participation", args=[project.pk])).content.decode()
    assert "every non-practice item submitted or skipped, at most 1 skipped" in page
    assert "released after 45 minutes without activity" in page
    statuses = re.findall(r'data-outcome="(\w+)".*?<td class="status">([^<]+)</td>', page, re.S)
    assert sorted(statuses) == [
        ("code", "earned the code"),
        ("no_code", "finished without the code (too many skipped); slot released"),
        ("working", "all work done; the completion page decides the code when they open it"),
        ("working", "idle over 45 min: released when someone joins"),
    ]
    api = admin_client.get(reverse("api-participants", args=[project.pk])).json()
    rows = api["results"] if isinstance(api, dict) else api
    assert sorted(row["outcome"] for row in rows) == ["", "", "code", "no_code"]
    links = admin_client.get(reverse("api-join-links", args=[project.pk])).json()
    assert (links[0]["max_skips"], links[0]["idle_minutes"]) == (1, 45)


def test_bad_rule_settings_are_refused_naming_the_field(admin_client):
    project = study()
    for payload, field in (({"max_skips": -1}, "max_skips"), ({"idle_minutes": 10**9}, "idle_minutes")):
        response = admin_client.post(
            reverse("api-join-link-open", args=[project.pk]),
            json.dumps({"completion_code": "C", **payload}),
            content_type="application/json",
        )
        assert response.status_code == 400 and field in response.json()["errors"]


# --------------------------------------------------------------------------- one id, one participant


def test_one_prolific_id_spelled_three_ways_is_one_participant():
    link = join_link_open(project=study(), completion_code="C")
    clients = [started(link, pid) for pid in (PID, PID.upper(), PID.translate(FULL_WIDTH))]
    assert Participant.objects.count() == 1
    assert {session_user(client).pk for client in clients} == {Participant.objects.get().user_id}
    assert Participant.objects.get().platform_id == PID  # kept as first given


ID_CHARS = st.characters(whitelist_categories=("Lu", "Ll", "Lt", "Nd", "Nl", "No"), whitelist_characters="-_.:@+~")
SPELLINGS = [str.upper, str.lower, str.casefold, str.swapcase, lambda s: s.translate(FULL_WIDTH), str.title]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.text(ID_CHARS, min_size=1, max_size=20),
    spell=st.sampled_from(SPELLINGS),
    other=st.text(ID_CHARS, min_size=1, max_size=20),
)
def test_any_two_spellings_equal_under_nfkc_and_case_folding_are_one_participant(base, spell, other):
    variant = spell(base)
    if platform_id_error(base, name="p") or platform_id_error(variant, name="p") or platform_id_error(other, name="p"):
        return  # refused at the door (e.g. an id that folds to a non-id character)
    project = study(documents=2, segments=1)
    link = join_link_open(project=project, completion_code="C")
    first = participant_join(join_link=link, ids=PlatformIds(base)).participant
    second = participant_join(join_link=link, ids=PlatformIds(variant)).participant
    assert (first.pk == second.pk) is (platform_key(base) == platform_key(variant))
    third = participant_join(join_link=link, ids=PlatformIds(other)).participant
    assert (third.pk == first.pk) is (platform_key(other) == platform_key(base))
    assert Participant.objects.filter(project=project).count() == len(
        {platform_key(base), platform_key(variant), platform_key(other)}
    )


@given(st.text(max_size=30))
def test_the_key_is_a_fixed_point(value):
    assert platform_key(platform_key(value)) == platform_key(value)


def test_the_migration_keys_stored_ids_and_keeps_two_spellings_already_stored_apart():
    from importlib import import_module

    migration = import_module("annotations.migrations.0011_participant_rules")
    link = join_link_open(project=study(), completion_code="C")
    a = participant_join(join_link=link, ids=PlatformIds("abc")).participant
    b = participant_join(join_link=link, ids=PlatformIds("ABCD")).participant
    # As main stored them: two spellings of one id, keys not yet filled, one of them complete.
    Participant.objects.filter(pk=a.pk).update(platform_id="ＡＢＣ", platform_key="", completed_at=timezone.now())
    Participant.objects.filter(pk=b.pk).update(platform_id="abc", platform_key="?")
    migration.fill_platform_keys(apps, None)
    rows = dict(Participant.objects.values_list("pk", "platform_key"))
    assert rows == {a.pk: "abc", b.pk: f"abc #{b.pk}"}
    assert Participant.objects.get(pk=a.pk).outcome == Participant.CODE
    # The earliest one resumes under any spelling.
    assert participant_join(join_link=link, ids=PlatformIds("Abc")).participant.pk == a.pk


# --------------------------------------------------------------------------- idle slots


def _idle_for(minutes: float, *pids: str) -> None:
    Participant.objects.filter(platform_id__in=pids).update(joined_at=timezone.now() - timedelta(minutes=minutes))


def test_made_up_ids_that_fill_a_link_are_released_after_30_idle_minutes_for_the_real_participant():
    project = study()
    link = join_link_open(project=project, completion_code="C", max_participants=3)
    fakes = [participant_join(join_link=link, ids=PlatformIds(f"fake{n}")).participant for n in range(3)]
    queue_of_slot = {
        p.slot: list(Assignment.objects.filter(annotator=p.user).values_list("item_id", "condition")) for p in fakes
    }
    real = Client()
    assert real.post(join_url(link, pid=PID)).status_code == 409  # full: the fakes were active 0 min ago
    _idle_for(29, "fake0", "fake1", "fake2")
    assert real.post(join_url(link, pid=PID)).status_code == 409
    _idle_for(31, "fake1")
    assert real.post(join_url(link, pid=PID)).status_code == 302
    newcomer = Participant.objects.get(platform_key=PID)
    assert newcomer.slot == 1  # the released slot, with its work
    mine = list(Assignment.objects.filter(annotator=newcomer.user).values_list("item_id", "condition"))
    assert mine == queue_of_slot[1]
    fake1 = Participant.objects.get(platform_id="fake1")
    assert fake1.outcome == Participant.IDLE and fake1.released_at is not None
    reasons = set(Assignment.objects.filter(annotator=fake1.user).values_list("status", "skip_reason"))
    assert reasons == {
        (Assignment.SKIPPED, "released: no activity for 30 minutes; the slot went to another participant")
    }
    # The released id coming back is told, with the way back to the platform.
    back = Client().post(join_url(link, pid="FAKE1"))
    assert back.status_code == 410 and "released after 30 minutes without activity" in back.content.decode()
    assert Participant.objects.filter(released_at__isnull=True).count() == 3


def test_activity_keeps_a_slot_and_idle_minutes_zero_never_releases():
    link = join_link_open(project=study(), completion_code="C", max_participants=1)
    holder = participant_join(join_link=link, ids=PlatformIds("holder")).participant
    _idle_for(120, "holder")
    assignment = Assignment.objects.open_for(holder.user).first()
    post_edit_open(assignment=assignment, user=holder.user)  # opened an item a moment ago
    with pytest.raises(JoinRefused) as refused:
        participant_join(join_link=link, ids=PlatformIds("newcomer"))
    assert refused.value.code == "full"
    JoinLink.objects.filter(pk=link.pk).update(idle_minutes=0)
    Assignment.objects.filter(annotator=holder.user).update(started=None)
    Visit.objects.filter(post_edit__assignment__annotator=holder.user).update(
        last_seen_at=timezone.now() - timedelta(days=9)
    )
    with pytest.raises(JoinRefused):
        participant_join(join_link=JoinLink.objects.get(pk=link.pk), ids=PlatformIds("newcomer"))


def test_the_welcome_page_counts_an_idle_slot_as_free():
    link = join_link_open(project=study(), completion_code="C", max_participants=1)
    participant_join(join_link=link, ids=PlatformIds("holder"))
    assert Client().get(join_url(link, pid="new")).status_code == 409
    _idle_for(31, "holder")
    assert Client().get(join_url(link, pid="new")).status_code == 200
    assert not Participant.objects.filter(released_at__isnull=False).exists()  # the page releases nothing


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_simultaneous_newcomers_take_released_slots_once_on_postgresql_and_sqlite(join_db_template, tmp_path):
    """Two idle participants fill a link of max_participants=2; six Starts at once, three of them
    spellings of one id: the idle ones are released once, at most two people hold slots, each slot
    once, and the three spellings are one participant."""
    pids = [PID, PID.upper(), PID.translate(FULL_WIDTH), "other1", "other2", "other3"]
    if connection.vendor == "postgresql":
        link = join_link_open(project=study(), completion_code="C", max_participants=2)
        for pid in ("idle0", "idle1"):
            participant_join(join_link=link, ids=PlatformIds(pid))
        _idle_for(31, "idle0", "idle1")

        def start(n: int) -> int:
            try:
                return Client(REMOTE_ADDR=f"192.0.2.{n}").post(join_url(link, pid=pids[n])).status_code
            finally:
                connection.close()

        statuses = _parallel(start, len(pids))
        rows = list(Participant.objects.values_list("platform_key", "slot", "released_at", "outcome"))
    else:
        statuses, rows = _against_a_sqlite_server(join_db_template, tmp_path, pids)
    held = [(key, slot) for key, slot, released, _ in rows if released is None]
    assert set(statuses) <= {302, 409}, statuses
    assert len(held) == 2 and sorted(slot for _, slot in held) == [0, 1]
    assert sorted(outcome for key, _, _, outcome in rows if key.startswith("idle")) == ["idle", "idle"]
    keys = [key for key, *_ in rows]
    assert len(keys) == len(set(keys)) and keys.count(PID) <= 1
    assert statuses.count(302) == (3 if PID in keys else 0) + sum(1 for k in keys if k.startswith("other"))


def _against_a_sqlite_server(template, tmp_path, pids: list[str]):
    import http.cookiejar
    import urllib.error
    import urllib.request
    from urllib.parse import quote

    from tests.editlab.app_process import AppServer, copy_of, free_port, query, run_script

    database = copy_of(template, tmp_path, "idle.sqlite3")
    token = run_script(
        database,
        "import json\n"
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from annotations.models import Participant\n"
        "from annotations.services.join_links import PlatformIds, join_link_open\n"
        "from annotations.services.participants import participant_join\n"
        "from tests.annotations.test_join_pages import study\n"
        "link = join_link_open(project=study(), completion_code='C', max_participants=2)\n"
        "for pid in ('idle0', 'idle1'):\n"
        "    participant_join(join_link=link, ids=PlatformIds(pid))\n"
        "Participant.objects.update(joined_at=timezone.now() - timedelta(minutes=31))\n"
        "print(json.dumps(link.token))",
    )
    server = AppServer(database, free_port(), tmp_path / "server.log")
    server.start()
    try:
        openers = []
        for pid in pids:
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
            url = f"{server.url}/join/{token}/?PROLIFIC_PID={quote(pid)}"
            page = opener.open(url).read().decode()
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
            openers.append((opener, url, f"csrfmiddlewaretoken={csrf}".encode()))

        def start(n: int) -> int:
            opener, url, body = openers[n]
            try:
                return opener.open(url, body, timeout=60).status
            except urllib.error.HTTPError as error:
                return error.code

        statuses = _parallel(start, len(pids))
    finally:
        server.kill()
    rows = query(database, "SELECT platform_key, slot, released_at, outcome FROM annotations_participant")
    return statuses, [tuple(row) for row in rows]
