"""The items browser (manage/projects/<id>/items/) and an item's page (.../items/<item_id>/): values in
both views, every filter, keyset pages, the same queries whatever the project's size, roles, the
whole page on a pushed URL, bad GET parameters named and ignored (a property test), and the
Progress page's wording for a study its design assigns."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.items_forms import FLAGS
from annotations.models import Assignment, Item, Project
from annotations.selectors_items import PAGE_SIZE, highlight_pieces
from generation.models import GenerationRecord, GenerationRun
from tests.factories import (
    AssignmentFactory,
    BatchFactory,
    ItemFactory,
    PostEditFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

CONDITIONS = [{"name": "mt", "output": "sysA", "highlights": True}, {"name": "scratch", "output": None}]


def browse(client, project, query: str = "", **headers):
    return client.get(reverse("manage-items", args=[project.pk]) + query, headers=headers)


def html(response) -> str:
    assert response.status_code == 200, (response.status_code, response.content[:800])
    return response.content.decode()


def item_rows(page: str) -> dict[str, list[str]]:
    """The items table: external id -> its cells after the first (document, batch, total, by status)."""
    rows = {}
    for body in re.findall(r'<tr data-item="\d+">(.*?)</tr>', page, re.S):
        cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
        rows[cells[0]] = cells[1:]
    return rows


def post_edit_rows(page: str) -> list[list[str]]:
    """The post-edits table: each row's cells as text (item, document, annotator, condition, status, ...)."""
    rows = []
    for body in re.findall(r'<tr data-assignment="\d+">(.*?)</tr>', page, re.S):
        cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
        rows.append([re.sub(r"\s+", " ", cell) for cell in cells])
    return rows


@pytest.fixture
def study(annotator, other_annotator):
    """Three items of one document: anna submitted item 0 (flagged) and opened item 1; bob holds item 0
    (pending) and skipped item 2. Item 3 is a practice item nobody holds."""
    project = ProjectFactory(name="Browsed study", conditions=CONDITIONS)
    batch = BatchFactory(project=project, name="batch 001")
    items = [
        ItemFactory(
            project=project,
            external_id=f"seg-{k}",
            document="doc-1",
            document_position=k,
            batch=batch,
            batch_position=k,
            outputs={"sysA": f"System A says {k}."},
        )
        for k in range(3)
    ]
    practice = ItemFactory(project=project, external_id="practice-1", practice=True)
    done = SubmittedPostEditFactory(
        assignment__item=items[0],
        assignment__annotator=annotator,
        assignment__condition="mt",
        flags=["wall_clipped", "key_rate"],
        active_ms=4200,
        keystrokes=17,
    )
    opened = PostEditFactory(
        assignment__item=items[1],
        assignment__annotator=annotator,
        assignment__condition="scratch",
        assignment__status=Assignment.IN_PROGRESS,
    )
    waiting = AssignmentFactory(item=items[0], annotator=other_annotator, condition="scratch")
    skipped = PostEditFactory(
        assignment__item=items[2], assignment__annotator=other_annotator, assignment__status=Assignment.SKIPPED
    )
    return {
        "project": project,
        "items": items,
        "practice": practice,
        "done": done,
        "opened": opened,
        "waiting": waiting,
        "skipped": skipped,
    }


# --------------------------------------------------------------------------- values


def test_the_items_view_counts_each_items_post_edits_by_status(admin_client, study):
    page = html(browse(admin_client, study["project"]))
    assert "4 items match" in page
    rows = item_rows(page)
    assert list(rows) == ["seg-0", "seg-1", "seg-2", "practice-1 (practice)"]  # import order
    # document, batch, post-edits, not started, in progress, submitted, skipped
    assert rows["seg-0"] == ["doc-1 #0", "batch 001", "2", "1", "0", "1", "0"]
    assert rows["seg-1"] == ["doc-1 #1", "batch 001", "1", "0", "1", "0", "0"]
    assert rows["seg-2"] == ["doc-1 #2", "batch 001", "1", "0", "0", "0", "1"]
    assert rows["practice-1 (practice)"] == ["—", "—", "0", "0", "0", "0", "0"]
    item_url = reverse("manage-item", args=[study["project"].pk, study["items"][0].pk])
    assert f'href="{item_url}"' in page


def test_the_post_edits_view_shows_one_row_per_assignment_with_effort_and_links(admin_client, study):
    page = html(browse(admin_client, study["project"], "?view=post-edits"))
    assert "4 post-edits match" in page
    rows = post_edit_rows(page)
    # In the order they were assigned: item, document, annotator, condition, status, active, wall, keys, flags
    assert [row[:5] for row in rows] == [
        ["seg-0", "doc-1 #0", "anna", "mt", "submitted"],
        ["seg-1", "doc-1 #1", "anna", "scratch", "in progress"],
        ["seg-0", "doc-1 #0", "bob", "scratch", "not started"],
        ["seg-2", "doc-1 #2", "bob", "—", "skipped"],
    ]
    assert rows[0][5:9] == ["4.2 s", "12.0 s", "17", "wall_clipped, key_rate"]
    # Every opened post-edit links to its replay; every assignment to its diff; nothing to open before it starts.
    for post_edit in (study["done"], study["opened"], study["skipped"]):
        assert f'href="{reverse("manage-post-edit-replay", args=[post_edit.pk])}"' in page
        assert f'href="{reverse("editor_diff", args=[post_edit.assignment_id])}"' in page
    waiting_row = page[page.index(f'data-assignment="{study["waiting"].pk}"') :].split("</tr>")[0]
    assert "replay" not in waiting_row and reverse("editor_diff", args=[study["waiting"].pk]) in waiting_row


@pytest.mark.parametrize(
    ("query", "post_edits", "items"),
    [
        ("annotator=anna", [("seg-0", "anna"), ("seg-1", "anna")], {"seg-0": "1", "seg-1": "1"}),
        ("status=pending", [("seg-0", "bob")], {"seg-0": "1"}),
        ("status=submitted&annotator=bob", [], {}),
        ("condition=scratch", [("seg-1", "anna"), ("seg-0", "bob")], {"seg-0": "1", "seg-1": "1"}),
        ("condition=(none)", [("seg-2", "bob")], {"seg-2": "1"}),
        ("flag=key_rate", [("seg-0", "anna")], {"seg-0": "1"}),
        ("flag=(any)", [("seg-0", "anna")], {"seg-0": "1"}),
        ("flag=(none)", [("seg-1", "anna"), ("seg-0", "bob"), ("seg-2", "bob")],
         {"seg-0": "1", "seg-1": "1", "seg-2": "1"}),
        ("flag=event_gap", [], {}),
        ("q=SEG-2", [("seg-2", "bob")], {"seg-2": "1"}),
        ("q=practice", [], {"practice-1 (practice)": "0"}),  # the search alone keeps items nobody holds
    ],
)  # fmt: skip
def test_each_filter_selects_post_edits_and_the_items_holding_them(admin_client, study, query, post_edits, items):
    listed = post_edit_rows(html(browse(admin_client, study["project"], f"?view=post-edits&{query}")))
    assert [(row[0], row[2]) for row in listed] == post_edits
    rows = item_rows(html(browse(admin_client, study["project"], f"?{query}")))
    assert {name: cells[2] for name, cells in rows.items()} == items  # the count is of the selected post-edits


def test_the_form_offers_the_projects_annotators_statuses_conditions_and_flags_with_labels(admin_client, study):
    UserFactory(username="idle-annotator", role="annotator")  # holds nothing here: not offered
    page = html(browse(admin_client, study["project"]))
    for label in ("Item id contains", "Annotator", "Status", "Condition", "Flag", "Show"):
        assert f"<label>{label} " in page or f"<legend>{label}</legend>" in page
    annotators = re.search(r'<select name="annotator"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'value="([^"]*)"', annotators) == ["", "anna", "bob"]
    statuses = re.search(r'<select name="status"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'value="([^"]*)"', statuses) == ["", "pending", "in_progress", "submitted", "skipped"]
    conditions = re.search(r'<select name="condition"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'value="([^"]*)"', conditions) == ["", "mt", "scratch", "(none)"]
    flags = re.search(r'<select name="flag"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'value="([^"]*)"', flags) == ["", "(any)", "(none)", *FLAGS]


def test_bad_filter_values_are_named_and_ignored_never_an_error(admin_client, study):
    query = "?view=grid&status=done&annotator=nobody&condition=zz&flag=red&after=abc&q=" + "x" * 300
    response = browse(admin_client, study["project"], query)
    page = html(response)
    for message in (
        "Show &#x27;grid&#x27; ignored: not a view (one of: items, post-edits)",
        "Status &#x27;done&#x27; ignored: not a status (one of: pending, in_progress, submitted, skipped)",
        "Annotator &#x27;nobody&#x27; ignored: nobody of that name holds work here",
        "Condition &#x27;zz&#x27; ignored: the project declares no such condition",
        "Flag &#x27;red&#x27; ignored: not a flag",
        "Item id contains &#x27;" + "x" * 60 + "&#x27; ignored: Ensure this value has at most 255 characters",
        "page marker after=&#x27;abc&#x27; ignored: not an id; showing the first page",
    ):
        assert message in page
    assert list(item_rows(page)) == ["seg-0", "seg-1", "seg-2", "practice-1 (practice)"]  # as if none were set
    # An item of another project as the page marker: said, and the first page shown.
    other = ItemFactory(project=ProjectFactory())
    page = html(browse(admin_client, study["project"], f"?after={other.pk}"))
    assert f"item {other.pk} is not in this project: showing the first page" in page
    assert len(item_rows(page)) == 4


# --------------------------------------------------------------------------- pages and queries


def _items(project: Project, count: int, annotator=None) -> list[Item]:
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"it-{n:04d}", model_output=f"Text {n}.", position=n) for n in range(count)
    )
    if annotator is not None:
        Assignment.objects.bulk_create(Assignment(item=item, annotator=annotator) for item in items)
    return items


@pytest.mark.parametrize("view", ["items", "post-edits"])
def test_keyset_pages_reach_every_row_once_in_order_and_back(admin_client, annotator, view):
    project = ProjectFactory()
    count = 2 * PAGE_SIZE + 7
    _items(project, count, annotator)
    seen: list[str] = []
    url = reverse("manage-items", args=[project.pk]) + f"?view={view}"
    pages = []
    while url:
        page = html(admin_client.get(url))
        pages.append(page)
        rows = item_rows(page) if view == "items" else {row[0]: row for row in post_edit_rows(page)}
        seen += list(rows)
        found = re.search(
            r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#items-table" hx-push-url="true" rel="next"', page
        )
        url = found.group(1).replace("&amp;", "&") if found else ""
    assert seen == [f"it-{n:04d}" for n in range(count)]
    assert [len(re.findall(r"<tr data-", page)) for page in pages] == [PAGE_SIZE, PAGE_SIZE, 7]
    # Previous from the last page is the second page exactly; the first page has no Previous link.
    previous = re.search(
        r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#items-table" hx-push-url="true" rel="prev"', pages[2]
    )
    back = html(admin_client.get(previous.group(1).replace("&amp;", "&")))
    assert re.findall(r"<tr data-\w+=\"\d+\">\s*<td><a[^>]*>([^<]+)", back) == seen[PAGE_SIZE : 2 * PAGE_SIZE]
    assert 'rel="prev"' not in pages[0] and 'rel="prev"' in back and "First page" in back
    assert f"{count} {'items' if view == 'items' else 'post-edits'} match" in pages[0]


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize(
    "query",
    ["", "?view=post-edits", "?status=pending&flag=(none)&q=it", "?view=post-edits&annotator=anna&flag=key_rate"],
)
def test_a_page_costs_the_same_queries_for_2_items_as_for_20(admin_client, annotator, other_annotator, query):
    counts = []
    for size in (2, 20):
        project = ProjectFactory()
        items = _items(project, size, annotator)
        Assignment.objects.bulk_create(Assignment(item=item, annotator=other_annotator) for item in items)
        first = _queries(admin_client, reverse("manage-items", args=[project.pk]) + query)
        second_page = f"{'&' if query else '?'}after={items[0].pk if 'post-edits' not in query else 1}"
        later = _queries(admin_client, reverse("manage-items", args=[project.pk]) + query + second_page)
        counts.append((first, later))
    assert counts[0] == counts[1]


def test_the_item_page_costs_the_same_queries_for_2_post_edits_as_for_20(admin_client):
    counts = []
    for size in (2, 20):
        project = ProjectFactory()
        item = ItemFactory(project=project)
        for _ in range(size):
            SubmittedPostEditFactory(assignment__item=item, assignment__annotator=UserFactory(role="annotator"))
        counts.append(_queries(admin_client, reverse("manage-item", args=[project.pk, item.pk])))
    assert counts[0] == counts[1]


# --------------------------------------------------------------------------- roles and htmx


def test_admins_and_researchers_read_annotators_get_403_anonymous_the_login(
    client, annotator_client, researcher_client, admin_client, study
):
    project, item = study["project"], study["items"][0]
    for url in (reverse("manage-items", args=[project.pk]), reverse("manage-item", args=[project.pk, item.pk])):
        assert admin_client.get(url).status_code == 200
        assert researcher_client.get(url).status_code == 200
        refused = annotator_client.get(url)
        assert refused.status_code == 403 and "seg-0" not in refused.content.decode()
        assert client.get(url)["Location"].startswith("/login/?next=")
        assert admin_client.post(url).status_code == 405


def test_htmx_gets_the_table_and_every_pushed_url_is_the_whole_page(admin_client, study):
    query = "?view=post-edits&annotator=anna"
    fragment = browse(admin_client, study["project"], query, HX_Request="true")
    body = html(fragment)
    assert "<html" not in body and "<form" not in body and body.count("<tr data-assignment") == 2
    assert "HX-Request" in fragment["Vary"]
    whole = html(browse(admin_client, study["project"], query))  # loaded, reloaded or opened from a link
    assert "<html" in whole and 'hx-push-url="true"' in whole and whole.count("<tr data-assignment") == 2
    assert re.search(r'<input type="radio" name="view" value="post-edits" checked>', whole)
    assert re.search(r'<option value="anna" selected>anna</option>', whole)
    restored = html(browse(admin_client, study["project"], query, HX_Request="true", HX_History_Restore_Request="true"))
    assert "<html" in restored  # Back after a swap: the whole page, never a bare fragment


def test_every_link_of_the_table_has_an_href(admin_client, annotator):
    project = ProjectFactory()
    _items(project, PAGE_SIZE + 1, annotator)
    page = html(browse(admin_client, project, f"?after={Item.objects.filter(project=project).first().pk}"))
    for tag in re.findall(r"<a [^>]*>", page):
        assert 'href="' in tag, tag


# --------------------------------------------------------------------------- the item page


def test_the_item_page_shows_texts_highlights_references_post_edits_and_provenance(admin_client, study, annotator):
    project = study["project"]
    item = ItemFactory(
        project=project,
        external_id="rich-1",
        source="Quelle des Satzes.",
        model_output="Model output text.",
        outputs={"sysA": "The sytem output here.", "sysB": "Another output."},
        highlights={"sysA": [[4, 9, "spelling"]]},
        references=["A reference translation.", {"title": "Doc title", "text": "Doc body.", "url": "https://ex.org/d"}],
    )
    post_edit = SubmittedPostEditFactory(
        assignment__item=item, assignment__annotator=annotator, assignment__condition="mt", text="Final text 9x."
    )
    run = GenerationRun.objects.create(
        project=project,
        kind=GenerationRun.OUTPUT,
        name="sysB",
        endpoint="https://llm.example.org/v1",
        model="m-large",
        template_name="translate",
        template="{source}",
        template_sha256="a" * 64,
        settings_key="k" * 64,
    )
    GenerationRecord.objects.create(
        run=run,
        item=item,
        status=GenerationRecord.GENERATED,
        text="Another output.",
        prompt_sha256="b" * 64,
        prompt_tokens=31,
        completion_tokens=7,
        provenance={
            "endpoint": "https://llm.example.org/v1",
            "requested_model": "m",
            "model": "m-large-2025",
            "params": {"temperature": 0.2, "seed": 5},
            "finish_reason": "stop",
            "latency_ms": 812.5,
            "attempts": [{"latency_ms": 812.5}],
            "response_id": "resp-42",
        },
    )
    page = html(admin_client.get(reverse("manage-item", args=[project.pk, item.pk])))
    assert "<h1>Item rich-1</h1>" in page
    for text in (
        "Quelle des Satzes.",
        "Model output text.",
        "Another output.",
        "A reference translation.",
        "Doc body.",
    ):
        assert text in page
    assert (
        '<pre class="text">The <mark>sytem</mark><sub class="highlight-label">spelling</sub> output here.</pre>' in page
    )
    assert "Final text 9x." in page
    row = page[page.index(f'data-assignment="{post_edit.assignment_id}"') :].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[:7] == ["anna", "mt", "submitted", "10.0 s", "12.0 s", "6", "9"]
    for name, args in (("manage-post-edit-replay", [post_edit.pk]), ("manage-post-edit-process-graph", [post_edit.pk]),
                       ("editor_diff", [post_edit.assignment_id])):  # fmt: skip
        assert f'href="{reverse(name, args=args)}"' in row
    provenance = page[page.index("How it was generated") :]
    for shown in ("https://llm.example.org/v1", "m-large-2025", "(asked for m)", "seed=5, temperature=0.2",
                  "31 prompt, 7 completion", "stop", "812.5 ms", "resp-42", "b" * 64):  # fmt: skip
        assert shown in provenance
    # A project's item only: another project's item id is a 404.
    assert admin_client.get(reverse("manage-item", args=[ProjectFactory().pk, item.pk])).status_code == 404


def test_an_item_nobody_holds_says_so_and_bad_highlights_are_named(admin_client):
    project = ProjectFactory()
    item = ItemFactory(project=project, outputs={"sysA": "Short."}, highlights={"sysA": [[0, 99, "x"]]})
    page = html(admin_client.get(reverse("manage-item", args=[project.pk, item.pk])))
    assert "Nobody has been given this item yet." in page
    assert "Highlights not shown: highlights[&#x27;sysA&#x27;][0]: [0, 99] is outside the text" in page
    assert "No LLM run answered this item" in page


def test_highlight_pieces_cut_the_text_at_its_spans():
    assert highlight_pieces("abcdef", [(1, 3, "x"), (4, 5, "")]) == [
        ("a", None), ("bc", "x"), ("d", None), ("e", ""), ("f", None)
    ]  # fmt: skip
    assert highlight_pieces("ab", [(0, 2, "all")]) == [("ab", "all")]
    assert highlight_pieces("", []) == []


# --------------------------------------------------------------------------- hostile GET parameters

NAMES = ("view", "q", "annotator", "status", "condition", "flag", "after", "before")
OFFERED = {
    "view": ["items", "post-edits"],
    "status": ["pending", "in_progress", "submitted", "skipped"],
    "annotator": ["anna", "bob"],
    "condition": ["mt", "scratch", "(none)"],
    "flag": ["(any)", "(none)", *FLAGS],
}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    query=st.dictionaries(
        st.sampled_from(NAMES),
        st.one_of(
            st.text(max_size=40),
            st.sampled_from(["1", "0", "-1", "99999999999999999999", "²", "1e308", "(any)", "anna", "post-edits"]),
        ),
        max_size=6,
    ),
    htmx=st.booleans(),
)
def test_any_get_parameters_answer_200_and_name_what_they_ignore(study_for_hypothesis, query, htmx):
    client, project = study_for_hypothesis
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.get(reverse("manage-items", args=[project.pk]), query, headers=headers)
    assert response.status_code == 200
    page = response.content.decode()
    for name, value in query.items():
        if name in OFFERED and value and value.strip() and value.strip() not in OFFERED[name]:
            assert "ignored:" in page, (name, value)
        if name in ("after", "before") and value and not (value.isascii() and value.isdigit()):
            assert f"page marker {name}=" in page


@pytest.fixture
def study_for_hypothesis(study, admin_client):
    return admin_client, study["project"]


# --------------------------------------------------------------------------- the Progress page's wording


def test_a_latin_square_studys_progress_says_its_design_assigns_not_a_batch(admin_client, annotator):
    project = ProjectFactory(design=Project.DESIGN_LATIN_SQUARE, conditions=CONDITIONS)
    for k in range(3):
        AssignmentFactory(item=ItemFactory(project=project, document="d", document_position=k), annotator=annotator)
    page = html(admin_client.get(reverse("manage-progress", args=[project.pk])))
    assert "3 items, assigned by the study design (Latin square), not by batches; 0 not assigned." in page
    assert "(no batch)" not in page and "not in a batch" not in page
    assert "The study design assigns documents, not batches" in page


def test_a_simple_studys_progress_still_counts_items_not_in_a_batch(admin_client, annotator):
    project = ProjectFactory()
    batch = BatchFactory(project=project, name="batch 001")
    AssignmentFactory(item=ItemFactory(project=project, batch=batch, batch_position=0), annotator=annotator)
    AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    ItemFactory(project=project)
    page = html(admin_client.get(reverse("manage-progress", args=[project.pk])))
    assert "3 items; 2 not in a batch yet; 1 not assigned." in page
    assert "<td>batch 001</td>" in page and "<td>outside any batch (imported or assigned directly)</td>" in page
