"""The flat tables of an analysis: one row per metric, one row per condition.

Pure (no Django). The report page, the analyze command and the CSV downloads show these rows.
"""

from __future__ import annotations

from metrics.analysis.common import jsonable
from metrics.analysis.conditions import ConditionAnalysis, ConditionEffect, ConditionModel
from metrics.analysis.results import Analysis

WITHOUT_OUTLIERS_COLUMNS = (
    "pearson",
    "spearman",
    "knn_r2",
    "knn_r2_tie_averaged",
    "knn_r2_cv_mean",
    "knn_r2_cv_item_mean",
)
MIXED_COLUMNS = (
    "mixed_coefficient",
    "mixed_se",
    "mixed_df",
    "mixed_p",
    "mixed_ci_low",
    "mixed_ci_high",
    "mixed_wald_p",
    "mixed_r2_marginal",
    "mixed_r2_conditional",
)


def summary_rows(analysis: Analysis) -> list[dict]:
    """One flat row per metric: the table of the report, the analyze command and the CSV.

    Per-annotator Pearson r comes as `pearson[<annotator>]` columns, in annotator order. `mixed_target`
    names what the mixed model explains (`log(wall_ms)` with log_target, when the mixed columns are
    also given as `mixed_log_*`); `*_without_outliers` are the figures without the flagged edits
    (empty when none is flagged).
    """
    rows = []
    outliers = analysis.outliers
    mixed_target = f"log({analysis.target})" if analysis.settings.log_target else analysis.target
    for name, m in analysis.metrics.items():
        williams, boot, mixed = m.williams_vs_best, m.bootstrap_vs_best, m.mixed
        cv = m.knn_r2_cv
        orders = m.knn_r2_row_orders
        without = outliers.without.get(name, {}) if outliers else {}
        row = {
            "metric": name,
            "direction": m.direction,
            "n": m.n,
            "dropped": m.dropped,
            "pearson": m.pearson,
            "pearson_p": m.pearson_p,
            "pearson_ci_low": m.pearson_ci[0] if m.pearson_ci else None,
            "pearson_ci_high": m.pearson_ci[1] if m.pearson_ci else None,
            "pearson_oriented": m.pearson_oriented,
            "spearman": m.spearman,
            "spearman_p": m.spearman_p,
            "kendall": m.kendall,
            "kendall_p": m.kendall_p,
            "knn_r2": m.knn_r2,
            "knn_r2_tie_averaged": m.knn_r2_tie_averaged,
            "knn_r2_row_orders_mean": orders.mean if orders else None,
            "knn_r2_row_orders_sd": orders.sd if orders else None,
            "knn_r2_row_orders_min": min(orders.repeats) if orders else None,
            "knn_r2_row_orders_max": max(orders.repeats) if orders else None,
            "knn_r2_cv_mean": cv.mean if cv else None,
            "knn_r2_cv_sd": cv.sd if cv else None,
            "knn_r2_cv_item_mean": m.knn_r2_cv_item.mean if m.knn_r2_cv_item else None,
            "knn_r2_cv_item_sd": m.knn_r2_cv_item.sd if m.knn_r2_cv_item else None,
            "knn_r2_cv_annotator_mean": m.knn_r2_cv_annotator.mean if m.knn_r2_cv_annotator else None,
            "knn_r2_cv_annotator_sd": m.knn_r2_cv_annotator.sd if m.knn_r2_cv_annotator else None,
            "cv_item_gap": m.cv_item_gap,
            "cv_optimistic": m.cv_optimistic,
            "best": name == analysis.best_metric,
            "williams_t": williams.t if williams else None,
            "williams_p": williams.p if williams else None,
            "williams_significant": williams.significant if williams else None,
            "bootstrap_difference": boot.difference if boot else None,
            "bootstrap_ci_low": boot.ci[0] if boot else None,
            "bootstrap_ci_high": boot.ci[1] if boot else None,
            "bootstrap_excludes_zero": boot.excludes_zero if boot else None,
            "mixed_target": mixed_target if mixed else None,
            "mixed_coefficient": mixed.coefficient if mixed else None,
            "mixed_se": mixed.se if mixed else None,
            "mixed_df": mixed.df if mixed else None,
            "mixed_p": mixed.p if mixed else None,
            "mixed_ci_low": mixed.ci[0] if mixed and mixed.ci else None,
            "mixed_ci_high": mixed.ci[1] if mixed and mixed.ci else None,
            "mixed_wald_p": mixed.wald_p if mixed else None,
            "mixed_r2_marginal": mixed.r2_marginal if mixed else None,
            "mixed_r2_conditional": mixed.r2_conditional if mixed else None,
            "mixed_reml_criterion": mixed.reml_criterion if mixed else None,
            "mixed_converged": mixed.converged if mixed else None,
            "mixed_singular": mixed.singular if mixed else None,
            "mixed_warnings": "; ".join(mixed.warnings) if mixed else None,
            "outliers_flagged": outliers.flagged if outliers else None,
            **{f"{key}_without_outliers": without.get(key) for key in WITHOUT_OUTLIERS_COLUMNS},
        }
        if analysis.settings.log_target:  # the same figures under names that say they are of log(target)
            row.update({f"mixed_log_{key[len('mixed_') :]}": row[key] for key in MIXED_COLUMNS})
        for annotator in analysis.annotators:
            row[f"pearson[{annotator}]"] = m.pearson_per_annotator.get(annotator)
        rows.append(jsonable(row))
    return rows


def condition_rows(analysis: ConditionAnalysis) -> list[dict]:
    """One flat row per condition (summary, and the effect against the baseline): tables and CSV."""
    effects = {e.condition: e for e in analysis.model.effects} if analysis.model else {}
    log_effects = {e.condition: e for e in analysis.log_model.effects} if analysis.log_model else {}
    rows = []
    for s in analysis.summaries:
        effect, log_effect = effects.get(s.condition), log_effects.get(s.condition)
        rows.append(
            jsonable(
                {
                    "condition": s.condition,
                    "baseline": s.condition == analysis.baseline,
                    "n": s.n,
                    "items": s.items,
                    "annotators": s.annotators,
                    "mean": s.mean,
                    "median": s.median,
                    "mean_ci_low": s.ci[0] if s.ci else None,
                    "mean_ci_high": s.ci[1] if s.ci else None,
                    "words": s.words,
                    "hours": s.hours,
                    "words_per_hour": s.words_per_hour,
                    "effect": effect.estimate if effect else None,
                    "effect_ci_low": effect.ci[0] if effect and effect.ci else None,
                    "effect_ci_high": effect.ci[1] if effect and effect.ci else None,
                    "effect_p": effect.p if effect else None,
                    "effect_df": effect.df if effect else None,
                    "effect_wald_p": effect.wald_p if effect else None,
                    "effect_warnings": _warnings(analysis.model, effect),
                    "log_effect": log_effect.estimate if log_effect else None,
                    "time_ratio": log_effect.ratio if log_effect else None,
                    "time_ratio_ci_low": log_effect.ratio_ci[0] if log_effect and log_effect.ratio_ci else None,
                    "time_ratio_ci_high": log_effect.ratio_ci[1] if log_effect and log_effect.ratio_ci else None,
                    "log_effect_p": log_effect.p if log_effect else None,
                    "log_effect_df": log_effect.df if log_effect else None,
                    "log_effect_warnings": _warnings(analysis.log_model, log_effect),
                    "model_item_effect": analysis.model.item_effect if analysis.model else None,
                }
            )
        )
    return rows


def _warnings(model: ConditionModel | None, effect: ConditionEffect | None) -> str | None:
    """The model's warnings and the effect's, beside the effect (None for the baseline's row)."""
    if model is None or effect is None:
        return None
    return "; ".join([*model.warnings, *effect.warnings])
