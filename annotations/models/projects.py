"""Projects, their items and batches: what a study holds before anyone edits."""

import random

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q, QuerySet

from annotations.design import Condition, DesignError, parse_conditions, parse_spans
from annotations.typology import Typology, TypologyError, parse_typology
from editlab.limits import (
    IDLE_THRESHOLD_DEFAULT_S,
    IDLE_THRESHOLD_MAX_S,
    IDLE_THRESHOLD_MIN_S,
    clamped_idle_threshold_s,
)


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
    quality = models.JSONField(
        default=dict,
        blank=True,
        help_text='Error typology and MQM weights: {"categories": [...], "weights": {...}}; {} = MQM core, WMT weights.',
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def idle_threshold_ms(self) -> float:
        """The idle threshold the editor and the effort derivation use, in ms: always within the column's
        checked range, so a value stored before the range was checked cannot break a page."""
        return clamped_idle_threshold_s(self.idle_threshold_s) * 1000.0

    def clean(self) -> None:
        super().clean()
        try:
            parse_typology(self.quality)
        except TypologyError as exc:
            raise ValidationError({"quality": f"{exc.field}: {exc.message}"}) from None

    def typology(self) -> Typology:
        """The project's error typology and MQM weights (TypologyError when the stored JSON is malformed)."""
        return parse_typology(self.quality)

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

    # What an item holds besides its project: what an import writes and a copy carries over.
    DATA_FIELDS = (
        "external_id",
        "source",
        "model_output",
        "instruction",
        "drawn_instruction",
        "references",
        "gold_edits",
        "task_type",
        "meta",
        "position",
        "document",
        "document_position",
        "outputs",
        "highlights",
        "practice",
    )

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
        indexes = [
            models.Index(fields=["batch", "batch_position"]),
            # The items browser's pages, in import order: read in the index's order, never sorted.
            models.Index(fields=["project", "position", "id"], name="item_project_position"),
        ]

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
