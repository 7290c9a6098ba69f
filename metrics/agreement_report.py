"""Agreement across overlapping work for a selection: effort (alpha, ICC) and output distances.

What `analyze --agreement`, GET /api/projects/<id>/agreement/ and the report's Agreement section show.
The numbers come from the pure modules (metrics.analysis.agreement, metrics.analysis.output_agreement);
this module reads the rows (metrics.selectors_agreement) and labels each figure with its definition and
the package call that reproduces it (docs/agreement.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from metrics.analysis.agreement import ICC_TYPES, icc_oneway, intraclass, krippendorff_alpha
from metrics.analysis.common import jsonable
from metrics.analysis.output_agreement import MODIFIED_Z_CUTOFF, output_distances, overlap_pairs
from metrics.analysis_fields import SelectionError
from metrics.analysis_options import Selection
from metrics.selectors import TARGETS
from metrics.selectors_agreement import overlap_rows

DISTANCES = ("compression", "ter", "chrf")
# By default the cheap one: TER and chrF take ~1.5 ms a pair both ways on TED sentences (31 s on IWSLT2019's
# 10,470 pairs, editlab/benchmarks/results/agreement.md); asked for by name, over at most
# limits.AGREEMENT_SLOW_PAIRS_MAX pairs in a web request.
DEFAULT_DISTANCES = ("compression",)
PAGE_DISTANCES = DEFAULT_DISTANCES
CHEAP = frozenset({"compression"})

DEFINITIONS = {
    "alpha": "Krippendorff's alpha (interval) = 1 - D_o/D_e over the pairable values (items with two or more "
    "values), computed in one pass (docs/agreement.md, Krippendorff 2011).",
    "alpha_reproduce": 'krippendorff.alpha(reliability_data=R, level_of_measurement="interval"), R = annotators x '
    "items with NaN where missing",
    "icc": "Shrout & Fleiss (1979) ICCs on the complete-case items x annotators matrix (an item any annotator "
    "lacks is dropped), F-based 95% CIs.",
    "icc_reproduce": 'pingouin.intraclass_corr(data, targets="item", raters="annotator", ratings=T, nan_policy="omit")',
    "icc_oneway": "ICC(1) of the one-way ANOVA over every item with two or more values (unequal group sizes: "
    "(MSB - MSW) / (MSB + (n0 - 1) MSW), n0 = (N - sum n_i^2 / N) / (g - 1)); needs no complete cases.",
    "icc_oneway_reproduce": "F = scipy.stats.f_oneway(*items).statistic; ICC(1) = (F - 1) / (F + n0 - 1)",
    "output": "Per pair of post-edits of one item by two annotators: d(a, b) = (f(a, b) + f(b, a)) / 2 with f the "
    "metric (metrics.text). Item mean: over its pairs; annotator mean: over the pairs they are in.",
    "output_reproduce": "metrics.text.METRICS[name].func(a, b), both ways, averaged",
    "flag": f"flagged: modified z-score (Iglewicz & Hoaglin 1993, 0.6745 (x - median)/MAD over annotators' means) "
    f"above {MODIFIED_Z_CUTOFF} in the far direction (high distance, low chrF); at least 3 annotators.",
}


def distances_parse(text: str | None) -> tuple[str, ...]:
    """Comma-separated output distances (default compression); a SelectionError names an unknown one."""
    if text is None or not text.strip():
        return DEFAULT_DISTANCES
    if "\x00" in text:
        raise SelectionError("distances contains a NUL character")
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in DISTANCES]
    if unknown or not names:
        raise SelectionError(f"distance {(unknown or [text])[0][:50]!r} is not one of: {', '.join(DISTANCES)}")
    return names


def _batch(name: str):
    from metrics.text import METRICS

    metric = METRICS[name]
    if metric.batch is not None:
        return metric.batch
    return lambda pairs: [metric.func(a, b) for a, b in pairs]


def agreement_build(
    *, selection: Selection, distances: Sequence[str] = DEFAULT_DISTANCES, max_slow_pairs: int | None = None
) -> dict:
    """The agreement of the selection's overlapping post-edits as plain JSON types (see module doc); with
    max_slow_pairs, TER or chrF over more pairs than that is a SelectionError (the command has no bound)."""
    if selection.target not in TARGETS:
        raise SelectionError(
            f"agreement reads the stored effort: target must be one of {', '.join(TARGETS)}, not {selection.target!r}"
        )
    if selection.idle_threshold_s is not None:
        raise SelectionError("agreement reads the stored active time: an idle threshold does not apply")
    column = TARGETS[selection.target]
    rows = overlap_rows(selection=selection, fields=(column,), with_texts=bool(distances))
    values = rows.values[column]
    alpha = krippendorff_alpha(rows.items, values, level="interval")
    icc = intraclass(rows.items, rows.annotators, values)
    oneway = icc_oneway(rows.items, values)
    messages = []
    if rows.items.size == 0:
        messages.append("no item of this selection has two or more submitted post-edits")
    elif icc is None:
        messages.append("ICC: fewer than two items were done by every annotator (complete cases)")
    elif icc.dropped:
        messages.append(f"ICC: {icc.dropped} item(s) left out, not done by every one of the {icc.raters} annotators")
    from metrics.text import METRICS

    slow = [name for name in distances if name not in CHEAP]
    if slow and max_slow_pairs is not None:
        pairs = int(overlap_pairs(rows.items, rows.annotators)[0].size)
        if pairs > max_slow_pairs:
            raise SelectionError(
                f"distances: {', '.join(slow)} over {pairs:,} pairs is more than the {max_slow_pairs:,} a request "
                "computes; choose compression, narrow the selection, or run analyze --agreement"
            )
    outputs = output_distances(
        rows.items,
        rows.annotators,
        rows.texts or [],
        distances={name: _batch(name) for name in distances},
        directions={name: METRICS[name].direction for name in distances},
    )
    return jsonable(
        {
            "selection": selection.describe(),
            "post_edits": int(rows.items.size),
            "items": int(np.unique(rows.items).size),
            "annotators": sorted(set(rows.annotators.tolist())),
            "effort": {
                "target": selection.target,
                "column": column,
                "alpha": asdict(alpha),
                "icc_oneway": asdict(oneway),
                "icc": None
                if icc is None
                else {
                    "items": icc.items,
                    "raters": icc.raters,
                    "dropped": icc.dropped,
                    "rows": [
                        {
                            "type": name,
                            "value": icc.values[name],
                            "ci95": list(icc.ci95[name]),
                            "f": icc.f[name],
                            "p": icc.p[name],
                        }  # fmt: skip
                        for name in ICC_TYPES
                    ],
                },
            },
            "output": [
                {
                    "metric": out.metric,
                    "direction": out.direction,
                    "pairs": out.pairs,
                    "items": out.items,
                    "mean": out.mean,
                    "editors": [asdict(editor) for editor in out.editors],
                    "flagged": [editor.editor for editor in out.editors if editor.flagged],
                }
                for out in outputs
            ],
            "definitions": DEFINITIONS,
            "messages": messages,
        }
    )


def agreement_rows(agreement: dict) -> list[dict]:
    """Flat rows (CSV): one per figure (alpha, each ICC, each metric's overall and per-annotator mean)."""
    effort = agreement["effort"]
    rows = [{"figure": "alpha_interval", "of": effort["column"], "value": effort["alpha"]["alpha"],
             "n": effort["alpha"]["pairable"], "items": effort["alpha"]["units"]}]  # fmt: skip
    oneway = effort["icc_oneway"]
    rows.append({"figure": "ICC(1) one-way", "of": effort["column"], "value": oneway["value"], "n": oneway["ratings"],
                 "items": oneway["items"]})  # fmt: skip
    for icc in (effort["icc"] or {}).get("rows", []):
        low, high = icc["ci95"]
        rows.append({"figure": icc["type"], "of": effort["column"], "value": icc["value"], "ci_low": low,
                     "ci_high": high, "items": effort["icc"]["items"]})  # fmt: skip
    for out in agreement["output"]:
        rows.append({"figure": "output_mean", "of": out["metric"], "value": out["mean"], "n": out["pairs"],
                     "items": out["items"]})  # fmt: skip
        for editor in out["editors"]:
            rows.append({"figure": "annotator_mean", "of": out["metric"], "annotator": editor["editor"],
                         "value": editor["mean"], "n": editor["pairs"], "z": editor["z"],
                         "modified_z": editor["modified_z"], "flagged": editor["flagged"]})  # fmt: skip
    return rows


def agreement_section(*, selection: Selection, fingerprint: str | None = None) -> dict | None:
    """The report's Agreement section: None when the target is no stored effort field, an idle threshold is
    chosen, or no item was done twice; the page computes the cheap distance only (PAGE_DISTANCES).

    With the selection's `fingerprint` (metrics.selection_data.fingerprint, which the report has just read),
    it is kept in the process's report cache under it, as the report is: a warm report page does not compare
    every pair of post-edits again (10⁶ post-edits of five editors: 2 × 10⁶ pairs)."""
    if selection.target not in TARGETS or selection.idle_threshold_s is not None:
        return None
    if fingerprint is not None:
        from metrics.selection_data import cache_key, cached

        key = cache_key("agreement", selection.describe(), PAGE_DISTANCES, fingerprint)
        return cached(key, lambda: agreement_section(selection=selection), True)
    agreement = agreement_build(selection=selection, distances=PAGE_DISTANCES)
    return agreement if agreement["post_edits"] else None
