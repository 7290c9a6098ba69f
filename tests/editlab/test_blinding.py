"""The blinding matrix: every URL pattern, under every condition of a designed study, shows an annotator
or crowd participant nothing their condition hides and nothing of anyone else's.

The study has one document of four segments, each with two systems' outputs and a model output that is
neither, all carrying distinctive markers, and highlight spans (their label a marker too) over system A.
Four viewers hold the document's first three segments under the four conditions: output A, output B,
an empty editor (`ht`, a crowd participant), output A with highlights. Each has one segment submitted,
one opened, one not opened yet; the fourth segment is someone else's only (the sibling "without one's
own assignment" of a reassignment). Another annotator has submitted all four under condition B.

Every pattern of the URL conf needs an entry in ROUTES (a new URL without one fails the test): the
requests a viewer can make there. Each request runs inside a rolled-back transaction (every request
meets the same world) and no answer, whatever its status, may contain a marker the viewer's condition
does not show, another viewer's text or the other annotator's. Pages an annotator cannot use are sent
too and must refuse. The Django admin's URLs follow the prefix rule (to its login page).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from annotations.editing.lifecycle import post_edit_open
from annotations.models import Assignment, ErrorSpan, Evaluation, Participant, PostEdit, Project
from annotations.services.join_links import join_link_open
from metrics.models import MetricJob
from tests.editlab.test_url_permissions import admin_url, url_patterns
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysB", "highlights": False},
    {"name": "ht", "output": None, "highlights": False},
    {"name": "ahl", "output": "sysA", "highlights": True},
]
SEGMENTS = 4
HELD = 3  # the viewers hold segments 0..2; segment 3 is the other annotator's only

# Marker families: the text of every system's output, the model output, the highlight label.
SYS_A, SYS_B, MODEL, LABEL = "SYSAOUT", "SYSBOUT", "MODELOUT", "HLMARKLABEL"
OTHER = "OTHERPERSONTEXT"
OTHER_NAME = "labmember-zq7"  # the other annotator's username: other people's names are not shown either
OWN = "OWNTEXTOF"  # + the viewer's condition: each viewer's own submitted text and draft

# What each condition shows; everything else of the families above is hidden from its viewer.
SHOWN = {"a": {SYS_A}, "b": {SYS_B}, "ht": set(), "ahl": {SYS_A, LABEL}}
FAMILIES = (SYS_A, SYS_B, MODEL, LABEL)


def output(family: str, segment: int) -> str:
    return f"{family}-s{segment} needs a fix here."


def username(condition: str) -> str:
    return f"person-{condition}-x"


def own_text(condition: str, kind: str) -> str:
    return f"{OWN}{condition.upper()}-{kind}"


@dataclass
class Viewer:
    condition: str
    user: object
    submitted: Assignment  # segment 0
    opened: Assignment  # segment 1, in progress
    pending: Assignment  # segment 2, never opened
    post_edit: PostEdit  # of `opened`
    page_id: str = ""

    @property
    def forbidden(self) -> list[str]:
        hidden = [family for family in FAMILIES if family not in SHOWN[self.condition]]
        others = [own_text(c, "") for c in SHOWN if c != self.condition]
        names = [username(c) for c in SHOWN if c != self.condition]
        return [*hidden, OTHER, OTHER_NAME, *others, *names]


@dataclass
class World:
    project: Project
    viewers: dict[str, Viewer]
    token: str
    link_pk: int
    job: MetricJob
    extra: dict = field(default_factory=dict)


def build_world() -> World:
    project = ProjectFactory(
        name="Blind study",
        conditions=CONDITIONS,
        context=Project.CONTEXT_DOCUMENT,
        design=Project.DESIGN_LATIN_SQUARE,
        guidelines="Read the source first.",
        meta={
            "designs": [
                {
                    "design": Project.DESIGN_LATIN_SQUARE,
                    "annotators": [username(c) for c in SHOWN] + [OTHER_NAME],
                    "conditions": [c["name"] for c in CONDITIONS],
                }
            ]
        },
    )
    items = [
        ItemFactory(
            project=project,
            external_id=f"seg-{k}",
            document="doc-1",
            document_position=k,
            source=f"Quelle {k}.",
            model_output=output(MODEL, k),
            outputs={"sysA": output(SYS_A, k), "sysB": output(SYS_B, k)},
            highlights={"sysA": [[0, 7, LABEL]]},
        )
        for k in range(SEGMENTS)
    ]
    for k in range(1, len(CONDITIONS)):  # documents enough for a participant's Latin-square row
        ItemFactory(project=project, external_id=f"filler-{k}", document=f"doc-{k + 1}", document_position=0)
    practice = ItemFactory(project=project, external_id="practice", model_output="A practice text.", practice=True)
    link = join_link_open(project=project, completion_code="DONE-CODE")
    viewers: dict[str, Viewer] = {}
    for slot, condition in enumerate(SHOWN):
        user = UserFactory(username=username(condition), role="annotator")
        if condition == "ht":  # the crowd participant
            Participant.objects.create(user=user, project=project, join_link=link, platform_id="PID-HT", slot=slot)
        AssignmentFactory(item=practice, annotator=user, queue_position=0)
        held = [
            AssignmentFactory(item=items[k], annotator=user, condition=condition, queue_position=k + 1)
            for k in range(HELD)
        ]
        done, _ = post_edit_open(assignment=held[0], user=user)
        PostEdit.objects.filter(pk=done.pk).update(
            text=own_text(condition, "final"), draft_text=own_text(condition, "final")
        )
        Assignment.objects.filter(pk=held[0].pk).update(status=Assignment.SUBMITTED)
        opened, visit = post_edit_open(assignment=held[1], user=user)
        PostEdit.objects.filter(pk=opened.pk).update(draft_text=opened.draft_text + own_text(condition, "draft"))
        opened.refresh_from_db()
        viewers[condition] = Viewer(condition, user, held[0], held[1], held[2], opened, page_id=str(visit.page_id))
    other = UserFactory(username=OTHER_NAME, role="annotator")
    for k in range(SEGMENTS):
        assignment = AssignmentFactory(item=items[k], annotator=other, condition="b", queue_position=k)
        post_edit, _ = post_edit_open(assignment=assignment, user=other)
        PostEdit.objects.filter(pk=post_edit.pk).update(text=f"{OTHER}-{k}", draft_text=f"{OTHER}-{k}")
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.SUBMITTED)
    job = MetricJob.objects.create(project=project, metrics=["levenshtein"], variants=["plain"])
    # The other annotator rates system B's output: no viewer opens or writes that evaluation.
    evaluation = Evaluation.objects.create(item=items[0], rater=other, system="sysB", text=output(SYS_B, 0))
    ErrorSpan.objects.create(
        evaluation=evaluation, position=0, start=0, end=3, category="Other", severity="minor", comment=OTHER
    )
    return World(project, viewers, link.token, link.pk, job, extra={"evaluation": evaluation.pk})


# --------------------------------------------------------------------------- the requests


@dataclass(frozen=True)
class Req:
    method: str
    url: str
    data: object = None
    json: bool = False
    htmx: bool = False
    refused: bool = False  # an annotator must be refused here (>= 400, or sent to a login page)


Routes = Callable[[World, Viewer], list[Req]]


def _fill(world: World, viewer: Viewer, keys: dict) -> dict:
    return {key: value(world, viewer) if callable(value) else value for key, value in keys.items()}


def refused(**keys) -> Routes:
    """A URL an annotator cannot use: GET and POST must be refused, and still show nothing."""

    def requests(world: World, viewer: Viewer, *, name: str) -> list[Req]:
        kwargs = _fill(world, viewer, keys)
        url = reverse(name, kwargs=kwargs)
        return [Req("get", url, refused=True), Req("post", url, data={}, refused=True)]

    return requests  # type: ignore[return-value]


PROJECT_ID = {"project_id": lambda w, v: w.project.pk}


def editor_api(kind: str) -> Routes:
    def requests(world: World, viewer: Viewer, *, name: str) -> list[Req]:
        post_edit = viewer.post_edit
        url = reverse(name, kwargs={"post_edit_id": post_edit.pk})
        base = {"page_id": viewer.page_id}
        bodies = {
            "events": [{**base, "events": [{"seq": 10_000, "t": 10.0, "k": "focus"}]}],
            "draft": [
                {**base, "text": post_edit.draft_text + " more", "version": post_edit.version},
                {**base, "text": "stale", "version": post_edit.version + 7},  # 409: the server's draft
            ],
            "submit": [{**base, "text": post_edit.draft_text, "version": post_edit.version, "last_seq": 0}],
            "skip": [{**base, "reason": "The source is garbled."}],
        }[kind]
        others = reverse(
            name, kwargs={"post_edit_id": PostEdit.objects.exclude(assignment__annotator=viewer.user).first().pk}
        )
        return [Req("post", url, data=body, json=True) for body in bodies] + [
            Req("get", url),
            Req("post", others, data=bodies[0], json=True, refused=True),  # someone else's post-edit
        ]

    return requests  # type: ignore[return-value]


def own_assignments(viewer: Viewer) -> list[Assignment]:
    return [viewer.submitted, viewer.opened, viewer.pending]


def _assignment_api(world: World, viewer: Viewer, *, name: str) -> list[Req]:
    mine = [Req("get", reverse(name, kwargs={"assignment_id": a.pk})) for a in own_assignments(viewer)]
    theirs = Assignment.objects.exclude(annotator=viewer.user).first()
    return [*mine, Req("get", reverse(name, kwargs={"assignment_id": theirs.pk}), refused=True)]


def _assignments_api(world: World, viewer: Viewer, *, name: str) -> list[Req]:
    url = reverse(name)
    return [
        Req("get", url),
        Req("get", f"{url}?project={world.project.pk}"),
        Req("get", f"{url}?annotator={OTHER_NAME}"),  # someone else's queue: not theirs to filter for
        Req("get", f"{url}?status=pending"),
    ]


def _editor_pages(world: World, viewer: Viewer, *, name: str) -> list[Req]:
    requests = []
    for assignment in own_assignments(viewer):
        url = reverse(name, kwargs={"assignment_id": assignment.pk})
        requests += [Req("get", url), Req("get", url, htmx=True), Req("post", url, data={})]
    theirs = Assignment.objects.exclude(annotator=viewer.user).first()
    requests.append(Req("get", reverse(name, kwargs={"assignment_id": theirs.pk}), refused=True))
    return requests


def plain(*, methods=("get", "post"), query: str = "", **keys) -> Routes:
    def requests(world: World, viewer: Viewer, *, name: str) -> list[Req]:
        url = reverse(name, kwargs=_fill(world, viewer, keys)) + query
        return [Req(method, url, data={} if method == "post" else None) for method in methods]

    return requests  # type: ignore[return-value]


ROUTES: dict[str, Routes] = {
    # ---- what annotators and participants use
    "home": plain(),
    "login": plain(methods=("get",)),
    "healthz": plain(methods=("get",)),
    "logout": plain(methods=("get",)),  # the POST only logs out
    "api-schema": plain(methods=("get",)),
    "api-docs": plain(methods=("get",)),
    **{f"api-post-edit-{kind}": editor_api(kind) for kind in ("events", "draft", "submit", "skip")},
    "api-projects": plain(methods=("get",)),
    "api-project": plain(methods=("get",), **PROJECT_ID),
    "api-assignments": _assignments_api,
    "api-assignment": _assignment_api,
    "annotator_home": plain(methods=("get",)),
    "editor": _editor_pages,
    "editor_diff": _editor_pages,
    "evaluations": plain(methods=("get",)),
    "evaluation": refused(evaluation_id=lambda w, v: w.extra["evaluation"]),
    "api-evaluation-events": refused(evaluation_id=lambda w, v: w.extra["evaluation"]),
    "api-evaluation-submit": refused(evaluation_id=lambda w, v: w.extra["evaluation"]),
    "join": plain(query="?PROLIFIC_PID=PID-HT", token=lambda w, v: w.token),
    "participant-done": plain(methods=("get",)),
    "study-form": plain(project_id=lambda w, v: w.project.pk, phase="consent"),
    # ---- reviews: for reviewers (tests/annotations/test_review_pages.py: what a reviewer sees)
    "review-queue": refused(),
    "review-take": refused(post_edit_id=lambda w, v: v.post_edit.pk),
    "review-page": refused(assignment_id=lambda w, v: v.submitted.pk),
    "metrics-reviews": refused(**PROJECT_ID),
    # ---- the management and research side: refused to annotators
    "api-project-create": refused(),
    "api-project-update": refused(**PROJECT_ID),
    "api-project-progress": refused(**PROJECT_ID),
    "api-project-copy": refused(**PROJECT_ID),
    "api-items": refused(**PROJECT_ID),
    "api-items-create": refused(**PROJECT_ID),
    "api-batches": refused(**PROJECT_ID),
    "api-batches-make": refused(**PROJECT_ID),
    "api-batches-assign": refused(**PROJECT_ID),
    "api-design-plan": refused(**PROJECT_ID),
    "api-design-assign": refused(**PROJECT_ID),
    "api-assignments-withdraw": refused(),
    "api-assignments-reassign": refused(),
    "api-users": refused(),
    "api-user-create": refused(),
    "api-user-role": refused(user_id=lambda w, v: v.user.pk),
    "api-join-links": refused(**PROJECT_ID),
    "api-join-link-open": refused(**PROJECT_ID),
    "api-join-link-revoke": refused(project_id=lambda w, v: w.project.pk, link_id=lambda w, v: w.link_pk),
    "api-participants": refused(**PROJECT_ID),
    "api-metric-values": refused(),
    "api-metric-job-create": refused(**PROJECT_ID),
    "api-metric-job": refused(job_id=lambda w, v: w.job.pk),
    "api-metric-job-retry": refused(job_id=lambda w, v: w.job.pk),
    "api-project-export": refused(**PROJECT_ID),
    "api-project-events": refused(**PROJECT_ID),
    "api-project-analysis": refused(**PROJECT_ID),
    "api-project-gold": refused(**PROJECT_ID),
    "api-project-mqm": refused(**PROJECT_ID),
    "api-project-agreement": refused(**PROJECT_ID),
    "manage-projects": refused(),
    "manage-project-create": refused(),
    "manage-project-edit": refused(**PROJECT_ID),
    "manage-batches": refused(**PROJECT_ID),
    "manage-batches-make": refused(**PROJECT_ID),
    "manage-batches-assign": refused(**PROJECT_ID),
    "manage-assignments-move": refused(**PROJECT_ID),
    "manage-design": refused(**PROJECT_ID),
    "manage-design-apply": refused(**PROJECT_ID),
    "manage-progress": refused(**PROJECT_ID),
    "manage-items": refused(**PROJECT_ID),
    "manage-item": refused(project_id=lambda w, v: w.project.pk, item_id=lambda w, v: v.submitted.item_id),
    "manage-project-copy": refused(**PROJECT_ID),
    "manage-participation": refused(**PROJECT_ID),
    "manage-participation-open": refused(**PROJECT_ID),
    "manage-participation-revoke": refused(project_id=lambda w, v: w.project.pk, link_id=lambda w, v: w.link_pk),
    "manage-participation-questionnaire": refused(**PROJECT_ID),
    "manage-participation-attention": refused(**PROJECT_ID),
    "manage-participation-export": refused(**PROJECT_ID),
    "manage-participant-erase": refused(  # the viewer's own participant row when it has one
        project_id=lambda w, v: w.project.pk,
        participant_id=lambda w, v: getattr(getattr(v.user, "participant", None), "pk", 1),
    ),
    "manage-post-edit-replay": refused(post_edit_id=lambda w, v: v.post_edit.pk),
    "manage-post-edit-process-graph": refused(post_edit_id=lambda w, v: v.post_edit.pk),
    "manage-users": refused(),
    "manage-users-add": refused(),
    "manage-user-role": refused(user_id=lambda w, v: v.user.pk),
    "manage-user-active": refused(user_id=lambda w, v: v.user.pk),
    "manage-user-password": refused(user_id=lambda w, v: v.user.pk),
    "manage-import": refused(),
    "manage-import-mapping": refused(),
    "metrics-projects": refused(),
    "metrics-project": refused(**PROJECT_ID),
    "metrics-compute": refused(**PROJECT_ID),
    "metrics-job": refused(project_id=lambda w, v: w.project.pk, job_id=lambda w, v: w.job.pk),
    "metrics-job-retry": refused(project_id=lambda w, v: w.project.pk, job_id=lambda w, v: w.job.pk),
    "metrics-export": refused(**PROJECT_ID),
    "metrics-reports": refused(),
    "metrics-report": refused(**PROJECT_ID),
    "metrics-report-data": refused(project_id=lambda w, v: w.project.pk, fmt="json"),
    "metrics-report-documents": refused(project_id=lambda w, v: w.project.pk, fmt="csv"),
    "metrics-report-plot": refused(project_id=lambda w, v: w.project.pk, kind="scatter", fmt="svg"),
    "metrics-report-agreement": refused(project_id=lambda w, v: w.project.pk, fmt="json"),
    "metrics-quality": refused(**PROJECT_ID),
    "metrics-quality-download": refused(project_id=lambda w, v: w.project.pk, kind="mqm"),
    # Generation: admins and researchers only (no run needed: the role is refused before the run is looked up).
    "generation-page": refused(**PROJECT_ID),
    "generation-run-stop": refused(project_id=lambda w, v: w.project.pk, run_id=1),
    "generation-policy": refused(**PROJECT_ID),
    "api-generation-runs": refused(**PROJECT_ID),
    "api-generation-run-start": refused(**PROJECT_ID),
    "api-generation-run": refused(run_id=1),
    "api-generation-run-stop": refused(run_id=1),
    "api-generation-policy": refused(**PROJECT_ID),
    "api-item-provenance": refused(project_id=lambda w, v: w.project.pk, item_id=lambda w, v: v.submitted.item_id),
}


# --------------------------------------------------------------------------- sending and checking


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def send(viewer: Viewer, request: Req) -> tuple[int, str, str]:
    """(status, Location, body) of the request, made and undone: every request meets the same world."""
    with transaction.atomic():
        client = Client()
        client.force_login(viewer.user)
        headers = {"HX-Request": "true"} if request.htmx else {}
        if request.method == "get":
            response = client.get(request.url, headers=headers)
        elif request.json:
            response = client.post(
                request.url, data=json.dumps(request.data), content_type="application/json", headers=headers
            )
        else:
            response = client.post(request.url, data=request.data or {}, headers=headers)
        body = _body(response)
        transaction.set_rollback(True)
    return response.status_code, response.get("Location", ""), body


def is_refusal(status: int, location: str) -> bool:
    return status >= 400 or (status == 302 and location.startswith(("/login/", "/admin/login/")))


def check(viewer: Viewer, request: Req, problems: list[str], seen: list[str]) -> None:
    status, location, body = send(viewer, request)
    where = f"{request.method.upper()} {request.url}{' (htmx)' if request.htmx else ''} under {viewer.condition!r}"
    if status >= 500:
        problems.append(f"{where}: {status}")
    if request.refused and not is_refusal(status, location):
        problems.append(f"{where}: {status}, expected a refusal")
    leaked = sorted({marker for marker in viewer.forbidden if marker in body})
    if leaked:
        problems.append(f"{where}: {status} shows {leaked}")
    seen.append(body)


def test_no_url_shows_a_viewer_what_their_condition_hides_or_anyone_elses_text():
    world = build_world()
    patterns = list(url_patterns())
    unknown = [p for p in patterns if not p.route.startswith("admin/") and p.name not in ROUTES]
    assert not unknown, "URL patterns without an entry in tests/editlab/test_blinding.py ROUTES: " + ", ".join(
        f"{p.route} ({p.name or 'unnamed'})" for p in unknown
    )
    stale = set(ROUTES) - {p.name for p in patterns}
    assert not stale, f"ROUTES names URLs that no longer exist: {sorted(stale)}"

    problems: list[str] = []
    for viewer in world.viewers.values():
        seen: list[str] = []
        for pattern in patterns:
            if pattern.route.startswith("admin/"):
                continue
            for request in ROUTES[pattern.name](world, viewer, name=pattern.name):  # type: ignore[call-arg]
                check(viewer, request, problems, seen)
        # Not vacuous: what the condition shows is shown (the editor, its context, the diff, the API).
        everything = "\n".join(seen)
        for family in SHOWN[viewer.condition] - {LABEL}:
            for segment in range(HELD + 1):  # its own segments, and the sibling it does not hold
                if output(family, segment) not in everything:
                    problems.append(f"under {viewer.condition!r}: {output(family, segment)!r} is shown nowhere")
        if LABEL in SHOWN[viewer.condition] and LABEL not in everything:
            problems.append(f"under {viewer.condition!r}: the highlights are shown nowhere")
        if own_text(viewer.condition, "final") not in everything:
            problems.append(f"under {viewer.condition!r}: the viewer's own submitted text is shown nowhere")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_the_admin_site_sends_annotators_and_participants_to_its_login():
    world = build_world()
    problems = []
    for viewer in (world.viewers["ht"], world.viewers["ahl"]):
        for pattern in url_patterns():
            if not pattern.route.startswith("admin/") or pattern.name in ("admin:login", "admin-login", "admin:logout"):
                continue
            url = admin_url(pattern)
            status, location, body = send(viewer, Req("get", url))
            if not (status == 302 and location.startswith("/admin/login/")):
                problems.append(f"GET {url} under {viewer.condition!r}: {status} {location}")
            leaked = [marker for marker in viewer.forbidden if marker in body]
            if leaked:
                problems.append(f"GET {url} under {viewer.condition!r}: shows {leaked}")
    assert not problems, "\n".join(problems)
