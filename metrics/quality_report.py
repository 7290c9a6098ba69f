"""A project's MQM and ESA scores: per system, per rater (metrics.analysis.mqm), as data and as text."""

from __future__ import annotations

from typing import Any

from annotations.models import Project
from metrics.analysis.mqm import Mean, esa_means, rater_scores, segment_scores, system_scores
from metrics.selectors_quality import evaluation_records, ratings


def _mean(mean: Mean) -> dict[str, Any]:
    return {"n": mean.n, "mean": mean.mean, "ci_low": mean.low, "ci_high": mean.high}


def mqm_summary(project: Project) -> dict[str, Any]:
    """MQM per system (mean of segment scores, 95% CI over segments) and per rater; ESA means per system."""
    weights = project.typology().weights
    rated = ratings(project)
    segments = segment_scores(rated, weights)
    esa = [(r.system, r.esa_score) for r in evaluation_records(project) if r.esa_score is not None]
    return {
        "weights": weights.as_json(),
        "ratings": len(rated),
        "segments": len(segments),
        "systems": {name: _mean(mean) for name, mean in system_scores(segments).items()},
        "raters": {name: _mean(mean) for name, mean in rater_scores(rated, weights).items()},
        "esa_systems": {name: _mean(mean) for name, mean in esa_means(esa).items()},
    }


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def mqm_table(summary: dict[str, Any]) -> str:
    lines = [f"MQM ({summary['ratings']} ratings of {summary['segments']} system segments; lower is better)"]
    for title, key in (("system", "systems"), ("rater", "raters"), ("system (ESA 0-100)", "esa_systems")):
        if not summary[key]:
            continue
        lines.append(f"{title:<24} {'n':>7} {'mean':>9} {'95% CI':>21}")
        # Best first: the lowest MQM penalty, the highest ESA score.
        order = sorted(summary[key].items(), key=lambda pair: pair[1]["mean"], reverse=key == "esa_systems")
        for name, row in order:
            ci = f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
            lines.append(f"{name[:24]:<24} {row['n']:>7} {_number(row['mean']):>9} {ci:>21}")
        lines.append("")
    return "\n".join(lines)
