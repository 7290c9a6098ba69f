"""The error-span task's services: pending evaluations assigned, opened, logged exactly once, finished
with exact spans and times, or refused by field with nothing stored (annotations/services/evaluation_task.py)."""

import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import ErrorSpan, Evaluation, EvaluationEvent
from annotations.services.errors import ServiceError
from annotations.services.evaluation_task import (
    EvaluationClosed,
    EvaluationEventsMissing,
    EvaluationSeqConflict,
    evaluation_assign,
    evaluation_finish,
    evaluation_ingest_events,
    evaluation_open,
    log_times,
)
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

OUTPUT = "Die Katze saß auf der Matte."
SOURCE = "The cat sat on the mat."


@pytest.fixture
def project():
    project = ProjectFactory(name="Quality", idle_threshold_s=30)
    ItemFactory(
        project=project,
        external_id="s1",
        source=SOURCE,
        outputs={"sysA": OUTPUT, "sysB": "Katze Matte."},
        highlights={"sysA": [[4, 9, "major"], [15, 18, "Fluency/Grammar"], [19, 22, "odd word"]]},
    )
    ItemFactory(project=project, external_id="s2", source="Hello.", outputs={"sysA": "Hallo."})
    return project


@pytest.fixture
def rater():
    return UserFactory(username="rhea", role="annotator")


def _one(project, rater, **options):
    evaluation_assign(project=project, raters=[rater], **{"systems": ["sysA"], **options})
    return Evaluation.objects.get(rater=rater, item__external_id="s1", system="sysA")


def _log(evaluation, rater, page, times, kinds=None):
    kinds = kinds or ["load"] + ["keydown"] * (len(times) - 1)
    events = [{"seq": n, "t": t, "k": k} for n, (t, k) in enumerate(zip(times, kinds, strict=True))]
    return evaluation_ingest_events(evaluation=evaluation, rater=rater, page_id=page, events=events)


# --------------------------------------------------------------------------- assigning


def test_assign_makes_one_pending_evaluation_per_rater_and_output_and_is_rerunnable(project, rater):
    other = UserFactory(username="omar", role="annotator")
    made = evaluation_assign(project=project, raters=[rater, other], systems=["sysA", "sysB"], protocol="esa")
    assert made == 6  # s1 sysA, s1 sysB, s2 sysA, for two raters
    assert evaluation_assign(project=project, raters=[rater, other], systems=["sysA", "sysB"]) == 0
    rows = sorted(
        Evaluation.objects.values_list("item__external_id", "system", "rater__username", "status", "protocol")
    )
    assert rows[:3] == [
        ("s1", "sysA", "omar", "pending", "esa"),
        ("s1", "sysA", "rhea", "pending", "esa"),
        ("s1", "sysB", "omar", "pending", "esa"),
    ]
    assert Evaluation.objects.get(rater=rater, item__external_id="s1", system="sysB").text == "Katze Matte."


def test_prefill_turns_highlights_into_spans_the_rater_checks(project, rater):
    evaluation = _one(project, rater, protocol="esa", condition="esa-ai", prefill=True)
    assert evaluation.condition == "esa-ai"
    assert evaluation.prefill == [
        {"start": 4, "end": 9, "category": "Other", "severity": "major", "comment": ""},
        {"start": 15, "end": 18, "category": "Fluency/Grammar", "severity": "minor", "comment": ""},
        {"start": 19, "end": 22, "category": "Other", "severity": "minor", "comment": "odd word"},
    ]


def test_post_edits_are_given_to_raters_who_did_not_write_them(project, rater):
    post_edit = SubmittedPostEditFactory(assignment__item__project=project, text="Die Katze sitzt.")
    author = post_edit.assignment.annotator
    author.groups.clear()
    from annotations.roles import set_role

    set_role(author, "annotator")
    assert evaluation_assign(project=project, raters=[rater, author], post_edits=True) == 1
    evaluation = Evaluation.objects.get()
    assert (evaluation.rater, evaluation.post_edit, evaluation.text, evaluation.system) == (
        rater,
        post_edit,
        "Die Katze sitzt.",
        "",
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"systems": ["nope"]}, "systems"),
        ({"systems": ["sysA", "sysA"]}, "systems"),
        ({"systems": []}, "systems"),
        ({"systems": ["sysA"], "post_edits": True}, "systems"),
        ({"systems": ["sysA"], "protocol": "dqf"}, "protocol"),
        ({"systems": ["sysA"], "condition": "x" * 101}, "condition"),
        ({"post_edits": True, "prefill": True}, "prefill"),
    ],
)
def test_assign_refuses_by_field(project, rater, options, field):
    with pytest.raises(ServiceError) as refused:
        evaluation_assign(project=project, raters=[rater], **options)
    assert str(refused.value).startswith(f"{field}: ")
    assert not Evaluation.objects.exists()


def test_a_rater_named_twice_gets_one_evaluation_of_each_output(project, rater):
    assert evaluation_assign(project=project, raters=[rater, rater], systems=["sysA"]) == 2


def test_assign_refuses_a_researcher_as_rater(project):
    with pytest.raises(ServiceError, match="^raters: not active annotators: rita$"):
        evaluation_assign(project=project, raters=[UserFactory(username="rita", role="researcher")], systems=["sysA"])


def test_the_command_assigns_and_names_a_wrong_option(project, rater, capsys):
    call_command("assign_evaluations", project="Quality", raters="rhea", systems="sysA", protocol="esa", prefill=True)
    assert "2 evaluations made for 1 rater(s)." in capsys.readouterr().out
    assert Evaluation.objects.filter(rater=rater, protocol="esa").count() == 2
    with pytest.raises(CommandError, match="^--systems: no item has an output 'zz'$"):
        call_command("assign_evaluations", project="Quality", raters="rhea", systems="zz")
    with pytest.raises(CommandError, match="^--annotators: no such user: nobody$"):
        call_command("assign_evaluations", project="Quality", raters="nobody", systems="sysA")


# --------------------------------------------------------------------------- opening and the log


def test_open_starts_the_clock_once(project, rater):
    evaluation = _one(project, rater)
    opened, page, seq = evaluation_open(evaluation=evaluation, rater=rater)
    assert (opened.status, seq) == ("in_progress", 0)
    started = opened.started_at
    uuid.UUID(page)
    _log(opened, rater, page, [0.0, 10.0])
    again, page2, seq2 = evaluation_open(evaluation=evaluation, rater=rater)
    assert (again.started_at, seq2) == (started, 2)
    assert page2 != page


def test_a_batch_sent_twice_is_stored_once(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    assert _log(evaluation, rater, page, [0.0, 5.0, 9.5]) == {"stored": 3, "next_seq": 3}
    assert _log(evaluation, rater, page, [0.0, 5.0, 9.5]) == {"stored": 0, "next_seq": 3}
    events = list(EvaluationEvent.objects.filter(evaluation=evaluation).values_list("seq", "t_ms", "kind"))
    assert events == [(0, 0.0, "load"), (1, 5.0, "keydown"), (2, 9.5, "keydown")]


def test_seqs_of_another_page_load_are_a_conflict_with_the_next_seq(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    _log(evaluation, rater, page, [0.0, 5.0])
    with pytest.raises(EvaluationSeqConflict) as conflict:
        _log(evaluation, rater, str(uuid.uuid4()), [0.0])
    assert (conflict.value.status, conflict.value.body()["next_seq"], conflict.value.code) == (409, 2, "seq_conflict")


def test_another_raters_evaluation_is_refused(project, rater):
    evaluation = _one(project, rater)
    with pytest.raises(ServiceError, match="^rater: "):
        evaluation_open(evaluation=evaluation, rater=UserFactory(role="annotator"))


@pytest.mark.parametrize(
    ("events", "field"),
    [
        ([], "events"),
        ("x", "events"),
        ([{"seq": 0, "t": 0, "k": "load"}] * 501, "events"),
        ([{"seq": -1, "t": 0, "k": "load"}], "events[0].seq"),
        ([{"seq": True, "t": 0, "k": "load"}], "events[0].seq"),
        ([{"seq": 0, "t": float("nan"), "k": "load"}], "events[0].t"),
        ([{"seq": 0, "t": -3, "k": "load"}], "events[0].t"),
        ([{"seq": 0, "t": 0, "k": "paste"}], "events[0].k"),
        ([{"seq": 0, "t": 0, "k": "load", "blob": "x" * 3000}], "events[0]"),
        ([{"seq": 0, "t": 0, "k": "load"}, {"seq": 0, "t": 1, "k": "keydown"}], "events[1].seq"),
        (["load"], "events[0]"),
    ],
)
def test_hostile_event_batches_are_refused_by_field(project, rater, events, field):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    with pytest.raises(ServiceError) as refused:
        evaluation_ingest_events(evaluation=evaluation, rater=rater, page_id=page, events=events)
    assert str(refused.value).startswith(f"{field}: ")
    assert not EvaluationEvent.objects.exists()


def test_a_page_id_that_is_not_a_uuid_is_refused(project, rater):
    evaluation, _, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    for page in ("nope", 7, None, "0" * 100):
        with pytest.raises(ServiceError, match="^page_id: "):
            evaluation_ingest_events(
                evaluation=evaluation, rater=rater, page_id=page, events=[{"seq": 0, "t": 0, "k": "load"}]
            )


# --------------------------------------------------------------------------- finishing


def _finish(evaluation, rater, page, spans, score=None, last_seq=None):
    return evaluation_finish(
        evaluation=evaluation,
        rater=rater,
        page_id=page,
        last_seq=EvaluationEvent.objects.filter(evaluation=evaluation).count() - 1 if last_seq is None else last_seq,
        spans=spans,
        esa_score=score,
    )


def test_finish_stores_the_exact_spans_and_the_logs_times(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    Evaluation.objects.filter(pk=evaluation.pk).update(started_at=timezone.now() - timedelta(seconds=60))
    # 0 to 40 s, with an idle gap of 31 s (over the 30 s threshold): active 9 s.
    _log(evaluation, rater, page, [0.0, 4000.0, 9000.0, 40000.0])
    spans = [
        {"start": 4, "end": 9, "category": "Accuracy/Mistranslation", "severity": "major", "comment": "cat"},
        {"start": 0, "end": 9, "category": "Fluency/Grammar", "severity": "minor"},
    ]
    done = _finish(evaluation, rater, page, spans)
    assert (done.status, done.wall_ms, done.active_ms, done.esa_score) == ("submitted", 40000, 9000, None)
    stored = list(done.spans.values_list("position", "start", "end", "category", "severity", "comment", "prefilled"))
    assert stored == [
        (0, 4, 9, "Accuracy/Mistranslation", "major", "cat", None),
        (1, 0, 9, "Fluency/Grammar", "minor", "", None),
    ]
    with pytest.raises(EvaluationClosed):
        _finish(evaluation, rater, page, spans)
    with pytest.raises(EvaluationClosed):
        _log(evaluation, rater, page, [0.0])


def test_the_servers_clock_bounds_the_logs_wall_time(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    _log(evaluation, rater, page, [0.0, 10.0, 3_600_000.0])  # the client claims an hour
    done = _finish(evaluation, rater, page, [])
    assert done.wall_ms < 60_000
    assert done.active_ms <= done.wall_ms


def test_hidden_time_and_page_loads_count_as_the_editor_counts_them():
    page1, page2 = uuid.uuid4(), uuid.uuid4()
    rows = [
        EvaluationEvent(page_id=page1, seq=0, t_ms=0.0, kind="load", data={"state": "visible"}),
        EvaluationEvent(page_id=page1, seq=1, t_ms=2000.0, kind="visibility", data={"state": "hidden"}),
        EvaluationEvent(page_id=page1, seq=2, t_ms=7000.0, kind="visibility", data={"state": "visible"}),
        EvaluationEvent(page_id=page1, seq=3, t_ms=8000.0, kind="keydown", data={}),
        EvaluationEvent(page_id=page2, seq=4, t_ms=100.0, kind="load", data={"state": "visible"}),
        EvaluationEvent(page_id=page2, seq=5, t_ms=1100.0, kind="submit", data={}),
    ]
    assert log_times(rows, idle_threshold_ms=30000.0) == (9000.0, 4000.0)


def test_prefilled_spans_kept_edited_and_deleted_are_recorded(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater, protocol="esa", prefill=True), rater=rater)
    _log(evaluation, rater, page, [0.0, 100.0])
    spans = [
        {"start": 4, "end": 9, "category": "Other", "severity": "major", "prefilled": 0},  # kept as shown
        {
            "start": 19,
            "end": 22,
            "category": "Style/Awkward",
            "severity": "minor",
            "comment": "odd word",
            "prefilled": 2,
        },
        {"start": 0, "end": 3, "category": "Fluency/Grammar", "severity": "minor"},  # the rater's own
    ]
    done = _finish(evaluation, rater, page, spans, score=55)
    assert done.esa_score == 55.0
    assert list(done.spans.values_list("start", "prefilled", "edited")) == [
        (4, 0, False),
        (19, 2, True),
        (0, None, False),
    ]
    kept = {span.prefilled for span in done.spans.all()} - {None}
    assert sorted(set(range(len(done.prefill))) - kept) == [1]  # the prefilled span the rater deleted


@pytest.mark.parametrize(
    ("spans", "score", "field"),
    [
        ([{"start": 0, "end": 1, "category": "Made/Up", "severity": "minor"}], 50, "spans[0].category"),
        ([{"start": 0, "end": 29, "category": "Other", "severity": "minor"}], 50, "spans[0]"),
        ([{"start": 9, "end": 4, "category": "Other", "severity": "minor"}], 50, "spans[0]"),
        ([{"start": -1, "end": 4, "category": "Other", "severity": "minor"}], 50, "spans[0]"),
        ([{"start": 0, "end": 1, "category": "Other", "severity": "minor"}] * 1001, 50, "spans"),
        ([{"start": 0, "end": 1, "category": "Other", "severity": "minor", "prefilled": 9}], 50, "spans[0].prefilled"),
        (
            [{"start": 0, "end": 1, "category": "Other", "severity": "minor", "prefilled": 0}] * 2,
            50,
            "spans[1].prefilled",
        ),
        (
            [{"start": 0, "end": 1, "category": "Other", "severity": "minor", "comment": "a\x00b"}],
            50,
            "spans[0].comment",
        ),
        ([], 101, "esa_score"),
        ([], float("nan"), "esa_score"),
        ([], float("inf"), "esa_score"),
        ([], None, "esa_score"),
        ([], "80", "esa_score"),
    ],
)
def test_hostile_submits_are_refused_by_field_with_nothing_stored(project, rater, spans, score, field):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater, protocol="esa", prefill=True), rater=rater)
    _log(evaluation, rater, page, [0.0])
    with pytest.raises(ServiceError) as refused:
        _finish(evaluation, rater, page, spans, score=score)
    assert str(refused.value).split(": ")[0] == field
    evaluation.refresh_from_db()
    assert (evaluation.status, ErrorSpan.objects.count()) == ("in_progress", 0)


def test_an_mqm_evaluation_takes_no_score(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    _log(evaluation, rater, page, [0.0])
    with pytest.raises(ServiceError, match="^esa_score: an MQM evaluation takes no score$"):
        _finish(evaluation, rater, page, [], score=70)


def test_a_submit_before_the_log_is_stored_names_the_seq_to_send_from(project, rater):
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater), rater=rater)
    _log(evaluation, rater, page, [0.0, 1.0])
    with pytest.raises(EvaluationEventsMissing) as missing:
        _finish(evaluation, rater, page, [], last_seq=4)
    assert (missing.value.status, missing.value.code, missing.value.body()["next_seq"]) == (409, "events_missing", 2)
    for last in (-2, True, "3", 2**40):
        with pytest.raises(ServiceError, match="^last_seq: "):
            _finish(evaluation, rater, page, [], last_seq=last)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spans=st.lists(
        st.fixed_dictionaries(
            {
                "start": st.one_of(st.integers(-5, 40), st.none(), st.floats(), st.text(max_size=2)),
                "end": st.one_of(st.integers(-5, 40), st.none(), st.booleans()),
                "category": st.one_of(st.sampled_from(["Other", "Fluency/Grammar", "Bogus"]), st.integers()),
                "severity": st.sampled_from(["minor", "major", "critical", "fatal"]),
            }
        ),
        max_size=4,
    ),
    score=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 110)),
)
def test_any_submit_is_stored_exactly_as_sent_or_refused_with_nothing_stored(project, rater, spans, score):
    Evaluation.objects.all().delete()
    evaluation, page, _ = evaluation_open(evaluation=_one(project, rater, protocol="esa"), rater=rater)
    _log(evaluation, rater, page, [0.0])
    try:
        done = _finish(evaluation, rater, page, spans, score=score)
    except ServiceError as refused:
        assert str(refused).split(": ")[0] in {"esa_score"} | {f"spans[{n}]" for n in range(4)} | {
            f"spans[{n}].{f}" for n in range(4) for f in ("category", "severity")
        }
        assert ErrorSpan.objects.count() == 0
        return
    stored = list(done.spans.values("start", "end", "category", "severity"))
    assert stored == spans
    assert all(span["start"] is None or 0 <= span["start"] <= span["end"] <= len(OUTPUT) for span in stored)
    assert done.esa_score is not None and 0 <= done.esa_score <= 100


def test_client_time_running_backwards_adds_no_time():
    page = uuid.uuid4()
    rows = [
        EvaluationEvent(page_id=page, seq=0, t_ms=1000.0, kind="load", data={"state": "visible"}),
        EvaluationEvent(page_id=page, seq=1, t_ms=0.0, kind="keydown", data={}),
        EvaluationEvent(page_id=page, seq=2, t_ms=3000.0, kind="keydown", data={}),
    ]
    assert log_times(rows, idle_threshold_ms=30000.0) == (2000.0, 2000.0)


@settings(max_examples=200, deadline=None)
@given(
    stream=st.lists(
        st.tuples(
            st.integers(0, 2),  # which page load
            st.floats(0, 1e7, allow_nan=False),
            st.sampled_from(["load", "keydown", "mousedown", "visibility", "blur", "focus", "span_add", "submit"]),
            st.sampled_from(["visible", "hidden", ""]),
        ),
        max_size=40,
    ),
    idle=st.floats(1.0, 1e6),
)
def test_generated_logs_give_active_within_wall_within_each_page_loads_span(stream, idle):
    pages = [uuid.UUID(int=n + 1) for n in range(3)]
    rows = [
        EvaluationEvent(page_id=pages[p], seq=n, t_ms=t, kind=k, data={"state": state, "source": "window"})
        for n, (p, t, k, state) in enumerate(stream)
    ]
    wall, active = log_times(rows, idle_threshold_ms=idle)
    spans = 0.0
    for page in pages:
        times = [row.t_ms for row in rows if row.page_id == page]
        spans += max(times) - times[0] if times else 0.0  # times[0]: the first, later ones never count earlier
    assert 0.0 <= active <= wall <= spans + 1e-6
