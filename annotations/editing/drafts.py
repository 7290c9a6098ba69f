"""Autosaved drafts, with optimistic locking: a save based on a stale version is a conflict, never an overwrite."""

import uuid
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotations.editing import event_store, locks
from annotations.editing.errors import DraftConflict, PostEditClosed, UnknownVisit, ensure_text
from annotations.models import PostEdit


@transaction.atomic
def post_edit_save_draft(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, text: str, version: int, now: datetime | None = None
) -> int:
    """Save the draft if `version` is the stored one; returns the new version.

    Autosaves come every few seconds from every annotator, so this runs by plain statements
    (annotations/editing/locks.py, event_store.py): lock and read, mark the page load seen (which also says
    whether it is one of this post-edit's), write.
    """
    now = now or timezone.now()
    ensure_text(text, field="text")
    locked = locks.lock_for_draft(post_edit.pk)
    if event_store.advance_visit(post_edit, page_id, now, []) is None:  # rolled back if the save is refused
        raise UnknownVisit(f"page_id {page_id} is not a page load of post-edit {post_edit.pk}")
    if locked.closed:
        raise PostEditClosed(f"post-edit {post_edit.pk} is already {locked.status_display}")
    if version != locked.version:
        raise DraftConflict(server_text=locked.draft_text, server_version=locked.version)
    event_store.store_draft(post_edit.pk, text=text, version=version + 1, now=now)
    return version + 1
