"""Crowd quality control: a project's consent text and questionnaires, the answers people give, and
its attention checks (docs/quality.md, "Crowd quality control").

- A questionnaire is a list of questions, each {"id", "type", "text", "required"?} with, by type,
  `choices` (choice: 2 to 50 distinct texts), `min`/`max` (scale: whole numbers, min < max, at most
  100 steps) or `max_length` (text: 1 to 10,000 characters, default 2,000). Anything else (an unknown
  type or key, too many questions or choices, a repeated id) is refused naming the field
  (`pre[2].choices`), before anything is stored.
- Answers are checked against their questions: a choice among the choices, a whole number on the
  scale, a text no longer than the question allows without control characters; a required question
  unanswered, an unknown question, or a question answered twice is refused naming the question.
- Who is asked: a project's crowd participants, and its lab annotators when `for_lab` is set. Consent
  comes before the first item, the pre questionnaire after it, the post questionnaire after the last
  item (before a participant's code). Each phase is answered once.
- Declining consent is final: the person's open work in the project is closed as skipped (the reason
  says so); a participant's slot is released (outcome "declined"), so its work goes to a newcomer.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations.models import (
    Assignment,
    Participant,
    Project,
    Questionnaire,
    QuestionnaireAnswer,
)
from annotations.services.errors import ServiceError

TYPES = ("choice", "scale", "text")
KEYS = {"id", "type", "text", "required", "choices", "min", "max", "max_length"}
BY_TYPE = {"choice": {"choices"}, "scale": {"min", "max"}, "text": {"max_length"}}
QUESTION_ID = re.compile(r"[a-z][a-z0-9_]{0,39}")
MAX_QUESTIONS = 50
MAX_CHOICES = 50
MAX_QUESTION_TEXT = 1000
MAX_CHOICE_TEXT = 200
MAX_SCALE_STEPS = 100
SCALE_BOUND = 1000
TEXT_DEFAULT = 2000
TEXT_MAX = 10_000
CONSENT_MAX = 20_000
PHASES = (QuestionnaireAnswer.PRE, QuestionnaireAnswer.POST)
DECLINED_REASON = "declined consent: no work is recorded"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: str
    required: bool = True
    choices: tuple[str, ...] = ()
    min: int = 0
    max: int = 0
    max_length: int = TEXT_DEFAULT

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": self.type, "text": self.text, "required": self.required}
        if self.type == "choice":
            data["choices"] = list(self.choices)
        elif self.type == "scale":
            data["min"], data["max"] = self.min, self.max
        else:
            data["max_length"] = self.max_length
        return data

    @property
    def scale_values(self) -> range:
        return range(self.min, self.max + 1)


# --------------------------------------------------------------------------- questions


def _whole(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ServiceError(f"{name}: a whole number from {low:,} to {high:,}")
    return value


def _text(value: object, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ServiceError(f"{name}: a text is required")
    value = value.strip()
    if len(value) > limit:
        raise ServiceError(f"{name}: at most {limit:,} characters (got {len(value):,})")
    if _CONTROL.search(value):
        raise ServiceError(f"{name}: contains a control character")
    return value


def parse_question(value: object, name: str) -> Question:
    if not isinstance(value, Mapping):
        raise ServiceError(f'{name}: a question is an object {{"id", "type", "text", ...}}')
    unknown = sorted(str(key) for key in value if key not in KEYS)
    if unknown:
        raise ServiceError(f"{name}: unknown key(s) {', '.join(k[:40] for k in unknown[:5])}")
    kind = value.get("type")
    if kind not in TYPES:
        shown = repr(kind)[:40]
        raise ServiceError(f"{name}.type: {shown} is not a question type; the types are {', '.join(TYPES)}")
    extra = sorted((set(value) & set().union(*BY_TYPE.values())) - BY_TYPE[kind])
    if extra:
        raise ServiceError(f"{name}.{extra[0]}: not a key of a {kind} question")
    qid = value.get("id")
    if not isinstance(qid, str) or not QUESTION_ID.fullmatch(qid):
        raise ServiceError(f"{name}.id: 1-40 lower-case letters, digits and _, starting with a letter")
    text = _text(value.get("text"), f"{name}.text", MAX_QUESTION_TEXT)
    required = value.get("required", True)
    if not isinstance(required, bool):
        raise ServiceError(f"{name}.required: true or false")
    if kind == "choice":
        choices = value.get("choices")
        if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES:
            raise ServiceError(f"{name}.choices: a list of 2 to {MAX_CHOICES} texts")
        parsed = tuple(_text(c, f"{name}.choices[{k}]", MAX_CHOICE_TEXT) for k, c in enumerate(choices))
        if len(set(parsed)) != len(parsed):
            raise ServiceError(f"{name}.choices: each choice once")
        return Question(qid, kind, text, required, choices=parsed)
    if kind == "scale":
        low = _whole(value.get("min"), f"{name}.min", -SCALE_BOUND, SCALE_BOUND)
        high = _whole(value.get("max"), f"{name}.max", -SCALE_BOUND, SCALE_BOUND)
        if not low < high or high - low > MAX_SCALE_STEPS:
            raise ServiceError(f"{name}.max: above min by 1 to {MAX_SCALE_STEPS} steps")
        return Question(qid, kind, text, required, min=low, max=high)
    limit = _whole(value.get("max_length", TEXT_DEFAULT), f"{name}.max_length", 1, TEXT_MAX)
    return Question(qid, kind, text, required, max_length=limit)


def parse_questions(value: object, name: str) -> list[Question]:
    """The questions of one phase, checked (ServiceError naming the field)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ServiceError(f"{name}: a list of questions")
    if len(value) > MAX_QUESTIONS:
        raise ServiceError(f"{name}: at most {MAX_QUESTIONS} questions (got {len(value):,})")
    questions = [parse_question(q, f"{name}[{k}]") for k, q in enumerate(value)]
    seen: set[str] = set()
    for k, question in enumerate(questions):
        if question.id in seen:
            raise ServiceError(f"{name}[{k}].id: {question.id!r} is used twice")
        seen.add(question.id)
    return questions


def questions_of(questionnaire: Questionnaire | None, phase: str) -> list[Question]:
    """The stored questions of a phase (stored as checked; a malformed one is not asked)."""
    if questionnaire is None:
        return []
    try:
        return parse_questions(getattr(questionnaire, phase), phase)
    except ServiceError:
        return []


@transaction.atomic
def questionnaire_set(
    *, project: Project, consent: str = "", pre: object = None, post: object = None, for_lab: bool = False
) -> Questionnaire:
    """The project's consent text and questions, replaced (nothing is stored when any is refused)."""
    if not isinstance(consent, str):
        raise ServiceError("consent: a text (markdown)")
    consent = consent.strip()
    if len(consent) > CONSENT_MAX:
        raise ServiceError(f"consent: at most {CONSENT_MAX:,} characters (got {len(consent):,})")
    if "\x00" in consent:
        raise ServiceError("consent: contains a NUL character")
    pre_questions = parse_questions(pre, "pre")
    post_questions = parse_questions(post, "post")
    if not isinstance(for_lab, bool):
        raise ServiceError("for_lab: true or false")
    questionnaire, _ = Questionnaire.objects.update_or_create(
        project=project,
        defaults={
            "consent": consent,
            "pre": [q.as_json() for q in pre_questions],
            "post": [q.as_json() for q in post_questions],
            "for_lab": for_lab,
        },
    )
    return questionnaire


# --------------------------------------------------------------------------- answers


def check_answers(questions: Sequence[Question], answers: Mapping[str, object]) -> dict[str, Any]:
    """The answers as stored (a choice's text, a scale's whole number, a text), checked against the
    questions; ServiceError naming the question."""
    known = {q.id for q in questions}
    unknown = sorted(str(key)[:40] for key in answers if key not in known)
    if unknown:
        raise ServiceError(f"answers: no question {unknown[0]!r} in this questionnaire")
    checked: dict[str, Any] = {}
    for question in questions:
        value = answers.get(question.id)
        if isinstance(value, (list, tuple)):
            if len(value) > 1:
                raise ServiceError(f"{question.id}: one answer, not {len(value):,}")
            value = value[0] if value else None
        if value is None or (isinstance(value, str) and not value.strip()):
            if question.required:
                raise ServiceError(f"{question.id}: an answer is required")
            continue
        checked[question.id] = _answer(question, value)
    return checked


def _answer(question: Question, value: object) -> Any:
    name = question.id
    if question.type == "choice":
        if not isinstance(value, str) or value not in question.choices:
            raise ServiceError(f"{name}: not one of the choices")
        return value
    if question.type == "scale":
        if isinstance(value, str) and re.fullmatch(r"-?\d{1,5}", value.strip()):
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not question.min <= value <= question.max:
            raise ServiceError(f"{name}: a whole number from {question.min} to {question.max}")
        return value
    if not isinstance(value, str):
        raise ServiceError(f"{name}: a text")
    text = value.strip()
    if len(text) > question.max_length:
        raise ServiceError(f"{name}: at most {question.max_length:,} characters (got {len(text):,})")
    if _CONTROL.search(text):
        raise ServiceError(f"{name}: contains a control character")
    return text


def _store(project: Project, user, phase: str, **fields: Any) -> QuestionnaireAnswer:
    try:
        with transaction.atomic():
            return QuestionnaireAnswer.objects.create(project=project, user=user, phase=phase, **fields)
    except IntegrityError:
        raise ServiceError(f"{phase}: already answered") from None


@transaction.atomic
def questionnaire_answer(*, project: Project, user, phase: str, answers: Mapping[str, object]) -> QuestionnaireAnswer:
    """One person's answers to the pre or post questionnaire, checked and stored once."""
    if phase not in PHASES:
        raise ServiceError(f"phase: one of {', '.join(PHASES)}")
    questionnaire = Questionnaire.objects.filter(project=project).first()
    questions = questions_of(questionnaire, phase)
    if not questions:
        raise ServiceError(f"{phase}: this project asks no questions here")
    return _store(project, user, phase, answers=check_answers(questions, answers))


@transaction.atomic
def consent_give(*, project: Project, user, agree: bool) -> QuestionnaireAnswer:
    """Consent agreed or declined, once. Declined: the person's open work in the project is closed
    as skipped, and a participant's slot released (outcome declined)."""
    questionnaire = Questionnaire.objects.filter(project=project).first()
    if questionnaire is None or not questionnaire.consent:
        raise ServiceError("consent: this project asks for no consent")
    answer = _store(project, user, QuestionnaireAnswer.CONSENT, consented=bool(agree))
    if not agree:
        now = timezone.now()
        Assignment.objects.open_for(user).filter(item__project=project).update(
            status=Assignment.SKIPPED, skip_reason=DECLINED_REASON, finished=now
        )
        Participant.objects.filter(user=user, project=project, released_at__isnull=True).update(
            outcome=Participant.DECLINED, released_at=now, completed_at=now
        )
    return answer


# --------------------------------------------------------------------------- who is asked what, when


def asked(*, project: Project, user, questionnaire: Questionnaire | None) -> bool:
    """Whether the project's questionnaire applies to the user: its participants, lab annotators
    when for_lab."""
    if questionnaire is None:
        return False
    if Participant.objects.filter(user=user, project=project).exists():
        return True
    return questionnaire.for_lab


def phase_due(*, project: Project, user, stage: str) -> str | None:
    """The phase the user must answer now, or None: at stage "start" (before an item) "declined"
    when consent was declined, else "consent" then "pre"; at stage "end" (no open work left)
    "post"."""
    questionnaire = Questionnaire.objects.filter(project=project).first()
    if not asked(project=project, user=user, questionnaire=questionnaire):
        return None
    assert questionnaire is not None
    answered = {
        phase: consented
        for phase, consented in QuestionnaireAnswer.objects.filter(project=project, user=user).values_list(
            "phase", "consented"
        )
    }
    if questionnaire.consent:
        if answered.get(QuestionnaireAnswer.CONSENT) is False:
            return "declined"
        if QuestionnaireAnswer.CONSENT not in answered:
            return QuestionnaireAnswer.CONSENT
    wanted = (QuestionnaireAnswer.PRE,) if stage == "start" else (QuestionnaireAnswer.PRE, QuestionnaireAnswer.POST)
    for phase in wanted:
        if phase not in answered and questions_of(questionnaire, phase):
            return phase
    return None


def questionnaire_initial(questionnaire: Questionnaire | None) -> dict[str, Any]:
    """The Participants page's questionnaire form, filled with what is stored."""
    if questionnaire is None:
        return {}
    return {
        "consent": questionnaire.consent,
        "pre": json.dumps(questionnaire.pre, ensure_ascii=False, indent=1) if questionnaire.pre else "",
        "post": json.dumps(questionnaire.post, ensure_ascii=False, indent=1) if questionnaire.post else "",
        "for_lab": questionnaire.for_lab,
    }


def post_questionnaires_due(*, user) -> list[Project]:
    """The projects whose post questionnaire a lab annotator should answer now (asked of lab
    annotators, all their work in the project closed, not answered yet): the annotator home links them."""
    due = []
    for questionnaire in Questionnaire.objects.filter(
        for_lab=True, project__items__assignments__annotator=user
    ).distinct():
        project = questionnaire.project
        if not questions_of(questionnaire, QuestionnaireAnswer.POST):
            continue
        if phase_due(project=project, user=user, stage="end") != QuestionnaireAnswer.POST:
            continue
        if not Assignment.objects.open_for(user).filter(item__project=project).exists():
            due.append(project)
    return due
