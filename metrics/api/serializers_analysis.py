"""Input and output serializers of the analysis API (no logic: metrics.reports does the work).

The output serializers describe the analysis JSON (the analyze command's `--format json`)
for the OpenAPI schema; the README's "Analysis JSON" section documents the same fields.
"""

from rest_framework import serializers

from metrics.analysis import Settings
from metrics.reports import ORIGINS
from metrics.selectors import TARGETS, VARIANTS

_DEFAULTS = Settings()


class AnalysisQuerySerializer(serializers.Serializer):
    target = serializers.ChoiceField(choices=list(TARGETS), help_text="The effort to explain.")
    variant = serializers.ChoiceField(choices=list(VARIANTS), default=VARIANTS[0])
    annotators = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="Comma-separated usernames; empty = all."
    )
    task_type = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    origin = serializers.ChoiceField(choices=["", *ORIGINS], required=False, default="")
    k = serializers.IntegerField(required=False, default=_DEFAULTS.k, min_value=1, max_value=100)
    test_size = serializers.FloatField(required=False, default=_DEFAULTS.test_size, min_value=0.05, max_value=0.95)
    seed = serializers.IntegerField(required=False, default=_DEFAULTS.seed, min_value=0, max_value=2**32 - 1)
    cv_repeats = serializers.IntegerField(required=False, default=_DEFAULTS.cv_repeats, min_value=1, max_value=50)


class SelectionOutputSerializer(serializers.Serializer):
    project = serializers.CharField()
    project_id = serializers.IntegerField()
    target = serializers.CharField()
    target_column = serializers.CharField(help_text="The PostEdit effort field read (wall_ms, keystrokes, ...).")
    variant = serializers.CharField()
    annotators = serializers.ListField(child=serializers.CharField(), help_text="Empty = all annotators.")
    task_type = serializers.CharField(allow_null=True)
    origin = serializers.CharField(allow_null=True)


class SettingsOutputSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    test_size = serializers.FloatField()
    seed = serializers.IntegerField()
    cv_folds = serializers.IntegerField()
    cv_repeats = serializers.IntegerField()
    confidence = serializers.FloatField()
    alpha = serializers.FloatField()
    min_edits = serializers.IntegerField()


class CVScoreOutputSerializer(serializers.Serializer):
    mean = serializers.FloatField()
    sd = serializers.FloatField(help_text="Sample sd over repeats.")
    repeats = serializers.ListField(child=serializers.FloatField(), help_text="Each repeat's mean fold R².")


class CorrelationOutputSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    pearson = serializers.FloatField(allow_null=True)
    pearson_p = serializers.FloatField(allow_null=True)
    pearson_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    spearman = serializers.FloatField(allow_null=True)
    spearman_p = serializers.FloatField(allow_null=True)


class WilliamsOutputSerializer(serializers.Serializer):
    best = serializers.CharField()
    n = serializers.IntegerField(help_text="Rows where the target and both metrics are present.")
    r_best = serializers.FloatField()
    r_metric = serializers.FloatField()
    r_between = serializers.FloatField()
    t = serializers.FloatField()
    df = serializers.IntegerField()
    p = serializers.FloatField(help_text="One-sided: the best metric's oriented r is higher.")
    significant = serializers.BooleanField()


class MetricResultOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    direction = serializers.ChoiceField(choices=["effort", "similarity"])
    n = serializers.IntegerField()
    dropped = serializers.IntegerField(help_text="Rows left out for a missing metric value.")
    pearson = serializers.FloatField(allow_null=True, help_text="Pooled Pearson r (raw sign).")
    pearson_p = serializers.FloatField(allow_null=True)
    pearson_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    pearson_oriented = serializers.FloatField(allow_null=True, help_text="r with similarity metrics negated.")
    spearman = serializers.FloatField(allow_null=True)
    spearman_p = serializers.FloatField(allow_null=True)
    pearson_per_annotator = serializers.DictField(child=serializers.FloatField(allow_null=True))
    per_annotator = serializers.DictField(child=CorrelationOutputSerializer())
    knn_r2 = serializers.FloatField(allow_null=True, help_text="K-NN R², published protocol (one split).")
    knn_r2_cv = CVScoreOutputSerializer(allow_null=True)
    williams_vs_best = WilliamsOutputSerializer(allow_null=True)
    messages = serializers.ListField(child=serializers.CharField())


class MatrixOutputSerializer(serializers.Serializer):
    metrics = serializers.ListField(child=serializers.CharField())
    values = serializers.ListField(child=serializers.ListField(child=serializers.FloatField(allow_null=True)))


class EffortModelOutputSerializer(serializers.Serializer):
    inputs = serializers.ListField(child=serializers.CharField())
    n = serializers.IntegerField()
    dropped = serializers.IntegerField()
    r2_cv = CVScoreOutputSerializer(allow_null=True)
    contributions = serializers.DictField(
        child=serializers.FloatField(), help_text="Drop-column importance: CV R² lost without the input."
    )
    coefficients = serializers.DictField(child=serializers.FloatField(), help_text="On standardised inputs.")
    excluded_metrics = serializers.ListField(child=serializers.CharField())
    messages = serializers.ListField(child=serializers.CharField())
    method = serializers.CharField()


class AnalysisOutputSerializer(serializers.Serializer):
    selection = SelectionOutputSerializer()
    target = serializers.CharField(help_text="The target column.")
    settings = SettingsOutputSerializer()
    n_rows = serializers.IntegerField()
    n_used = serializers.IntegerField(help_text="Rows with a target value.")
    dropped_target = serializers.IntegerField()
    annotators = serializers.ListField(child=serializers.CharField())
    metrics = serializers.DictField(child=MetricResultOutputSerializer())
    best_metric = serializers.CharField(allow_null=True)
    best_by = serializers.CharField()
    matrix = MatrixOutputSerializer()
    effort_model = EffortModelOutputSerializer(allow_null=True)
    messages = serializers.ListField(child=serializers.CharField())
