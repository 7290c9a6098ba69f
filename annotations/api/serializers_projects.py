"""Input and output serializers of the projects API (views_projects.py): a project, its study
settings, its copy and its progress. They only describe and check shapes; the services do the work."""

from rest_framework import serializers

from annotations.api.manage_common import DESIGN_HIDDEN, shows_design
from annotations.models import Project
from annotations.templatetags.editlab import render_markdown
from editlab.limits import (
    CONTEXT_WINDOW_MAX,
    CONTEXT_WINDOW_MIN,
    IDLE_THRESHOLD_MAX_S,
    IDLE_THRESHOLD_MIN_S,
    MAX_SMALL,
)

# Bounds of the columns the numbers land in: beyond them the database errs (a 500, not a 400).
MAX_OVERLAP = MAX_SMALL

# Set to null for annotators: the study's design (conditions, who else takes part) is not theirs to see.
PROJECT_DESIGN_FIELDS = ("instruction_seed", "overlap", "conditions", "design", "meta")


class ProjectOutputSerializer(serializers.ModelSerializer):
    guidelines_html = serializers.SerializerMethodField(help_text="The guidelines rendered as sanitized HTML.")
    item_count = serializers.IntegerField(read_only=True)
    batch_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "guidelines",
            "guidelines_html",
            "task_type",
            "instructions",
            "instruction_seed",
            "idle_threshold_s",
            "overlap",
            "source_lang",
            "target_lang",
            "context",
            "context_window",
            "conditions",
            "design",
            "meta",
            "item_count",
            "batch_count",
            "created",
        ]
        extra_kwargs = {
            "design": {
                "help_text": "simple, or latin-square once a Latin square was assigned." + DESIGN_HIDDEN,
                "allow_null": True,
            },
            "overlap": {"allow_null": True, "help_text": "How many annotators edit each item." + DESIGN_HIDDEN},
            "conditions": {"allow_null": True, "help_text": "The declared conditions." + DESIGN_HIDDEN},
            "meta": {"allow_null": True, "help_text": "Batching and design history, import details." + DESIGN_HIDDEN},
            "instruction_seed": {"help_text": "Seed of the instruction draw." + DESIGN_HIDDEN},
        }

    def get_guidelines_html(self, project: Project) -> str:
        return str(render_markdown(project.guidelines))

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not shows_design(self):
            data.update(dict.fromkeys(PROJECT_DESIGN_FIELDS))
        return data


class StudySettingsInputSerializer(serializers.Serializer):
    """The study settings, on create and update alike (absent: the default, or kept)."""

    source_lang = serializers.CharField(
        required=False, allow_blank=True, max_length=35, help_text="BCP 47 tag (en, de-CH, ar); empty: unknown."
    )
    target_lang = serializers.CharField(
        required=False, allow_blank=True, max_length=35, help_text="BCP 47 tag of the post-edits."
    )
    # Declared fields move into _declared_fields: this does not hide Serializer.context at run time.
    context = serializers.ChoiceField(  # type: ignore[assignment]
        required=False,
        choices=Project.CONTEXT_CHOICES,
        help_text="What the editor shows around a document's segment: none, window (N before and after), document.",
    )
    context_window = serializers.IntegerField(
        required=False, min_value=CONTEXT_WINDOW_MIN, max_value=CONTEXT_WINDOW_MAX, help_text="N, for context=window."
    )
    conditions = serializers.JSONField(
        required=False,
        help_text='[{"name": "pe", "output": "sysA" or null (an empty editor), "highlights": false}, ...]; '
        "on update the whole list: a condition work already carries cannot be removed or renamed, nor its output "
        "(once post-edits started from it) or highlights (once annotators saw items under it) changed.",
    )


class ProjectCreateInputSerializer(StudySettingsInputSerializer):
    name = serializers.CharField(max_length=200)
    guidelines = serializers.CharField(required=False, allow_blank=True, default="")
    task_type = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    instructions = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    instructions_file = serializers.JSONField(
        required=False,
        help_text="Instead of `instructions`: the content of an instructions file, e.g. "
        '{"instructions": {"fluency": ["Fix grammar errors", ...]}}; `task_type` picks the list.',
    )
    idle_threshold_s = serializers.FloatField(
        required=False, default=30.0, min_value=IDLE_THRESHOLD_MIN_S, max_value=IDLE_THRESHOLD_MAX_S
    )
    overlap = serializers.IntegerField(required=False, default=1, min_value=1, max_value=MAX_OVERLAP)


class ProjectUpdateInputSerializer(StudySettingsInputSerializer):
    name = serializers.CharField(max_length=200, required=False)
    guidelines = serializers.CharField(required=False, allow_blank=True)
    task_type = serializers.CharField(required=False, allow_blank=True, max_length=100)
    instructions = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    instructions_file = serializers.JSONField(required=False)
    idle_threshold_s = serializers.FloatField(
        required=False, min_value=IDLE_THRESHOLD_MIN_S, max_value=IDLE_THRESHOLD_MAX_S
    )
    overlap = serializers.IntegerField(required=False, min_value=1, max_value=MAX_OVERLAP)


class ProjectCopyInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="The new project's name (unique).")
    include_practice = serializers.BooleanField(required=False, default=True, help_text="Copy the practice items too.")


class ProjectCopyOutputSerializer(serializers.Serializer):
    project = ProjectOutputSerializer(help_text="The new project.")
    items = serializers.IntegerField(help_text="Items copied (no post-edits).")
    practice_items = serializers.IntegerField(help_text="Of them, practice items.")


class ProgressRowSerializer(serializers.Serializer):
    # Declared fields move into _declared_fields: this does not hide Field.label at run time.
    label = serializers.CharField()  # type: ignore[assignment]
    submitted = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    pending = serializers.IntegerField()
    skipped = serializers.IntegerField()
    total = serializers.IntegerField()
    median_active_ms = serializers.FloatField(allow_null=True)
    last_activity = serializers.DateTimeField(allow_null=True)


class ConditionProgressRowSerializer(ProgressRowSerializer):
    condition = serializers.CharField(
        source="key", help_text='The condition\'s name; "" for work under none (practice).'
    )


class ProjectProgressOutputSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    unbatched_items = serializers.IntegerField()
    unassigned_items = serializers.IntegerField()
    total = ProgressRowSerializer()
    by_annotator = ProgressRowSerializer(many=True)
    by_batch = ProgressRowSerializer(many=True)
    by_condition = ConditionProgressRowSerializer(
        many=True,
        help_text="When the project declares conditions or its work carries some (else empty): the declared "
        "conditions in their order (zeros included), other names work carries, then no condition.",
    )
