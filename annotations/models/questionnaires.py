"""Crowd quality control: a project's consent text and questionnaires, the answers people gave, and
the attention checks planted among its items (annotations/services/questionnaires.py writes them,
docs/quality.md "Crowd quality control" defines the pass rule)."""

from django.conf import settings
from django.db import models

from annotations.models.projects import Item, Project


class Questionnaire(models.Model):
    """What a project asks its participants (and, with `for_lab`, its lab annotators) besides the
    items: consent before the first item, the pre questionnaire after it, the post questionnaire
    before the completion code. Questions are stored as checked by services.questionnaires."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="questionnaire")
    consent = models.TextField(blank=True, help_text="Markdown; empty: no consent page.")
    pre = models.JSONField(default=list, blank=True, help_text="Questions asked after consent, before the items.")
    post = models.JSONField(default=list, blank=True, help_text="Questions asked after the items, before the code.")
    for_lab = models.BooleanField(default=False, help_text="Lab annotators are asked too, not only participants.")
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"questionnaire of {self.project}"


class QuestionnaireAnswer(models.Model):
    """One person's answers to one phase of a project's questionnaire (consent, pre or post)."""

    CONSENT, PRE, POST = "consent", "pre", "post"
    PHASE_CHOICES = [(CONSENT, "consent"), (PRE, "before the items"), (POST, "after the items")]

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="questionnaire_answers")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="questionnaire_answers")
    phase = models.CharField(max_length=10, choices=PHASE_CHOICES)
    consented = models.BooleanField(null=True, blank=True, help_text="Consent only: agreed (true) or declined.")
    answers = models.JSONField(default=dict, blank=True, help_text="Question id -> answer (text or whole number).")
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user", "answered_at"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user", "phase"], name="questionnaire_answer_unique_phase"),
        ]

    def __str__(self) -> str:
        return f"{self.phase} answers of {self.user} in {self.project}"


class AttentionCheck(models.Model):
    """An item that checks attention: a planted error (a span of the model output that must be
    changed) or a known gold edit (the submitted text must be within `max_distance` characters of it)."""

    PLANTED, GOLD = "planted", "gold"
    KIND_CHOICES = [(PLANTED, "planted error"), (GOLD, "gold edit")]

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="attention_check")
    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    start = models.PositiveIntegerField(null=True, blank=True, help_text="Planted error: its first character.")
    end = models.PositiveIntegerField(null=True, blank=True, help_text="Planted error: after its last character.")
    gold = models.TextField(blank=True, help_text="Gold edit: the expected text.")
    max_distance = models.PositiveIntegerField(
        default=0, help_text="Gold edit: the largest Levenshtein distance (characters) that still passes."
    )

    def __str__(self) -> str:
        return f"attention check ({self.kind}) on {self.item_id}"
