"""The progress page's figures kept as the work changes (issue 24): written by database triggers only
(annotations/progress_triggers.py, installed by migration 0020), so every write path keeps them right,
the ORM's, raw SQL's and the importer's COPY alike. Never written by the application.

`ProgressEntry`: one row per first-pass assignment with what the page reads of it, from its assignment,
item and post-edit (rewritten whenever one of them changes). `ProgressCell`: the entries grouped by
(project, annotator, batch, condition, status, counted flags): their number, key sum, timed count and
latest moment (raised when an entry comes in, recomputed from the cell's entries through an index
when the entry holding it leaves)."""

from django.db import models
from django.db.models import Q

# The batch key of work in no batch (batch ids start at 1): unique constraints treat nulls as distinct.
NO_BATCH = 0


class ProgressEntry(models.Model):
    assignment_id = models.BigIntegerField(primary_key=True)
    project_id = models.BigIntegerField()
    annotator_id = models.BigIntegerField()
    batch_key = models.BigIntegerField(help_text="The item's batch; 0 for none.")
    condition = models.CharField(max_length=100)
    status = models.CharField(max_length=20)
    flags = models.TextField(help_text="The post-edit's flags (JSON) when submitted with any; else ''.")
    moment = models.DateTimeField(null=True, help_text="The latest of started, finished and the post-edit's updated.")
    uncorroborated = models.IntegerField(null=True)
    active_ms = models.BigIntegerField(null=True)

    class Meta:
        indexes = [
            # A cell's latest moment, recomputed by the triggers in one index seek.
            models.Index(
                fields=["project_id", "annotator_id", "batch_key", "condition", "status", "flags", "moment"],
                name="progress_entry_cell",
            ),
            # The medians: the k-th active time of a group, read in index order.
            *(
                models.Index(
                    fields=["project_id", *group, "active_ms"],
                    name=f"progress_entry_timed_{name}",
                    condition=Q(status="submitted", active_ms__isnull=False),
                )
                for name, group in (
                    ("annotator", ["annotator_id"]),
                    ("batch", ["batch_key"]),
                    ("condition", ["condition"]),
                    ("all", []),
                )
            ),
        ]

    def __str__(self) -> str:
        return f"progress of assignment {self.assignment_id}"


class ProgressCell(models.Model):
    project_id = models.BigIntegerField()
    annotator_id = models.BigIntegerField()
    batch_key = models.BigIntegerField()
    condition = models.CharField(max_length=100)
    status = models.CharField(max_length=20)
    flags = models.TextField()
    n = models.BigIntegerField(default=0)
    uncorroborated = models.BigIntegerField(default=0)
    timed = models.BigIntegerField(default=0, help_text="Submitted entries with an active time.")
    latest = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project_id", "annotator_id", "batch_key", "condition", "status", "flags"],
                name="progress_cell_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.n} {self.status} of annotator {self.annotator_id} in project {self.project_id}"
