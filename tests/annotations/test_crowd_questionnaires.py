"""Consent and questionnaires (annotations/services/questionnaires.py): questions checked before
anything is stored, answers checked against their questions (Hypothesis over hostile answers), each
phase answered once, declining consent closes the work and releases a participant's slot."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, Participant, Questionnaire, QuestionnaireAnswer
from annotations.services.errors import ServiceError
from annotations.services.questionnaires import (
    MAX_CHOICES,
    MAX_QUESTIONS,
    Question,
    check_answers,
    consent_give,
    parse_questions,
    phase_due,
    questionnaire_answer,
    questionnaire_set,
)
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, UserFactory

AGE = {"id": "age", "type": "choice", "text": "Your age?", "choices": ["18-30", "31-50", "51+"]}
EFFORT = {"id": "effort", "type": "scale", "text": "How hard?", "min": 1, "max": 5}
REMARKS = {"id": "remarks", "type": "text", "text": "Anything else?", "required": False, "max_length": 20}
QUESTIONS = parse_questions([AGE, EFFORT, REMARKS], "pre")


def refusal(call, *args, **kwargs) -> str:
    with pytest.raises(ServiceError) as info:
        call(*args, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- questions


def test_questions_are_stored_as_checked_with_their_defaults():
    assert [q.as_json() for q in QUESTIONS] == [
        {"id": "age", "type": "choice", "text": "Your age?", "required": True, "choices": ["18-30", "31-50", "51+"]},
        {"id": "effort", "type": "scale", "text": "How hard?", "required": True, "min": 1, "max": 5},
        {"id": "remarks", "type": "text", "text": "Anything else?", "required": False, "max_length": 20},
    ]


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ({"id": "a"}, "pre: a list of questions"),
        (
            [{**AGE, "type": "ranking"}],
            "pre[0].type: 'ranking' is not a question type; the types are choice, scale, text",
        ),
        ([{**AGE, "type": None}], "pre[0].type: None is not a question type"),
        ([{**AGE, "colour": "red"}], "pre[0]: unknown key(s) colour"),
        ([{**AGE, "min": 1}], "pre[0].min: not a key of a choice question"),
        ([{**AGE, "id": "Age!"}], "pre[0].id: 1-40 lower-case letters"),
        ([AGE, {**EFFORT, "id": "age"}], "pre[1].id: 'age' is used twice"),
        ([{**AGE, "choices": ["only one"]}], f"pre[0].choices: a list of 2 to {MAX_CHOICES} texts"),
        ([{**AGE, "choices": [str(n) for n in range(MAX_CHOICES + 1)]}], "pre[0].choices: a list of 2 to"),
        ([{**AGE, "choices": ["a", "a"]}], "pre[0].choices: each choice once"),
        ([{**AGE, "choices": ["a", 3]}], "pre[0].choices[1]: a text is required"),
        ([{**AGE, "choices": ["a", "b" * 201]}], "pre[0].choices[1]: at most 200 characters (got 201)"),
        ([{**AGE, "text": "x" * 1001}], "pre[0].text: at most 1,000 characters (got 1,001)"),
        ([{**AGE, "text": "a\x00b"}], "pre[0].text: contains a control character"),
        ([{**AGE, "required": "yes"}], "pre[0].required: true or false"),
        ([{**EFFORT, "min": 5, "max": 5}], "pre[0].max: above min by 1 to 100 steps"),
        ([{**EFFORT, "min": 0, "max": 101}], "pre[0].max: above min by 1 to 100 steps"),
        ([{**EFFORT, "min": 1.5}], "pre[0].min: a whole number from -1,000 to 1,000"),
        ([{**EFFORT, "max": True}], "pre[0].max: a whole number"),
        ([{**REMARKS, "max_length": 10**6}], "pre[0].max_length: a whole number from 1 to 10,000"),
        (
            [{**AGE, "id": f"q{n}"} for n in range(MAX_QUESTIONS + 1)],
            f"pre: at most {MAX_QUESTIONS} questions (got 51)",
        ),
    ],
)
def test_a_malformed_questionnaire_is_refused_naming_the_field(questions, message):
    assert refusal(parse_questions, questions, "pre").startswith(message)


@pytest.mark.django_db
def test_a_refused_questionnaire_stores_nothing_and_a_good_one_replaces_the_last():
    project = ProjectFactory()
    questionnaire_set(project=project, consent="I agree to *take part*.", pre=[AGE], post=[REMARKS])
    message = refusal(questionnaire_set, project=project, consent="new", pre=[AGE], post=[{**REMARKS, "type": "x"}])
    assert message.startswith("post[0].type:")
    stored = Questionnaire.objects.get(project=project)
    assert (stored.consent, [q["id"] for q in stored.pre], [q["id"] for q in stored.post]) == (
        "I agree to *take part*.",
        ["age"],
        ["remarks"],
    )
    assert refusal(questionnaire_set, project=project, consent="x" * 20_001).startswith("consent: at most 20,000")
    questionnaire_set(project=project, consent="", pre=[EFFORT], for_lab=True)
    stored.refresh_from_db()
    assert (stored.consent, stored.pre[0]["id"], stored.post, stored.for_lab) == ("", "effort", [], True)


# --------------------------------------------------------------------------- answers


def test_answers_are_stored_as_their_types():
    assert check_answers(QUESTIONS, {"age": ["31-50"], "effort": "4", "remarks": "  fine  "}) == {
        "age": "31-50",
        "effort": 4,
        "remarks": "fine",
    }
    assert check_answers(QUESTIONS, {"age": "51+", "effort": 1}) == {"age": "51+", "effort": 1}


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"effort": "3"}, "age: an answer is required"),
        ({"age": "", "effort": "3"}, "age: an answer is required"),
        ({"age": "17", "effort": "3"}, "age: not one of the choices"),
        ({"age": ["18-30", "31-50"], "effort": "3"}, "age: one answer, not 2"),
        ({"age": "18-30", "effort": "6"}, "effort: a whole number from 1 to 5"),
        ({"age": "18-30", "effort": "2.5"}, "effort: a whole number from 1 to 5"),
        ({"age": "18-30", "effort": True}, "effort: a whole number from 1 to 5"),
        ({"age": "18-30", "effort": "3", "remarks": "x" * 21}, "remarks: at most 20 characters (got 21)"),
        ({"age": "18-30", "effort": "3", "remarks": "a\x07b"}, "remarks: contains a control character"),
        ({"age": "18-30", "effort": "3", "favourite": "x"}, "answers: no question 'favourite' in this questionnaire"),
    ],
)
def test_a_bad_answer_is_refused_naming_its_question(answers, message):
    assert refusal(check_answers, QUESTIONS, answers) == message


ANSWER_VALUES = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(answers=st.dictionaries(st.sampled_from(["age", "effort", "remarks", "other", ""]), ANSWER_VALUES))
def test_any_answers_are_refused_by_name_or_stored_within_their_questions(answers):
    try:
        checked = check_answers(QUESTIONS, answers)
    except ServiceError as exc:
        named = str(exc).split(":", 1)[0]
        assert named in ("age", "effort", "remarks", "answers")
        return
    assert set(checked) <= {"age", "effort", "remarks"}
    assert checked["age"] in AGE["choices"]
    assert isinstance(checked["effort"], int) and not isinstance(checked["effort"], bool)
    assert 1 <= checked["effort"] <= 5
    if "remarks" in checked:
        assert isinstance(checked["remarks"], str) and 0 < len(checked["remarks"]) <= 20


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    questions=st.lists(
        st.fixed_dictionaries(
            {
                "id": st.from_regex(r"[a-z]{1,5}", fullmatch=True),
                "type": st.sampled_from(["choice", "scale", "text", "x"]),
            },
            optional={
                "text": st.text(max_size=5),
                "choices": st.lists(st.text(max_size=3), max_size=4),
                "min": st.integers(-3, 3),
                "max": st.integers(-3, 200),
                "max_length": st.integers(-1, 20_000),
                "required": st.one_of(st.booleans(), st.integers()),
            },
        ),
        max_size=4,
    )
)
def test_any_questionnaire_is_refused_by_field_or_parses_to_checked_questions(questions):
    try:
        parsed = parse_questions(questions, "pre")
    except ServiceError as exc:
        assert str(exc).startswith("pre")
        return
    for question in parsed:
        assert isinstance(question, Question)
        assert question.type in ("choice", "scale", "text")
        if question.type == "scale":
            assert 1 <= question.max - question.min <= 100
        if question.type == "choice":
            assert 2 <= len(question.choices) == len(set(question.choices))


# --------------------------------------------------------------------------- phases


@pytest.fixture
def participant_world(db):
    project = ProjectFactory()
    user = UserFactory(role="annotator")
    for _ in range(2):
        AssignmentFactory(item=ItemFactory(project=project), annotator=user)
    participant = Participant.objects.create(user=user, project=project, platform_id="p1", platform_key="p1", slot=0)
    questionnaire_set(project=project, consent="Do you agree?", pre=[AGE], post=[REMARKS])
    return project, user, participant


def test_phases_come_in_order_and_each_is_answered_once(participant_world):
    project, user, _ = participant_world
    assert phase_due(project=project, user=user, stage="start") == "consent"
    assert refusal(questionnaire_answer, project=project, user=user, phase="during", answers={}) == (
        "phase: one of pre, post"
    )
    consent_give(project=project, user=user, agree=True)
    assert refusal(consent_give, project=project, user=user, agree=False) == "consent: already answered"
    assert phase_due(project=project, user=user, stage="start") == "pre"
    questionnaire_answer(project=project, user=user, phase="pre", answers={"age": "51+"})
    assert phase_due(project=project, user=user, stage="start") is None
    assert phase_due(project=project, user=user, stage="end") == "post"
    questionnaire_answer(project=project, user=user, phase="post", answers={})
    assert phase_due(project=project, user=user, stage="end") is None
    assert refusal(questionnaire_answer, project=project, user=user, phase="post", answers={}) == (
        "post: already answered"
    )
    stored = {a.phase: (a.consented, a.answers) for a in QuestionnaireAnswer.objects.filter(user=user)}
    assert stored == {"consent": (True, {}), "pre": (None, {"age": "51+"}), "post": (None, {})}


def test_declining_consent_closes_the_work_and_releases_the_slot(participant_world):
    project, user, participant = participant_world
    consent_give(project=project, user=user, agree=False)
    assert phase_due(project=project, user=user, stage="start") == "declined"
    assert set(Assignment.objects.filter(annotator=user).values_list("status", "skip_reason")) == {
        (Assignment.SKIPPED, "declined consent: no work is recorded")
    }
    participant.refresh_from_db()
    assert participant.outcome == Participant.DECLINED
    assert participant.released_at is not None


def test_lab_annotators_are_asked_only_when_the_questionnaire_says_so(participant_world):
    project, _, _ = participant_world
    lab = UserFactory(role="annotator")
    AssignmentFactory(item=ItemFactory(project=project), annotator=lab)
    assert phase_due(project=project, user=lab, stage="start") is None
    questionnaire_set(project=project, consent="Do you agree?", pre=[AGE], for_lab=True)
    assert phase_due(project=project, user=lab, stage="start") == "consent"
    assert phase_due(project=ProjectFactory(), user=lab, stage="start") is None  # no questionnaire there
