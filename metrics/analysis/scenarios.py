"""The seed study's synthetic-edit analysis: an LLM edited every item under several scenarios
(normal, similar, fast, or a project's own); how far did each scenario move the text?

Pure: numpy, pandas, scipy and statsmodels (no Django). The ORM side (metrics.selectors_scenarios)
builds the frame: one row per synthetic edit with its item (`external_id`), `scenario`, the edited
text's length and its compression distance (`distance`, NaN where no value is stored).

An item edited more than once under one scenario (several runs) counts once, with the mean of its
edits (a message says so). For each scenario:
- n (items), and the distributions of the edited text's length (characters) and of the distance:
  mean, sample sd, min, quartiles, max, and a histogram over edges shared by every scenario (the
  paper's Figure 2);
against the reference scenario (default `normal`), on the items edited under both (paired):
- the least-squares line distance(scenario) = intercept + slope x distance(reference) (statsmodels
  OLS), with the confidence intervals of both coefficients and R², beside the x = y line (the
  paper's Figure 3); `below_identity` is the share of items the scenario edited less than the
  reference did;
- the mean paired difference (scenario minus reference) with a percentile bootstrap CI
  (scipy.stats.bootstrap over items, in the order of their first edit, `resamples` resamples, seeded
  with `seed`: the same numbers on every run);
- the ordering test ("similar and fast edit less than normal"): a one-sided Wilcoxon signed-rank test
  of scenario < reference (scipy.stats.wilcoxon, alternative "less", zero differences dropped:
  zero_method "wilcox"); `ordered` when p < alpha.
Where human post-edits exist for the same items: Pearson (p, Fisher CI) and Spearman of each
scenario's distance with the items' mean human effort (metrics.analysis.correlation.correlate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from metrics.analysis.common import ITEM, is_constant, jsonable
from metrics.analysis.correlation import Correlation, correlate

SCENARIO = "scenario"
DISTANCE = "distance"
LENGTH = "length"
HUMAN = "human"  # the item's mean human effort, in the frame given as `human`
DEFAULT_REFERENCE = "normal"
PAPER_ORDER = ("normal", "similar", "fast")  # the paper's scenarios, shown first in this order
MIN_PAIRS = 3  # a line and a test need at least this many paired items
HISTOGRAM_BINS = 20
BOOTSTRAP_CELLS = 4_000_000  # resampled values held in memory at once (items x resamples per batch)


class ScenarioError(ValueError):
    """A scenario analysis option that is not one (an unknown reference); the message names it."""


@dataclass(frozen=True)
class ScenarioSettings:
    confidence: float = 0.95
    alpha: float = 0.05
    resamples: int = 2000
    seed: int = 42

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ValueError("confidence must be between 0 and 1")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be between 0 and 1")
        if not 100 <= self.resamples <= 100_000:
            raise ValueError("resamples must be between 100 and 100000")


@dataclass
class Distribution:
    n: int
    mean: float | None = None
    sd: float | None = None  # sample sd (ddof=1); None below two values
    min: float | None = None
    q25: float | None = None
    median: float | None = None
    q75: float | None = None
    max: float | None = None
    counts: list[int] = field(default_factory=list)  # per bin of the analysis' shared edges


@dataclass
class ScenarioSummary:
    scenario: str
    n: int  # items edited under the scenario
    length: Distribution  # of the edited texts, in characters
    distance: Distribution  # of the compression distances (items with a value)


@dataclass
class Paired:
    """One scenario against the reference, on the items both edited (with a distance)."""

    scenario: str
    reference: str
    n: int
    slope: float | None = None
    intercept: float | None = None
    slope_ci: tuple[float, float] | None = None
    intercept_ci: tuple[float, float] | None = None
    r2: float | None = None
    below_identity: float | None = None  # share of items with distance(scenario) < distance(reference)
    mean_difference: float | None = None  # scenario minus reference
    difference_ci: tuple[float, float] | None = None
    wilcoxon_statistic: float | None = None
    wilcoxon_p: float | None = None  # one-sided: scenario < reference
    ordered: bool | None = None  # wilcoxon_p < alpha
    points: list[tuple[float, float]] = field(default_factory=list)  # (reference, scenario) per item
    messages: list[str] = field(default_factory=list)


@dataclass
class HumanCorrelation:
    scenario: str
    correlation: Correlation  # of the scenario's distance with the mean human effort, over shared items


@dataclass
class ScenarioAnalysis:
    reference: str
    scenarios: list[str]
    settings: ScenarioSettings
    summaries: list[ScenarioSummary]
    length_edges: list[float]  # the length histograms' bin edges (every scenario's)
    distance_edges: list[float]
    comparisons: list[Paired]
    human: list[HumanCorrelation] = field(default_factory=list)
    human_target: str | None = None
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return jsonable(asdict(self))


def scenario_order(names: Sequence[str]) -> list[str]:
    """The paper's scenarios first (normal, similar, fast), then the others by name."""
    present = set(names)
    return [name for name in PAPER_ORDER if name in present] + sorted(present - set(PAPER_ORDER))


def pick_reference(scenarios: Sequence[str], reference: str | None) -> str:
    """The reference scenario: the one asked for (refused, naming the choices, when no edit was made
    under it), else `normal`, else the first scenario."""
    if reference:
        if reference not in scenarios:
            choices = ", ".join(scenarios) or "none"
            raise ScenarioError(
                f"unknown reference scenario {reference!r}: the synthetic edits' scenarios are {choices}"
            )
        return reference
    return DEFAULT_REFERENCE if DEFAULT_REFERENCE in scenarios else scenarios[0]


def distribution(values: np.ndarray, edges: np.ndarray) -> Distribution:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return Distribution(n=0, counts=[0] * max(len(edges) - 1, 0))
    q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
    counts = np.histogram(values, bins=edges)[0].tolist() if len(edges) > 1 else []
    return Distribution(
        n=int(values.size),
        mean=float(values.mean()),
        sd=float(values.std(ddof=1)) if values.size > 1 else None,
        min=float(values.min()),
        q25=float(q25),
        median=float(median),
        q75=float(q75),
        max=float(values.max()),
        counts=[int(c) for c in counts],
    )


def shared_edges(values: np.ndarray, bins: int = HISTOGRAM_BINS) -> np.ndarray:
    """Histogram edges over every scenario's values (numpy's equal-width bins), so the bars compare."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.array([])
    return np.histogram_bin_edges(values, bins=bins)


def per_item(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per (item, scenario): the mean of its edits' length and distance."""
    counts = frame.groupby([SCENARIO, ITEM]).size()
    messages = []
    repeated = counts[counts > 1]
    if len(repeated):
        for scenario in scenario_order(repeated.index.get_level_values(SCENARIO).unique().tolist()):
            items = int((repeated.index.get_level_values(SCENARIO) == scenario).sum())
            messages.append(
                f"scenario {scenario!r}: {items} item(s) were edited more than once (several runs); "
                "each counts once, with the mean of its edits"
            )
    means = frame.groupby([SCENARIO, ITEM], as_index=False)[[LENGTH, DISTANCE]].mean()
    return means, messages


def compare(x: np.ndarray, y: np.ndarray, *, scenario: str, reference: str, settings: ScenarioSettings) -> Paired:
    """`scenario` (y) against `reference` (x), paired by item."""
    result = Paired(scenario=scenario, reference=reference, n=int(x.size))
    result.points = [(float(a), float(b)) for a, b in zip(x, y, strict=True)]
    if x.size < MIN_PAIRS:
        result.messages.append(f"{x.size} item(s) edited under both scenarios: at least {MIN_PAIRS} are needed")
        return result
    differences = y - x
    result.mean_difference = float(differences.mean())
    result.below_identity = float((differences < 0).mean())
    if is_constant(x):
        result.messages.append(f"every item has the same distance under {reference!r}: no line can be fitted")
    else:
        import statsmodels.api as sm  # loaded when a scenario is fitted, as the mixed models load theirs

        fit = sm.OLS(y, sm.add_constant(x)).fit()
        low, high = fit.conf_int(alpha=1 - settings.confidence).T
        result.intercept, result.slope = float(fit.params[0]), float(fit.params[1])
        result.intercept_ci = (float(low[0]), float(high[0]))
        result.slope_ci = (float(low[1]), float(high[1]))
        result.r2 = float(fit.rsquared) if not is_constant(y) else None
    if is_constant(differences):
        result.difference_ci = (result.mean_difference, result.mean_difference)
    else:
        boot = stats.bootstrap(
            (differences,),
            np.mean,
            n_resamples=settings.resamples,
            confidence_level=settings.confidence,
            method="percentile",
            rng=np.random.default_rng(settings.seed),
            batch=max(1, BOOTSTRAP_CELLS // differences.size),  # resamples held at once: memory stays bounded
        )
        result.difference_ci = (float(boot.confidence_interval.low), float(boot.confidence_interval.high))
    if not np.any(differences != 0):
        result.messages.append("the two scenarios give every item the same distance: no ordering test")
    else:
        test = stats.wilcoxon(y, x, zero_method="wilcox", alternative="less")
        result.wilcoxon_statistic = float(test.statistic)
        result.wilcoxon_p = float(test.pvalue)
        result.ordered = bool(test.pvalue < settings.alpha)
    return result


def analyze_scenarios(
    frame: pd.DataFrame,
    *,
    settings: ScenarioSettings | None = None,
    reference: str | None = None,
    human: pd.DataFrame | None = None,
    human_target: str | None = None,
) -> ScenarioAnalysis:
    """The synthetic-edit analysis of `frame` (columns external_id, scenario, length, distance; one
    row per synthetic edit) against `reference` (default normal, else the first scenario; refused, a
    ScenarioError naming the scenarios, when no edit was made under it). `human` (columns external_id
    and `human`: one row per item, its mean human effort `human_target`) adds the correlation of each
    scenario's distance with it."""
    settings = settings or ScenarioSettings()
    names = scenario_order(frame[SCENARIO].astype(str).unique().tolist()) if len(frame) else []
    chosen = pick_reference(names, reference) if names else (reference or DEFAULT_REFERENCE)
    items, messages = per_item(frame) if len(frame) else (frame, [])
    length_edges = shared_edges(items[LENGTH].to_numpy(dtype=float)) if len(items) else np.array([])
    distance_edges = shared_edges(items[DISTANCE].to_numpy(dtype=float)) if len(items) else np.array([])
    summaries = []
    for name in names:
        rows = items[items[SCENARIO] == name]
        summaries.append(
            ScenarioSummary(
                scenario=name,
                n=len(rows),
                length=distribution(rows[LENGTH].to_numpy(dtype=float), length_edges),
                distance=distribution(rows[DISTANCE].to_numpy(dtype=float), distance_edges),
            )
        )
        missing = int(rows[DISTANCE].isna().sum())
        if missing:
            messages.append(f"scenario {name!r}: {missing} item(s) have no stored distance (compute the metric)")
    wide = pd.DataFrame()
    if len(items):  # items in the order of their first edit (the frame's order), so resamples are too
        wide = items.pivot(index=ITEM, columns=SCENARIO, values=DISTANCE).reindex(pd.unique(frame[ITEM]))
    comparisons = []
    for name in names:
        if name == chosen:
            continue
        both = wide[[chosen, name]].dropna()
        comparisons.append(
            compare(
                both[chosen].to_numpy(dtype=float),
                both[name].to_numpy(dtype=float),
                scenario=name,
                reference=chosen,
                settings=settings,
            )
        )
    if not names:
        messages.append("no synthetic edit in the selection")
    elif len(names) == 1:
        messages.append(f"only one scenario ({names[0]!r}): nothing to compare it with")
    analysis = ScenarioAnalysis(
        reference=chosen,
        scenarios=names,
        settings=settings,
        summaries=summaries,
        length_edges=[float(e) for e in length_edges],
        distance_edges=[float(e) for e in distance_edges],
        comparisons=comparisons,
        human_target=human_target,
        messages=messages,
    )
    if human is not None and len(human) and names:
        analysis.human = human_correlations(wide, human, names, confidence=settings.confidence)
    return analysis


def human_correlations(
    wide: pd.DataFrame, human: pd.DataFrame, names: Sequence[str], *, confidence: float = 0.95
) -> list[HumanCorrelation]:
    """Each scenario's distance against the items' mean human effort, on the items with both."""
    effort = human.set_index(ITEM)[HUMAN].astype(float)
    result = []
    for name in names:
        joined = pd.concat([wide[name].rename(DISTANCE), effort.rename(HUMAN)], axis=1, join="inner").dropna()
        result.append(
            HumanCorrelation(
                scenario=name,
                correlation=correlate(
                    joined[DISTANCE].to_numpy(dtype=float), joined[HUMAN].to_numpy(dtype=float), confidence
                ),
            )
        )
    return result


def comparison_rows(analysis: ScenarioAnalysis) -> list[dict]:
    """One flat row per scenario (its distribution, and its comparison with the reference)."""
    paired = {c.scenario: c for c in analysis.comparisons}
    human = {h.scenario: h.correlation for h in analysis.human}
    rows = []
    for summary in analysis.summaries:
        c = paired.get(summary.scenario)
        h = human.get(summary.scenario)
        rows.append(
            {
                "scenario": summary.scenario,
                "n": summary.n,
                "length_mean": summary.length.mean,
                "length_median": summary.length.median,
                "distance_mean": summary.distance.mean,
                "distance_median": summary.distance.median,
                "distance_sd": summary.distance.sd,
                "reference": analysis.reference,
                "pairs": c.n if c else None,
                "slope": c.slope if c else None,
                "slope_low": c.slope_ci[0] if c and c.slope_ci else None,
                "slope_high": c.slope_ci[1] if c and c.slope_ci else None,
                "intercept": c.intercept if c else None,
                "r2": c.r2 if c else None,
                "below_identity": c.below_identity if c else None,
                "mean_difference": c.mean_difference if c else None,
                "difference_low": c.difference_ci[0] if c and c.difference_ci else None,
                "difference_high": c.difference_ci[1] if c and c.difference_ci else None,
                "wilcoxon_p": c.wilcoxon_p if c else None,
                "ordered": c.ordered if c else None,
                "human_n": h.n if h else None,
                "human_pearson": h.pearson if h else None,
                "human_pearson_p": h.pearson_p if h else None,
                "human_spearman": h.spearman if h else None,
            }
        )
    return jsonable(rows)
