"""The human side of editlab: who edits what, and every key they pressed.

Relations follow ../shared/DESIGN.md: Project -> Item -> Assignment (item, annotator)
-> PostEdit (one per assignment) -> EditEvent (append-only log). A Batch is an
ordered set of a project's items (Item.batch + Item.batch_position).

Modules by what they hold: projects.py (projects, items, batches), assignments.py (assignments,
post-edits, the effort field names), events.py (visits, the annotator's clock, edit events),
participants.py (join links, participants, the join counter), evaluations.py (MQM/ESA
evaluations and their error spans), questionnaires.py (consent, questionnaires, answers,
attention checks).
"""

from annotations.models.assignments import (
    DEFINITION_VERSION,
    EFFORT_COUNT_FIELDS,
    EFFORT_FIELDS,
    EFFORT_TIME_FIELDS,
    PAUSE_FIELDS,
    Assignment,
    AssignmentQuerySet,
    PostEdit,
    PostEditQuerySet,
    start_text_of_post_edit,
)
from annotations.models.evaluations import ErrorSpan, Evaluation, EvaluationEvent
from annotations.models.events import AnnotatorClock, EditEvent, Visit
from annotations.models.participants import JoinCounter, JoinLink, Participant
from annotations.models.projects import Batch, Item, ItemQuerySet, Project
from annotations.models.questionnaires import AttentionCheck, Questionnaire, QuestionnaireAnswer

__all__ = [
    "DEFINITION_VERSION",
    "EFFORT_COUNT_FIELDS",
    "EFFORT_FIELDS",
    "EFFORT_TIME_FIELDS",
    "PAUSE_FIELDS",
    "AnnotatorClock",
    "Assignment",
    "AttentionCheck",
    "AssignmentQuerySet",
    "Batch",
    "EditEvent",
    "ErrorSpan",
    "Evaluation",
    "EvaluationEvent",
    "Item",
    "ItemQuerySet",
    "JoinCounter",
    "JoinLink",
    "Participant",
    "PostEdit",
    "PostEditQuerySet",
    "Project",
    "Questionnaire",
    "QuestionnaireAnswer",
    "Visit",
    "start_text_of_post_edit",
]
