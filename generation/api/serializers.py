"""Input and output serializers of the generation API (generation/api/views.py); shapes only, the
services (generation.control, generation.services) check the settings and name what they refuse."""

from rest_framework import serializers

from editlab import limits
from generation.control import TEMPLATE_MAX_BYTES, shipped_templates
from generation.models import GenerationRun
from generation.services import (
    CONCURRENCY_MAX,
    ITEMS_MAX,
    MAX_TOKENS_MAX,
    PROMPT_MAX_CHARS_DEFAULT,
    TEMPERATURE_MAX,
    TIMEOUT_MAX_S,
)

ITEMS_PER_REQUEST = min(ITEMS_MAX, 100_000)
VARIABLES_MAX = 100


class RunStartInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=GenerationRun.KIND_CHOICES)
    name = serializers.CharField(max_length=100, help_text="The system (Item.outputs key) or the scenario.")
    endpoint = serializers.CharField(
        max_length=2000, help_text="Base URL of the OpenAI-compatible API, without credentials."
    )
    model = serializers.CharField(max_length=255)
    template = serializers.ChoiceField(
        choices=[(name, name) for name in shipped_templates()],
        required=False,
        help_text="A shipped prompt (answer, normal, similar, fast); or give template_text.",
    )
    template_text = serializers.CharField(
        required=False, trim_whitespace=False, max_length=TEMPLATE_MAX_BYTES, help_text="A template given whole."
    )
    template_filename = serializers.CharField(required=False, default="", allow_blank=True, max_length=255)
    temperature = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, max_value=TEMPERATURE_MAX
    )
    max_tokens = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=MAX_TOKENS_MAX
    )
    seed = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=limits.MIN_BIGINT, max_value=limits.MAX_BIGINT
    )
    concurrency = serializers.IntegerField(required=False, default=1, min_value=1, max_value=CONCURRENCY_MAX)
    timeout_s = serializers.FloatField(required=False, default=60.0, min_value=0.001, max_value=TIMEOUT_MAX_S)
    max_prompt_chars = serializers.IntegerField(
        required=False, default=PROMPT_MAX_CHARS_DEFAULT, min_value=1, max_value=100_000_000
    )
    items = serializers.ListField(
        child=serializers.CharField(max_length=255),
        required=False,
        default=list,
        max_length=ITEMS_PER_REQUEST,
        help_text="Only these items (external ids); empty: every item.",
    )
    variables = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=100_000),
        required=False,
        default=dict,
        help_text="Template variables (the seed study's domain words).",
    )
    source_output = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=100, help_text="A simulation edits this output."
    )

    def validate_variables(self, value: dict) -> dict:
        if len(value) > VARIABLES_MAX:
            raise serializers.ValidationError(f"at most {VARIABLES_MAX} variables")
        return value

    def validate(self, attrs: dict) -> dict:
        if ("template" in attrs) == ("template_text" in attrs):
            raise serializers.ValidationError({"template": "give either template (a shipped prompt) or template_text"})
        return attrs


class RunOutputSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True, read_only=True)
    chunks = serializers.SerializerMethodField()

    class Meta:
        model = GenerationRun
        fields = [
            "id",
            "project",
            "kind",
            "name",
            "source_output",
            "endpoint",
            "model",
            "params",
            "template_name",
            "template_sha256",
            "variables",
            "concurrency",
            "status",
            "total",
            "done",
            "generated",
            "refused",
            "failed",
            "skipped",
            "prompt_tokens",
            "completion_tokens",
            "error",
            "created_by",
            "created",
            "started",
            "finished",
            "heartbeat",
            "chunks",
        ]

    def get_chunks(self, run: GenerationRun) -> dict[str, int]:
        names = ("total", "done", "running", "queued", "failed")
        return {name: int(getattr(run, f"chunks_{name}", 0) or 0) for name in names}


class PolicySerializer(serializers.Serializer):
    researchers_simulate = serializers.BooleanField(help_text="Researchers may start and stop synthetic-edit runs.")


class ProvenanceEntrySerializer(serializers.Serializer):
    run = serializers.IntegerField()
    kind = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    error = serializers.CharField()
    post_edit = serializers.IntegerField(allow_null=True)
    template = serializers.CharField()
    template_sha256 = serializers.CharField()
    prompt_sha256 = serializers.CharField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    created = serializers.DateTimeField()
    provenance = serializers.DictField(
        help_text="endpoint, model, requested_model, params, response_id, created, finish_reason, usage, "
        "latency_ms, attempts"
    )


class ItemProvenanceOutputSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    external_id = serializers.CharField()
    outputs = serializers.DictField(help_text="The item's outputs by system.")
    records = ProvenanceEntrySerializer(many=True)
