"""Input and output serializers of the agreement API (shapes only: metrics.agreement_report does the work)."""

from rest_framework import serializers

from metrics.agreement_report import DISTANCES
from metrics.analysis_fields import TextField


class AgreementQuerySerializer(serializers.Serializer):
    distances = TextField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text=f"Comma-separated output distances, of {', '.join(DISTANCES)}; empty = compression.",
    )


class AgreementOutputSerializer(serializers.Serializer):
    selection = serializers.DictField(help_text="The selection, as the analysis API describes it.")
    post_edits = serializers.IntegerField(help_text="Post-edits of items done by two or more annotators.")
    items = serializers.IntegerField(help_text="Items done by two or more annotators.")
    annotators = serializers.ListField(child=serializers.CharField())
    effort = serializers.DictField(
        help_text="alpha: Krippendorff's alpha (interval) on the target with D_o, D_e, pairable values and units; "
        "icc: the six Shrout & Fleiss ICCs with F-based 95% CIs on the complete-case items (null under 2 x 2)."
    )
    output = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per distance: pairs, items, the mean symmetric distance, and per annotator the mean distance to "
        "the others' post-edits of the same items with z, the modified z-score and the flag.",
    )
    definitions = serializers.DictField(child=serializers.CharField(), help_text="Each figure's definition and "
                                        "the package call that reproduces it.")  # fmt: skip
    messages = serializers.ListField(child=serializers.CharField())
