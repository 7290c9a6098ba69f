"""Input and output serializers of the designed-studies API (views_studies.py): the Latin-square
plan and its assignment. They only describe and check shapes; the services do the work."""

from rest_framework import serializers

from annotations.design import DESIGN_MAX_ANNOTATORS, DESIGN_MAX_CONDITIONS

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
