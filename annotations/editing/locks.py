"""The rows every editing write works on, locked in one order: annotator's clock -> assignment ->
post-edit -> visits.

Opening, submitting and skipping lock the annotator's clock row first (clock.py: one page load of
the annotator runs at a time, and the tolerance budget is spent by one submit at a time); event
batches and autosaves lock only the post-edit. Every write locks the assignment and/or the
post-edit row (select_for_update) before it touches the post-edit's visits or events, so a batch
re-sent concurrently is stored once and a double-clicked submit gives one result
(tests/editlab/test_faults.py, test_one_clock.py).
"""

import uuid

from annotations.editing.errors import UnknownVisit
from annotations.models import Assignment, PostEdit, Visit


def locked_post_edit(post_edit: PostEdit) -> PostEdit:
    return (
        PostEdit.objects.select_for_update(of=("self",))
        .select_related("assignment__item__project")
        .get(pk=post_edit.pk)
    )


def visit_of(post_edit: PostEdit, page_id: uuid.UUID | str) -> Visit:
    try:
        return post_edit.visits.get(page_id=page_id)
    except (Visit.DoesNotExist, ValueError):
        raise UnknownVisit(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}") from None


def is_closed(post_edit: PostEdit) -> bool:
    return post_edit.assignment.status in (Assignment.SUBMITTED, Assignment.SKIPPED)
