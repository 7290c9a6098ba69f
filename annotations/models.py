"""The human side of editlab: who edits what, and every key they pressed.

Relations follow ../shared/DESIGN.md: Project -> Item -> Assignment (item, annotator)
-> PostEdit (one per assignment) -> EditEvent (append-only log). A Batch is an
ordered set of a project's items (Item.batch + Item.batch_position).
"""

import random
import uuid
from datetime import datetime

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from annotations.design import Condition, DesignError, parse_conditions, parse_spans
from annotations.roles import can_read_all
from editlab.limits import (
    IDLE_THRESHOLD_DEFAULT_S,
    IDLE_THRESHOLD_MAX_S,
    IDLE_THRESHOLD_MIN_S,
    clamped_idle_threshold_s,
)

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


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    guidelines = models.TextField(blank=True, help_text="Markdown, shown to annotators (rendered safely).")
    task_type = models.CharField(max_length=100, blank=True)
    instructions = models.JSONField(default=list, blank=True, help_text="List of edit instructions.")
    instruction_seed = models.BigIntegerField(
        null=True, blank=True, help_text="Seed used to draw each item's instruction from the list."
    )
    idle_threshold_s = models.FloatField(
        default=IDLE_THRESHOLD_DEFAULT_S,
        validators=[MinValueValidator(IDLE_THRESHOLD_MIN_S), MaxValueValidator(IDLE_THRESHOLD_MAX_S)],
        help_text="Gaps longer than this are idle, not active time (seconds, at most a day).",
    )
    overlap = models.PositiveSmallIntegerField(default=1, help_text="How many annotators edit each item.")
    meta = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    # Study design (DESIGN.md, "Study design").
    source_lang = models.CharField(max_length=35, blank=True, help_text="BCP 47 tag of the source, e.g. en, ar.")
    target_lang = models.CharField(max_length=35, blank=True, help_text="BCP 47 tag of the post-edit.")
    CONTEXT_NONE = "none"
    CONTEXT_WINDOW = "window"
    CONTEXT_DOCUMENT = "document"
    CONTEXT_CHOICES = [
        (CONTEXT_NONE, "no context"),
        (CONTEXT_WINDOW, "N segments before and after"),
        (CONTEXT_DOCUMENT, "the whole document"),
    ]
    context = models.CharField(max_length=20, choices=CONTEXT_CHOICES, default=CONTEXT_NONE)
    context_window = models.PositiveSmallIntegerField(default=2, help_text="Segments before/after (context window).")
    conditions = models.JSONField(
        default=list,
        blank=True,
        help_text='[{"name": ..., "output": system name or null (empty editor), "highlights": bool}, ...]',
    )
    DESIGN_SIMPLE = "simple"
    DESIGN_LATIN_SQUARE = "latin-square"
    DESIGN_CHOICES = [(DESIGN_SIMPLE, "simple (overlap k)"), (DESIGN_LATIN_SQUARE, "Latin square")]
    design = models.CharField(max_length=20, choices=DESIGN_CHOICES, default=DESIGN_SIMPLE)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def idle_threshold_ms(self) -> float:
        """The idle threshold the editor and the effort derivation use, in ms: always within the column's
        checked range, so a value stored before the range was checked cannot break a page."""
        return clamped_idle_threshold_s(self.idle_threshold_s) * 1000.0

    def declared_conditions(self) -> list[Condition]:
        """The project's conditions (DesignError when the stored JSON is malformed)."""
        return parse_conditions(self.conditions)

    def condition(self, name: str) -> Condition | None:
        if not name:
            return None
        return next((c for c in parse_conditions(self.conditions) if c.name == name), None)

    def draw_instructions(self, items: list["Item"]) -> None:
        """Give each item without its own instruction one drawn from the project's list.

        The seed is recorded on the project (drawn once if absent) and the draw is a pure
        function of (seed, external_id), so re-imports and later items stay reproducible.
        """
        if len(self.instructions) < 2:
            return
        if self.instruction_seed is None:
            self.instruction_seed = random.SystemRandom().randrange(2**31)
            self.save(update_fields=["instruction_seed"])
        for item in items:
            if not item.instruction and not item.drawn_instruction:
                rng = random.Random(f"{self.instruction_seed}:{item.external_id}")
                item.drawn_instruction = rng.choice(self.instructions)


class ItemQuerySet(QuerySet):
    def unbatched(self) -> "ItemQuerySet":
        return self.filter(batch__isnull=True)


class Item(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=255)
    source = models.TextField(blank=True)
    model_output = models.TextField()
    instruction = models.TextField(blank=True, help_text="Overrides the project's instruction.")
    drawn_instruction = models.TextField(blank=True, help_text="Drawn from the project's list with its seed.")
    references = models.JSONField(default=list, blank=True)
    gold_edits = models.JSONField(default=list, blank=True)
    task_type = models.CharField(max_length=100, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0, help_text="Order of import.")
    batch = models.ForeignKey("Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    batch_position = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    document = models.CharField(max_length=255, blank=True, help_text="Document id; segments share it.")
    document_position = models.PositiveIntegerField(null=True, blank=True, help_text="Segment's place in it.")
    outputs = models.JSONField(default=dict, blank=True, help_text="Outputs keyed by system, for conditions.")
    highlights = models.JSONField(
        default=dict, blank=True, help_text="Error spans per output name: [[start, end, label], ...]."
    )
    practice = models.BooleanField(default=False, help_text="Shown first; left out of analysis and exports.")

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["project", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="item_unique_external_id"),
            models.UniqueConstraint(
                fields=["project", "document", "document_position"],
                condition=~Q(document=""),
                name="item_unique_document_position",
            ),
        ]
        indexes = [models.Index(fields=["batch", "batch_position"])]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.external_id}"

    def start_text(self, condition: Condition | None) -> str | None:
        """What the editor starts from under `condition`: its output, "" for an empty editor
        (translating from scratch), the model output without a condition; None when the item
        lacks the condition's output."""
        if condition is None:
            return self.model_output
        if condition.output is None:
            return ""
        output = self.outputs.get(condition.output) if isinstance(self.outputs, dict) else None
        return output if isinstance(output, str) else None

    def blind_start(self, name: str, condition: Condition | None) -> tuple[str, str]:
        """What an annotator whose assignment carries the condition `name` starts from (`condition`:
        its declaration, None when the project does not declare it), and the flag saying why that is not
        the condition's own output ("" when it is). Never a text the condition hides: without a condition
        the model output; under a declared condition its output ("" for an empty editor); under an
        undeclared condition, or on an item lacking the condition's output, an empty editor."""
        if not name:
            return self.model_output, ""
        if condition is None:
            return "", "condition_unknown"
        text = self.start_text(condition)
        if text is None:
            return "", "condition_output_missing"
        return text, ""

    def spans_for(self, condition: Condition | None) -> list[tuple[int, int, str]]:
        """The error spans shown under `condition` (none unless it enables highlights)."""
        if condition is None or not condition.highlights or condition.output is None:
            return []
        spans = self.highlights.get(condition.output) if isinstance(self.highlights, dict) else None
        text = self.start_text(condition)
        if not spans or text is None:
            return []
        try:
            return parse_spans(spans, text)
        except DesignError:
            return []  # refused at import; a span that no longer fits is not shown

    @property
    def effective_instruction(self) -> str:
        if self.instruction:
            return self.instruction
        if self.drawn_instruction:
            return self.drawn_instruction
        instructions = self.project.instructions
        return instructions[0] if len(instructions) == 1 else ""


class Batch(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="batches")
    name = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="batch_unique_name")]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return f"{self.project.name}/{self.name}"


class AssignmentQuerySet(QuerySet):
    def visible_to(self, user) -> "AssignmentQuerySet":
        """Everything for admins and researchers; an annotator's own for annotators."""
        if can_read_all(user):
            return self
        if not user.is_authenticated:
            return self.none()
        return self.filter(annotator=user)

    def open_for(self, user) -> "AssignmentQuerySet":
        return self.filter(annotator=user).open()

    def open(self) -> "AssignmentQuerySet":
        """Not yet closed: pending or in progress."""
        return self.filter(status__in=Assignment.OPEN)

    def closed(self) -> "AssignmentQuerySet":
        """Closed: submitted or skipped (the one rule: `Assignment.CLOSED`)."""
        return self.filter(status__in=Assignment.CLOSED)

    def live(self) -> "AssignmentQuerySet":
        """Work for editlab's annotators: not the records of a finished study imported for comparison."""
        return self.exclude(post_edit__origin=PostEdit.IMPORTED)


class Assignment(models.Model):
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
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_item_annotator"),
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


class JoinLink(models.Model):
    """A project's participation link for a crowd platform (/join/<token>/)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="join_links")
    token = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    max_participants = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: as many as the design has.")
    max_skips = models.PositiveIntegerField(
        default=0, help_text="How many non-practice items a participant may skip and still earn the completion code."
    )
    idle_minutes = models.PositiveIntegerField(
        default=30, help_text="A slot held this long without activity is released and its work given to a newcomer."
    )
    completion_code = models.CharField(max_length=200, blank=True)
    completion_url = models.URLField(max_length=2000, blank=True)
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text='Query parameter names: {"participant": "PROLIFIC_PID", "study": "STUDY_ID", "session": "SESSION_ID"}.',
    )

    class Meta:
        ordering = ["project", "-created"]

    def __str__(self) -> str:
        return f"join link of {self.project}"

    @property
    def is_open(self) -> bool:
        return self.revoked_at is None

    def path(self) -> str:
        return reverse("join", args=[self.token])

    def platform_query(self) -> str:
        """The query string the platform fills in with each participant's ids, in Prolific's
        placeholder syntax: ?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&..."""
        params = self.params if isinstance(self.params, dict) else {}
        # In this order: a jsonb column does not keep the keys' order.
        names = [params.get(key) for key in ("participant", "study", "session")]
        names = [name for name in names if isinstance(name, str) and name]
        return "?" + "&".join(f"{name}={{{{%{name}%}}}}" for name in names) if names else ""


class Participant(models.Model):
    """An annotator account bound to a crowd platform's participant id, made by a join link."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participant")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="participants")
    join_link = models.ForeignKey(JoinLink, null=True, on_delete=models.SET_NULL, related_name="participants")
    platform_id = models.CharField(max_length=200, help_text="The platform's participant id (e.g. PROLIFIC_PID).")
    platform_key = models.CharField(
        max_length=220, default="", help_text="The id as compared: NFKC, case-folded (one person, one key)."
    )
    study_id = models.CharField(max_length=200, blank=True)
    session_id = models.CharField(max_length=200, blank=True)
    slot = models.PositiveIntegerField(help_text="Its place in the project's design (0, 1, ...).")
    joined_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    # The slot's fate: held (""), finished with the code, finished without it (too many skips; the
    # slot is released), or released after the link's idle_minutes without activity.
    WORKING, CODE, NO_CODE, IDLE = "", "code", "no_code", "idle"
    OUTCOME_CHOICES = [
        (WORKING, "working"),
        (CODE, "earned the code"),
        (NO_CODE, "finished without the code"),
        (IDLE, "released: idle"),
    ]
    outcome = models.CharField(max_length=20, blank=True, default=WORKING, choices=OUTCOME_CHOICES)
    released_at = models.DateTimeField(
        null=True, blank=True, help_text="When the slot was given up: its work goes to the next newcomer."
    )
    # Not stored: set on a participant read by services.participants.with_last_activity (the latest
    # time the server saw it work) and by the Participants page (what it says of the slot).
    last_active: datetime | None = None
    status: str = ""

    class Meta:
        ordering = ["project", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["project", "platform_key"], name="participant_unique_platform_key"),
            # A released slot is taken again by a newcomer: only held slots are unique.
            models.UniqueConstraint(
                fields=["project", "slot"], condition=Q(released_at__isnull=True), name="participant_unique_slot"
            ),
        ]

    def __str__(self) -> str:
        return f"participant {self.platform_id} of {self.project}"


class JoinCounter(models.Model):
    """How many times one client address pressed Start on a participation link in the current window
    (annotations/services/participants.py: the link is rate-limited per address, not per link)."""

    address = models.CharField(max_length=45, unique=True)
    window_start = models.DateTimeField()
    starts = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["window_start"], name="join_counter_window")]

    def __str__(self) -> str:
        return f"{self.starts} starts from {self.address}"
