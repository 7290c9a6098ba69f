"""Crowd participants' services: opening and revoking a participation link, joining (slot, queue,
account), resuming, closed and full studies, completion, and the per-address rate limit."""

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from annotations.design import latin_square_row
from annotations.models import Assignment, JoinCounter, JoinLink, Participant, Project
from annotations.roles import is_annotator
from annotations.selectors import project_documents
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError
from annotations.services.join_links import (
    DEFAULT_PARAMS,
    PlatformIds,
    completion_redirect,
    join_link_by_token,
    join_link_open,
    join_link_revoke,
    join_params,
    platform_ids,
)
from annotations.services.participants import (
    JoinRefused,
    join_attempt_begin,
    join_refusal,
    participant_complete,
    participant_join,
)
from annotations.services.studies import study_assign_latin_square
from tests.factories import ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysA", "highlights": True},
    {"name": "scratch", "output": None, "highlights": False},
]


def latin_study(documents: int = 6, segments: int = 2, practice: int = 1) -> Project:
    project = ProjectFactory(conditions=CONDITIONS, design=Project.DESIGN_LATIN_SQUARE)
    for p in range(practice):
        ItemFactory(project=project, external_id=f"practice-{p}", practice=True)
    for d in range(documents):
        for s in reversed(range(segments)):
            ItemFactory(
                project=project,
                external_id=f"d{d}-s{s}",
                document=f"doc{d}",
                document_position=s,
                outputs={"sysA": f"output {d}.{s}"},
            )
    return project


def open_link(project: Project, **kwargs) -> JoinLink:
    return join_link_open(project=project, **{"completion_code": "C0DE1234", **kwargs})


def join(link: JoinLink, pid: str, **kwargs) -> Participant:
    return participant_join(join_link=link, ids=PlatformIds(pid, **kwargs)).participant


def queue_of(participant: Participant) -> list[tuple[str, str]]:
    return list(Assignment.objects.filter(annotator=participant.user).values_list("item__external_id", "condition"))


# --------------------------------------------------------------------------- opening and revoking


def test_a_link_opens_with_prolifics_parameter_names_by_default():
    project = latin_study()
    link = open_link(project, completion_url="https://app.prolific.com/submissions/complete?cc=C0DE1234")
    assert link.params == DEFAULT_PARAMS
    assert link.is_open and link.max_participants is None
    assert join_link_by_token(link.token) == link
    assert len(link.token) >= 32
    assert link.platform_query() == (
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def test_parameter_names_are_configurable_and_empty_ones_are_not_read():
    link = open_link(latin_study(), params={"participant": "workerId", "study": "", "session": "assignmentId"})
    assert link.params == {"participant": "workerId", "study": "", "session": "assignmentId"}
    assert link.platform_query() == "?workerId={{%workerId%}}&assignmentId={{%assignmentId%}}"
    ids = platform_ids(join_link=link, query={"workerId": ["A1B2"], "assignmentId": ["x9"], "STUDY_ID": ["ignored"]})
    assert ids == PlatformIds("A1B2", "", "x9")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"completion_code": ""}, "completion_code: give a completion code, a completion URL or both"),
        ({"completion_url": "javascript:alert(1)"}, "completion_url: must be a full http:// or https://"),
        ({"completion_url": "ftp://example.org/done"}, "completion_url: must be a full http:// or https://"),
        ({"completion_url": "https://x.org/" + "a" * 2000}, "completion_url: at most 2000 characters"),
        ({"completion_code": "C" * 201}, "completion_code: at most 200 characters"),
        ({"completion_code": "C0\x00DE"}, "completion_code: contains a character that cannot be shown (U+0000)"),
        ({"completion_code": "C0\u202eDE"}, "completion_code: contains a character that cannot be shown (U+202E"),
        ({"max_participants": 0}, "max_participants: a whole number from 1 to 1,000,000"),
        ({"max_participants": 10**30}, "max_participants: a whole number from 1 to 1,000,000"),
        ({"max_participants": True}, "max_participants: a whole number from 1 to 1,000,000"),
        ({"params": {"participant": ""}}, "params.participant: name the query parameter"),
        ({"params": {"participant": "PID", "study": "PID"}}, "params: each id needs a query parameter name of its own"),
        ({"params": {"participant": "<b>PID</b>"}}, "params.participant: a query parameter name is 1-64 letters"),
        ({"params": {"participant": "P" * 65}}, "params.participant: a query parameter name is 1-64 letters"),
        ({"params": {"worker": "X"}}, "params: unknown key(s) worker"),
        ({"params": ["PROLIFIC_PID"]}, "params: must be an object"),
        ({"params": {"participant": 5}}, "params.participant: must be a query parameter name (text)"),
    ],
)
def test_bad_link_settings_are_refused_naming_the_field(kwargs, message):
    project = latin_study()
    with pytest.raises(ServiceError) as refused:
        open_link(project, **kwargs)
    assert str(refused.value).startswith(message), str(refused.value)
    assert not JoinLink.objects.exists()


def test_the_completion_url_may_carry_a_code_placeholder():
    link = open_link(latin_study(), completion_code="A B&C", completion_url="https://example.org/done?code={code}")
    assert completion_redirect(link) == "https://example.org/done?code=A%20B%26C"
    assert completion_redirect(open_link(latin_study(), completion_code="X")) == ""
    assert completion_redirect(None) == ""


def test_one_open_link_per_project_and_a_new_one_after_revoking():
    project = latin_study()
    first = open_link(project)
    with pytest.raises(ServiceError, match="project: already has an open participation link; revoke it first"):
        open_link(project)
    revoked = join_link_revoke(join_link=first)
    assert revoked.revoked_at is not None
    assert join_link_revoke(join_link=first).revoked_at == revoked.revoked_at  # idempotent
    second = open_link(project)
    assert second.token != first.token and second.is_open


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p.items.filter(practice=False).delete(), "documents: the project has no documents"),
        (lambda p: Project.objects.filter(pk=p.pk).update(conditions=[]), "conditions: a Latin-square project needs"),
        (lambda p: p.items.filter(document__in=["doc1", "doc2", "doc3", "doc4", "doc5"]).delete(), "documents: 1"),
    ],
)
def test_a_project_that_cannot_give_participants_work_cannot_open_a_link(setup, message):
    project = latin_study()
    setup(project)
    project.refresh_from_db()
    with pytest.raises(ServiceError) as refused:
        open_link(project)
    assert str(refused.value).startswith(message), str(refused.value)


def test_a_simple_project_without_items_cannot_open_a_link():
    with pytest.raises(ServiceError, match="design: the project has no items to edit"):
        open_link(ProjectFactory())


# --------------------------------------------------------------------------- joining a Latin-square study


def test_each_participant_gets_practice_first_then_its_latin_square_row():
    project = latin_study(documents=6, segments=2, practice=1)
    link = open_link(project)
    documents = [d.key for d in project_documents(project=project)]
    for slot in range(3):
        participant = join(link, f"pid{slot}", study="S1", session=f"sess{slot}")
        assert participant.slot == slot
        assert (participant.study_id, participant.session_id) == ("S1", f"sess{slot}")
        queue = queue_of(participant)
        assert queue[0] == ("practice-0", "")
        expected = [
            (f"{document.replace('doc', 'd')}-s{s}", condition)
            for document, condition in latin_square_row(slot, documents=documents, conditions=["a", "b", "scratch"])
            for s in range(2)
        ]
        assert queue[1:] == expected
        # Every condition on an equal share of the participant's documents.
        assert Counter(condition for _, condition in queue[1:]) == {"a": 4, "b": 4, "scratch": 4}
        positions = list(Assignment.objects.filter(annotator=participant.user).values_list("queue_position", flat=True))
        assert positions == list(range(13))
    # After three participants (one per condition) every document was seen under every condition once.
    seen = Counter(
        Assignment.objects.filter(item__project=project, item__practice=False)
        .values_list("item__document", "condition")
        .distinct()
    )
    assert len(seen) == 6 * 3


def test_the_participant_account_is_an_annotator_that_cannot_log_in_with_a_password():
    participant = join(open_link(latin_study()), "5f8e9a0b1c2d3e4f5a6b7c8d")
    user = participant.user
    assert is_annotator(user) and not user.is_staff and user.is_active
    assert not user.has_usable_password()
    assert user.username.startswith(f"p{participant.project_id}-0-")
    assert "5f8e9a0b" not in user.username


def test_rejoining_with_the_same_id_resumes_without_a_second_account_or_slot():
    link = open_link(latin_study())
    first = participant_join(join_link=link, ids=PlatformIds("pid-1"))
    again = participant_join(join_link=link, ids=PlatformIds("pid-1", session="other"))
    assert first.created and not again.created
    assert again.participant == first.participant
    assert again.participant.session_id == ""  # the first join's record is kept
    assert Participant.objects.count() == 1
    assert get_user_model().objects.filter(participant__isnull=False).count() == 1
    assert Assignment.objects.count() == 13


def test_participants_take_the_rows_after_the_lab_annotators_of_the_last_design():
    project = latin_study(documents=3, segments=1, practice=0)
    lab = [UserFactory(username=f"lab{k}", role="annotator") for k in range(2)]
    study_assign_latin_square(project=project, annotators=lab, conditions=["a", "b"], apply=True)
    project.refresh_from_db()
    participant = join(open_link(project), "pid")
    assert participant.slot == 2
    documents = [d.key for d in project_documents(project=project)]
    row = latin_square_row(2, documents=documents, conditions=["a", "b"])  # the design's two conditions
    assert queue_of(participant) == [(document.replace("doc", "d") + "-s0", c) for document, c in row]


def test_a_freed_slot_is_taken_again():
    link = open_link(latin_study())
    people = [join(link, f"pid{k}") for k in range(3)]
    people[1].user.delete()  # an admin removed a participant: its slot is free again
    assert join(link, "pid-new").slot == 1


def test_a_revoked_link_admits_nobody_new_but_who_joined_resumes():
    link = open_link(latin_study())
    joined = join(link, "pid-1")
    join_link_revoke(join_link=link)
    with pytest.raises(JoinRefused) as refused:
        join(link, "pid-2")
    assert (refused.value.code, refused.value.status) == ("closed", 410)
    assert join(link, "pid-1") == joined
    assert join_refusal(join_link=JoinLink.objects.get(pk=link.pk)).code == "closed"


def test_a_deactivated_participant_cannot_resume():
    link = open_link(latin_study())
    participant = join(link, "pid-1")
    get_user_model().objects.filter(pk=participant.user_id).update(is_active=False)
    with pytest.raises(JoinRefused, match="ended by the researchers"):
        join(link, "pid-1")


def test_a_link_admits_at_most_its_maximum():
    link = open_link(latin_study(), max_participants=2)
    join(link, "pid-1")
    join(link, "pid-2")
    with pytest.raises(JoinRefused) as refused:
        join(link, "pid-3")
    assert (refused.value.code, refused.value.status) == ("full", 409)
    assert join(link, "pid-2").slot == 1  # who is in still resumes
    assert Participant.objects.count() == 2


def test_a_study_that_lost_its_documents_is_not_ready():
    project = latin_study()
    link = open_link(project)
    project.items.filter(practice=False).delete()
    with pytest.raises(JoinRefused) as refused:
        join(link, "pid-1")
    assert (refused.value.code, refused.value.status) == ("not_ready", 503)
    assert not Participant.objects.exists() and not get_user_model().objects.filter(username__startswith="p").exists()


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (PlatformIds(""), "participant: the participant id is missing"),
        (PlatformIds("a" * 201), "participant: an id has at most 200 characters; this one has 201"),
        (
            PlatformIds("abc\x00"),
            "participant: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+0000",
        ),
        (PlatformIds("pid", study="<script>"), "study: an id holds letters"),
        (PlatformIds("pid", session="a b"), "session: an id holds letters"),
    ],
)
def test_the_service_checks_the_ids_itself(ids, message):
    with pytest.raises(ServiceError) as refused:
        participant_join(join_link=open_link(latin_study()), ids=ids)
    assert str(refused.value).startswith(message), str(refused.value)
    assert not Participant.objects.exists()


# --------------------------------------------------------------------------- reading the ids from the link


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({}, "PROLIFIC_PID: the link carries no participant id"),
        ({"PROLIFIC_PID": [""]}, "PROLIFIC_PID: the link carries no participant id"),
        ({"PROLIFIC_PID": ["   "]}, "PROLIFIC_PID: the link carries no participant id"),
        ({"PROLIFIC_PID": ["a", "b"]}, "PROLIFIC_PID: given 2 times in the link"),
        ({"PROLIFIC_PID": ["x" * 1000]}, "PROLIFIC_PID: an id has at most 200 characters; this one has 1,000"),
        (
            {"PROLIFIC_PID": ["ab\x00cd"]},
            "PROLIFIC_PID: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+0000",
        ),
        (
            {"PROLIFIC_PID": ["ab\u202ecd"]},
            "PROLIFIC_PID: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+202E RIGHT-TO-LEFT OVERRIDE",
        ),
        (
            {"PROLIFIC_PID": ["ab\u200bcd"]},
            "PROLIFIC_PID: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+200B ZERO WIDTH SPACE",
        ),
        (
            {"PROLIFIC_PID": ["A\u030a"]},
            "PROLIFIC_PID: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+030A COMBINING RING ABOVE",
        ),
        (
            {"PROLIFIC_PID": ["<script>alert(1)</script>"]},
            "PROLIFIC_PID: an id holds letters, digits and - _ . : @ + ~ only; this one contains U+003C LESS-THAN SIGN",
        ),
        ({"PROLIFIC_PID": ["pid"], "STUDY_ID": ["s" * 1000]}, "STUDY_ID: an id has at most 200 characters"),
        ({"PROLIFIC_PID": ["pid"], "SESSION_ID": ["\ud800"]}, "SESSION_ID: an id holds letters"),
    ],
)
def test_malformed_ids_in_the_link_are_refused_naming_the_parameter(query, message):
    link = open_link(latin_study())
    with pytest.raises(ServiceError) as refused:
        platform_ids(join_link=link, query=query)
    assert str(refused.value).startswith(message), str(refused.value)


def test_ids_of_any_script_are_accepted_as_given():
    link = open_link(latin_study())
    ids = platform_ids(join_link=link, query={"PROLIFIC_PID": [" Ünïcødé-محمد_42 "], "STUDY_ID": ["s.1"]})
    assert ids == PlatformIds("Ünïcødé-محمد_42", "s.1", "")


def test_join_params_default_to_prolific():
    assert join_params(None) == DEFAULT_PARAMS
    assert join_params({"participant": "PID"}) == {"participant": "PID", "study": "STUDY_ID", "session": "SESSION_ID"}


# --------------------------------------------------------------------------- simple projects


def test_a_simple_project_gives_slot_k_batch_k_mod_b_to_overlap_participants_each():
    project = ProjectFactory(overlap=2)
    ItemFactory(project=project, external_id="practice", practice=True)
    for n in range(4):
        ItemFactory(project=project, external_id=f"i{n}")
    batches = batch_make(project=project, size=2)  # [practice, i0], [i1, i2], [i3]
    assert len(batches) == 3
    link = open_link(project)
    queues = [queue_of(join(link, f"pid{k}")) for k in range(6)]
    assert queues[0] == [("practice", ""), ("i0", "")]
    assert queues[1] == [("practice", ""), ("i1", ""), ("i2", "")]
    assert queues[2] == [("practice", ""), ("i3", "")]
    assert queues[3:] == queues[:3]
    with pytest.raises(JoinRefused) as refused:
        join(link, "pid6")
    assert refused.value.code == "full"
    assert join_refusal(join_link=link).code == "full"


def test_a_simple_project_without_batches_gives_everyone_every_item():
    project = ProjectFactory(overlap=1)
    ItemFactory(project=project, external_id="b", document="doc", document_position=1)
    ItemFactory(project=project, external_id="a", document="doc", document_position=0)
    ItemFactory(project=project, external_id="p", practice=True)
    link = open_link(project)
    assert queue_of(join(link, "pid0")) == [("p", ""), ("a", ""), ("b", "")]
    with pytest.raises(JoinRefused, match="all the participants it needs"):
        join(link, "pid1")


# --------------------------------------------------------------------------- completing


def test_a_participant_is_complete_once_nothing_is_open():
    participant = join(open_link(latin_study(documents=3, segments=1)), "pid")
    assignments = list(Assignment.objects.filter(annotator=participant.user))
    assert not participant_complete(participant=participant)
    Assignment.objects.filter(pk__in=[a.pk for a in assignments[:-1]]).update(status=Assignment.SUBMITTED)
    Assignment.objects.filter(pk=assignments[-1].pk).update(status=Assignment.IN_PROGRESS)
    assert not participant_complete(participant=participant)
    Assignment.objects.filter(pk=assignments[-1].pk).update(status=Assignment.SKIPPED)
    assert participant_complete(participant=participant)
    participant.refresh_from_db()
    first = participant.completed_at
    assert first is not None
    assert participant_complete(participant=participant)
    participant.refresh_from_db()
    assert participant.completed_at == first


# --------------------------------------------------------------------------- the rate limit


@override_settings(EDITLAB_JOIN_STARTS_PER_HOUR=3)
def test_starts_are_limited_per_address_for_an_hour():
    results = [join_attempt_begin(address="203.0.113.9") for _ in range(4)]
    assert [r.refused for r in results] == [False, False, False, True]
    assert 3590 <= results[-1].retry_after_s <= 3600
    assert "wait 60 minutes" in results[-1].message()
    assert not join_attempt_begin(address="203.0.113.10").refused  # another address
    assert JoinCounter.objects.get(address="203.0.113.9").starts == 3  # a refusal is not counted


@override_settings(EDITLAB_JOIN_STARTS_PER_HOUR=1)
def test_the_window_ends_an_hour_after_it_began_and_stale_counters_go():
    assert not join_attempt_begin(address="198.51.100.1").refused
    assert join_attempt_begin(address="198.51.100.1").refused
    JoinCounter.objects.filter(address="198.51.100.1").update(window_start=timezone.now() - timedelta(minutes=61))
    assert not join_attempt_begin(address="198.51.100.1").refused
    JoinCounter.objects.create(address="198.51.100.2", window_start=timezone.now() - timedelta(days=2), starts=1)
    join_attempt_begin(address="198.51.100.3")
    assert not JoinCounter.objects.filter(address="198.51.100.2").exists()


def test_an_address_too_long_or_empty_is_counted_under_a_key_that_fits():
    assert not join_attempt_begin(address="").refused
    assert not join_attempt_begin(address="x" * 100).refused
    assert set(JoinCounter.objects.values_list("address", flat=True)) == {"unknown", "x" * 45}
