"""Stored metric values and the background jobs that compute them."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotations.models import PostEdit, Project


class MetricValue(models.Model):
    PLAIN = "plain"
    WITH_REFERENCES = "with_references"
    VARIANT_CHOICES = [(PLAIN, "model output → post-edit"), (WITH_REFERENCES, "model output + references → post-edit")]

    post_edit = models.ForeignKey(PostEdit, on_delete=models.CASCADE, related_name="metric_values")
    metric = models.CharField(max_length=64)
    variant = models.CharField(max_length=20, choices=VARIANT_CHOICES, default=PLAIN)
    value = models.FloatField(null=True, blank=True, help_text="Null when the metric does not apply.")
    metric_version = models.CharField(max_length=32, blank=True)
    input_hash = models.CharField(max_length=64, blank=True, help_text="Hash of the texts it was computed from.")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["post_edit", "metric", "variant"], name="metric_value_unique"),
        ]
        indexes = [models.Index(fields=["metric", "variant"])]

    def __str__(self) -> str:
        return f"{self.metric}[{self.variant}]={self.value}"


class MetricJob(models.Model):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STATUS_CHOICES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="metric_jobs")
    metrics = models.JSONField(default=list, help_text="Metric names; empty = every applicable metric.")
    variants = models.JSONField(default=list)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of the running job.")

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"metrics for {self.project} ({self.status})"

    @property
    def is_stalled(self) -> bool:
        """Running, but its worker has shown no progress for EDITLAB_JOB_STALE_S: it died (killed, OOM...)."""
        if self.status != self.RUNNING:
            return False
        last = self.heartbeat or self.started or self.created
        return (timezone.now() - last).total_seconds() > settings.EDITLAB_JOB_STALE_S
