"""Input and output serializers of the metric-values API (no logic here: services do the work)."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from editlab.limits import MAX_ID
from metrics.analysis_options import FlagField
from metrics.exports import FORMATS
from metrics.models import MetricJob
from metrics.selectors import VARIANTS


class MetricValueFilterSerializer(serializers.Serializer):
    project = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, help_text="Project id.")
    metric = serializers.CharField(required=False, max_length=64)
    variant = serializers.CharField(required=False, help_text="plain or with_references.")
    annotator = serializers.CharField(required=False, max_length=150, help_text="Annotator username.")

    def validate_variant(self, value: str) -> str:
        return _variant(value)


def _variant(value: str) -> str:
    if value not in VARIANTS:
        raise serializers.ValidationError(f"unknown variant {value!r}: choose one of {', '.join(VARIANTS)}")
    return value


class MetricValueOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    post_edit = serializers.IntegerField(source="post_edit_id")
    project = serializers.IntegerField(source="post_edit__assignment__item__project_id")
    external_id = serializers.CharField(source="post_edit__assignment__item__external_id")
    annotator = serializers.CharField(source="post_edit__assignment__annotator__username")
    metric = serializers.CharField()
    variant = serializers.CharField(help_text="plain or with_references.")
    value = serializers.FloatField(allow_null=True, help_text="Null when the metric gave no value.")
    metric_version = serializers.CharField()
    computed_at = serializers.DateTimeField()


class MetricValuePageOutputSerializer(serializers.Serializer):
    """The paginated list as it is sent (documentation only)."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = MetricValueOutputSerializer(many=True)


class MetricJobInputSerializer(serializers.Serializer):
    metrics = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        default=list,
        help_text="Metric names; empty = every available metric.",
    )
    variants = serializers.ListField(
        child=serializers.CharField(max_length=20),
        required=False,
        default=lambda: list(VARIANTS),
        help_text="plain and/or with_references.",
    )


class JobChunksOutputSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Chunks the job was cut into (0 until it is planned).")
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()


class JobWorkerOutputSerializer(serializers.Serializer):
    worker = serializers.CharField(source="label", help_text="Host and process id; or the app process.")
    engine_id = serializers.CharField(source="status.engine_id", allow_null=True, default=None)
    chunks = serializers.IntegerField(help_text="Chunks it finished for this job.")
    post_edits = serializers.IntegerField()
    values = serializers.IntegerField()
    running = serializers.IntegerField(help_text="Chunks of this job it holds now.")
    heartbeat = serializers.DateTimeField(source="status.heartbeat", allow_null=True, default=None)
    alive = serializers.BooleanField(source="status.alive", allow_null=True, default=None)


class JobActivityOutputSerializer(serializers.Serializer):
    chunks = JobChunksOutputSerializer()
    in_flight = serializers.IntegerField(help_text="Values scored in running chunks and not stored yet.")
    workers = JobWorkerOutputSerializer(many=True)
    live_workers = serializers.IntegerField(help_text="db_worker processes alive now (any job).")
    waiting_s = serializers.FloatField(
        allow_null=True, help_text="How long the job has waited for a worker (nobody works on it); null otherwise."
    )


class MetricJobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    metrics = serializers.ListField(child=serializers.CharField())
    variants = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=[c for c, _ in MetricJob.STATUS_CHOICES])
    total = serializers.IntegerField(help_text="Values to compute (known once the job has planned its work).")
    done = serializers.IntegerField()
    error = serializers.CharField(help_text="Why the job failed; empty otherwise.")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
    # The view reads the activity (metrics.selectors_jobs.job_activity) and passes it as context["activity"].
    activity = serializers.SerializerMethodField(help_text="Chunks and workers (metrics.selectors_jobs.job_activity).")

    @extend_schema_field(JobActivityOutputSerializer)
    def get_activity(self, job: MetricJob) -> dict[str, Any]:
        return JobActivityOutputSerializer(self.context["activity"]).data


class ExportInputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=sorted(FORMATS), default="csv")
    include_practice = FlagField(
        default=False, help_text="Also export the post-edits of practice items (left out by default)."
    )
