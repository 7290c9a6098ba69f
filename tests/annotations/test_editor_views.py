"""The annotator's pages: home, editor, diff — permissions, escaping, content."""

import json
import re

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from annotations.models import Assignment, PostEdit, Visit
from annotations.views.editor import word_diff
from tests.factories import AssignmentFactory, BatchFactory, ItemFactory, PostEditFactory, ProjectFactory

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _config(response) -> dict:
    match = re.search(rb'<script id="editor-config" type="application/json">(.*?)</script>', response.content, re.S)
    assert match, "the editor config is missing"
    return json.loads(match.group(1))


@pytest.fixture
def batch(db):
    return BatchFactory(name="first batch", project=ProjectFactory(name="MT study"))


def _assign(user, batch, position: int, **item_fields) -> Assignment:
    item = ItemFactory(project=batch.project, batch=batch, batch_position=position, **item_fields)
    return AssignmentFactory(item=item, annotator=user)


@pytest.fixture
def assignment(annotator, batch):
    return _assign(annotator, batch, 0, model_output="This are a test.")


# ---------------------------------------------------------------- word diff


def test_word_diff_marks_the_replaced_word():
    assert word_diff("This are a test.", "This is a test.") == [
        ("equal", "This "),
        ("delete", "are"),
        ("insert", "is"),
        ("equal", " a test."),
    ]


def test_word_diff_of_pure_insertions_and_deletions():
    assert word_diff("a b", "a new b!") == [("equal", "a "), ("insert", "new "), ("equal", "b"), ("insert", "!")]
    assert word_diff("one two three", "one three") == [("equal", "one "), ("delete", "two "), ("equal", "three")]
    assert word_diff("same", "same") == [("equal", "same")]
    assert word_diff("", "") == []


@given(st.text(max_size=40), st.text(max_size=40))
def test_word_diff_rebuilds_both_texts(original, edited):
    segments = word_diff(original, edited)
    assert "".join(text for op, text in segments if op != "insert") == original
    assert "".join(text for op, text in segments if op != "delete") == edited


# ---------------------------------------------------------------- anonymous and other people


@pytest.mark.parametrize("path", ["/annotate/", "/edit/{id}/", "/edit/{id}/diff/"])
def test_anonymous_users_are_sent_to_login(client, assignment, path):
    response = client.get(path.format(id=assignment.pk))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_hides_another_annotators_editor_and_diff(other_annotator_client, assignment):
    assert other_annotator_client.get(f"/edit/{assignment.pk}/").status_code == 404
    assert other_annotator_client.get(f"/edit/{assignment.pk}/diff/").status_code == 404
    assert not PostEdit.objects.exists()


def test_it_answers_404_for_an_assignment_that_does_not_exist(annotator_client, researcher_client, db):
    assert annotator_client.get("/edit/999999/").status_code == 404
    assert researcher_client.get("/edit/999999/").status_code == 404
    assert researcher_client.get("/edit/999999/diff/").status_code == 404


@pytest.mark.parametrize("reader", ["researcher_client", "admin_client"])
def test_readers_get_the_read_only_diff_instead_of_the_editor(request, reader, assignment):
    client = request.getfixturevalue(reader)
    response = client.get(f"/edit/{assignment.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/edit/{assignment.pk}/diff/"
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b"annotator anna" in page.content
    assert b"Not submitted yet" in page.content
    # Reading changes nothing: no post-edit, no visit, still pending.
    assert not PostEdit.objects.exists() and not Visit.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.PENDING


# ---------------------------------------------------------------- the editor


def test_the_editor_opens_the_item_and_embeds_the_contract_config(annotator_client, assignment):
    response = annotator_client.get(f"/edit/{assignment.pk}/")
    assert response.status_code == 200
    post_edit = PostEdit.objects.get(assignment=assignment)
    visit = Visit.objects.get(post_edit=post_edit)
    config = _config(response)
    assert config["post_edit_id"] == post_edit.pk
    assert config["page_id"] == str(visit.page_id)
    assert config["next_seq"] == 0
    assert config["version"] == 0
    assert config["original"] == config["draft"] == "This are a test."
    assert config["idle_threshold_ms"] == 30000
    assert config["urls"]["events"] == f"/api/post-edits/{post_edit.pk}/events/"
    assert config["urls"]["submit"] == f"/api/post-edits/{post_edit.pk}/submit/"
    assert config["max_batch_events"] == 2000
    assert config["csrf_token"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.IN_PROGRESS
    content = response.content.decode()
    assert 'id="post-edit-text"' in content and "This are a test.</textarea>" in content
    assert "/static/annotations/editor/main.js" in content
    assert 'type="module"' in content
    assert response["Cross-Origin-Embedder-Policy"] == "credentialless"
    assert response["Cache-Control"] == "no-store"


def test_the_editor_shows_guidelines_instruction_source_and_references(annotator_client, annotator, batch):
    batch.project.guidelines = "Keep it **short**."
    batch.project.save()
    assignment = _assign(
        annotator,
        batch,
        0,
        source="Das ist ein Test.",
        instruction="Fix grammar",
        references=["First reference text.", {"title": "Manual", "text": "Second reference."}],
    )
    content = annotator_client.get(f"/edit/{assignment.pk}/").content.decode()
    assert '<details class="guidelines">' in content
    assert "<strong>short</strong>" in content
    assert '<span id="instruction">Fix grammar</span>' in content
    assert "Das ist ein Test." in content
    assert "<h3>Reference 1</h3>" in content and "First reference text." in content
    assert "<h3>Manual</h3>" in content and "Second reference." in content


def test_every_text_of_an_item_is_shown_as_text(annotator_client, annotator, batch):
    batch.project.guidelines = f"Read this. {HOSTILE} [link](javascript:alert(1))"
    batch.project.save()
    assignment = _assign(
        annotator,
        batch,
        0,
        source=HOSTILE,
        model_output=HOSTILE,
        instruction=HOSTILE,
        references=[HOSTILE, {"title": HOSTILE, "text": HOSTILE}],
    )
    response = annotator_client.get(f"/edit/{assignment.pk}/")
    content = response.content.decode()
    assert "<script>alert" not in content
    assert "<img src=x" not in content
    assert "onerror=alert(1)>" not in content.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    assert "javascript:" not in content
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    # source, textarea, instruction, two reference texts and one title
    assert content.count(escaped) == 6
    assert _config(response)["original"] == HOSTILE


def test_a_submitted_item_opens_as_its_diff(annotator_client, assignment):
    PostEditFactory(assignment=assignment, text="This is a test.")
    assignment.status = Assignment.SUBMITTED
    assignment.save()
    response = annotator_client.get(f"/edit/{assignment.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/edit/{assignment.pk}/diff/"
    assert not Visit.objects.exists()


def test_the_editor_links_the_diff_of_the_previous_edit(annotator_client, annotator, batch):
    done = _assign(annotator, batch, 0, external_id="first")
    PostEditFactory(assignment=done, text="This is a test.")
    done.status, done.finished = Assignment.SUBMITTED, timezone.now()
    done.save()
    current = _assign(annotator, batch, 1)
    content = annotator_client.get(f"/edit/{current.pk}/").content.decode()
    assert "Your previous edit (first)" in content
    assert f'hx-get="/edit/{done.pk}/diff/"' in content and f'href="/edit/{done.pk}/diff/"' in content
    assert "1 of 2 done" in content


# ---------------------------------------------------------------- the diff page


def deleted(text: str) -> str:
    """A deletion as the diff page marks it: struck through, announced to screen readers."""
    return f'<del><span class="visually-hidden">[deleted: </span>{text}<span class="visually-hidden">]</span></del>'


def inserted(text: str, *, apart: bool = False) -> str:
    """An insertion as the diff page marks it; `apart` right after a deletion (a gap between them)."""
    opening = '<ins class="apart">' if apart else "<ins>"
    return (
        f'{opening}<span class="visually-hidden">[inserted: </span>{text}<span class="visually-hidden">]</span></ins>'
    )


def test_the_diff_page_marks_insertions_and_deletions(annotator_client, assignment):
    PostEditFactory(assignment=assignment, text="This is a test.", wall_ms=12345, active_ms=None, keystrokes=6)
    assignment.status = Assignment.SUBMITTED
    assignment.save()
    response = annotator_client.get(f"/edit/{assignment.pk}/diff/")
    content = response.content.decode()
    assert (
        f'<div class="text diff" id="diff">This {deleted("are")}{inserted("is", apart=True)} a test.</div>' in content
    )
    assert '<pre class="text" id="edited">This is a test.</pre>' in content
    assert "<tr><th>Time (wall)</th><td>12.3 s</td></tr>" in content
    assert "<tr><th>Time (active)</th><td>–</td></tr>" in content
    assert "<tr><th>Keystrokes</th><td>6</td></tr>" in content


def test_the_diff_escapes_markup(annotator_client, annotator, batch):
    assignment = _assign(annotator, batch, 0, model_output="plain <b>old</b>")
    PostEditFactory(assignment=assignment, text=f"plain {HOSTILE}")
    assignment.status = Assignment.SUBMITTED
    assignment.save()
    content = annotator_client.get(f"/edit/{assignment.pk}/diff/").content.decode()
    assert "<script>" not in content and "<b>old" not in content
    changed = deleted("b") + inserted("script", apart=True) + "&gt;" + deleted("old")
    assert f"plain &lt;{changed}{inserted('alert(&quot;x&quot;)', apart=True)}&lt;/" in content
    assert inserted("&lt;img src=x onerror=alert(1)&gt;") in content


def test_the_diff_partial_for_htmx(annotator_client, assignment):
    PostEditFactory(assignment=assignment, text="This is a test.")
    assignment.status = Assignment.SUBMITTED
    assignment.save()
    response = annotator_client.get(f"/edit/{assignment.pk}/diff/", headers={"HX-Request": "true"})
    content = response.content.decode()
    assert content.lstrip().startswith('<div class="diff-body">')
    assert "<html" not in content
    assert deleted("are") + inserted("is", apart=True) in content


def test_the_diff_of_a_skipped_item_shows_the_reason(annotator_client, assignment):
    assignment.status, assignment.skip_reason = Assignment.SKIPPED, "source is <garbled>"
    assignment.save()
    content = annotator_client.get(f"/edit/{assignment.pk}/diff/").content.decode()
    assert '<span class="text" id="skip-reason">source is &lt;garbled&gt;</span>' in content


# ---------------------------------------------------------------- the annotator home


def test_the_home_shows_each_batch_with_progress_and_continue(annotator_client, annotator, other_annotator, batch):
    first = _assign(annotator, batch, 0)
    second = _assign(annotator, batch, 1)
    third = _assign(annotator, batch, 2)
    _assign(other_annotator, batch, 3)
    first.status = Assignment.SUBMITTED
    first.save()
    second.status = Assignment.SKIPPED
    second.save()
    other_batch = BatchFactory(name="second batch", project=batch.project)
    later = _assign(annotator, other_batch, 0)

    response = annotator_client.get("/annotate/")
    content = response.content.decode()
    assert response.status_code == 200
    assert f'id="continue" href="/edit/{third.pk}/"' in content
    assert '<progress max="3" value="2">67%</progress>' in content
    assert "2 / 3 (1 skipped)" in content
    assert '<progress max="1" value="0">0%</progress>' in content
    assert f'<a class="button" href="/edit/{later.pk}/">Continue</a>' in content
    assert f'href="?batch={batch.pk}" hx-get="?batch={batch.pk}"' in content


def test_the_home_says_when_everything_is_done(annotator_client, assignment):
    assignment.status = Assignment.SUBMITTED
    assignment.save()
    content = annotator_client.get("/annotate/").content.decode()
    assert 'id="all-done"' in content and 'id="continue"' not in content


def test_the_home_lists_a_batchs_items_as_a_partial(annotator_client, annotator, batch):
    done = _assign(annotator, batch, 0, external_id="x1")
    done.status = Assignment.SUBMITTED
    done.save()
    open_one = _assign(annotator, batch, 1, external_id="x2")
    response = annotator_client.get(f"/annotate/?batch={batch.pk}", headers={"HX-Request": "true"})
    content = response.content.decode()
    assert content.startswith('<table class="batch-items"')
    assert f'<a href="/edit/{done.pk}/diff/">Changes</a>' in content
    assert f'<a href="/edit/{open_one.pk}/">Edit</a>' in content
    full = annotator_client.get(f"/annotate/?batch={batch.pk}").content.decode()
    assert "<html" in full and f'<a href="/edit/{open_one.pk}/">Edit</a>' in full


def test_the_home_refuses_other_peoples_batches(other_annotator_client, assignment, batch):
    assert other_annotator_client.get(f"/annotate/?batch={batch.pk}").status_code == 404
    assert other_annotator_client.get("/annotate/?batch=abc").status_code == 404


def test_the_start_page_sends_annotators_to_their_batches(annotator_client, researcher_client):
    response = annotator_client.get("/")
    assert response.status_code == 302 and response["Location"] == "/annotate/"
    assert researcher_client.get("/").status_code == 200
    nav = annotator_client.get("/annotate/").content.decode()
    assert '<a href="/annotate/">Annotate</a>' in nav
