"""Crowd participants: a project's join links, the participants they admit, and the per-address
count of Start presses."""

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from annotations.models.projects import Project


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
    # Attention checks (annotations/models/questionnaires.py, AttentionCheck): who fails more than
    # max_failed_checks gets the failed code (or URL), never the completion code.
    max_failed_checks = models.PositiveIntegerField(
        default=0, help_text="How many attention checks a participant may fail and still earn the completion code."
    )
    failed_code = models.CharField(max_length=200, blank=True, help_text="The platform's failed-attention code.")
    failed_url = models.URLField(max_length=2000, blank=True, help_text="Where those who failed are sent.")
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
    # slot is released), released after the link's idle_minutes without activity, finished having
    # failed the attention checks (the failed code; released), or declined consent (released).
    WORKING, CODE, NO_CODE, IDLE, FAILED, DECLINED = "", "code", "no_code", "idle", "failed_check", "declined"
    OUTCOME_CHOICES = [
        (WORKING, "working"),
        (CODE, "earned the code"),
        (NO_CODE, "finished without the code"),
        (IDLE, "released: idle"),
        (FAILED, "failed the attention checks"),
        (DECLINED, "declined consent"),
    ]
    outcome = models.CharField(max_length=20, blank=True, default=WORKING, choices=OUTCOME_CHOICES)
    released_at = models.DateTimeField(
        null=True, blank=True, help_text="When the slot was given up: its work goes to the next newcomer."
    )
    # Not stored: set on a participant read by services.participants.with_last_activity (the latest
    # time the server saw it work) and by the Participants page (what it says of the slot, and its
    # quality summary: annotations.selectors_crowd.QualitySummary).
    last_active: datetime | None = None
    status: str = ""
    quality: Any = None

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
