"""The editor in a designed study: the condition's starting text, error highlights and which of
them were edited, the document around the segment, languages and direction, practice items."""

import pytest

from annotations.editing.lifecycle import post_edit_open, post_edit_submit
from annotations.editing.selectors import editor_config
from annotations.highlights import highlight_edits, map_span, to_utf16
from annotations.models import Assignment
from annotations.selectors import document_context
from tests.annotations.editing_helpers import send, wire
from tests.factories import AssignmentFactory, ItemFactory, PostEditFactory, ProjectFactory

CONDITIONS = [
    {"name": "mt", "output": "sysA", "highlights": False},
    {"name": "mt-qe", "output": "sysA", "highlights": True},
    {"name": "scratch", "output": None, "highlights": False},
]
OUTPUT = "The cat sat on teh mat."
SPANS = {"sysA": [[4, 7, "minor"], [15, 18, "major"]]}


def designed_item(**overrides):
    project = overrides.pop("project", None) or ProjectFactory(conditions=CONDITIONS, target_lang="de")
    fields = {
        "project": project,
        "model_output": "unused default",
        "outputs": {"sysA": OUTPUT, "sysB": "Die Katze."},
        "highlights": SPANS,
        **overrides,
    }
    return ItemFactory(**fields)


def opened(annotator, condition: str, **item_fields):
    assignment = AssignmentFactory(annotator=annotator, item=designed_item(**item_fields), condition=condition)
    return post_edit_open(assignment=assignment, user=annotator)


# ---------------------------------------------------------------- the starting text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("condition", "text", "start_override"),
    [("mt", OUTPUT, OUTPUT), ("scratch", "", ""), ("", "unused default", None)],
)
def test_the_condition_fixes_the_starting_text(annotator, condition, text, start_override):
    post_edit, visit = opened(annotator, condition)
    assert (post_edit.condition, post_edit.draft_text, post_edit.start_override) == (condition, text, start_override)
    assert post_edit.start_text == text
    assert editor_config(post_edit=post_edit, visit=visit, csrf_token="t")["original"] == text
    assert post_edit.flags == []


@pytest.mark.django_db
def test_changing_the_project_later_does_not_change_an_opened_post_edit(annotator):
    post_edit, _ = opened(annotator, "mt")
    project = post_edit.assignment.item.project
    project.conditions = [{"name": "mt", "output": "sysB", "highlights": False}]
    project.save()
    again, _ = post_edit_open(assignment=post_edit.assignment, user=annotator)
    assert again.start_text == OUTPUT


@pytest.mark.django_db
def test_a_missing_output_or_an_undeclared_condition_starts_empty_and_is_flagged(annotator):
    # Never another system's output (sysB, or the model output) under a condition that shows sysA.
    post_edit, _ = opened(annotator, "mt", outputs={"sysB": "x"})
    assert (post_edit.draft_text, post_edit.start_text) == ("", "")
    assert post_edit.flags == ["condition_output_missing"]
    post_edit, _ = opened(annotator, "gone")
    assert (post_edit.draft_text, post_edit.start_override) == ("", "")
    assert post_edit.flags == ["condition_unknown"]


# ---------------------------------------------------------------- highlights


def test_spans_move_with_the_text_by_one_rule():
    assert map_span(5, 9, 0, 2, 0) == (3, 7, False)
    assert map_span(5, 9, 5, 5, 3) == (8, 12, False)
    assert map_span(5, 9, 9, 9, 2) == (5, 9, False)
    assert map_span(5, 9, 7, 7, 2) == (5, 11, True)
    assert map_span(5, 9, 3, 6, 1) == (3, 7, True)
    assert map_span(5, 9, 8, 12, 0) == (5, 8, True)
    assert map_span(5, 9, 4, 10, 0) == (4, 4, True)
    assert map_span(5, 6, 6, 6, 1, edited=True) == (5, 7, True)
    assert map_span(5, 5, 5, 5, 1, edited=True) == (5, 6, True)
    assert map_span(5, 6, 6, 6, 1) == (5, 6, False)


def test_spans_reach_the_browser_in_utf16_units():
    assert to_utf16("😀 ab", [(2, 4, "x")]) == [(3, 5, "x")]


def _typing(original: str) -> list[dict]:
    """'The cat sat on teh mat.' -> 'A cat sat on the mat.': replace 'The' by 'A', then 'teh' by 'the'."""
    return [
        {"seq": 0, "t": 0, "k": "load", "data": original, "len": len(original)},
        {"seq": 1, "t": 100, "k": "beforeinput", "it": "insertText", "s": 0, "e": 3},
        {"seq": 2, "t": 101, "k": "input", "it": "insertText", "s": 1, "len": 21, "data": "A"},
        {"seq": 3, "t": 200, "k": "beforeinput", "it": "insertText", "s": 13, "e": 16},
        {"seq": 4, "t": 201, "k": "input", "it": "insertText", "s": 16, "len": 21, "data": "the"},
    ]


def test_the_log_says_which_highlighted_spans_were_edited_and_when():
    edits = highlight_edits(OUTPUT, [(4, 7, "minor"), (15, 18, "major")], wire(_typing(OUTPUT)))
    assert edits == [
        {"start": 4, "end": 7, "label": "minor", "edited": False, "edits": 0, "first_seq": None, "now": [2, 5]},
        {"start": 15, "end": 18, "label": "major", "edited": True, "edits": 1, "first_seq": 4, "now": [13, 16]},
    ]


def test_a_reload_with_a_different_text_counts_as_the_change_it_makes():
    log = [
        {"seq": 0, "t": 0, "k": "load", "data": OUTPUT, "len": 23},
        {"seq": 1, "t": 0, "k": "load", "data": "The cat sat on the mat.", "len": 23},
    ]
    edits = highlight_edits(OUTPUT, [(4, 7, "minor"), (15, 18, "major")], wire(log))
    assert [(e["edited"], e["first_seq"]) for e in edits] == [(False, None), (True, 1)]


@pytest.mark.django_db
def test_highlights_are_shown_only_in_a_condition_that_enables_them(annotator):
    plain, visit = opened(annotator, "mt")
    assert editor_config(post_edit=plain, visit=visit, csrf_token="t")["highlights"] == []
    shown, visit = opened(annotator, "mt-qe")
    assert editor_config(post_edit=shown, visit=visit, csrf_token="t")["highlights"] == [
        {"start": 4, "end": 7, "label": "minor", "edited": False},
        {"start": 15, "end": 18, "label": "major", "edited": False},
    ]


@pytest.mark.django_db
def test_after_a_reload_the_spans_are_where_the_edits_moved_them(annotator, annotator_client):
    post_edit, visit = opened(annotator, "mt-qe")
    assert send(annotator_client, post_edit, visit, _typing(OUTPUT)).status_code == 200
    post_edit.refresh_from_db()
    post_edit.draft_text = "A cat sat on the mat."
    post_edit.save()
    again, visit = post_edit_open(assignment=post_edit.assignment, user=annotator)
    assert editor_config(post_edit=again, visit=visit, csrf_token="t")["highlights"] == [
        {"start": 2, "end": 5, "label": "minor", "edited": False},
        {"start": 13, "end": 16, "label": "major", "edited": True},
    ]
    # A draft the log does not lead to: no overlay rather than one in the wrong place.
    again.draft_text = "Something else."
    again.save()
    assert editor_config(post_edit=again, visit=visit, csrf_token="t")["highlights"] == []


@pytest.mark.django_db
def test_submit_records_which_highlights_were_edited(annotator, annotator_client):
    post_edit, visit = opened(annotator, "mt-qe")
    assert send(annotator_client, post_edit, visit, _typing(OUTPUT)).status_code == 200
    post_edit_submit(post_edit=post_edit, page_id=visit.page_id, text="A cat sat on the mat.", version=0, last_seq=4)
    post_edit.refresh_from_db()
    assert post_edit.replay_ok is True
    assert [(e["label"], e["edited"]) for e in post_edit.extra["highlight_edits"]] == [
        ("minor", False),
        ("major", True),
    ]


# ---------------------------------------------------------------- the document around the segment


def document(project, n: int = 5) -> list:
    return [
        ItemFactory(
            project=project,
            external_id=f"s{k}",
            document="doc",
            document_position=k,
            source=f"Quelle {k}",
            model_output=f"out {k}",
        )
        for k in range(n)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("context", "window", "expected"),
    [("none", 2, []), ("window", 1, ["s1", "s2", "s3"]), ("document", 2, ["s0", "s1", "s2", "s3", "s4"])],
)
def test_the_context_setting_chooses_the_segments_shown(annotator, context, window, expected):
    project = ProjectFactory(context=context, context_window=window)
    items = document(project)
    current = AssignmentFactory(annotator=annotator, item=items[2])
    assert [segment.external_id for segment in document_context(assignment=current)] == expected


@pytest.mark.django_db
def test_context_shows_own_submitted_versions_then_what_is_left(annotator, other_annotator):
    project = ProjectFactory(context="document", conditions=CONDITIONS)
    items = document(project, 3)
    done = AssignmentFactory(annotator=annotator, item=items[0], status=Assignment.SUBMITTED)
    PostEditFactory(assignment=done, text="mine, finished")
    AssignmentFactory(annotator=other_annotator, item=items[2], status=Assignment.SUBMITTED)
    current = AssignmentFactory(annotator=annotator, item=items[1])
    AssignmentFactory(annotator=annotator, item=items[2], condition="scratch")
    segments = document_context(assignment=current)
    assert [(s.state, s.text, s.source) for s in segments] == [
        ("done", "mine, finished", "Quelle 0"),
        ("current", "", "Quelle 1"),
        ("todo", "", "Quelle 2"),  # its condition starts from an empty editor
    ]


# ---------------------------------------------------------------- the page


@pytest.mark.django_db
def test_the_page_carries_languages_directions_context_and_practice(annotator, annotator_client):
    project = ProjectFactory(source_lang="en", target_lang="ar", context="window", context_window=1)
    items = document(project, 3)
    items[0].source = "<b>Before</b>"
    items[0].save()
    items[1].practice = True
    items[1].save()
    AssignmentFactory(annotator=annotator, item=items[0])
    assignment = AssignmentFactory(annotator=annotator, item=items[1])
    html = annotator_client.get(f"/edit/{assignment.pk}/").content.decode()
    assert 'id="post-edit-text" name="text" rows="12" spellcheck="true" readonly lang="ar"' in html
    assert 'dir="rtl" aria-describedby="save-status"' in html
    assert 'lang="en" dir="ltr">Quelle 1</pre>' in html
    assert "&lt;b&gt;Before&lt;/b&gt;" in html and "<b>Before</b>" not in html
    assert 'aria-current="true"' in html and "Document doc" in html
    assert 'id="practice-note"' in html
    assert 'id="highlight-legend"' not in html


@pytest.mark.django_db
def test_an_unknown_language_leaves_the_direction_to_the_browser(annotator, annotator_client):
    assignment = AssignmentFactory(annotator=annotator)
    html = annotator_client.get(f"/edit/{assignment.pk}/").content.decode()
    assert 'lang="" dir="auto"' in html


@pytest.mark.django_db
def test_the_highlight_legend_names_the_labels(annotator, annotator_client):
    assignment = AssignmentFactory(annotator=annotator, item=designed_item(), condition="mt-qe")
    html = annotator_client.get(f"/edit/{assignment.pk}/").content.decode()
    assert 'id="highlight-legend"' in html
    assert '<mark data-label="major">major</mark>, <mark data-label="minor">minor</mark>' in html


@pytest.mark.django_db
def test_the_diff_compares_with_the_text_the_annotator_started_from(annotator, annotator_client):
    post_edit, _ = opened(annotator, "scratch")
    html = annotator_client.get(f"/edit/{post_edit.assignment_id}/diff/").content.decode()
    assert "unused default" not in html
