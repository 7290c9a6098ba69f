"""Every URL pattern of the project, under every role, GET and POST: the expected answer, and nothing changed.

The patterns come from the URL conf (django.urls.get_resolver(), recursively): a new URL without an
entry in ROUTES fails the test. Each URL's arguments resolve to real objects owned by annotator A
(anna); annotator B (bob) has work of his own elsewhere, and must read or write nothing of A's:
every one of B's 2xx answers is searched for A's texts.

A refused request (403, 404, 405, a redirect to a login page) must leave the database exactly as it
was; an allowed POST runs inside a savepoint that is rolled back, so every URL meets the same world.
The Django admin's own URLs (/admin/...) follow one prefix rule: staff admins get 200/302, everyone
else is sent to the admin's login page (its login and logout pages excepted).
"""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authtoken.models import Token

from annotations.editing.lifecycle import post_edit_open
from annotations.models import (
    Assignment,
    AttentionCheck,
    Batch,
    EditEvent,
    ErrorSpan,
    Evaluation,
    EvaluationEvent,
    Item,
    JoinCounter,
    JoinLink,
    Participant,
    PostEdit,
    Project,
    Questionnaire,
    QuestionnaireAnswer,
    Visit,
)
from annotations.services.join_links import join_link_open
from annotations.services.review import review_assign
from metrics.models import MetricJob, MetricValue
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    EditEventFactory,
    ItemFactory,
    MetricValueFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator_a", "annotator_b", "researcher", "admin")
# Texts only annotator A's objects carry: never in a 2xx answer to annotator B or to nobody.
A_SECRETS = ("Anna's private study", "ANNA-OUTPUT-7f3a", "ANNA-DRAFT-91c2", "anna-item-1")


# --------------------------------------------------------------------------- expectations


@dataclass(frozen=True)
class Redirect:
    to: str  # the Location starts with this

    def __repr__(self) -> str:
        return f"302→{self.to}"


LOGIN = Redirect("/login/?next=")
ADMIN_LOGIN = Redirect("/admin/login/?next=")
Expected = int | Redirect


def by_role(anonymous: Expected, a: Expected, b: Expected, researcher: Expected, admin: Expected) -> dict:
    return dict(zip(ROLES, (anonymous, a, b, researcher, admin), strict=True))


# Shorthands for the usual rules.
PAGE_READERS = by_role(LOGIN, 403, 403, 200, 200)  # admins and researchers read
PAGE_ADMINS = by_role(LOGIN, 403, 403, 403, 200)
PAGE_NO_GET = by_role(LOGIN, 405, 405, 405, 405)  # @require_POST
PAGE_NO_POST = PAGE_NO_GET  # @require_GET
API_READERS = by_role(403, 403, 403, 200, 200)
API_ADMINS = by_role(403, 403, 403, 403, 200)


def api_no_method(allowed: dict) -> dict:
    """The other method of a DRF view: permission is checked first, then 405."""
    return {role: 405 if isinstance(status, int) and status < 400 else status for role, status in allowed.items()}


@dataclass(frozen=True)
class Route:
    kwargs: Callable[["World"], dict] = lambda w: {}
    get: dict = field(default_factory=dict)
    post: dict = field(default_factory=dict)
    data: Callable[["World"], Any] = lambda w: {}
    query: str = ""
    json: bool = False  # POST data as a JSON body (the API) rather than a form


@dataclass
class World:
    project: Project
    batch: Batch
    assignment: Assignment  # open, in progress, its editor opened once
    post_edit: PostEdit
    visit: Visit
    done: Assignment  # submitted
    pending: Assignment  # not opened yet
    job: MetricJob  # failed
    users: dict[str, Any]
    state: dict = field(default_factory=dict)  # snapshot(): what every refused request must leave as it was
    join_link: JoinLink | None = None  # the project's open participation link
    other_project: Project | None = None  # Bob's: no participation link yet
    participant: Participant | None = None  # a crowd participant of Bob's project, with a submitted edit
    evaluation: Evaluation | None = None  # Anna's pending evaluation of an output
    review: Assignment | None = None  # the admin's review of one of Anna's post-edits, submitted, not decided


def _editor_payload(extra: Callable[["World"], dict]) -> Callable[["World"], dict]:
    return lambda w: {"page_id": str(w.visit.page_id), **extra(w)}


def _csv(name: str = "items.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, b"external_id,model_output\nnew-1,A new text.\n")


def _plan_digest(w: "World", annotators: list[str], conditions: list[str]) -> str:
    """The digest of the plan the design page would show (its confirmation sends it)."""
    from annotations.services.studies import study_assign_latin_square
    from annotations.services.users import annotators_by_name

    users = annotators_by_name(usernames=annotators)
    return study_assign_latin_square(project=w.project, annotators=users, conditions=conditions).digest


def _generation_run(w: "World"):
    """A running output run of the project (made on first use; no call is ever made for it)."""
    from generation.models import GenerationRun

    run, _ = GenerationRun.objects.get_or_create(
        project=w.project,
        kind="output",
        name="llm",
        settings_key="k" * 64,
        defaults={"endpoint": "http://127.0.0.1:9/v1", "model": "m", "template": "{source}", "status": "running"},
    )
    return run


# Every prompt is over 1 character: each item is refused before any call, so a run starts and ends here.
GENERATION_START = {
    "kind": "output",
    "name": "llm-b",
    "endpoint": "http://127.0.0.1:9/v1",
    "model": "m",
    "template": "answer",
    "max_prompt_chars": 1,
    "concurrency": 1,
    "timeout_s": 1,
}


PE = lambda w: {"post_edit_id": w.post_edit.pk}  # noqa: E731
PROJECT_ID = lambda w: {"project_id": w.project.pk}  # noqa: E731

ROUTES: dict[str, Route] = {
    # ---- site
    "home": Route(
        get=by_role(LOGIN, Redirect("/annotate/"), Redirect("/annotate/"), 200, 200),
        post=by_role(LOGIN, Redirect("/annotate/"), Redirect("/annotate/"), 200, 200),
    ),
    "login": Route(
        get=by_role(200, 200, 200, 200, 200),
        post=by_role(200, 200, 200, 200, 200),  # a wrong password: the form again, for anyone
        data=lambda w: {"username": "anna", "password": "not her password"},
    ),
    "healthz": Route(get=by_role(200, 200, 200, 200, 200), post=by_role(405, 405, 405, 405, 405)),
    "logout": Route(get=by_role(405, 405, 405, 405, 405), post={role: Redirect("/login/") for role in ROLES}),
    "api-schema": Route(get=by_role(403, 200, 200, 200, 200), post=by_role(403, 405, 405, 405, 405)),
    "api-docs": Route(get=by_role(LOGIN, 200, 200, 200, 200), post=by_role(LOGIN, 405, 405, 405, 405)),
    # ---- the editor's endpoints: only the post-edit's annotator writes
    **{
        f"api-post-edit-{name}": Route(
            kwargs=PE,
            get=by_role(403, 405, 405, 405, 405),
            post=by_role(403, 200, 404, 403, 403),
            data=_editor_payload(payload),
            json=True,
        )
        for name, payload in {
            "events": lambda w: {"events": [{"seq": 1, "t": 10.0, "k": "focus"}]},
            "draft": lambda w: {"text": "ANNA-DRAFT-91c2 changed", "version": w.post_edit.version},
            "submit": lambda w: {"text": "ANNA-DRAFT-91c2", "version": w.post_edit.version, "last_seq": 0},
            "skip": lambda w: {"reason": "The source is garbled."},
        }.items()
    },
    # ---- the management API
    "api-projects": Route(get=by_role(403, 200, 200, 200, 200), post=by_role(403, 405, 405, 405, 405)),
    "api-project-create": Route(
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"name": "Another study"},
        json=True,
    ),
    "api-project": Route(
        kwargs=PROJECT_ID, get=by_role(403, 200, 404, 200, 200), post=by_role(403, 405, 405, 405, 405)
    ),
    "api-project-update": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"guidelines": "New guidelines."},
        json=True,
    ),
    "api-project-progress": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    "api-project-copy": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"name": "A copy of the study"},
        json=True,
    ),
    "api-items": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    "api-items-create": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"items": [{"external_id": "new-1", "model_output": "A new text."}]},
        json=True,
    ),
    "api-batches": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    "api-batches-make": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"size": 5},
        json=True,
    ),
    "api-batches-assign": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"annotators": ["bob"], "overlap": 1},
        json=True,
    ),
    "api-design-plan": Route(  # a POST asks for the plan of lists too long for a URL: it writes nothing
        kwargs=PROJECT_ID,
        get=API_READERS,
        post=API_READERS,
        query="?annotators=bob&conditions=c1",
        data=lambda w: {"annotators": ["bob"], "conditions": ["c1"]},
        json=True,
    ),
    "api-design-assign": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"annotators": ["bob"], "conditions": ["c1"]},
        json=True,
    ),
    "api-assignments": Route(get=by_role(403, 200, 200, 200, 200), post=by_role(403, 405, 405, 405, 405)),
    "api-assignments-withdraw": Route(
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"ids": [w.pending.pk]},
        json=True,
    ),
    "api-assignments-reassign": Route(
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"ids": [w.pending.pk], "to": "bob"},
        json=True,
    ),
    "api-assignment": Route(
        kwargs=lambda w: {"assignment_id": w.assignment.pk},
        get=by_role(403, 200, 404, 200, 200),
        post=by_role(403, 405, 405, 405, 405),
    ),
    "api-users": Route(get=API_ADMINS, post=api_no_method(API_ADMINS)),
    "api-user-create": Route(
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"username": "newcomer", "role": "annotator", "password": "a long password 1"},
        json=True,
    ),
    "api-user-role": Route(
        kwargs=lambda w: {"user_id": w.users["annotator_a"].pk},
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"role": "researcher"},
        json=True,
    ),
    # ---- the participation API
    "api-join-links": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    "api-join-link-open": Route(
        kwargs=lambda w: {"project_id": w.other_project.pk},
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 201),
        data=lambda w: {"completion_code": "C"},
        json=True,
    ),
    "api-join-link-revoke": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "link_id": w.join_link.pk},
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 200),
        json=True,
    ),
    "api-participants": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    # ---- the metrics API: researchers and admins
    "api-metric-values": Route(get=API_READERS, post=api_no_method(API_READERS)),
    "api-metric-job-create": Route(
        kwargs=PROJECT_ID,
        get=api_no_method(API_READERS),
        post=by_role(403, 403, 403, 202, 202),
        data=lambda w: {"metrics": ["levenshtein"], "variants": ["plain"]},
        json=True,
    ),
    "api-metric-job": Route(kwargs=lambda w: {"job_id": w.job.pk}, get=API_READERS, post=api_no_method(API_READERS)),
    "api-metric-job-retry": Route(
        kwargs=lambda w: {"job_id": w.job.pk},
        get=api_no_method(API_READERS),
        post=by_role(403, 403, 403, 202, 202),
        json=True,
    ),
    "api-project-export": Route(
        kwargs=PROJECT_ID, get=API_READERS, post=api_no_method(API_READERS), query="?format=csv"
    ),
    # The event log holds what annotators typed: readers only, like every export.
    "api-project-events": Route(
        kwargs=PROJECT_ID, get=API_READERS, post=api_no_method(API_READERS), query="?format=jsonl&with_text=1"
    ),
    "api-project-analysis": Route(
        kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405), query="?target=keystrokes"
    ),
    "api-project-gold": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    # MQM/ESA scores: read by researchers and admins, like the analysis.
    "api-project-mqm": Route(kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405)),
    "api-project-agreement": Route(
        kwargs=PROJECT_ID, get=API_READERS, post=by_role(403, 403, 403, 403, 405), query="?target=keystrokes"
    ),
    # ---- the annotator's pages
    "annotator_home": Route(get=by_role(LOGIN, 200, 200, 200, 200), post=by_role(LOGIN, 200, 200, 200, 200)),
    "editor": Route(
        kwargs=lambda w: {"assignment_id": w.assignment.pk},
        get=by_role(LOGIN, 200, 404, Redirect("/edit/"), Redirect("/edit/")),
        post=by_role(LOGIN, 200, 404, Redirect("/edit/"), Redirect("/edit/")),
    ),
    "editor_diff": Route(
        kwargs=lambda w: {"assignment_id": w.done.pk},
        get=by_role(LOGIN, 200, 404, 200, 200),
        post=by_role(LOGIN, 200, 404, 200, 200),
    ),
    # ---- the error-span task: only the rater opens and writes their evaluation
    "evaluations": Route(get=by_role(LOGIN, 200, 200, 200, 200), post=PAGE_NO_GET),
    "evaluation": Route(
        kwargs=lambda w: {"evaluation_id": w.evaluation.pk},
        get=by_role(LOGIN, 200, 404, 404, 404),
        post=PAGE_NO_GET,
    ),
    "api-evaluation-events": Route(
        kwargs=lambda w: {"evaluation_id": w.evaluation.pk},
        get=by_role(403, 405, 405, 405, 405),
        post=by_role(403, 200, 404, 403, 403),
        data=lambda w: {
            "page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0",
            "events": [{"seq": 0, "t": 1.0, "k": "load"}],
        },
        json=True,
    ),
    "api-evaluation-submit": Route(
        kwargs=lambda w: {"evaluation_id": w.evaluation.pk},
        get=by_role(403, 405, 405, 405, 405),
        post=by_role(403, 200, 404, 403, 403),
        data=lambda w: {"page_id": "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0", "last_seq": -1, "spans": []},
        json=True,
    ),
    # ---- reviews: reviewers (a group none of these roles holds) and admins; researchers read a review
    "review-queue": Route(get=PAGE_ADMINS, post=PAGE_NO_POST),
    "review-take": Route(
        kwargs=lambda w: {"post_edit_id": w.done.post_edit.pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/edit/")),
    ),
    "review-page": Route(
        kwargs=lambda w: {"assignment_id": w.review.pk},
        get=by_role(LOGIN, 403, 403, 200, 200),
        post=by_role(LOGIN, 403, 403, 403, Redirect("/review/")),
        data=lambda w: {"decision": "returned", "reason": "Too literal."},
    ),
    "metrics-reviews": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    # ---- admin pages (researchers read)
    "manage-projects": Route(get=PAGE_READERS, post=PAGE_NO_POST),
    "manage-project-create": Route(
        get=PAGE_ADMINS,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {
            "name": "Another study",
            "guidelines": "",
            "task_type": "",
            "instructions": "Fix it",
            "idle_threshold_s": "30",
            "overlap": "1",
        },
    ),
    "manage-project-edit": Route(  # Settings: researchers read them
        kwargs=PROJECT_ID,
        get=PAGE_READERS,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {
            "name": w.project.name,
            "guidelines": "Changed.",
            "task_type": "",
            "instructions": "Fix it",
            "idle_threshold_s": "30",
            "overlap": "1",
        },
    ),
    "manage-batches": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    "manage-batches-make": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"size": "5"},
    ),
    "manage-batches-assign": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"annotators": [w.users["annotator_b"].pk], "overlap": "1"},
    ),
    "manage-assignments-move": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"action": "withdraw", "from_annotator": w.users["annotator_a"].pk},
    ),
    "manage-design": Route(  # the form posts its choices (a plan; nothing is written)
        kwargs=PROJECT_ID,
        get=PAGE_READERS,
        post=PAGE_READERS,
        query="?annotators=&conditions=c1",
        data=lambda w: {"annotators": [w.users["annotator_b"].pk], "conditions": ["c1"]},
    ),
    "manage-design-apply": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {
            "annotators": [w.users["annotator_b"].pk],
            "conditions": ["c1"],
            "plan_digest": _plan_digest(w, ["bob"], ["c1"]),
        },
    ),
    "manage-progress": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    # The items browser (both views, a filter set) and one item's page: admins and researchers read.
    "manage-items": Route(
        kwargs=PROJECT_ID, query="?view=post-edits&status=in_progress&q=anna", get=PAGE_READERS, post=PAGE_NO_POST
    ),
    "manage-item": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "item_id": w.assignment.item_id},
        get=PAGE_READERS,
        post=PAGE_NO_POST,
    ),
    "manage-project-copy": Route(
        kwargs=PROJECT_ID,
        get=PAGE_ADMINS,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"name": "A copy of the study", "include_practice": "on"},
    ),
    # ---- crowd participants: the public participation link, the completion page, the Participants page
    "join": Route(
        kwargs=lambda w: {"token": w.join_link.token},
        query="?PROLIFIC_PID=walker-1&STUDY_ID=s&SESSION_ID=t",
        get=by_role(200, 200, 200, 200, 200),  # the welcome page, for anyone (it creates nothing)
        post={role: Redirect("/edit/") for role in ROLES},  # Start: joined, logged in, off to the first item
    ),
    "participant-done": Route(get=by_role(LOGIN, 404, 404, 404, 404), post=PAGE_NO_POST),
    "manage-participation": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    "manage-participation-open": Route(
        kwargs=lambda w: {"project_id": w.other_project.pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"completion_code": "C", "participant_param": "PROLIFIC_PID"},
    ),
    "manage-participation-revoke": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "link_id": w.join_link.pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
    ),
    # Crowd quality control: the study's consent/questionnaire pages (nobody is asked anything in this
    # world: 404), the Participants page's settings (admins) and its export (readers).
    "study-form": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "phase": "consent"},
        get=by_role(LOGIN, 404, 404, 404, 404),
        post=by_role(LOGIN, 404, 404, 404, 404),
        data=lambda w: {"consent": "agree"},
    ),
    "manage-participation-questionnaire": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"consent": "Do you agree?", "pre": "", "post": ""},
    ),
    "manage-participation-attention": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"external_id": w.assignment.item.external_id, "kind": "none"},
    ),
    "manage-participation-export": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    # Erasing a participant's log and texts: admins only, a confirm page (GET) and the erasure (POST).
    "manage-participant-erase": Route(
        kwargs=lambda w: {"project_id": w.other_project.pk, "participant_id": w.participant.pk},
        get=PAGE_ADMINS,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
    ),
    "manage-post-edit-replay": Route(
        kwargs=lambda w: {"post_edit_id": w.post_edit.pk},
        get=by_role(LOGIN, 404, 404, 200, 200),  # annotators: not even their own log
        post=PAGE_NO_POST,
    ),
    "manage-post-edit-process-graph": Route(
        kwargs=lambda w: {"post_edit_id": w.post_edit.pk},
        get=by_role(LOGIN, 404, 404, 200, 200),  # as the replay page
        post=PAGE_NO_POST,
    ),
    # The Users page: admins only; the actions change annotator A's account (an admin's own and a
    # superuser's are refused by the service: tests/annotations/test_users_page.py).
    "manage-users": Route(get=PAGE_ADMINS, post=PAGE_NO_POST, query="?q=ann&role=annotator&page=1"),
    "manage-users-add": Route(
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, 200),
        data=lambda w: {"username": "newcomer", "role": "annotator"},
    ),
    "manage-user-role": Route(
        kwargs=lambda w: {"user_id": w.users["annotator_a"].pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/users/")),
        data=lambda w: {"role": "researcher"},
    ),
    "manage-user-active": Route(
        kwargs=lambda w: {"user_id": w.users["annotator_a"].pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/users/")),
        data=lambda w: {"active": "0"},
    ),
    "manage-user-password": Route(
        kwargs=lambda w: {"user_id": w.users["annotator_a"].pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, 200),
        data=lambda w: {"password": ""},
    ),
    "manage-import": Route(
        get=PAGE_ADMINS,
        post=by_role(LOGIN, 403, 403, 403, 200),
        data=lambda w: {"project": w.project.pk, "fmt": "table", "files": _csv()},
    ),
    "manage-import-mapping": Route(
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, 200),
        data=lambda w: {"fmt": "table", "files": _csv()},
    ),
    # ---- researcher pages
    "metrics-projects": Route(get=PAGE_READERS, post=PAGE_NO_POST),
    "metrics-project": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    "metrics-compute": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, Redirect("/research/"), Redirect("/research/")),
        data=lambda w: {"metrics": ["levenshtein"], "variants": ["plain"]},
    ),
    "metrics-job": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "job_id": w.job.pk}, get=PAGE_READERS, post=PAGE_NO_POST
    ),
    "metrics-job-retry": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "job_id": w.job.pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, Redirect("/research/"), Redirect("/research/")),
    ),
    "metrics-export": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST, query="?format=csv"),
    "metrics-reports": Route(get=PAGE_READERS, post=PAGE_NO_POST),
    "metrics-report": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    "metrics-report-data": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "fmt": "json"}, get=PAGE_READERS, post=PAGE_NO_POST
    ),
    "metrics-report-documents": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "fmt": "csv"}, get=PAGE_READERS, post=PAGE_NO_POST
    ),
    "metrics-report-plot": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "kind": "scatter", "fmt": "svg"},
        get=PAGE_READERS,
        post=PAGE_NO_POST,
        query="?metric=levenshtein",
    ),
    "metrics-report-agreement": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "fmt": "csv"}, get=PAGE_READERS, post=PAGE_NO_POST
    ),
    "metrics-quality": Route(kwargs=PROJECT_ID, get=PAGE_READERS, post=PAGE_NO_POST),
    "metrics-quality-download": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "kind": "mqm"}, get=PAGE_READERS, post=PAGE_NO_POST
    ),
    # ---- generation (generation/views.py, generation/api/views.py): admins; researchers read
    "generation-page": Route(
        kwargs=PROJECT_ID,
        get=PAGE_READERS,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: GENERATION_START,
    ),
    "generation-run-stop": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "run_id": _generation_run(w).pk},
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
    ),
    "generation-policy": Route(
        kwargs=PROJECT_ID,
        get=PAGE_NO_GET,
        post=by_role(LOGIN, 403, 403, 403, Redirect("/manage/projects/")),
        data=lambda w: {"researchers_simulate": "on"},
    ),
    "api-generation-runs": Route(kwargs=PROJECT_ID, get=API_READERS, post=api_no_method(API_READERS)),
    "api-generation-run-start": Route(  # researchers pass only where the project lets them simulate
        kwargs=PROJECT_ID,
        get=api_no_method(API_ADMINS),
        post=by_role(403, 403, 403, 403, 202),
        data=lambda w: GENERATION_START,
        json=True,
    ),
    "api-generation-run": Route(
        kwargs=lambda w: {"run_id": _generation_run(w).pk}, get=API_READERS, post=api_no_method(API_READERS)
    ),
    "api-generation-run-stop": Route(
        kwargs=lambda w: {"run_id": _generation_run(w).pk},
        get=api_no_method(API_READERS),
        post=by_role(403, 403, 403, 403, 200),
        json=True,
    ),
    "api-generation-policy": Route(
        kwargs=PROJECT_ID,
        get=API_READERS,
        post=by_role(403, 403, 403, 403, 200),
        data=lambda w: {"researchers_simulate": True},
        json=True,
    ),
    "api-item-provenance": Route(
        kwargs=lambda w: {"project_id": w.project.pk, "item_id": w.assignment.item_id},
        get=API_READERS,
        post=api_no_method(API_READERS),
    ),
}


# --------------------------------------------------------------------------- the URL conf


@dataclass(frozen=True)
class Pattern:
    route: str
    name: str  # "admin:..." for the admin site's
    keys: tuple[str, ...]


def url_patterns(resolver: URLResolver | None = None, prefix: str = "", namespace: str = "") -> Iterator[Pattern]:
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from url_patterns(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            keys = tuple(entry.pattern.regex.groupindex)
            yield Pattern(prefix + str(entry.pattern), f"{namespace}{entry.name or ''}", keys)


# --------------------------------------------------------------------------- the world


def build_world() -> World:
    users = {
        "annotator_a": UserFactory(username="anna", role="annotator"),
        "annotator_b": UserFactory(username="bob", role="annotator"),
        "researcher": UserFactory(username="rita", role="researcher"),
        "admin": UserFactory(username="adam", role="admin"),
    }
    anna, bob = users["annotator_a"], users["annotator_b"]
    project = ProjectFactory(
        name="Anna's private study", instructions=["Fix it"], conditions=[{"name": "c1", "output": None}]
    )
    batch = BatchFactory(project=project, name="b1")
    item = ItemFactory(
        project=project, batch=batch, batch_position=0, external_id="anna-item-1", model_output="ANNA-OUTPUT-7f3a"
    )
    assignment = AssignmentFactory(item=item, annotator=anna)
    post_edit, visit = post_edit_open(assignment=assignment, user=anna)
    EditEventFactory(post_edit=post_edit, visit=visit, seq=0, t_ms=0.0, kind="load", data="ANNA-OUTPUT-7f3a")
    PostEdit.objects.filter(pk=post_edit.pk).update(draft_text="ANNA-DRAFT-91c2")
    post_edit.refresh_from_db()
    done = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__batch=batch,
        assignment__item__batch_position=1,
        assignment__annotator=anna,
        text="ANNA-DRAFT-91c2 done",
    )
    MetricValueFactory(post_edit=done, metric="levenshtein", value=3.0)
    for n in range(2):
        extra = SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=anna)
        MetricValueFactory(post_edit=extra, metric="levenshtein", value=float(n))
    pending = AssignmentFactory(
        item=ItemFactory(project=project, batch=batch, batch_position=2, model_output="ANNA-OUTPUT-7f3a too"),
        annotator=anna,
    )
    ItemFactory(project=project, external_id="unbatched", model_output="Not in a batch yet.")
    # Bob has work of his own, in another project.
    bobs = BatchFactory(project=ProjectFactory(name="Bob's study"), name="bob-1")
    AssignmentFactory(item=ItemFactory(project=bobs.project, batch=bobs, batch_position=0), annotator=bob)
    job = MetricJob.objects.create(
        project=project, metrics=["levenshtein"], variants=["plain"], status=MetricJob.FAILED, error="Boom"
    )
    world = World(project, batch, assignment, post_edit, visit, done.assignment, pending, job, users)
    world.join_link = join_link_open(project=project, completion_code="C0DE")
    world.other_project = bobs.project
    walker = UserFactory(username="walker-0", role="annotator")
    world.review = review_assign(post_edit=extra, reviewer=users["admin"])  # admins always review
    PostEdit.objects.filter(assignment=world.review).update(text="Reviewed text.", draft_text="Reviewed text.")
    Assignment.objects.filter(pk=world.review.pk).update(status=Assignment.SUBMITTED)
    world.participant = Participant.objects.create(
        user=walker, project=bobs.project, platform_id="walker-0", platform_key="walker-0", slot=0
    )
    SubmittedPostEditFactory(assignment__item__project=bobs.project, assignment__annotator=walker)
    world.evaluation = Evaluation.objects.create(
        item=ItemFactory(project=project, external_id="rated", outputs={"sysA": "ANNA-OUTPUT-7f3a rated"}),
        rater=anna,
        system="sysA",
        text="ANNA-OUTPUT-7f3a rated",
    )
    world.state = snapshot()
    return world


def client_for(role: str, world: World) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


SNAPSHOT_MODELS = (
    Project,
    Item,
    Batch,
    Assignment,
    PostEdit,
    Visit,
    EditEvent,
    MetricValue,
    MetricJob,
    Token,
    JoinLink,
    Participant,
    JoinCounter,
    Questionnaire,
    QuestionnaireAnswer,
    AttentionCheck,
    Evaluation,
    EvaluationEvent,
    ErrorSpan,
)


def snapshot() -> dict:
    """Every row a request could change (sessions and the login-attempt cache aside), as raw rows."""
    User = get_user_model()
    tables = [model._meta.db_table for model in SNAPSHOT_MODELS]
    tables += [User._meta.db_table, User.groups.through._meta.db_table]
    state = {}
    with connection.cursor() as cursor:
        for table in tables:
            quoted = connection.ops.quote_name(table)
            cursor.execute(f"SELECT * FROM {quoted}")  # noqa: S608 - our own table names
            columns = [column[0] for column in cursor.description]
            rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
            for row in rows:
                row.pop("last_login", None)  # logging in is not a change made by the request
            state[table] = sorted(rows, key=lambda row: str(sorted(row.items())))
    return state


# --------------------------------------------------------------------------- requests


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def matches(response, expected: Expected) -> bool:
    if isinstance(expected, Redirect):
        return response.status_code == 302 and response["Location"].startswith(expected.to)
    return response.status_code == expected


def send(client: Client, method: str, url: str, route: Route | None, world: World):
    if method == "get":
        return client.get(url)
    data = route.data(world) if route is not None else {}
    if route is not None and route.json:
        return client.post(url, data=json.dumps(data), content_type="application/json")
    return client.post(url, data=data)


def refused(expected: Expected) -> bool:
    if isinstance(expected, Redirect):
        return expected in (LOGIN, ADMIN_LOGIN)
    return expected >= 400


def check_request(
    *, world: World, role: str, method: str, url: str, route: Route | None, expected: Expected, problems: list
) -> None:
    client = client_for(role, world)
    if refused(expected):
        response = send(client, method, url, route, world)
        body = _body(response)
        if snapshot() != world.state:
            problems.append(f"{method.upper()} {url} as {role}: refused, yet the database changed")
            world.state = snapshot()
    else:
        # Allowed: done, checked, and undone, so that every URL meets the same world.
        with transaction.atomic():
            response = send(client, method, url, route, world)
            body = _body(response)
            transaction.set_rollback(True)
    if not matches(response, expected):
        where = f" → {response.get('Location')}" if response.status_code == 302 else ""
        problems.append(f"{method.upper()} {url} as {role}: {response.status_code}{where}, expected {expected!r}")
    if role in ("anonymous", "annotator_b") and 200 <= response.status_code < 300:
        leaked = [secret for secret in A_SECRETS if secret in body]
        if leaked:
            problems.append(f"{method.upper()} {url} as {role}: shows annotator A's {leaked}")


# --------------------------------------------------------------------------- the admin site's URLs


def admin_url(pattern: Pattern) -> str:
    """A concrete URL of an admin pattern, its object ids those of real rows."""
    parts = pattern.route.removeprefix("admin/").split("/")
    model = Project
    if len(parts) > 2 and parts[0] in {config.label for config in apps.get_app_configs()}:
        model = apps.get_model(parts[0], parts[1])
    first = model.objects.order_by("pk").values_list("pk", flat=True).first()
    fillers = {
        "app_label": "annotations",
        "content_type_id": ContentType.objects.get_for_model(model).pk,
        "object_id": str(first if first is not None else 1),
        "id": str(first if first is not None else 1),
        "url": "no-such-page/",  # the admin's final catch-all
    }
    unknown = set(pattern.keys) - set(fillers)
    assert not unknown, f"admin pattern {pattern.route} has arguments this test cannot fill: {unknown}"
    kwargs = {key: fillers[key] for key in pattern.keys}
    if pattern.keys == ("url",):
        return "/admin/" + fillers["url"]
    if pattern.name != "admin:":
        return reverse(pattern.name, kwargs=kwargs)
    # The unnamed "<object_id>/" shortcut of each model redirects to its change page.
    change = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", kwargs=kwargs)
    return change.removesuffix("change/")


def admin_expectations(pattern: Pattern) -> tuple[dict, dict]:
    """(GET, POST) by role for an admin-site URL; None: the staff admin's answer is 200 or 302."""
    if pattern.name in ("admin:login", "admin-login"):  # the admin's login behind editlab's limiter
        return by_role(200, 200, 200, 200, Redirect("/admin/")), by_role(200, 200, 200, 200, 200)
    if pattern.name == "admin:logout":
        outsider = Redirect("/admin/")
        return by_role(outsider, outsider, outsider, outsider, 405), by_role(
            outsider, outsider, outsider, outsider, Redirect("/login/")
        )
    return (
        by_role(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, None),
        by_role(ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, None),
    )


def staff_exception(pattern: Pattern, status: int) -> bool:
    """The admin site's deliberate refusals, even to staff admins."""
    if status == 403 and pattern.name.endswith(("_add", "_delete")):
        return True  # the event log is append-only, post-edits and metric values are not made by hand
    if status == 403 and pattern.name == "admin:autocomplete":
        return True  # without its query parameters
    return status == 404 and pattern.name in ("admin:", "admin:view_on_site")  # catch-all; no public page


def check_admin_pattern(pattern: Pattern, world: World, problems: list) -> None:
    url = admin_url(pattern)
    get, post = admin_expectations(pattern)
    for role in ROLES:
        for method, expected in (("get", get[role]), ("post", post[role])):
            if expected is None:
                if method == "post":
                    continue  # the admin site's own writes are Django's, not ours to walk
                response = client_for(role, world).get(url)
                ok = response.status_code in (200, 302) or staff_exception(pattern, response.status_code)
                if not ok:
                    problems.append(f"GET {url} as admin: {response.status_code}, expected 200 or 302")
                continue
            check_request(
                world=world, role=role, method=method, url=url, route=None, expected=expected, problems=problems
            )


# --------------------------------------------------------------------------- the test


def test_every_url_answers_every_role_as_expected_and_refusals_change_nothing():
    world = build_world()
    patterns = list(url_patterns())
    assert len(patterns) > 100, "the walk found too few URL patterns"
    unknown = [p for p in patterns if not p.route.startswith("admin/") and p.name not in ROUTES]
    assert not unknown, (
        "URL patterns without an expectation in tests/editlab/test_url_permissions.py ROUTES: "
        + ", ".join(f"{p.route} ({p.name or 'unnamed'})" for p in unknown)
    )
    stale = set(ROUTES) - {p.name for p in patterns}
    assert not stale, f"ROUTES names URLs that no longer exist: {sorted(stale)}"

    problems: list[str] = []
    for pattern in patterns:
        if pattern.route.startswith("admin/"):
            check_admin_pattern(pattern, world, problems)
            continue
        route = ROUTES[pattern.name]
        kwargs = route.kwargs(world)
        assert set(kwargs) == set(pattern.keys), f"{pattern.name}: kwargs {sorted(kwargs)} for {pattern.keys}"
        url = reverse(pattern.name, kwargs=kwargs) + route.query
        for method, table in (("get", route.get), ("post", route.post)):
            assert set(table) == set(ROLES), f"{pattern.name} {method}: expectations for {sorted(table)}"
            for role in ROLES:
                check_request(
                    world=world, role=role, method=method, url=url, route=route, expected=table[role], problems=problems
                )
    assert not problems, f"{len(problems)} unexpected answers:\n" + "\n".join(problems)
