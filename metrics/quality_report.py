"""A project's MQM and ESA scores: per system, per rater (metrics.analysis.mqm), as data and as text."""

from __future__ import annotations

from typing import Any

from annotations.models import Project
from annotations.typology import project_typology
from metrics.analysis.agreement import Alpha
from metrics.analysis.mqm import Mean, esa_means, rater_scores, rating_score, segment_scores, system_scores
from metrics.analysis.span_agreement import Judgement, SpanAgreement, span_agreement
from metrics.selectors_quality import evaluation_records, ratings


def _mean(mean: Mean) -> dict[str, Any]:
    return {"n": mean.n, "mean": mean.mean, "ci_low": mean.low, "ci_high": mean.high}


def _alpha(alpha: Alpha | None) -> dict[str, Any] | None:
    return None if alpha is None else {"alpha": alpha.alpha, "values": alpha.pairable, "units": alpha.units}


def agreement_data(agreement: SpanAgreement) -> dict[str, Any]:
    return {
        "units": agreement.units,
        "pairs": agreement.pairs,
        "char_f1": agreement.char_f1,
        "char_alpha": _alpha(agreement.char_alpha),
        "char_alpha_severity": _alpha(agreement.char_alpha_severity),
        "esa_alpha": _alpha(agreement.esa_alpha),
        "mqm_alpha": _alpha(agreement.mqm_alpha),
        "notes": agreement.notes,
    }


def mqm_summary(project: Project) -> dict[str, Any]:
    """MQM per system (mean of segment scores, 95% CI over segments) and per rater; ESA means per system;
    the agreement of raters of the same output (metrics.analysis.span_agreement)."""
    weights = project_typology(project.quality).weights
    records = list(evaluation_records(project))
    rated = ratings(project)
    segments = segment_scores(rated, weights)
    esa = [(r.system, r.esa_score) for r in records if r.esa_score is not None]
    judgements = [
        Judgement(
            unit=(r.system, r.seg_id),
            rater=r.rater,
            length=len(r.text),
            spans=[(s.start, s.end, s.severity) for s in r.spans if s.side == "target"],
            esa=r.esa_score,
            mqm=rating_score(((s.category, s.severity) for s in r.spans), weights),
        )
        for r in records
    ]
    return {
        "weights": weights.as_json(),
        "ratings": len(rated),
        "segments": len(segments),
        "systems": {name: _mean(mean) for name, mean in system_scores(segments).items()},
        "raters": {name: _mean(mean) for name, mean in rater_scores(rated, weights).items()},
        "esa_systems": {name: _mean(mean) for name, mean in esa_means(esa).items()},
        "agreement": agreement_data(span_agreement(judgements)),
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
    agreement = summary["agreement"]
    lines.append(f"agreement over {agreement['units']} outputs rated twice or more ({agreement['pairs']} rater pairs)")
    figures = [("character-level F1", agreement["char_f1"])]
    for label, key in (
        ("character-level alpha (marked)", "char_alpha"),
        ("character-level alpha (severity)", "char_alpha_severity"),
        ("alpha on MQM scores", "mqm_alpha"),
        ("alpha on ESA scores", "esa_alpha"),
    ):
        figures.append((label, agreement[key]["alpha"] if agreement[key] else None))
    lines.extend(f"  {label:<34} {_number(value)}" for label, value in figures)
    lines.extend(f"  note: {note}" for note in agreement["notes"])
    return "\n".join(lines)
