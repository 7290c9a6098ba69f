"""Generation runs: an LLM's outputs (or synthetic edits) for a project's items, with their provenance.

A run is one setting: what it makes (an output of a system, or a scenario's synthetic edits), the
endpoint, the model, the request parameters and the template. Its `settings_key` is the hash of those;
the same setting asked again is the same run (resumed: items it already answered are skipped), a changed
setting is a new run. A run is cut into chunks, one task of the engine the metric jobs use each (any
`db_worker` claims them; see generation.jobs). Each item a run answered has one GenerationRecord: its
status, the text, the provenance of the call.
"""

from django.conf import settings
from django.db import models

from annotations.models import Item, PostEdit, Project
from metrics.models import TaskWorker


class GenerationRun(models.Model):
    OUTPUT = "output"
    SIMULATION = "simulation"
    KIND_CHOICES = [(OUTPUT, "outputs of a system"), (SIMULATION, "synthetic edits under a scenario")]

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    STATUS_CHOICES = [
        (QUEUED, "queued"),
        (RUNNING, "running"),
        (DONE, "done"),
        (FAILED, "failed"),
        (STOPPED, "stopped"),
    ]
    GOING = (QUEUED, RUNNING)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="generation_runs")
    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    name = models.CharField(max_length=100, help_text="The system (Item.outputs key) or the scenario.")
    source_output = models.CharField(
        max_length=100, blank=True, help_text="A simulation's text to edit: this output ('' = the model output)."
    )
    endpoint = models.CharField(max_length=2000, help_text="Base URL, without credentials.")
    model = models.CharField(max_length=255)
    params = models.JSONField(default=dict, help_text="temperature, max_tokens, seed, timeout, limits.")
    template_name = models.CharField(max_length=255)
    template = models.TextField()
    template_sha256 = models.CharField(max_length=64)
    variables = models.JSONField(default=dict, blank=True)
    settings_key = models.CharField(max_length=64, help_text="Hash of what makes the run.")
    concurrency = models.PositiveIntegerField(default=1)
    item_ids = models.JSONField(default=list, blank=True, help_text="The items asked for; empty = every item.")

    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    generated = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0, help_text="Empty, refused by the model, or by editlab.")
    failed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="Already answered by this run before.")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    planned = models.DateTimeField(null=True, blank=True)
    planner = models.ForeignKey(
        TaskWorker, null=True, blank=True, on_delete=models.SET_NULL, related_name="planned_generation_runs"
    )

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["project", "kind", "name", "settings_key"], name="generation_run_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name} of {self.project} ({self.model}, {self.status})"


class GenerationChunk(models.Model):
    """Some items of a run: one task of the engine. Claimed like a MetricChunk (metrics.models): only the
    latest claim (`attempts`) may store its records."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STATUS_CHOICES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField()
    item_ids = models.JSONField(default=list)
    size = models.PositiveIntegerField()
    done = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=20, choices=STATUS_CHOICES, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.ForeignKey(
        TaskWorker, null=True, blank=True, on_delete=models.SET_NULL, related_name="generation_chunks"
    )
    task_id = models.CharField(max_length=64, blank=True)
    claimed = models.DateTimeField(null=True, blank=True)
    progressed = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="generation_chunk_unique_seq")]
        indexes = [models.Index(fields=["status", "worker"])]

    def __str__(self) -> str:
        return f"chunk {self.seq} of generation run #{self.run_id} ({self.status})"


class GenerationRecord(models.Model):
    """One item's answer in one run: the text (when generated) and how it was made."""

    GENERATED = "generated"
    EMPTY = "empty"
    MODEL_REFUSED = "model_refused"
    TOO_LONG = "too_long"
    PROMPT_REFUSED = "prompt_refused"
    CONFLICT = "conflict"
    FAILED = "failed"
    STATUS_CHOICES = [
        (GENERATED, "generated"),
        (EMPTY, "empty answer"),
        (MODEL_REFUSED, "refused by the model"),
        (TOO_LONG, "answer over the text limit"),
        (PROMPT_REFUSED, "prompt refused before the call"),
        (CONFLICT, "not stored: the place holds another text"),
        (FAILED, "call failed (tried again on resume)"),
    ]
    FINAL = (GENERATED, EMPTY, MODEL_REFUSED, TOO_LONG, PROMPT_REFUSED, CONFLICT)

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="records")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="generation_records")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES)
    text = models.TextField(blank=True)
    error = models.TextField(blank=True)
    provenance = models.JSONField(default=dict)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    post_edit = models.ForeignKey(
        PostEdit, null=True, blank=True, on_delete=models.SET_NULL, related_name="generation_records"
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "item"]
        constraints = [models.UniqueConstraint(fields=["run", "item"], name="generation_record_unique")]

    def __str__(self) -> str:
        return f"{self.item} in run #{self.run_id}: {self.status}"


class GenerationPolicy(models.Model):
    """What a project allows besides its admins: researchers may start synthetic-edit runs (simulations)
    when `researchers_simulate` is on. No row = the default: admins only. Only admins change it."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="generation_policy")
    researchers_simulate = models.BooleanField(
        default=False, help_text="Researchers may start (and stop) synthetic-edit runs on this project."
    )
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"generation policy of {self.project}"
