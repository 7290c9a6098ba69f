"""The editor page's place in the work (annotations/selectors_editor.py), what a participant's pages
leave out, the from-scratch label, and the diff's marks (issue 20 §4)."""

import re

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from annotations.models import Assignment, Project
from annotations.selectors_editor import SEGMENT_WINDOW, editor_place
from annotations.services.join_links import PlatformIds, join_link_open
from annotations.services.participants import participant_join
from annotations.views.editor import diff_marks, word_diff
from tests.factories import AssignmentFactory, BatchFactory, ItemFactory, PostEditFactory, ProjectFactory


def _queue(annotator, project, documents: dict[str, int], statuses: dict[int, str] | None = None) -> list[Assignment]:
    """The annotator's queue over `documents` (name: segments), in document order."""
    statuses = statuses or {}
    queue = []
    for document, size in documents.items():
        for position in range(size):
            item = ItemFactory(
                project=project, external_id=f"{document}-{position}", document=document, document_position=position
            )
            k = len(queue)
            queue.append(
                AssignmentFactory(
                    item=item, annotator=annotator, queue_position=k, status=statuses.get(k, Assignment.PENDING)
                )
            )
    return queue


@pytest.mark.django_db
def test_a_lab_annotator_counts_the_document_and_steps_across_the_queue(annotator, other_annotator):
    project = ProjectFactory()
    queue = _queue(annotator, project, {"a": 2, "b": 3}, {0: Assignment.SUBMITTED, 2: Assignment.SKIPPED})
    for assignment in queue[:2]:  # someone else's work on the same items counts nowhere
        AssignmentFactory(item=assignment.item, annotator=other_annotator, status=Assignment.SUBMITTED)
    place = editor_place(assignment=queue[3], participant=False)
    assert [(s.number, s.external_id, s.status, s.current) for s in place.segments] == [
        (3, "b-0", "skipped", False),
        (4, "b-1", "pending", True),
        (5, "b-2", "pending", False),
    ]
    assert (place.done, place.total, place.queue_total) == (1, 3, 5)
    assert (place.previous.assignment_id, place.next.assignment_id) == (queue[2].pk, queue[4].pk)
    assert place.previous.url == reverse("editor_diff", args=[queue[2].pk])
    assert place.next.url == reverse("editor", args=[queue[4].pk])

    first = editor_place(assignment=queue[0], participant=False)
    assert first.previous is None and first.next.assignment_id == queue[1].pk
    assert [s.external_id for s in first.segments] == ["a-0", "a-1"] and (first.done, first.total) == (1, 2)
    assert editor_place(assignment=queue[4], participant=False).next is None


@pytest.mark.django_db
def test_a_participant_counts_the_whole_study(annotator):
    queue = _queue(annotator, ProjectFactory(), {"a": 2, "b": 2}, {0: Assignment.SUBMITTED, 1: Assignment.SUBMITTED})
    place = editor_place(assignment=queue[2], participant=True)
    assert (place.current.number, place.queue_total, place.done, place.total) == (3, 4, 2, 4)
    assert [s.number for s in place.segments] == [3, 4]


@pytest.mark.django_db
def test_batch_items_are_listed_by_their_batch(annotator):
    batch = BatchFactory()
    other = BatchFactory(project=batch.project)
    mine = [
        AssignmentFactory(item=ItemFactory(project=batch.project, batch=b, batch_position=k), annotator=annotator)
        for k, b in enumerate([batch, batch, other])
    ]
    place = editor_place(assignment=mine[1], participant=False)
    assert [s.assignment_id for s in place.segments] == [mine[0].pk, mine[1].pk]
    assert (place.total, place.next.assignment_id) == (2, mine[2].pk)


@pytest.mark.django_db
def test_an_empty_start_is_labelled_a_translation_and_a_model_output_a_post_edit(annotator_client, annotator):
    project = ProjectFactory(conditions=[{"name": "ht", "output": None}, {"name": "mt", "output": "sysA"}])
    labels = []
    for condition in ("ht", "mt"):
        item = ItemFactory(project=project, outputs={"sysA": "Some output."})
        assignment = AssignmentFactory(item=item, annotator=annotator, condition=condition)
        content = annotator_client.get(reverse("editor", args=[assignment.pk])).content.decode()
        labels += re.findall(r'<label for="post-edit-text">([^<]*)</label>', content)
    assert labels == ["Your translation", "Your post-edit"]


@pytest.fixture
def participant_client(db):
    project = ProjectFactory(design=Project.DESIGN_LATIN_SQUARE, conditions=[{"name": "mt", "output": "sysA"}])
    for position in range(2):
        ItemFactory(
            project=project,
            external_id=f"sha1-{position}",
            document="sha1-doc",
            document_position=position,
            outputs={"sysA": "Text."},
        )
    link = join_link_open(project=project, completion_code="C0DE")
    participant = participant_join(join_link=link, ids=PlatformIds(participant="P1")).participant
    client = Client()
    client.force_login(participant.user)
    return client, participant


def test_a_participants_editor_and_home_show_only_the_study(participant_client):
    client, participant = participant_client
    first = Assignment.objects.filter(annotator=participant.user).first()
    home = client.get(reverse("annotator_home"))
    assert home.status_code == 302 and home.url == reverse("editor", args=[first.pk])
    page = client.get(home.url).content.decode()
    assert 'aria-label="Main"' not in page and participant.user.username not in page
    assert ">My batches<" not in page and ">Home<" not in page and ">API<" not in page
    visible = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert "sha1-" not in visible
    assert "Segment 1 of 2" in page and "0 of 2 done" in page


def test_a_lab_annotators_pages_keep_the_navigation(annotator_client, annotator):
    assignment = AssignmentFactory(annotator=annotator)
    page = annotator_client.get(reverse("editor", args=[assignment.pk])).content.decode()
    assert 'aria-label="Main"' in page and "anna · annotator" in page and ">My batches<" in page
    assert f"item {assignment.item.external_id}" in page


@pytest.mark.django_db
def test_the_diff_page_labels_both_changes_and_keeps_them_apart(annotator_client, annotator):
    assignment = AssignmentFactory(
        item=ItemFactory(model_output="It works."), annotator=annotator, status=Assignment.SUBMITTED
    )
    PostEditFactory(assignment=assignment, text="It has. Done")
    content = annotator_client.get(reverse("editor_diff", args=[assignment.pk])).content.decode()
    body = re.search(r'id="diff">(.*?)</div>', content, re.S).group(1)
    hidden = '<span class="visually-hidden">'
    assert body == (
        f"It <del>{hidden}[deleted: </span>works{hidden}]</span></del>"
        f'<ins class="apart">{hidden}[inserted: </span>has{hidden}]</span></ins>.'
        f"<ins>{hidden}[inserted: </span> Done{hidden}]</span></ins>"
    )


@given(st.text(max_size=40), st.text(max_size=40))
def test_only_an_insertion_right_after_a_deletion_stands_apart(original, edited):
    segments = word_diff(original, edited)
    marked = diff_marks(segments)
    assert [(op, text) for op, text, _ in marked] == segments
    for k, (op, _, apart) in enumerate(marked):
        assert apart == (op == "insert" and k > 0 and marked[k - 1][0] == "delete")


@pytest.mark.django_db
def test_a_long_document_lists_a_window_around_the_current_segment(annotator):
    queue = _queue(annotator, ProjectFactory(), {"long": SEGMENT_WINDOW * 3})
    current = len(queue) - 5
    place = editor_place(assignment=queue[current], participant=False)
    numbers = [s.number for s in place.segments]
    assert numbers == list(range(current + 1 - SEGMENT_WINDOW, len(queue) + 1))
    assert (place.hidden_before, place.hidden_after) == (current - SEGMENT_WINDOW, 0)
    assert (place.total, place.next.number, place.previous.number) == (len(queue), current + 2, current)
