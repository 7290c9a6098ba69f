"""Django admin for stored metric values and jobs: browse and search, never hand-edit.

Values are derived data (recompute with compute_metrics or a job); a hand-edited value
would carry a hash claiming it was computed from the texts. Deleting is allowed: a deleted
value is simply missing and the next run computes it again.
"""

from django.contrib import admin
from django.http import HttpRequest

from metrics.models import MetricJob, MetricValue, TaskWorker


@admin.register(MetricValue)
class MetricValueAdmin(admin.ModelAdmin):
    list_display = (
        "metric",
        "variant",
        "value",
        "external_id",
        "annotator",
        "project",
        "metric_version",
        "computed_at",
    )
    list_filter = ("metric", "variant", "metric_version", "post_edit__assignment__item__project")
    search_fields = (
        "metric",
        "post_edit__assignment__item__external_id",
        "post_edit__assignment__annotator__username",
        "post_edit__assignment__item__project__name",
    )
    list_select_related = ("post_edit__assignment__item__project", "post_edit__assignment__annotator")
    readonly_fields = ("post_edit", "metric", "variant", "value", "metric_version", "input_hash", "computed_at")
    raw_id_fields = ("post_edit",)
    date_hierarchy = "computed_at"

    @admin.display(description="item", ordering="post_edit__assignment__item__external_id")
    def external_id(self, obj: MetricValue) -> str:
        return obj.post_edit.assignment.item.external_id

    @admin.display(description="annotator", ordering="post_edit__assignment__annotator__username")
    def annotator(self, obj: MetricValue) -> str:
        return obj.post_edit.assignment.annotator.username

    @admin.display(description="project", ordering="post_edit__assignment__item__project__name")
    def project(self, obj: MetricValue) -> str:
        return obj.post_edit.assignment.item.project.name

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(MetricJob)
class MetricJobAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "status", "done", "total", "created_by", "created", "finished")
    list_filter = ("status", "project")
    search_fields = ("project__name", "error", "task_id", "created_by__username")
    list_select_related = ("project", "created_by")
    readonly_fields = (
        "project",
        "metrics",
        "variants",
        "status",
        "total",
        "done",
        "error",
        "task_id",
        "created_by",
        "created",
        "started",
        "finished",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(TaskWorker)
class TaskWorkerAdmin(admin.ModelAdmin):
    """The db_worker processes and their heartbeats (written by the workers themselves)."""

    list_display = ("id", "engine_id", "host", "pid", "started", "heartbeat", "stopped")
    list_filter = ("host",)
    search_fields = ("engine_id", "host")
    date_hierarchy = "started"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
