"""Input and output serializers of the batches and assignments API (views_assignments.py): batches
cut and assigned, assignments listed, withdrawn and moved. They only describe and check shapes; the
services do the work."""

from rest_framework import serializers

from annotations.api.manage_common import DESIGN_HIDDEN, shows_design
from annotations.api.serializers_projects import MAX_OVERLAP
from annotations.models import Assignment, Batch, Item, Project
from annotations.selectors import declared_by_name, start_shown
from editlab.limits import MAX_ID


class BatchOutputSerializer(serializers.ModelSerializer):
    item_count = serializers.IntegerField(read_only=True)
    annotators = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="Usernames holding assignments in the batch."
    )

    class Meta:
        model = Batch
        fields = ["id", "name", "item_count", "annotators", "created"]


class BatchMakeInputSerializer(serializers.Serializer):
    size = serializers.IntegerField(min_value=1)
    shuffle_seed = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Absent or null: import order."
    )


class BatchMakeOutputSerializer(serializers.Serializer):
    batches = BatchOutputSerializer(many=True)


class BatchAssignInputSerializer(serializers.Serializer):
    annotators = serializers.ListField(
        child=serializers.CharField(), allow_empty=False, help_text="Usernames of active annotators."
    )
    overlap = serializers.IntegerField(
        min_value=1,
        max_value=MAX_OVERLAP,
        required=False,
        help_text="Annotators per item; default: the project's overlap.",
    )
    batches = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Batch names; default: every batch of the project."
    )


class BatchAssignOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    batches = serializers.IntegerField(help_text="Batches that received new assignments.")
    skipped_full_items = serializers.IntegerField(help_text="Items that already had `overlap` annotators.")
    per_annotator = serializers.DictField(child=serializers.IntegerField(), help_text="New assignments per username.")


def _scratch(serializer: serializers.Field) -> dict:
    """Working memory shared by one answer's serializers (kept on the root serializer)."""
    return vars(serializer.root).setdefault("_blinding_scratch", {})


class AssignmentItemSerializer(serializers.ModelSerializer):
    effective_instruction = serializers.CharField(read_only=True)
    model_output = serializers.SerializerMethodField(
        help_text="Admins and researchers: the item's model output. Annotators and participants: the text their "
        'editor starts from (their condition\'s output, "" for an empty editor), never a text their condition hides.'
    )

    class Meta:
        model = Item
        fields = ["id", "external_id", "source", "model_output", "effective_instruction", "references", "task_type"]

    def get_model_output(self, item: Item) -> str:
        start = _scratch(self).get("start_texts", {}).get(item.pk)
        if shows_design(self):
            return item.model_output
        return start if start is not None else ""


class AssignmentOutputSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="annotator.username")
    project = serializers.IntegerField(source="item.project_id")
    project_name = serializers.CharField(source="item.project.name")
    batch = serializers.CharField(source="item.batch.name", default=None, allow_null=True)
    batch_position = serializers.IntegerField(source="item.batch_position", allow_null=True)
    item = AssignmentItemSerializer()
    start_text = serializers.SerializerMethodField(
        help_text="The text the editor starts (or started) from under the assignment's condition: its output, "
        '"" for an empty editor, the model output without a condition.'
    )
    condition = serializers.CharField(allow_null=True, help_text='"" for none.' + DESIGN_HIDDEN)
    queue_position = serializers.IntegerField(
        allow_null=True, help_text="Place in the annotator's queue (designed studies), else null."
    )
    post_edit = serializers.SerializerMethodField(help_text="The post-edit's id once the editor has opened it.")

    class Meta:
        model = Assignment
        fields = [
            "id",
            "annotator",
            "status",
            "project",
            "project_name",
            "batch",
            "batch_position",
            "item",
            "start_text",
            "condition",
            "queue_position",
            "post_edit",
            "created",
            "started",
            "finished",
        ]

    def to_representation(self, instance):
        # The item's serializer reads this assignment's start text (one item, many assignments).
        _scratch(self).setdefault("start_texts", {})[instance.item_id] = start_shown(
            assignment=instance, conditions=self._conditions(instance.item.project)
        )
        data = super().to_representation(instance)
        if not shows_design(self):
            data["condition"] = None
        return data

    def _conditions(self, project: Project) -> dict:
        cache = _scratch(self).setdefault("conditions_of", {})
        if project.pk not in cache:
            cache[project.pk] = declared_by_name(project)
        return cache[project.pk]

    def get_start_text(self, assignment: Assignment) -> str:
        return _scratch(self)["start_texts"][assignment.item_id]

    def get_post_edit(self, assignment: Assignment) -> int | None:
        post_edit = getattr(assignment, "post_edit", None)
        return post_edit.pk if post_edit is not None else None


class AssignmentFilterInputSerializer(serializers.Serializer):
    """The assignment list's query string (a value beyond a column's range is a 400, not a database error)."""

    project = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="Only this project's assignments."
    )
    status = serializers.ChoiceField(required=False, choices=[c for c, _ in Assignment.STATUS_CHOICES])
    annotator = serializers.CharField(required=False, max_length=150, help_text="Username (admins, researchers).")


class AssignmentMoveInputSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), allow_empty=False, help_text="Assignment ids."
    )
    force = serializers.BooleanField(default=False, help_text="Also in-progress work (discards its draft).")


class AssignmentReassignInputSerializer(AssignmentMoveInputSerializer):
    to = serializers.CharField(help_text="Username of the annotator who takes the assignments.")


class AssignmentMoveOutputSerializer(serializers.Serializer):
    withdrawn = serializers.IntegerField()
    reassigned = serializers.IntegerField()
    kept_submitted = serializers.IntegerField(help_text="Submitted or skipped: never touched.")
    kept_in_progress = serializers.IntegerField(help_text="In progress, kept because force was not set.")
    skipped_already_assigned = serializers.IntegerField(help_text="The target already had these items.")
    not_found = serializers.ListField(child=serializers.IntegerField())
