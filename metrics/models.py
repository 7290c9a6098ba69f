"""Stored metric values and the background jobs that compute them."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotations.models import PostEdit, Project


class MetricValue(models.Model):
    PLAIN = "plain"
    WITH_REFERENCES = "with_references"
    VARIANT_CHOICES = [(PLAIN, "model output → post-edit"), (WITH_REFERENCES, "model output + references → post-edit")]

    # No index of its own: metric_value_unique, (post_edit, metric, variant), serves the post-edit's lookups.
    post_edit = models.ForeignKey(PostEdit, on_delete=models.CASCADE, related_name="metric_values", db_index=False)
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
        # (metric, variant) first, as before; the version and the post-edit make it cover the metrics page's
        # counts (metrics.selectors_coverage), read in its order without the values' rows.
        indexes = [
            models.Index(fields=["metric", "variant", "metric_version", "post_edit"], name="metric_value_coverage")
        ]

    def __str__(self) -> str:
        return f"{self.metric}[{self.variant}]={self.value}"


class CoveragePostEdits(models.Model):
    """How many submitted first-pass post-edits a project has of each kind of item (has references, has gold
    edits): the metrics page's post-edit counts, kept by database triggers (metrics.coverage_kept) on every
    write to post-edits, assignments and items; never written by the app. A count of zero keeps its row."""

    project_id = models.BigIntegerField(help_text="The project's id; not a foreign key (a trigger keeps the row).")
    has_references = models.BooleanField()
    has_gold = models.BooleanField()
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project_id", "has_references", "has_gold"], name="coverage_post_edits_key")
        ]

    def __str__(self) -> str:
        return f"project {self.project_id} references={self.has_references} gold={self.has_gold}: {self.n}"


class CoverageValues(models.Model):
    """How many stored values those post-edits have per (metric, variant, metric version): the metrics page's
    value counts, kept by database triggers (metrics.coverage_kept) on every write to values, post-edits,
    assignments and items; never written by the app. A count of zero keeps its row."""

    project_id = models.BigIntegerField(help_text="The project's id; not a foreign key (a trigger keeps the row).")
    has_references = models.BooleanField()
    has_gold = models.BooleanField()
    metric = models.CharField(max_length=64)
    variant = models.CharField(max_length=20)
    metric_version = models.CharField(max_length=32)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project_id", "has_references", "has_gold", "metric", "variant", "metric_version"],
                name="coverage_values_key",
            )
        ]

    def __str__(self) -> str:
        return f"project {self.project_id} {self.metric}[{self.variant}] v{self.metric_version}: {self.n}"


class TaskWorker(models.Model):
    """One `manage.py db_worker` process, from its start: a row per start, beating while the process lives.

    Its heartbeat (a thread of the worker process, every EDITLAB_WORKER_HEARTBEAT_S) tells the other
    workers, the job pages and the health endpoint that it is alive; a worker silent for
    EDITLAB_WORKER_STALE_S is taken for dead, and the chunks it held are queued again.
    """

    engine_id = models.CharField(max_length=64, help_text="The worker id db_worker gives the task engine.")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started = models.DateTimeField(default=timezone.now)
    heartbeat = models.DateTimeField(default=timezone.now)
    stopped = models.DateTimeField(null=True, blank=True, help_text="Set when the process exits cleanly.")

    class Meta:
        indexes = [models.Index(fields=["heartbeat"])]

    def __str__(self) -> str:
        return f"{self.host} pid {self.pid}"

    def is_alive(self, *, now=None) -> bool:
        now = now or timezone.now()
        return self.stopped is None and (now - self.heartbeat).total_seconds() <= settings.EDITLAB_WORKER_STALE_S


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
    planned = models.DateTimeField(null=True, blank=True, help_text="When its work was cut into chunks.")
    planner = models.ForeignKey(
        TaskWorker,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="planned_jobs",
        help_text="The worker that claimed the job to plan it (empty: in the app process).",
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"metrics for {self.project} ({self.status})"

    @property
    def is_stalled(self) -> bool:
        """Running, but nothing has happened for EDITLAB_JOB_STALE_S and no live worker holds a chunk of it:
        its worker died (killed, OOM...) and no other worker took over (none is running)."""
        if self.status != self.RUNNING:
            return False
        now = timezone.now()
        last = self.heartbeat or self.started or self.created
        if (now - last).total_seconds() <= settings.EDITLAB_JOB_STALE_S:
            return False
        recent = now - timedelta(seconds=settings.EDITLAB_WORKER_STALE_S)
        return not self.chunks.filter(
            status=MetricChunk.RUNNING, worker__stopped__isnull=True, worker__heartbeat__gte=recent
        ).exists()


class MetricChunk(models.Model):
    """A slice of a job's work: some post-edits, one variant, the metrics they miss; one task of the engine.

    Any worker may claim a queued chunk. Its values and its `done` state are written in one transaction,
    so a chunk is either stored whole or not at all; `attempts` counts claims, and only the latest claim
    may store (a worker taken for dead that wakes up again finds its claim gone and stores nothing).
    """

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STATUS_CHOICES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    job = models.ForeignKey(MetricJob, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField(help_text="Position in the job, from 0.")
    variant = models.CharField(max_length=20)
    metrics = models.JSONField(default=list)
    post_edit_ids = models.JSONField(default=list)
    size = models.PositiveIntegerField(help_text="Post-edits.")
    total = models.PositiveIntegerField(help_text="Values: post-edits x metrics.")
    done = models.PositiveIntegerField(default=0, help_text="Values scored so far (stored once the chunk is done).")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0, help_text="How many times a worker claimed it.")
    worker = models.ForeignKey(
        TaskWorker,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="chunks",
        help_text="The worker that holds or finished it (empty: in the app process, or queued).",
    )
    task_id = models.CharField(max_length=64, blank=True, help_text="The task engine's id of its latest task.")
    claimed = models.DateTimeField(null=True, blank=True)
    progressed = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["job", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="metric_chunk_unique_seq")]
        indexes = [models.Index(fields=["status", "worker"])]

    def __str__(self) -> str:
        return f"chunk {self.seq} of job #{self.job_id} ({self.status})"
