"""Effort by condition in a designed study, and the condition effect in a mixed model.

Pure: numpy, scipy, pandas (statsmodels on request); no Django. One row per post-edit, with the
condition it was made under, its annotator, its item and the target (keystrokes, wall_ms, ...).

Per condition (on the rows with a finite target):
- n, mean, median, and the 95% percentile bootstrap interval of the mean, resampling items as
  clusters (all of an item's edits under that condition together; rows when there is no item
  column), with the analysis's conventions: `settings.bootstrap_resamples` resamples drawn from
  numpy's default_rng(settings.seed) by metrics.analysis.bootstrap.resample_counts, items coded in
  order of first appearance;
- words per hour: the words of the *edited* text (the submitted post-edit, split on whitespace)
  summed over the condition's rows, divided by their time summed in hours (wall_ms unless told
  otherwise), on the rows with both. The edited text, not the original: translating from scratch
  starts from an empty text, and a throughput must compare the same thing under every condition.

The model: target ~ C(condition, Treatment(baseline)) + (1 | annotator) [+ (1 | item)], the item
intercept only when items are shared (several edits of one item), crossed with the annotator; the
model's `item_effect` says whether it is in, and a message says when one post-edit per item left it out.
Fitted by REML with the engine of metrics.analysis.mixed (the structured one by default, or
statsmodels' MixedLM with both intercepts as variance components of one group); each
non-baseline condition's effect is its fixed coefficient in the target's units (or in log units
for log(time): exp(effect) is the ratio to the baseline), with lmerTest's inference as the metric
models have it: se from sigma² (X' V⁻¹ X)⁻¹, Satterthwaite's df, p and 95% CI from the t
distribution; the Wald (normal) ones are kept as wald_p and wald_ci. In R:
lmer(target ~ relevel(factor(condition), ref = baseline) + (1 | annotator) [+ (1 | item)]).
Beside the figures: the REML criterion, lme4's singular-fit message, a warning for a factor with
fewer than 5 levels, and one for a condition with fewer than FEW_EDITS edits in the model.

Rows without a condition ("") are left out with a message. Degenerate data (one condition, a
condition with one row, a fit that fails) gives a message and no figure, never an exception; an
unknown baseline is a BaselineError naming it and the valid ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from metrics.analysis.bootstrap import resample_counts
from metrics.analysis.common import ANNOTATOR, DEFAULT_SETTINGS, ITEM, Settings, jsonable
from metrics.analysis.mixed import Fit, coefficient_table, fit_model, fit_warnings

CONDITION = "condition"
WORDS = "edited_words"  # words of the edited text per row (word_counts of the post-edit)
TIME = "wall_ms"
NAME_SHOWN = 80  # characters of a bad baseline name repeated in a message
FEW_EDITS = 10  # a condition with fewer edits in the model gets a warning beside its effect


class BaselineError(ValueError):
    """The baseline asked for is not a condition of the selection; the message lists the valid ones."""


@dataclass
class ConditionSummary:
    condition: str
    n: int
    items: int
    annotators: int
    mean: float | None = None
    median: float | None = None
    ci: tuple[float, float] | None = None  # bootstrap over items of the mean
    words: int = 0  # edited words on the rows with a time
    hours: float | None = None
    words_per_hour: float | None = None


@dataclass
class ConditionEffect:
    condition: str
    estimate: float  # the condition's mean difference from the baseline (target or log units)
    se: float
    ci: tuple[float, float] | None  # t on Satterthwaite's df
    p: float | None
    df: float | None = None
    t: float | None = None
    wald_ci: tuple[float, float] | None = None  # normal
    wald_p: float | None = None
    n: int = 0  # edits of the condition in the model
    ratio: float | None = None  # exp(estimate), for a model of log(time)
    ratio_ci: tuple[float, float] | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class ConditionModel:
    formula: str
    n: int
    groups: dict[str, int]
    log_target: bool = False
    intercept: float | None = None  # the baseline's fitted mean
    intercept_se: float | None = None
    intercept_df: float | None = None
    intercept_p: float | None = None  # t on Satterthwaite's df
    effects: list[ConditionEffect] = field(default_factory=list)
    variances: dict[str, float] = field(default_factory=dict)
    converged: bool = False
    reml_criterion: float | None = None
    gradient: float | None = None
    singular: bool = False
    engine: str = "reml"
    warnings: list[str] = field(default_factory=list)  # the fit's: singular, few levels
    # "in the model", or why the item intercept is not: with one post-edit per item it would be the residual
    item_effect: str = ""
    messages: list[str] = field(default_factory=list)


ITEM_EFFECT_IN = "in the model"
ITEM_EFFECT_ONE_EDIT = "dropped: one post-edit per item (an item intercept would be the residual)"
ITEM_EFFECT_NO_COLUMN = "none: no item column"
ITEM_EFFECT_DROPPED_MESSAGE = (
    "every item has one post-edit on these rows: the item random intercept is dropped (it would be the residual), "
    "so item difficulty is not separated from the condition effect; with items shared across conditions "
    "(a Latin square) it would be"
)


@dataclass
class ConditionAnalysis:
    target: str
    time: str
    baseline: str | None
    conditions: list[str]  # in the order shown: declared first, then any other, by name
    summaries: list[ConditionSummary]
    model: ConditionModel | None
    log_model: ConditionModel | None
    left_out: int  # rows without a condition
    bootstrap_unit: str  # "item" or "row"
    resamples: int
    seed: int
    words_from: str = "edited text (the submitted post-edit), split on whitespace"
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return jsonable(asdict(self))


def word_counts(texts: pd.Series) -> pd.Series:
    """Words of each text: whitespace-separated tokens (a script written without spaces counts as one per run)."""
    return texts.fillna("").astype(str).map(lambda text: len(text.split())).astype(int)


def condition_order(present: Sequence[str], declared: Sequence[str] = ()) -> list[str]:
    """The declared conditions that have rows, in declared order, then the undeclared ones by name."""
    have = set(present)
    first = [name for name in dict.fromkeys(declared) if name in have]
    return first + sorted(have - set(first))


def pick_baseline(baseline: str | None, *, conditions: Sequence[str], declared: Sequence[str] = ()) -> str | None:
    """The researcher's baseline, or the first declared condition with rows (else the first shown).

    A name that is neither declared nor in the data is a BaselineError listing the valid ones."""
    valid = list(dict.fromkeys([*declared, *conditions]))
    if baseline is None or baseline == "":
        return conditions[0] if conditions else None
    if baseline not in valid:
        shown = baseline if len(baseline) <= NAME_SHOWN else baseline[:NAME_SHOWN] + "…"
        raise BaselineError(
            f"baseline {shown!r} is not a condition of this selection; choose one of: {', '.join(valid) or 'none'}"
        )
    return baseline


def bootstrap_mean_ci(
    values: np.ndarray, clusters: np.ndarray, *, resamples: int, seed: int, confidence: float
) -> tuple[float, float] | None:
    """Percentile interval of the mean over resamples of the clusters (with replacement)."""
    codes, units = _codes(clusters)
    if units < 2:
        return None
    sums = np.bincount(codes, weights=values, minlength=units)
    counts = np.bincount(codes, minlength=units).astype(float)
    columns = np.column_stack([sums, counts])
    drawn = np.vstack([draw @ columns for draw in resample_counts(units, resamples, seed)])
    means = drawn[:, 0] / drawn[:, 1]  # every resample draws `units` clusters, none empty
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(pd.Series(values).fillna("").astype(str))
    return codes, len(uniques)


def summarise(
    rows: pd.DataFrame,
    condition: str,
    *,
    target: str,
    time: str,
    annotator: str,
    item: str,
    settings: Settings,
) -> ConditionSummary:
    """One condition's figures (`rows`: its rows with a finite target)."""
    y = rows[target].to_numpy(float)
    summary = ConditionSummary(
        condition=condition,
        n=int(y.size),
        items=int(rows[item].nunique()) if item in rows else int(y.size),
        annotators=int(rows[annotator].nunique()) if annotator in rows else 0,
    )
    if y.size:
        summary.mean, summary.median = float(y.mean()), float(np.median(y))
        clusters = rows[item].to_numpy() if item in rows else np.arange(y.size)
        summary.ci = bootstrap_mean_ci(
            y, clusters, resamples=settings.bootstrap_resamples, seed=settings.seed, confidence=settings.confidence
        )
    if time in rows and WORDS in rows:
        timed = rows[np.isfinite(pd.to_numeric(rows[time], errors="coerce").to_numpy(float))]
        milliseconds = float(timed[time].astype(float).sum())
        summary.words = int(timed[WORDS].sum())
        if milliseconds > 0:
            summary.hours = milliseconds / 3_600_000
            summary.words_per_hour = summary.words / summary.hours
    return summary


def condition_model(
    y: np.ndarray,
    conditions: np.ndarray,
    factors: Mapping[str, np.ndarray],
    *,
    baseline: str,
    order: Sequence[str],
    target: str = "target",
    log_target: bool = False,
    confidence: float = 0.95,
    engine: str = "reml",
) -> ConditionModel:
    """y ~ C(condition, Treatment(baseline)) + a random intercept per factor (crossed).

    `factors` maps a factor name (annotator, item) to one code per row; a factor with one level
    is left out. The effects follow `order` (the baseline excluded). Never raises on data."""
    used = {name: pd.factorize(pd.Series(codes).astype(str))[0] for name, codes in factors.items()}
    used = {name: codes for name, codes in used.items() if codes.max(initial=-1) >= 1}
    label = f"log({target})" if log_target else target
    formula = f"{label} ~ C(condition, Treatment({baseline!r}))" + "".join(f" + (1 | {n})" for n in used)
    others = [name for name in order if name != baseline]
    model = ConditionModel(
        formula=formula,
        n=int(y.size),
        groups={name: int(codes.max()) + 1 for name, codes in used.items()},
        log_target=log_target,
        engine=engine,
    )
    if not used:
        model.messages.append("no annotator or shared item with two levels: no mixed model")
        return model
    if not others or y.size <= len(order) + 1:
        model.messages.append(f"too few rows ({y.size}) for {len(order)} conditions: no mixed model")
        return model
    design = np.column_stack([np.ones(y.size), *[(conditions == name).astype(float) for name in others]])
    if np.linalg.matrix_rank(design) < design.shape[1] or np.all(y == y[0]):
        model.messages.append("the conditions cannot be told apart on these rows (or the target is constant)")
        return model
    # As in the pipeline: the arrays are long and thin, BLAS threads only contend on a busy machine.
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
        fit: Fit | None = fit_model(
            design, y, used, engine, statsmodels_fit=_fit_statsmodels if engine == "statsmodels" else None
        )
    if fit is None:
        model.messages.append("the mixed model could not be fitted (singular design)")
        return model
    model.converged, model.variances, model.intercept = fit.converged, fit.variances, float(fit.beta[0])
    model.reml_criterion, model.gradient, model.singular = fit.criterion, fit.gradient, fit.singular
    model.warnings = fit_warnings(model.groups, fit)
    if not fit.converged:
        model.messages.append("the mixed-model fit did not converge; its figures are the last iterate")
    ses = np.sqrt(np.maximum(np.diag(fit.cov_beta), 0.0))
    dfs: list[float | None] = [float(v) for v in fit.df] if fit.df is not None else [None] * ses.size
    model.intercept_se, model.intercept_df = float(ses[0]), dfs[0]
    model.intercept_p = coefficient_table(model.intercept, model.intercept_se, dfs[0], confidence).p
    for j, name in enumerate(others, start=1):
        estimate, se = float(fit.beta[j]), float(ses[j])
        table = coefficient_table(estimate, se, dfs[j], confidence)
        effect = ConditionEffect(
            condition=name,
            estimate=estimate,
            se=se,
            ci=table.ci,
            p=table.p,
            df=dfs[j],
            t=table.t,
            wald_ci=table.wald_ci,
            wald_p=table.wald_p,
            n=int((conditions == name).sum()),
        )
        if effect.n < FEW_EDITS:
            effect.warnings.append(
                f"condition {name!r} has {effect.n} edit{'s' if effect.n != 1 else ''} in the model "
                f"(fewer than {FEW_EDITS}): its effect rests on few edits"
            )
        if log_target and effect.ci is not None:
            effect.ratio, effect.ratio_ci = math.exp(estimate), (math.exp(effect.ci[0]), math.exp(effect.ci[1]))
        elif log_target:
            effect.ratio = math.exp(estimate)
        model.effects.append(effect)
    baseline_n = int((conditions == baseline).sum())
    if baseline_n < FEW_EDITS:
        model.warnings.append(
            f"the baseline {baseline!r} has {baseline_n} edit{'s' if baseline_n != 1 else ''} in the model "
            f"(fewer than {FEW_EDITS}): every effect is measured from few edits"
        )
    return model


def _fit_statsmodels(design: np.ndarray, y: np.ndarray, factors: Mapping[str, np.ndarray]):
    """statsmodels' MixedLM: one group, each factor a variance component (crossed intercepts)."""
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec

    names = list(factors)
    matrices = [[_dense_indicator(factors[name])] for name in names]
    columns = [
        [[f"{name}[{level}]" for level in range(m[0].shape[1])]] for name, m in zip(names, matrices, strict=True)
    ]
    exog_vc = VCSpec(names, columns, matrices)
    model = MixedLM(y, design, groups=np.zeros(y.size), exog_re=np.zeros((y.size, 0)), exog_vc=exog_vc)
    try:
        result = model.fit(reml=True)
    except (np.linalg.LinAlgError, ValueError):
        return None
    p = design.shape[1]
    variances = {name: float(v) for name, v in zip(model.exog_vc.names, result.vcomp, strict=True)}
    variances = {name: variances[name] for name in factors}
    variances["residual"] = float(result.scale)
    return np.asarray(result.fe_params), np.asarray(result.cov_params())[:p, :p], variances, bool(result.converged)


def _dense_indicator(codes: np.ndarray) -> np.ndarray:
    return (codes[:, None] == np.arange(int(codes.max()) + 1)[None, :]).astype(float)


def analyze_conditions(
    frame: pd.DataFrame,
    *,
    target: str,
    declared: Sequence[str] = (),
    baseline: str | None = None,
    time: str = TIME,
    condition: str = CONDITION,
    annotator: str = ANNOTATOR,
    item: str = ITEM,
    settings: Settings = DEFAULT_SETTINGS,
) -> ConditionAnalysis:
    """Per-condition figures and the condition model (and, with settings.log_target, the model of
    log(target) too) of a frame; see the module's docstring. BaselineError for an unknown baseline."""
    if target not in frame:
        raise ValueError(f"the frame has no target column {target!r}")
    names = frame[condition].fillna("").astype(str) if condition in frame else pd.Series("", index=frame.index)
    has_condition = (names != "").to_numpy()
    data = frame.loc[has_condition].copy()
    data[condition] = names[has_condition]
    data[target] = pd.to_numeric(data[target], errors="coerce").astype(float).replace([np.inf, -np.inf], np.nan)
    order = condition_order(sorted(set(data[condition])), declared)
    chosen = pick_baseline(baseline, conditions=order, declared=declared)
    analysis = ConditionAnalysis(
        target=target,
        time=time,
        baseline=chosen,
        conditions=order,
        summaries=[],
        model=None,
        log_model=None,
        left_out=int((~has_condition).sum()),
        bootstrap_unit="item" if item in frame else "row",
        resamples=settings.bootstrap_resamples,
        seed=settings.seed,
    )
    if analysis.left_out:
        analysis.messages.append(f"{analysis.left_out} edits without a condition were left out of the comparison")
    if chosen is not None and chosen not in order:
        analysis.messages.append(f"the baseline {chosen!r} has no edits in this selection: no condition model")
    if chosen in order:  # the baseline first
        order = [chosen, *[name for name in order if name != chosen]]
        analysis.conditions = order
    measured = data[np.isfinite(data[target].to_numpy(float))]
    for name in order:
        rows = measured[measured[condition] == name]
        summary = summarise(rows, name, target=target, time=time, annotator=annotator, item=item, settings=settings)
        analysis.summaries.append(summary)
        if summary.n < 2:
            analysis.messages.append(
                f"condition {name!r} has {summary.n} edit{'s' if summary.n != 1 else ''} "
                f"with a {target}: its mean has no interval"
            )
    if len(order) < 2:
        shown = f" ({order[0]})" if order else ""
        analysis.messages.append(f"only {len(order)} condition{shown} in this selection: nothing to compare")
        return analysis
    if chosen not in order:
        return analysis
    if not settings.mixed_models:
        analysis.messages.append("mixed-effects models are off: no condition effects")
        return analysis

    def fit(rows: pd.DataFrame, *, log_target: bool) -> ConditionModel:
        y, conditions, factors = _model_rows(rows, target=target, condition=condition, annotator=annotator, item=item)
        model = condition_model(
            np.log(y) if log_target else y,
            conditions,
            factors,
            baseline=chosen,
            order=order,
            target=target,
            log_target=log_target,
            confidence=settings.confidence,
            engine=settings.mixed_engine,
        )
        if item not in rows:
            model.item_effect = ITEM_EFFECT_NO_COLUMN
        elif "item" in factors:
            model.item_effect = ITEM_EFFECT_IN
        else:
            model.item_effect = ITEM_EFFECT_ONE_EDIT
            model.messages.insert(0, ITEM_EFFECT_DROPPED_MESSAGE)
        return model

    analysis.model = fit(measured, log_target=False)
    if settings.log_target:
        positive = measured[measured[target] > 0]
        analysis.log_model = fit(positive, log_target=True)
        dropped = len(measured) - len(positive)
        if dropped:
            analysis.log_model.messages.append(f"{dropped} rows with {target} <= 0 have no logarithm and were left out")
    return analysis


def _model_rows(
    rows: pd.DataFrame, *, target: str, condition: str, annotator: str, item: str
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    factors = {
        factor: rows[column].fillna("").astype(str).to_numpy()
        for factor, column in (("annotator", annotator), ("item", item))
        if column in rows
    }
    if "item" in factors and pd.Series(factors["item"]).value_counts().max() < 2:
        del factors["item"]  # no item is shared: an item intercept would be the residual
    return rows[target].to_numpy(float), rows[condition].to_numpy(), factors
