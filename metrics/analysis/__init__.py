"""Which text metric predicts post-editing effort: correlations, KNN regression, an effort model.

Pure: numpy, scipy, pandas, scikit-learn, numba (and statsmodels on request) only (no Django). The ORM side
(metrics.reports, the analyze command, the API) builds the frame and calls `analyze`.

- common.py: settings, names, CV scores, JSON conversion;
- correlation.py: Pearson, Spearman, Kendall, Williams's test, the metric matrix, the scatter line;
- folds.py: the published split and the repeated K-fold tables;
- knn.py: single-feature KNN regression R²;
- effort_model.py: least squares on every metric, the text lengths and the annotator;
- mixed.py: mixed-effects models (annotator and item random intercepts), R² after Nakagawa & Schielzeth;
- bootstrap.py: the paired bootstrap over items of a difference between two correlations;
- conditions.py: effort per condition of a designed study and the condition effect in a mixed model;
- pipeline.py: the whole analysis of a frame (every metric against a target);
- results.py: what an analysis holds (each metric's figures), and its JSON;
- comparisons.py: the best metric, Williams's tests and the bootstrap against it, the mixed models, the effort model;
- tables.py: the flat tables (one row per metric, one per condition);
- reml.py: the REML engine of the mixed models;
- documents.py · origins.py · outliers.py: per-document summaries, live against imported, the outlier rule.

The conventions are documented in the README ("Analysis") and in each module.
"""

from metrics.analysis.bootstrap import BootstrapDifference, paired_differences
from metrics.analysis.common import (
    ANNOTATOR,
    DEFAULT_SETTINGS,
    EDITED_LENGTH,
    EFFORT,
    ORIGINAL_LENGTH,
    SIMILARITY,
    CVScore,
    Settings,
    cv_score,
    is_constant,
    jsonable,
    orientation,
)
from metrics.analysis.conditions import (
    BaselineError,
    ConditionAnalysis,
    analyze_conditions,
    word_counts,
)
from metrics.analysis.correlation import (
    Correlation,
    LineFit,
    WilliamsTest,
    correlate,
    correlation_matrix,
    correlations_with,
    fisher_ci,
    fit_line,
    format_p,
    williams_test,
)
from metrics.analysis.effort_model import EffortModel, effort_model
from metrics.analysis.folds import FoldTables, fold_ids, group_fold_ids, split_mask
from metrics.analysis.knn import knn_predict, knn_r2_cv, knn_r2_published, knn_r2_tie_averaged, knn_scores
from metrics.analysis.mixed import MixedModel, mixed_model, standardise
from metrics.analysis.pipeline import analyze, analyze_targets
from metrics.analysis.results import Analysis, MetricResult
from metrics.analysis.tables import condition_rows, summary_rows

__all__ = [
    "BaselineError",
    "ConditionAnalysis",
    "analyze_conditions",
    "condition_rows",
    "word_counts",
    "ANNOTATOR",
    "DEFAULT_SETTINGS",
    "EDITED_LENGTH",
    "EFFORT",
    "ORIGINAL_LENGTH",
    "SIMILARITY",
    "Analysis",
    "CVScore",
    "Correlation",
    "EffortModel",
    "LineFit",
    "MetricResult",
    "Settings",
    "WilliamsTest",
    "analyze",
    "analyze_targets",
    "correlate",
    "correlation_matrix",
    "correlations_with",
    "cv_score",
    "effort_model",
    "fisher_ci",
    "fit_line",
    "fold_ids",
    "group_fold_ids",
    "FoldTables",
    "format_p",
    "is_constant",
    "knn_predict",
    "knn_r2_cv",
    "knn_r2_published",
    "knn_r2_tie_averaged",
    "knn_scores",
    "orientation",
    "jsonable",
    "split_mask",
    "standardise",
    "mixed_model",
    "MixedModel",
    "paired_differences",
    "BootstrapDifference",
    "summary_rows",
    "williams_test",
]
