"""The editor's log: visits (page loads), the annotator's clock, and the raw events."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotations.models.assignments import PostEdit


class Visit(models.Model):
    """One opening of the editor page for a post-edit (a page load in one tab).

    Client timestamps are relative to the page load; the visit anchors them and the
    server's own clock bounds them.
    """

    post_edit = models.ForeignKey(PostEdit, on_delete=models.CASCADE, related_name="visits")
    page_id = models.UUIDField(default=uuid.uuid4, unique=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    # Where the annotator's next page load (of any item) started: set when it opened, and by the
    # submit for page loads stored side by side (annotations/editing/clock.py).
    ended_at = models.DateTimeField(null=True, blank=True)
    # The top seq stored for this page load and its client time: a later batch of the same page load
    # may not go back in time (checked and updated under the post-edit's lock, annotations/editing/).
    last_seq = models.IntegerField(null=True, blank=True)
    last_t_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["post_edit", "started_at"]

    def __str__(self) -> str:
        return f"visit {self.page_id} of {self.post_edit_id}"


class AnnotatorClock(models.Model):
    """An annotator's clock (annotations/editing/clock.py): the row that opening, submitting and
    skipping lock first, so that one page load of the annotator runs at a time, and how much of the
    clock tolerance their submits have used beyond the time the server saw."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="editing_clock"
    )
    tolerance_used_ms = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"clock of {self.user_id}"


class EditEvent(models.Model):
    """The raw log, append-only: one browser event."""

    # No index of its own: the unique (post_edit, seq) index leads with it, and a second index
    # costs a write per event and can mislead PostgreSQL's planner (the load benchmark).
    post_edit = models.ForeignKey(PostEdit, on_delete=models.CASCADE, related_name="events", db_index=False)
    visit = models.ForeignKey(Visit, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    seq = models.PositiveIntegerField()
    t_ms = models.FloatField(help_text="Client time, ms since the page load of its visit.")
    received_at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=32)
    key = models.CharField(max_length=64, blank=True)
    code = models.CharField(max_length=64, blank=True)
    modifiers = models.PositiveSmallIntegerField(default=0, help_text="Bits: 1 ctrl, 2 shift, 4 alt, 8 meta.")
    repeat = models.BooleanField(default=False)
    input_type = models.CharField(max_length=64, blank=True)
    sel_start = models.IntegerField(null=True, blank=True)
    sel_end = models.IntegerField(null=True, blank=True)
    data = models.TextField(blank=True, help_text="Inserted text (or copied/pasted text).")
    length_after = models.IntegerField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["post_edit", "seq"]
        constraints = [models.UniqueConstraint(fields=["post_edit", "seq"], name="event_unique_seq")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.kind}"
