"""Input and output serializers of the management API (views_manage.py). They only
describe and check shapes; the services do the work."""

from rest_framework import serializers

from annotations.design import DESIGN_MAX_ANNOTATORS, DESIGN_MAX_CONDITIONS
from annotations.models import Assignment, Batch, Item, Project
from annotations.roles import ROLES
from annotations.selectors import declared_by_name, start_shown
from annotations.templatetags.editlab import render_markdown
from editlab.limits import (
    CONTEXT_WINDOW_MAX,
    CONTEXT_WINDOW_MIN,
    IDLE_THRESHOLD_MAX_S,
    IDLE_THRESHOLD_MIN_S,
    MAX_ID,
    MAX_SMALL,
)

MAX_ITEMS_PER_REQUEST = 5000
# Bounds of the columns the numbers land in: beyond them the database errs (a 500, not a 400).
MAX_OVERLAP = MAX_SMALL


# --------------------------------------------------------------------------- projects


def shows_design(serializer: serializers.Serializer) -> bool:
    """Whether the answer goes to an admin or a researcher (context "reader"): annotators and crowd
    participants are told only what their own work needs, never the design behind it (fails closed)."""
    return bool(serializer.context.get("reader", False))


# Set to null for annotators: the study's design (conditions, who else takes part) is not theirs to see.
PROJECT_DESIGN_FIELDS = ("instruction_seed", "overlap", "conditions", "design", "meta")
DESIGN_HIDDEN = " Null for annotators and participants."


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


# --------------------------------------------------------------------------- items


class ItemOutputSerializer(serializers.ModelSerializer):
    batch = serializers.CharField(source="batch.name", default=None, allow_null=True, read_only=True)
    effective_instruction = serializers.CharField(read_only=True)

    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "source",
            "model_output",
            "instruction",
            "drawn_instruction",
            "effective_instruction",
            "references",
            "gold_edits",
            "task_type",
            "meta",
            "position",
            "batch",
            "batch_position",
            "document",
            "document_position",
            "outputs",
            "highlights",
            "practice",
        ]


class StrictTextField(serializers.CharField):
    """Text, and only text: DRF's CharField turns 5 into "5", but an output that is a number is a mistake."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ItemInputSerializer(serializers.Serializer):
    external_id = serializers.CharField(max_length=255)
    model_output = serializers.CharField(trim_whitespace=False)
    # The serializer's metaclass moves declared fields into _declared_fields, so this field does not
    # hide Field.source at run time; the stubs see a class attribute replacing it.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, allow_blank=True, default="", trim_whitespace=False
    )
    instruction = serializers.CharField(required=False, allow_blank=True, default="")
    references = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=list
    )
    gold_edits = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=list
    )
    task_type = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    meta = serializers.DictField(required=False, default=dict)
    document = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=255, help_text="Document id; segments share it."
    )
    document_position = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=2**31 - 1,
        help_text="The segment's place in its document (unique there); absent or null: after the document's last.",
    )
    outputs = serializers.DictField(
        child=StrictTextField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
        help_text='Outputs keyed by system, for conditions: {"sysA": "…", "sysB": "…"}.',
    )
    highlights = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField()),
        required=False,
        default=dict,
        help_text='Error spans per output, code points, end exclusive: {"sysA": [[0, 4, "minor"]]}.',
    )
    practice = serializers.BooleanField(required=False, default=False, help_text="Shown first; left out of analysis.")


class ItemBulkCreateInputSerializer(serializers.Serializer):
    # What many=True builds, spelled out: the stubs' Serializer() does not take a list's max_length.
    items: serializers.ListSerializer = serializers.ListSerializer(
        child=ItemInputSerializer(), allow_empty=False, max_length=MAX_ITEMS_PER_REQUEST
    )


class ItemBulkCreateOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="New items.")
    skipped = serializers.IntegerField(help_text="Items already in the project with the same id and text.")
    items = ItemOutputSerializer(many=True)


# --------------------------------------------------------------------------- batches


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


# --------------------------------------------------------------------------- designs

MAX_DESIGN_ANNOTATORS = DESIGN_MAX_ANNOTATORS
# A plan asked for with GET: gunicorn refuses a request line over 4,094 bytes (414) before the app sees
# it, so a query is held well under that, and longer lists are POSTed (DesignPlanInputSerializer).
MAX_PLAN_QUERY_CHARS = 3000


def _names(text: str, *, field: str, limit: int) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise serializers.ValidationError(f"name at least one ({field} are comma-separated)")
    if len(names) > limit:
        raise serializers.ValidationError(f"at most {limit:,} names, got {len(names):,}")
    return names


class DesignPlanQueryInputSerializer(serializers.Serializer):
    annotators = serializers.CharField(
        help_text=f"Comma-separated usernames of active annotators, in slot order; at most {MAX_PLAN_QUERY_CHARS:,} "
        "characters in a query (a longer list: POST the plan)."
    )
    conditions = serializers.CharField(
        max_length=10_000, help_text="Comma-separated names of the project's declared conditions."
    )

    def validate_annotators(self, value: str) -> list[str]:
        if len(value) > MAX_PLAN_QUERY_CHARS:
            raise serializers.ValidationError(
                f"{len(value):,} characters is too long for a URL (at most {MAX_PLAN_QUERY_CHARS:,} here; servers "
                f"refuse long URLs): POST the plan instead, "
                f'{{"annotators": [...], "conditions": [...]}} (at most {MAX_DESIGN_ANNOTATORS:,} annotators)'
            )
        return _names(value, field="annotators", limit=MAX_DESIGN_ANNOTATORS)

    def validate_conditions(self, value: str) -> list[str]:
        return _names(value, field="conditions", limit=DESIGN_MAX_CONDITIONS)


class DesignPlanInputSerializer(serializers.Serializer):
    """A plan asked for with POST (writes nothing): lists of any length up to the documented maximum."""

    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        allow_empty=False,
        max_length=MAX_DESIGN_ANNOTATORS,
        help_text=f"Usernames of active annotators, in slot order (at most {MAX_DESIGN_ANNOTATORS:,}).",
    )
    conditions = serializers.ListField(
        child=serializers.CharField(max_length=100),
        allow_empty=False,
        max_length=DESIGN_MAX_CONDITIONS,
        help_text="Declared conditions to counterbalance, in the order the Latin square rotates them.",
    )


class DesignAssignInputSerializer(serializers.Serializer):
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        allow_empty=False,
        max_length=MAX_DESIGN_ANNOTATORS,
        help_text="Usernames of active annotators, in slot order (annotator i starts at document i).",
    )
    conditions = serializers.ListField(
        child=serializers.CharField(max_length=100),
        allow_empty=False,
        max_length=100,
        help_text="Declared conditions to counterbalance, in the order the Latin square rotates them.",
    )
    plan_digest = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The `plan_digest` of the plan you looked at: applied only if the plan is still that one.",
    )


class DesignPlanRowSerializer(serializers.Serializer):
    document = serializers.CharField()
    condition = serializers.CharField()


class DesignAnnotatorSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    conditions = serializers.DictField(child=serializers.IntegerField(), help_text="Documents under each condition.")
    documents = DesignPlanRowSerializer(many=True, help_text="In queue order (after the practice items).")


class DesignDocumentSerializer(serializers.Serializer):
    document = serializers.CharField()
    segments = serializers.IntegerField()
    conditions = serializers.DictField(
        child=serializers.IntegerField(), help_text="Annotators who see it under each condition."
    )


class DesignPlanOutputSerializer(serializers.Serializer):
    design = serializers.CharField(help_text="latin-square")
    applied = serializers.BooleanField(help_text="Whether the assignments were made (design-assign) or not (a plan).")
    created = serializers.IntegerField(help_text="Assignments made (0 for a plan).")
    assignments = serializers.IntegerField(help_text="Assignments the plan makes: annotators x (practice + segments).")
    annotators = serializers.ListField(child=serializers.CharField())
    conditions = serializers.ListField(child=serializers.CharField())
    documents = serializers.IntegerField()
    segments = serializers.IntegerField()
    practice_items = serializers.IntegerField(help_text="First in every queue, under no condition.")
    plan_digest = serializers.CharField(help_text="Send it with design-assign to apply exactly this plan.")
    per_annotator = DesignAnnotatorSerializer(many=True)
    per_document = DesignDocumentSerializer(many=True)


# --------------------------------------------------------------------------- assignments


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


# --------------------------------------------------------------------------- progress


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


# --------------------------------------------------------------------------- users


class UserOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)
    is_active = serializers.BooleanField()
    is_staff = serializers.BooleanField()
    last_login = serializers.DateTimeField(allow_null=True)


class UserAddInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=ROLES)
    password = serializers.CharField(
        required=False,
        write_only=True,
        style={"input_type": "password"},
        help_text="Required for a new user; changes an existing user's password.",
    )
    email = serializers.EmailField(required=False)


class UserRoleInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES)
