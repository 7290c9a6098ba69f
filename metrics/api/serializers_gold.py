"""Input and output serializers of the gold-metric API (no logic: metrics.gold_figures does the work)."""

from rest_framework import serializers

from metrics.analysis_options import ORIGINS


class GoldQuerySerializer(serializers.Serializer):
    annotators = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=10_000,
        help_text="Comma-separated usernames; empty = all.",
    )
    task_type = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    origin = serializers.ChoiceField(choices=["", *ORIGINS], required=False, default="")


class GoldSelectionOutputSerializer(serializers.Serializer):
    project = serializers.CharField()
    project_id = serializers.IntegerField()
    annotators = serializers.ListField(child=serializers.CharField(), help_text="Empty = all annotators.")
    task_type = serializers.CharField(allow_null=True)
    origin = serializers.CharField(allow_null=True)


class GoldMetricOutputSerializer(serializers.Serializer):
    metric = serializers.CharField(help_text="editlab's name.")
    editeval_name = serializers.CharField(
        help_text="The name EditEval's report gives the figure (em, update_rougeLsum...)."
    )
    n = serializers.IntegerField(help_text="Post-edits with gold edits (the examples).")
    n_values = serializers.IntegerField(help_text="Stored per-example values of the metric's current version.")
    stale = serializers.IntegerField(help_text="Stored values of an older version, left out of the mean.")
    mean = serializers.FloatField(allow_null=True, help_text="Mean of editlab's per-example values.")
    editeval = serializers.FloatField(
        allow_null=True,
        help_text="The figure over all examples as EditEval's code computes it: cite this one beside published "
        "EditEval results. Null where EditEval's code fails (see editeval_undefined).",
    )
    editeval_undefined = serializers.CharField(help_text="Why there is no editeval figure; empty when there is one.")
    note = serializers.CharField(help_text="What to know to compare the two figures (e.g. different scales).")


class GoldOutputSerializer(serializers.Serializer):
    selection = GoldSelectionOutputSerializer()
    n = serializers.IntegerField(help_text="Post-edits of the selection with gold edits; 0: no table.")
    order = serializers.CharField(help_text="Order of the examples (EditEval's GLEU depends on it).")
    metrics = GoldMetricOutputSerializer(many=True)
    messages = serializers.ListField(child=serializers.CharField())
