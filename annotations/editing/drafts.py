"""Autosaved drafts, with optimistic locking: a save based on a stale version is a conflict, never an overwrite."""

import uuid
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotations.editing.errors import DraftConflict, PostEditClosed, ensure_text
from annotations.editing.locks import is_closed, locked_post_edit, visit_of
from annotations.models import PostEdit, Visit


@transaction.atomic
def post_edit_save_draft(
    *, post_edit: PostEdit, page_id: uuid.UUID | str, text: str, version: int, now: datetime | None = None
) -> int:
    """Save the draft if `version` is the stored one; returns the new version."""
    now = now or timezone.now()
    ensure_text(text, field="text")
    post_edit = locked_post_edit(post_edit)
    visit = visit_of(post_edit, page_id)
    if is_closed(post_edit):
        raise PostEditClosed(f"post-edit {post_edit.pk} is already {post_edit.assignment.get_status_display()}")
    if version != post_edit.version:
        raise DraftConflict(server_text=post_edit.draft_text, server_version=post_edit.version)
    post_edit.draft_text = text
    post_edit.version += 1
    post_edit.save(update_fields=["draft_text", "version", "updated"])
    Visit.objects.filter(pk=visit.pk).update(last_seen_at=now)
    return post_edit.version
