"""Output serializers of the analysis JSON's `scenarios` key (metrics.analysis.scenarios): the shapes
only, for the OpenAPI schema. AnalysisWithScenariosOutputSerializer is the analysis API's answer."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from metrics.api.serializers_analysis import AnalysisOutputSerializer, CorrelationOutputSerializer


def _pair(help_text: str = "") -> serializers.ListField:
    return serializers.ListField(child=serializers.FloatField(), allow_null=True, help_text=help_text)


class DistributionOutputSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    sd = serializers.FloatField(allow_null=True, help_text="Sample sd (ddof=1).")
    min = serializers.FloatField(allow_null=True)
    q25 = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    q75 = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)
    counts = serializers.ListField(child=serializers.IntegerField(), help_text="Per bin of the shared edges.")


class ScenarioSummaryOutputSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    n = serializers.IntegerField(help_text="Items edited under the scenario.")
    length = DistributionOutputSerializer(help_text="Characters of the edited texts.")
    distance = DistributionOutputSerializer(help_text="Compression distances.")


class PairedOutputSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    reference = serializers.CharField()
    n = serializers.IntegerField(help_text="Items edited under both, with a distance.")
    slope = serializers.FloatField(allow_null=True, help_text="OLS: distance(scenario) on distance(reference).")
    intercept = serializers.FloatField(allow_null=True)
    slope_ci = _pair()
    intercept_ci = _pair()
    r2 = serializers.FloatField(allow_null=True)
    below_identity = serializers.FloatField(allow_null=True, help_text="Share of items under the x = y line.")
    mean_difference = serializers.FloatField(allow_null=True, help_text="Scenario minus reference, per item.")
    difference_ci = _pair("Percentile bootstrap over items (seeded).")
    wilcoxon_statistic = serializers.FloatField(allow_null=True)
    wilcoxon_p = serializers.FloatField(allow_null=True, help_text="One-sided: the scenario edits less.")
    ordered = serializers.BooleanField(allow_null=True, help_text="wilcoxon_p < alpha.")
    points = serializers.ListField(child=_pair(), help_text="(reference, scenario) per item.")
    messages = serializers.ListField(child=serializers.CharField())


class HumanCorrelationOutputSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    correlation = CorrelationOutputSerializer(help_text="With the items' mean human effort, over the shared items.")


class ScenarioSettingsOutputSerializer(serializers.Serializer):
    confidence = serializers.FloatField()
    alpha = serializers.FloatField()
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()


class ScenariosOutputSerializer(serializers.Serializer):
    reference = serializers.CharField()
    scenarios = serializers.ListField(child=serializers.CharField())
    settings = ScenarioSettingsOutputSerializer()
    summaries = ScenarioSummaryOutputSerializer(many=True)
    length_edges = serializers.ListField(child=serializers.FloatField())
    distance_edges = serializers.ListField(child=serializers.FloatField())
    comparisons = PairedOutputSerializer(many=True)
    human = HumanCorrelationOutputSerializer(many=True)
    human_target = serializers.CharField(allow_null=True)
    messages = serializers.ListField(child=serializers.CharField())


# The analysis API's one answer: it keeps the schema's component name.
@extend_schema_serializer(component_name="AnalysisOutput")
class AnalysisWithScenariosOutputSerializer(AnalysisOutputSerializer):
    scenarios = ScenariosOutputSerializer(
        allow_null=True,
        help_text="The synthetic edits by scenario, each against the reference; null without synthetic edits.",
    )
