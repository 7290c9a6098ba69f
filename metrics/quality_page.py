"""The quality page's data (metrics/views/quality.py): a project's MQM and ESA evaluations as Marot shows
them, narrowed by the page's filters. docs/quality.md, "The quality page".

Filters: `system`, `rater` and `document` narrow the evaluations read; `category` and `severity` narrow the
errors counted, so every score on the page is then the score of those errors only (a system's figure equals
its contribution in the breakdown), and the segment table shows the segments with such an error. With no
filter the tables equal metrics.quality_report.mqm_summary's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from annotations.models import ErrorSpan, Project
from annotations.typology import SEVERITIES, Weights, project_typology
from editlab.refusals import Refusal
from metrics.analysis.mqm import Mean, Rating, esa_means, rater_scores, rating_score, segment_scores, system_scores
from metrics.analysis.mqm_breakdown import (
    COMPARISON_MAX_SEGMENTS,
    COMPARISON_REPRODUCE,
    COMPARISON_RESAMPLES,
    COMPARISON_SEED,
    Piece,
    breakdown,
    compare_systems,
    highlight,
    segment_order,
)
from metrics.analysis.span_agreement import Judgement, span_agreement
from metrics.quality_report import agreement_data
from metrics.selectors_quality import EvaluationRecord, evaluation_records

FILTERS = ("system", "rater", "document", "category", "severity")
MAX_VALUE = 200  # a filter value longer than any stored name is refused before it is compared
COMPARISON_MAX_SYSTEMS = 12  # the pairwise table is left out above this many systems (66 pairs)

DEFINITIONS = {
    "mqm": "MQM score: a penalty, 0 is perfect. A rating's score is the sum of its errors' weights; a "
    "segment's, the mean over its raters; a system's, the mean over its rated segments, with a 95% CI "
    "(Student's t over segments).",
    "esa": "ESA: the mean of the raters' 0-100 scores, with a 95% CI (Student's t).",
    "rater": "A rater's MQM score: the mean of the scores of the ratings they gave, with a 95% CI.",
    "breakdown": "A category and severity's contribution: the system's score computed from those errors "
    "only; a system's contributions add up to its score.",
    "comparison": "Over the segments both systems were rated on: the mean difference of their segment scores "
    f"and the two-sided p of a paired permutation test ({COMPARISON_RESAMPLES} sign flips, seed "
    f"{COMPARISON_SEED}; not computed over more than {COMPARISON_MAX_SEGMENTS:,} segments).",
    "comparison_reproduce": COMPARISON_REPRODUCE,
    "agreement": "For outputs rated by two or more raters: character-level F1 of the marked characters, "
    "Krippendorff's alpha on marked characters, on their severity, on MQM and on ESA scores (docs/quality.md).",
}


class QualityFilterError(Refusal):
    """A filter value the page cannot apply; the message names the filter."""

    code = "quality_filter"


@dataclass(frozen=True)
class QualityFilters:
    system: str = ""
    rater: str = ""
    document: str = ""
    category: str = ""
    severity: str = ""

    def as_params(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in FILTERS if getattr(self, name)}

    def counts(self, category: str, severity: str) -> bool:
        """Whether an error of this category and severity is counted."""
        return (not self.category or category == self.category) and (not self.severity or severity == self.severity)


@dataclass
class RatedText:
    rater: str
    score: float
    esa: float | None
    pieces: list[Piece]
    errors: list[str]  # "category (severity)" of each counted error, with its text or "no span"


@dataclass
class SegmentRow:
    """A rated (system, segment): its evaluations, rendered (highlighted) only when shown (`render`)."""

    system: str
    document: str
    seg_id: str
    records: list[EvaluationRecord]
    counted: dict[int, list[ErrorSpan]]  # id(record) -> its counted spans
    source: list[Piece] = field(default_factory=list)
    ratings: list[RatedText] = field(default_factory=list)

    def render(self, weights: Weights) -> SegmentRow:
        """Fill `source` (the source-side spans of every rater highlighted) and `ratings` (each rater's text
        with their target spans highlighted, their score and errors); returns the row."""
        source_spans = [
            (s.start, s.end, s.category, s.severity)
            for r in self.records
            for s in self.counted[id(r)]
            if s.side == ErrorSpan.SOURCE
        ]
        self.source = highlight(self.records[0].source, source_spans)
        self.ratings = []
        for record in sorted(self.records, key=lambda r: r.rater):
            spans = self.counted[id(record)]
            target = [(s.start, s.end, s.category, s.severity) for s in spans if s.side == ErrorSpan.TARGET]
            self.ratings.append(
                RatedText(
                    rater=record.rater,
                    score=rating_score(((s.category, s.severity) for s in spans), weights),
                    esa=record.esa_score,
                    pieces=highlight(record.text, target),
                    errors=[_error_label(record, s) for s in spans],
                )
            )
        return self


@dataclass
class QualityData:
    filters: QualityFilters
    choices: dict[str, list[str]]
    weights: dict[str, Any]
    ratings: int
    segments: int
    systems: dict[str, dict[str, Any]]
    esa_systems: dict[str, dict[str, Any]]
    raters: dict[str, dict[str, Any]]
    esa_raters: dict[str, dict[str, Any]]
    breakdown: dict[str, list[dict[str, Any]]]
    comparisons: list[dict[str, Any]] | None
    agreement: dict[str, Any]
    rows: list[SegmentRow]
    weights_used: Weights  # what `weights` describes, for rendering the shown rows


def mean_data(mean: Mean) -> dict[str, Any]:
    return {"n": mean.n, "mean": mean.mean, "ci_low": mean.low, "ci_high": mean.high}


def _choice(name: str, value: str, allowed: list[str]) -> str:
    if value in allowed:
        return value
    shown = ", ".join(allowed[:10]) + (f" and {len(allowed) - 10} more" if len(allowed) > 10 else "")
    known = f"one of: {shown}" if allowed else "nothing yet: the project has no submitted evaluation"
    return _refuse(name, f"{value[:50]!r} is not {known}")


def _refuse(name: str, what: str) -> str:
    raise QualityFilterError(f"{name}: {what}")


def quality_filters_parse(query: Mapping[str, str], choices: dict[str, list[str]]) -> QualityFilters:
    """The page's filters from its query (empty: every value); QualityFilterError names a value outside the
    project's systems, raters, documents, typology categories and severities."""
    chosen: dict[str, str] = {}
    for name in FILTERS:
        value = query.get(name, "") or ""
        if "\x00" in value or len(value) > MAX_VALUE:
            _refuse(name, f"must be a name of at most {MAX_VALUE} characters without NUL")
        chosen[name] = _choice(name, value, choices[name]) if value else ""
    return QualityFilters(**chosen)


def quality_choices(records: list[EvaluationRecord], categories: tuple[str, ...]) -> dict[str, list[str]]:
    seen_categories = {span.category for record in records for span in record.spans}
    return {
        "system": sorted({record.system for record in records}),
        "rater": sorted({record.rater for record in records}),
        "document": sorted({record.doc for record in records}),
        "category": [*categories, *sorted(seen_categories - set(categories))],
        "severity": list(SEVERITIES),
    }


def quality_data(*, project: Project, query: Mapping[str, str]) -> QualityData:
    """The page's figures and segment rows for the query's filters (a QualityFilterError names a bad one; a
    malformed typology is the project's TypologyMalformed)."""
    typology = project_typology(project.quality)
    weights = typology.weights
    every = list(evaluation_records(project))
    choices = quality_choices(every, typology.categories)
    filters = quality_filters_parse(query, choices)
    records = [
        r
        for r in every
        if (not filters.system or r.system == filters.system)
        and (not filters.rater or r.rater == filters.rater)
        and (not filters.document or r.doc == filters.document)
    ]
    counted = {id(r): [s for s in r.spans if filters.counts(s.category, s.severity)] for r in records}
    rated = [
        Rating(r.system, r.seg_id, r.rater, tuple((s.category, s.severity) for s in counted[id(r)])) for r in records
    ]
    segments = segment_scores(rated, weights)
    systems = system_scores(segments)
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for part in breakdown(rated, weights):
        parts[part.system].append({"category": part.category, "severity": part.severity, "errors": part.errors,
                                   "score": part.score})  # fmt: skip
    comparisons = None
    if len(systems) <= COMPARISON_MAX_SYSTEMS:
        comparisons = [vars(c) for c in compare_systems(segments)]
    judgements = [
        Judgement(
            unit=(r.system, r.seg_id),
            rater=r.rater,
            length=len(r.text),
            spans=[(s.start, s.end, s.severity) for s in counted[id(r)] if s.side == ErrorSpan.TARGET],
            esa=r.esa_score,
            mqm=rating_score(((s.category, s.severity) for s in counted[id(r)]), weights),
        )
        for r in records
    ]
    return QualityData(
        filters=filters,
        choices=choices,
        weights=weights.as_json(),
        ratings=len(rated),
        segments=len(segments),
        systems={name: mean_data(mean) for name, mean in systems.items()},
        esa_systems={
            n: mean_data(m)
            for n, m in esa_means((r.system, r.esa_score) for r in records if r.esa_score is not None).items()
        },
        raters={name: mean_data(mean) for name, mean in rater_scores(rated, weights).items()},
        esa_raters={
            n: mean_data(m)
            for n, m in esa_means((r.rater, r.esa_score) for r in records if r.esa_score is not None).items()
        },
        breakdown=dict(parts),
        comparisons=comparisons,
        agreement=agreement_data(span_agreement(judgements)),
        weights_used=weights,
        rows=segment_rows(records, counted, only_with_errors=bool(filters.category or filters.severity)),
    )


def segment_rows(
    records: list[EvaluationRecord], counted: dict[int, list[ErrorSpan]], *, only_with_errors: bool
) -> list[SegmentRow]:
    """One row per rated (system, segment), by document, segment number and system (not rendered yet)."""
    grouped: dict[tuple[str, str], list[EvaluationRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.system, record.seg_id)].append(record)
    rows = [
        SegmentRow(system, group[0].doc, seg_id, group, counted)
        for (system, seg_id), group in grouped.items()
        if not only_with_errors or any(counted[id(r)] for r in group)
    ]
    rows.sort(key=lambda row: (row.document, segment_order(row.seg_id), row.system))
    return rows


def _error_label(record: EvaluationRecord, span: ErrorSpan) -> str:
    label = f"{span.category} ({span.severity})"
    if span.start is None or span.end is None:
        return f"{label}: no span"
    text = record.source if span.side == ErrorSpan.SOURCE else record.text
    low, high = sorted((span.start, span.end))
    marked = text[low:high]
    where = " in the source" if span.side == ErrorSpan.SOURCE else ""
    shown = marked if len(marked) <= 80 else marked[:79] + "…"
    return f"{label}{where}: “{shown}”" if marked else f"{label}{where}: at {low}"
