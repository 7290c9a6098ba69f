"""Error-span evaluations (MQM, ESA): a rater's judgement of one text, its error spans (docs/quality.md).

An Evaluation is a task like a post-edit: who (rater), what (an item's output of one system, or a
submitted post-edit), when (started, submitted, wall and active time: the browser UI fills them and logs
its events as the editor does), its ESA score (0-100, optional) and its spans. An imported WMT rating is a
submitted Evaluation with origin "imported"; a rating without errors ("No-error") is one without spans.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotations.models.assignments import PostEdit
from annotations.models.projects import Item
from annotations.typology import SEVERITIES


class Evaluation(models.Model):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    SUBMITTED = "submitted"
    STATUS_CHOICES = [(PENDING, "pending"), (IN_PROGRESS, "in progress"), (SUBMITTED, "submitted")]
    MQM = "mqm"
    ESA = "esa"
    PROTOCOL_CHOICES = [(MQM, "MQM: error spans"), (ESA, "ESA: error spans, then a 0-100 score")]

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="evaluations")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="evaluations")
    system = models.CharField(max_length=200, blank=True, help_text="The output evaluated ('' for a post-edit).")
    post_edit = models.ForeignKey(PostEdit, null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations")
    text = models.TextField(blank=True, help_text="The text evaluated, as the rater saw it; spans index it.")
    esa_score = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(100.0)])
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=PENDING)
    origin = models.CharField(max_length=20, choices=PostEdit.ORIGIN_CHOICES, default=PostEdit.LIVE)
    origin_detail = models.JSONField(default=dict, blank=True, help_text="Import format, file, line.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    wall_ms = models.BigIntegerField(null=True, blank=True)
    active_ms = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    protocol = models.CharField(max_length=10, choices=PROTOCOL_CHOICES, default=MQM)
    condition = models.CharField(max_length=100, blank=True, help_text="The study condition ('esa-ai': prefilled).")
    prefill = models.JSONField(
        default=list, blank=True, help_text="The spans shown prefilled: [{start, end, category, severity, comment}]."
    )

    class Meta:
        ordering = ["item", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "rater", "system"],
                condition=Q(post_edit__isnull=True),
                name="evaluation_unique_output_rater",
            ),
            models.UniqueConstraint(
                fields=["post_edit", "rater"],
                condition=Q(post_edit__isnull=False),
                name="evaluation_unique_post_edit_rater",
            ),
            models.CheckConstraint(
                condition=Q(esa_score__isnull=True) | Q(esa_score__gte=0.0, esa_score__lte=100.0),
                name="evaluation_esa_score_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.system or 'post-edit'} by {self.rater_id}"


class ErrorSpan(models.Model):
    TARGET = "target"
    SOURCE = "source"
    SIDE_CHOICES = [(TARGET, "the evaluated text"), (SOURCE, "the source (an omission)")]

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="spans")
    position = models.PositiveIntegerField(help_text="Order within the evaluation.")
    side = models.CharField(max_length=10, choices=SIDE_CHOICES, default=TARGET)
    start = models.PositiveIntegerField(null=True, blank=True, help_text="Character offset; null: no span.")
    end = models.PositiveIntegerField(null=True, blank=True)
    open_end = models.BooleanField(default=False, help_text="Imported <v> without </v>: ran to the end.")
    category = models.CharField(max_length=200)
    severity = models.CharField(max_length=10, choices=[(s, s) for s in SEVERITIES])
    comment = models.TextField(blank=True)
    prefilled = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The index in the evaluation's prefill this span started as; null: the rater's.",
    )
    edited = models.BooleanField(default=False, help_text="A prefilled span the rater changed (offsets or labels).")

    class Meta:
        ordering = ["evaluation", "position"]
        constraints = [
            models.UniqueConstraint(fields=["evaluation", "position"], name="error_span_unique_position"),
            models.CheckConstraint(
                condition=Q(start__isnull=True, end__isnull=True)
                | Q(start__isnull=False, end__isnull=False, start__lte=models.F("end")),
                name="error_span_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.category}/{self.severity} [{self.start}, {self.end})"


class EvaluationEvent(models.Model):
    """The evaluation task's raw log, append-only: one browser event (load, visibility, focus, blur,
    keydown, mousedown, select, span_add, span_edit, span_delete, score, submit, ...) numbered per
    evaluation, so that a batch sent twice is stored once."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="events")
    page_id = models.UUIDField(help_text="The page load that logged it.")
    seq = models.PositiveIntegerField()
    t_ms = models.FloatField(help_text="Client time (performance.now) in ms.")
    received = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=30)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["evaluation", "seq"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "seq"], name="evaluation_event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.evaluation_id}#{self.seq} {self.kind}"
