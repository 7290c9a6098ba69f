"""Assignments (one item given to one annotator, open or closed) and their post-edits (what the
annotator made of one: the text, its effort, its flags)."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce

from annotations.models.projects import Item
from annotations.roles import can_read_all

# The published, versioned effort definition (README: "Effort definition").
DEFINITION_VERSION = "3"

EFFORT_COUNT_FIELDS = (
    "letters",
    "digits",
    "spaces",
    "symbols",
    "erase",
    "navigation",
    "copy",
    "cut",
    "paste",
    "undo_redo",
    "commands",
    "visible",
    "keystrokes",
    "allkeys",
)
EFFORT_TIME_FIELDS = ("wall_ms", "active_ms", "reading_ms")
PAUSE_FIELDS = (
    "pauses_300_count",
    "pauses_300_ms",
    "pauses_1000_count",
    "pauses_1000_ms",
    "pauses_2000_count",
    "pauses_2000_ms",
)
EFFORT_FIELDS = EFFORT_TIME_FIELDS + EFFORT_COUNT_FIELDS + PAUSE_FIELDS


class AssignmentQuerySet(QuerySet):
    def visible_to(self, user) -> "AssignmentQuerySet":
        """Everything for admins and researchers; an annotator's own for annotators."""
        if can_read_all(user):
            return self
        if not user.is_authenticated:
            return self.none()
        return self.filter(annotator=user)

    def open_for(self, user) -> "AssignmentQuerySet":
        """The user's open post-editing work (their open reviews are on the review queue)."""
        return self.filter(annotator=user).first_pass().open()

    def first_pass(self) -> "AssignmentQuerySet":
        """Post-editing work: not a review of someone's submitted post-edit."""
        return self.filter(reviews__isnull=True)

    def reviews(self) -> "AssignmentQuerySet":
        return self.filter(reviews__isnull=False)

    def open(self) -> "AssignmentQuerySet":
        """Not yet closed: pending or in progress."""
        return self.filter(status__in=Assignment.OPEN)

    def closed(self) -> "AssignmentQuerySet":
        """Closed: submitted or skipped (the one rule: `Assignment.CLOSED`)."""
        return self.filter(status__in=Assignment.CLOSED)

    def live(self) -> "AssignmentQuerySet":
        """Work for editlab's annotators: not the records of a finished study imported for comparison."""
        return self.exclude(post_edit__origin=PostEdit.IMPORTED)


ACCEPTED = "accepted"
RETURNED = "returned"
DECISION_CHOICES = [("", "not decided"), (ACCEPTED, "accepted"), (RETURNED, "returned")]


class Assignment(models.Model):
    ACCEPTED = ACCEPTED
    RETURNED = RETURNED
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    SUBMITTED = "submitted"
    SKIPPED = "skipped"
    STATUS_CHOICES = [
        (PENDING, "pending"),
        (IN_PROGRESS, "in progress"),
        (SUBMITTED, "submitted"),
        (SKIPPED, "skipped"),
    ]
    # The one "closed" rule: a closed assignment takes no more events, drafts or submits.
    OPEN = (PENDING, IN_PROGRESS)
    CLOSED = (SUBMITTED, SKIPPED)

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=PENDING)
    skip_reason = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    condition = models.CharField(max_length=100, blank=True, help_text="Fixed when the assignment is made.")
    queue_position = models.PositiveIntegerField(
        null=True, blank=True, help_text="Order in the annotator's queue (designed studies), else batch order."
    )
    # A review (MateCat's Revise): the reviewer's assignment of the same item, its post-edit starting
    # from the reviewed post-edit's submitted text; null for post-editing work.
    reviews = models.ForeignKey(
        "PostEdit",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="reviews",
        help_text="The submitted post-edit this assignment reviews (null: post-editing work).",
    )
    review_decision = models.CharField(max_length=20, choices=DECISION_CHOICES, blank=True)
    review_reason = models.TextField(blank=True, help_text="Why the review returned the post-edit.")
    review_decided_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        # A designed study's queue first (practice, then documents in the annotator's order), else batch order.
        ordering = [
            F("queue_position").asc(nulls_last=True),
            "item__batch_id",
            "item__batch_position",
            "item__position",
            "id",
        ]
        constraints = [
            # One post-editing assignment per item and annotator; a reviewer may review an item's
            # post-edit again after it was returned and submitted anew.
            models.UniqueConstraint(
                fields=["item", "annotator"],
                condition=Q(reviews__isnull=True),
                name="assignment_unique_item_annotator",
            ),
            # At most one review of a post-edit still to decide (one not skipped by its reviewer).
            models.UniqueConstraint(
                fields=["reviews"],
                condition=Q(
                    reviews__isnull=False, review_decision="", status__in=("pending", "in_progress", "submitted")
                ),
                name="assignment_one_open_review",
            ),
        ]
        indexes = [models.Index(fields=["annotator", "status"])]

    def __str__(self) -> str:
        return f"{self.item} → {self.annotator}"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN

    @property
    def is_closed(self) -> bool:
        return self.status in self.CLOSED

    @property
    def is_review(self) -> bool:
        return self.reviews_id is not None


def start_text_of_post_edit() -> Coalesce:
    """In a PostEdit query: the text the edit started from (its condition's output, or "" for
    an empty editor), else the item's model output. Metrics, exports and analysis read this."""
    return Coalesce(F("start_override"), F("assignment__item__model_output"))


class PostEditQuerySet(QuerySet):
    def visible_to(self, user) -> "PostEditQuerySet":
        if can_read_all(user):
            return self
        if not user.is_authenticated:
            return self.none()
        return self.filter(assignment__annotator=user)

    def completed(self) -> "PostEditQuerySet":
        return self.filter(assignment__status=Assignment.SUBMITTED)

    def first_pass(self) -> "PostEditQuerySet":
        """Post-edits of post-editing work: never a reviewer's edit of someone's submitted post-edit."""
        return self.filter(assignment__reviews__isnull=True)

    def reviews(self) -> "PostEditQuerySet":
        return self.filter(assignment__reviews__isnull=False)

    def human(self) -> "PostEditQuerySet":
        """Post-edits people made (live or imported): never an LLM's simulated edit, which has no time
        and no keys and must not enter human effort statistics."""
        return self.exclude(origin=PostEdit.SIMULATED)

    def simulated(self) -> "PostEditQuerySet":
        return self.filter(origin=PostEdit.SIMULATED)


class PostEdit(models.Model):
    LIVE = "live"
    IMPORTED = "imported"
    SIMULATED = "simulated"
    ORIGIN_CHOICES = [
        (LIVE, "edited in editlab"),
        (IMPORTED, "imported from a finished study"),
        (SIMULATED, "simulated by an LLM under a scenario"),
    ]

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="post_edit")
    draft_text = models.TextField(blank=True)
    text = models.TextField(blank=True, help_text="The submitted post-edit.")
    version = models.PositiveIntegerField(default=0, help_text="Optimistic lock for draft saves.")
    origin = models.CharField(max_length=20, choices=ORIGIN_CHOICES, default=LIVE)
    origin_detail = models.JSONField(default=dict, blank=True, help_text="Import format, file, line.")
    definition_version = models.CharField(max_length=20, blank=True)
    condition = models.CharField(max_length=100, blank=True, help_text="Copied from the assignment.")
    # null, not "": "" is a real start (translating from scratch); null means "the model output".
    start_override = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        db_column="original_text",
        help_text=(
            "The start text when it is not the item's model output (a condition's output, or \"\"); "
            "null: the model output."
        ),
    )

    first_shown_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    server_elapsed_ms = models.BigIntegerField(null=True, blank=True, help_text="Server-observed time over visits.")
    clock_tolerance_ms = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="The share of the annotator's clock tolerance granted at submit (null: submitted before the "
        "budget; the whole tolerance applied).",
    )

    wall_ms = models.BigIntegerField(null=True, blank=True)
    active_ms = models.BigIntegerField(null=True, blank=True)
    reading_ms = models.BigIntegerField(null=True, blank=True)
    letters = models.IntegerField(null=True, blank=True)
    digits = models.IntegerField(null=True, blank=True)
    spaces = models.IntegerField(null=True, blank=True)
    symbols = models.IntegerField(null=True, blank=True)
    erase = models.IntegerField(null=True, blank=True)
    navigation = models.IntegerField(null=True, blank=True)
    copy = models.IntegerField(null=True, blank=True)
    cut = models.IntegerField(null=True, blank=True)
    paste = models.IntegerField(null=True, blank=True)
    undo_redo = models.IntegerField(null=True, blank=True)
    commands = models.IntegerField(null=True, blank=True)
    visible = models.IntegerField(null=True, blank=True)
    keystrokes = models.IntegerField(null=True, blank=True)
    allkeys = models.IntegerField(null=True, blank=True)
    pauses_300_count = models.IntegerField(null=True, blank=True)
    pauses_300_ms = models.BigIntegerField(null=True, blank=True)
    pauses_1000_count = models.IntegerField(null=True, blank=True)
    pauses_1000_ms = models.BigIntegerField(null=True, blank=True)
    pauses_2000_count = models.IntegerField(null=True, blank=True)
    pauses_2000_ms = models.BigIntegerField(null=True, blank=True)
    uncorroborated_keys = models.IntegerField(
        null=True,
        blank=True,
        help_text="Keys counted in no class: typed keys no text change corroborates (definition 2 on), "
        "keys beyond the human rate bound (definition 3 on).",
    )

    flags = models.JSONField(
        default=list,
        blank=True,
        help_text="e.g. wall_clipped, keys_uncorroborated, key_rate, replay_mismatch, event_gap.",
    )
    replay_ok = models.BooleanField(null=True, blank=True)
    replay_divergence = models.JSONField(null=True, blank=True, help_text="Where replay left the submitted text.")
    event_gaps = models.JSONField(default=list, blank=True, help_text="Missing sequence ranges [first, last].")
    extra = models.JSONField(default=dict, blank=True, help_text="Other imported measures (HTER, DA, ...).")
    updated = models.DateTimeField(auto_now=True)

    objects = PostEditQuerySet.as_manager()

    def __str__(self) -> str:
        return f"post-edit of {self.assignment}"

    @property
    def start_text(self) -> str:
        """The text this post-edit started from: the condition's output (or nothing), else the model output."""
        if self.start_override is not None:
            return self.start_override
        return self.assignment.item.model_output

    def add_flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags = [*self.flags, flag]
