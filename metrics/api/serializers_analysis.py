"""Output serializers of the analysis API (no logic: metrics.reports does the work). Its input is
metrics.analysis_options.AnalysisOptionsSerializer, the one the report page and the analyze command use.

The output serializers describe the analysis JSON (the analyze command's `--format json`)
for the OpenAPI schema; the README's "Analysis JSON" section documents the same fields.
"""

from rest_framework import serializers

from metrics.analysis import Settings

_DEFAULTS = Settings()


class SelectionOutputSerializer(serializers.Serializer):
    project = serializers.CharField()
    project_id = serializers.IntegerField()
    target = serializers.CharField()
    target_column = serializers.CharField(help_text="The PostEdit effort field read (wall_ms, keystrokes, ...).")
    variant = serializers.CharField()
    annotators = serializers.ListField(child=serializers.CharField(), help_text="Empty = all annotators.")
    task_type = serializers.CharField(allow_null=True)
    origin = serializers.CharField(allow_null=True)
    exclude_flagged = serializers.BooleanField()
    idle_threshold_s = serializers.FloatField(allow_null=True)
    include_practice = serializers.BooleanField()
    pause_thresholds_ms = serializers.ListField(
        child=serializers.FloatField(), help_text="A process target's pause thresholds (docs/process.md)."
    )


class SettingsOutputSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    test_size = serializers.FloatField()
    seed = serializers.IntegerField()
    cv_folds = serializers.IntegerField()
    cv_repeats = serializers.IntegerField()
    confidence = serializers.FloatField()
    alpha = serializers.FloatField()
    min_edits = serializers.IntegerField()
    cv_gap_flag = serializers.FloatField(
        help_text="Flag a metric whose random-CV R² exceeds its item-grouped one by more."
    )
    bootstrap_resamples = serializers.IntegerField()
    mixed_models = serializers.BooleanField()
    log_target = serializers.BooleanField(help_text="The mixed models explain log(target).")
    mixed_engine = serializers.ChoiceField(choices=["reml", "statsmodels"])


class CVScoreOutputSerializer(serializers.Serializer):
    mean = serializers.FloatField()
    sd = serializers.FloatField(allow_null=True, help_text="Sample sd over repeats; null for a single repeat.")
    repeats = serializers.ListField(child=serializers.FloatField(), help_text="Each repeat's mean fold R².")


class CorrelationOutputSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    pearson = serializers.FloatField(allow_null=True)
    pearson_p = serializers.FloatField(allow_null=True)
    pearson_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    spearman = serializers.FloatField(allow_null=True)
    spearman_p = serializers.FloatField(allow_null=True)
    kendall = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b.")
    kendall_p = serializers.FloatField(allow_null=True)


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


class BootstrapOutputSerializer(serializers.Serializer):
    best = serializers.CharField()
    n = serializers.IntegerField(help_text="Rows where the target and both metrics are present.")
    units = serializers.IntegerField(help_text="Items resampled (rows, without an item column).")
    unit = serializers.ChoiceField(choices=["item", "row"])
    difference = serializers.FloatField(help_text="Oriented r of the best metric minus this metric's.")
    ci = serializers.ListField(child=serializers.FloatField(allow_null=True), min_length=2, max_length=2)
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    excludes_zero = serializers.BooleanField(help_text="The interval lies above zero.")


class MixedModelOutputSerializer(serializers.Serializer):
    formula = serializers.CharField(help_text="z() = standardised on the rows used.")
    n = serializers.IntegerField()
    groups = serializers.DictField(child=serializers.IntegerField(), help_text="Random factor -> its levels.")
    coefficient = serializers.FloatField(
        allow_null=True, help_text="The metric's standardised slope: target sds per metric sd (both standardised)."
    )
    se = serializers.FloatField(allow_null=True)
    df = serializers.FloatField(allow_null=True, help_text="Satterthwaite's degrees of freedom, as lmerTest's.")
    t = serializers.FloatField(allow_null=True)
    ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2, help_text="t on df."
    )
    p = serializers.FloatField(allow_null=True, help_text="t on df.")
    wald_ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2, help_text="Normal (Wald)."
    )
    wald_p = serializers.FloatField(allow_null=True, help_text="Normal (Wald): right only with many annotators.")
    variances = serializers.DictField(child=serializers.FloatField(), help_text="Random factors and residual.")
    r2_marginal = serializers.FloatField(allow_null=True, help_text="Nakagawa & Schielzeth: fixed effects only.")
    r2_conditional = serializers.FloatField(allow_null=True, help_text="Fixed and random effects.")
    converged = serializers.BooleanField()
    reml_criterion = serializers.FloatField(
        allow_null=True,
        help_text="-2 log restricted likelihood (lme4's REML criterion at convergence): lower is better.",
    )
    gradient = serializers.FloatField(allow_null=True, help_text="max |d criterion / d theta| at the estimates.")
    singular = serializers.BooleanField(help_text="lme4's boundary (singular) fit: a relative sd below 1e-4.")
    engine = serializers.CharField(help_text="The fitting engine: reml or statsmodels (settings.mixed_engine).")
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="Beside the figures: singular fit, a factor with fewer than 5 levels."
    )
    messages = serializers.ListField(child=serializers.CharField())


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
    kendall = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b.")
    kendall_p = serializers.FloatField(allow_null=True)
    pearson_per_annotator = serializers.DictField(child=serializers.FloatField(allow_null=True))
    per_annotator = serializers.DictField(child=CorrelationOutputSerializer())
    knn_r2 = serializers.FloatField(
        allow_null=True,
        help_text="K-NN R², published protocol (one split, scikit-learn's KNeighborsRegressor, rows in import order).",
    )
    knn_r2_tie_averaged = serializers.FloatField(
        allow_null=True, help_text="The same split, training points tied at the K-th distance sharing its weight."
    )
    knn_r2_row_orders = CVScoreOutputSerializer(
        allow_null=True,
        help_text="The published protocol on 5 shuffled row orders (RandomState(seed)): how much knn_r2 owes to the "
        "row order. Trust knn_r2_tie_averaged and the CV figures.",
    )
    knn_r2_cv = CVScoreOutputSerializer(allow_null=True, help_text="Tie-averaged, repeated K-fold CV (random folds).")
    knn_r2_cv_item = CVScoreOutputSerializer(allow_null=True, help_text="Repeated K-fold grouped by item.")
    knn_r2_cv_annotator = CVScoreOutputSerializer(allow_null=True, help_text="Repeated K-fold grouped by annotator.")
    cv_item_gap = serializers.FloatField(allow_null=True, help_text="knn_r2_cv mean minus knn_r2_cv_item mean.")
    cv_optimistic = serializers.BooleanField(
        allow_null=True, help_text="cv_item_gap above settings.cv_gap_flag: the random CV leaks items."
    )
    williams_vs_best = WilliamsOutputSerializer(allow_null=True)
    bootstrap_vs_best = BootstrapOutputSerializer(
        allow_null=True, help_text="Paired bootstrap over items of the oriented-r difference with the best metric."
    )
    mixed = MixedModelOutputSerializer(allow_null=True, help_text="target ~ metric + (1 | annotator) [+ (1 | item)].")
    messages = serializers.ListField(child=serializers.CharField())


class MatrixOutputSerializer(serializers.Serializer):
    metrics = serializers.ListField(child=serializers.CharField())
    values = serializers.ListField(child=serializers.ListField(child=serializers.FloatField(allow_null=True)))


class EffortModelOutputSerializer(serializers.Serializer):
    inputs = serializers.ListField(child=serializers.CharField())
    n = serializers.IntegerField()
    dropped = serializers.IntegerField()
    r2_cv = CVScoreOutputSerializer(allow_null=True)
    r2_cv_item = CVScoreOutputSerializer(allow_null=True, help_text="Repeated K-fold grouped by item.")
    r2_cv_annotator = CVScoreOutputSerializer(
        allow_null=True, help_text="Repeated K-fold grouped by annotator, without the annotator input."
    )
    contributions = serializers.DictField(
        child=serializers.FloatField(), help_text="Drop-column importance: CV R² lost without the input."
    )
    coefficients = serializers.DictField(
        child=serializers.FloatField(),
        help_text="Target units per input sd (inputs standardised, the target not); the annotator has none.",
    )
    excluded_metrics = serializers.ListField(child=serializers.CharField())
    messages = serializers.ListField(child=serializers.CharField())
    method = serializers.CharField()


class WithoutOutliersOutputSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    pearson = serializers.FloatField(allow_null=True)
    spearman = serializers.FloatField(allow_null=True)
    knn_r2 = serializers.FloatField(allow_null=True)
    knn_r2_tie_averaged = serializers.FloatField(allow_null=True)
    knn_r2_cv_mean = serializers.FloatField(allow_null=True)
    knn_r2_cv_item_mean = serializers.FloatField(allow_null=True)


class OutliersOutputSerializer(serializers.Serializer):
    rule = serializers.CharField()
    threshold = serializers.FloatField(help_text="The modified z-score above which an edit is flagged.")
    n = serializers.IntegerField(help_text="Edits checked (with a target value).")
    flagged = serializers.IntegerField()
    upper_bound = serializers.FloatField(allow_null=True, help_text="In the target's units: above it, flagged.")
    median = serializers.FloatField(allow_null=True)
    largest = serializers.ListField(child=serializers.FloatField(), help_text="The largest flagged values.")
    without = serializers.DictField(
        child=WithoutOutliersOutputSerializer(), help_text="Metric -> its key figures without the flagged edits."
    )
    effort_model_r2_cv_without = serializers.FloatField(allow_null=True)
    cv_repeats_without = serializers.IntegerField(
        allow_null=True, help_text="CV repeats of the figures without outliers (2 above 20,000 edits)."
    )
    best_metric_without = serializers.CharField(allow_null=True)
    messages = serializers.ListField(child=serializers.CharField())


class FlaggedOutputSerializer(serializers.Serializer):
    in_selection = serializers.IntegerField(help_text="Flagged post-edits in the selection (before any exclusion).")
    excluded = serializers.BooleanField()


class IdleSensitivityOutputSerializer(serializers.Serializer):
    thresholds_s = serializers.ListField(child=serializers.FloatField())
    project_threshold_s = serializers.FloatField()
    n = serializers.IntegerField(help_text="Post-edits with an event log and every metric value.")
    without_log = serializers.IntegerField(help_text="Post-edits without an event log (imported): left out.")
    mean_active_ms = serializers.ListField(child=serializers.FloatField(allow_null=True))
    metrics = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
        help_text="Metric -> Pearson r with the recomputed active time at each threshold.",
    )
    stored_checked = serializers.IntegerField()
    stored_equal = serializers.IntegerField(help_text="Recomputed at the project's threshold = the stored value.")


class PracticeOutputSerializer(serializers.Serializer):
    in_selection = serializers.IntegerField(help_text="Post-edits of practice items in the selection.")
    excluded = serializers.BooleanField(help_text="They were left out (include_practice not set).")


class ConditionSummaryOutputSerializer(serializers.Serializer):
    condition = serializers.CharField()
    n = serializers.IntegerField(help_text="Edits with a target value.")
    items = serializers.IntegerField()
    annotators = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    ci = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        min_length=2,
        max_length=2,
        help_text="95% percentile bootstrap interval of the mean, items resampled as clusters.",
    )
    words = serializers.IntegerField(help_text="Words of the edited texts on the rows with a time.")
    hours = serializers.FloatField(allow_null=True)
    words_per_hour = serializers.FloatField(allow_null=True)


class ConditionEffectOutputSerializer(serializers.Serializer):
    condition = serializers.CharField()
    estimate = serializers.FloatField(help_text="Difference from the baseline (target units, or log units).")
    se = serializers.FloatField()
    ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2, help_text="t on df."
    )
    p = serializers.FloatField(allow_null=True, help_text="t on df.")
    df = serializers.FloatField(allow_null=True, help_text="Satterthwaite's degrees of freedom, as lmerTest's.")
    t = serializers.FloatField(allow_null=True)
    wald_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    wald_p = serializers.FloatField(allow_null=True, help_text="Normal (Wald).")
    n = serializers.IntegerField(help_text="Edits of the condition in the model.")
    ratio = serializers.FloatField(allow_null=True, help_text="exp(estimate), for a model of log(time).")
    ratio_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="Fewer than 10 edits.")


class ConditionModelOutputSerializer(serializers.Serializer):
    formula = serializers.CharField()
    n = serializers.IntegerField()
    groups = serializers.DictField(child=serializers.IntegerField(), help_text="Random factor -> its levels.")
    log_target = serializers.BooleanField()
    intercept = serializers.FloatField(allow_null=True, help_text="The baseline's fitted mean.")
    intercept_se = serializers.FloatField(allow_null=True)
    intercept_df = serializers.FloatField(allow_null=True)
    intercept_p = serializers.FloatField(allow_null=True)
    effects = serializers.ListField(child=ConditionEffectOutputSerializer())
    variances = serializers.DictField(child=serializers.FloatField(), help_text="Random factors and residual.")
    converged = serializers.BooleanField()
    reml_criterion = serializers.FloatField(
        allow_null=True,
        help_text="-2 log restricted likelihood (lme4's REML criterion at convergence): lower is better.",
    )
    gradient = serializers.FloatField(allow_null=True, help_text="max |d criterion / d theta| at the estimates.")
    singular = serializers.BooleanField(help_text="lme4's boundary (singular) fit: a relative sd below 1e-4.")
    engine = serializers.CharField()
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="Beside the figures: singular fit, a factor with fewer than 5 levels."
    )
    item_effect = serializers.CharField(
        help_text='The item random intercept: "in the model", or why not (one post-edit per item, no item column).'
    )
    messages = serializers.ListField(child=serializers.CharField())


class ConditionsOutputSerializer(serializers.Serializer):
    target = serializers.CharField()
    time = serializers.CharField(help_text="The time column words per hour divide by.")
    baseline = serializers.CharField(allow_null=True)
    conditions = serializers.ListField(child=serializers.CharField(), help_text="The baseline first.")
    summaries = serializers.ListField(child=ConditionSummaryOutputSerializer())
    model = ConditionModelOutputSerializer(allow_null=True, help_text="target ~ C(condition) + random intercepts.")
    log_model = ConditionModelOutputSerializer(allow_null=True, help_text="The same on log(time), with log_time.")
    left_out = serializers.IntegerField(help_text="Edits without a condition, left out.")
    # A CharField: a second ChoiceField over the same choices would give the schema two enum names for one set.
    bootstrap_unit = serializers.CharField(help_text='What the bootstrap resamples: "item" or "row".')
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    words_from = serializers.CharField()
    messages = serializers.ListField(child=serializers.CharField())


class EffortTotalOutputSerializer(serializers.Serializer):
    total = serializers.FloatField(allow_null=True, help_text="Sum over the post-edits with a value.")
    mean = serializers.FloatField(allow_null=True, help_text="Mean per post-edit with a value.")
    n = serializers.IntegerField(help_text="Post-edits with a value.")


class DocumentOutputSerializer(serializers.Serializer):
    document = serializers.CharField()
    segments = serializers.IntegerField(help_text="Distinct items with a post-edit in the selection.")
    post_edits = serializers.IntegerField()
    annotators = serializers.IntegerField()
    conditions = serializers.ListField(child=serializers.CharField(), help_text="Conditions seen, sorted.")
    words = serializers.IntegerField(help_text="Whitespace-separated words of the submitted post-edits, summed.")
    effort = serializers.DictField(child=EffortTotalOutputSerializer(), help_text="Per effort field.")


class DocumentsOutputSerializer(serializers.Serializer):
    documents = DocumentOutputSerializer(many=True)
    without_document = serializers.IntegerField(help_text="Post-edits of items without a document: in no row.")
    practice_left_out = serializers.IntegerField()
    efforts = serializers.ListField(child=serializers.CharField())
    messages = serializers.ListField(child=serializers.CharField())


class OriginEffortOutputSerializer(serializers.Serializer):
    n_items = serializers.IntegerField(help_text="Shared items with a value under both origins.")
    live_mean = serializers.FloatField(allow_null=True, help_text="Mean over items of the item's live mean.")
    imported_mean = serializers.FloatField(allow_null=True)
    difference = serializers.FloatField(allow_null=True, help_text="Mean over items of live minus imported.")
    ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="Percentile bootstrap over items."
    )


class OriginCorrelationOutputSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    pearson = serializers.FloatField(allow_null=True)
    pearson_p = serializers.FloatField(allow_null=True)
    pearson_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)


class LiveVsImportedOutputSerializer(serializers.Serializer):
    target = serializers.CharField()
    shared_items = serializers.IntegerField(help_text="Items with a live and an imported post-edit.")
    live_items = serializers.IntegerField()
    imported_items = serializers.IntegerField()
    live_post_edits = serializers.IntegerField(help_text="On the shared items.")
    imported_post_edits = serializers.IntegerField(help_text="On the shared items.")
    efforts = serializers.DictField(child=OriginEffortOutputSerializer(), help_text="Per effort field.")
    correlations = serializers.DictField(
        child=serializers.DictField(child=OriginCorrelationOutputSerializer()),
        help_text="Metric -> origin (live, imported) -> Pearson r with the target on the shared items.",
    )
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    confidence = serializers.FloatField()
    practice_left_out = serializers.IntegerField()
    source_project = serializers.CharField(allow_null=True, help_text="For a copy: the project it was copied from.")
    messages = serializers.ListField(child=serializers.CharField())


class AnalysisOutputSerializer(serializers.Serializer):
    selection = SelectionOutputSerializer()
    target = serializers.CharField(help_text="The target column.")
    settings = SettingsOutputSerializer()
    n_rows = serializers.IntegerField()
    n_used = serializers.IntegerField(help_text="Rows with a target value.")
    dropped_target = serializers.IntegerField()
    annotators = serializers.ListField(child=serializers.CharField())
    items = serializers.IntegerField(help_text="Distinct items among the rows used.")
    metrics = serializers.DictField(child=MetricResultOutputSerializer())
    best_metric = serializers.CharField(allow_null=True)
    best_by = serializers.CharField()
    matrix = MatrixOutputSerializer()
    effort_model = EffortModelOutputSerializer(allow_null=True)
    outliers = OutliersOutputSerializer(
        allow_null=True, help_text="The outlier rule on the target and the key figures without the flagged edits."
    )
    units = serializers.DictField(child=serializers.CharField(), help_text="What the coefficients are in.")
    messages = serializers.ListField(child=serializers.CharField())
    flagged = FlaggedOutputSerializer()
    idle_sensitivity = IdleSensitivityOutputSerializer(allow_null=True, help_text="For the active_time target.")
    practice = PracticeOutputSerializer()
    conditions = ConditionsOutputSerializer(
        allow_null=True, help_text="Effort by condition and the condition effects (when edits carry conditions)."
    )
    documents = DocumentsOutputSerializer(
        allow_null=True, help_text="The per-document summary; null when no item of the project has a document."
    )
    live_vs_imported = LiveVsImportedOutputSerializer(
        allow_null=True,
        help_text="Live against imported effort on the same items; null without post-edits of both origins.",
    )
