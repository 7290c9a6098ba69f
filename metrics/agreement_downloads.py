"""The report's agreement downloads (research/<id>/report/agreement.csv|json): the Agreement section's figures
with their definitions (JSON), and as flat rows with the values they were computed from (CSV).

CSV rows, one kind per `figure`: the section's figures as `analyze --agreement --format csv` writes them
(metrics.agreement_report.agreement_rows: alpha, the ICCs, each output distance's mean and per-annotator
mean), then `value` rows, one per post-edit of an item done twice or more: the item, the annotator and the
target's stored value, the reliability data alpha and the ICCs are computed from (pivot them into an
annotators x items matrix to reproduce them, docs/agreement.md).
"""

from __future__ import annotations

import math

from metrics.agreement_report import agreement_rows
from metrics.analysis_options import Selection
from metrics.selectors_agreement import overlap_rows

CSV_COLUMNS = [
    "figure", "of", "item", "annotator", "value", "n", "items", "ci_low", "ci_high", "z", "modified_z", "flagged",
]  # fmt: skip


def agreement_csv_rows(*, selection: Selection, agreement: dict) -> list[dict]:
    """The figure rows, then one `value` row per overlapping post-edit (by item, then post-edit id)."""
    column = agreement["effort"]["column"]
    rows = overlap_rows(selection=selection, fields=(column,))
    values = [
        {
            "figure": "value",
            "of": column,
            "item": str(item),
            "annotator": str(annotator),
            "value": None if math.isnan(value) else value,
        }
        for item, annotator, value in zip(
            rows.external_ids.tolist(), rows.annotators.tolist(), rows.values[column].tolist(), strict=True
        )
    ]
    return [*agreement_rows(agreement), *values]
