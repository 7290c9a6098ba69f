"""The per-document summary of a designed study: how much work each document took.

Pure: pandas only (no Django). The ORM side (metrics.reports) builds the frame: one row per
post-edit with its document, item, annotator, condition, practice flag, word count and effort
fields.

Per document: segments (distinct items with a post-edit), post-edits, annotators, the conditions
seen, words (whitespace-separated words of the submitted post-edits, summed), and for each effort
field the total and the mean per post-edit (one segment edited by one person) over the post-edits
that have a value, with how many do. Post-edits of items without a document are counted apart;
practice items are left out unless asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from metrics.analysis.common import ANNOTATOR, ITEM, jsonable
from metrics.analysis.conditions import WORDS

DOCUMENT = "document"
CONDITION = "condition"
PRACTICE = "practice"
# The effort fields the analysis can explain (metrics.selectors.TARGETS), in its order.
EFFORT_COLUMNS = ("wall_ms", "active_ms", "keystrokes", "allkeys")


@dataclass
class EffortTotal:
    total: float | None  # over the post-edits with a value; None when none has one
    mean: float | None  # per post-edit with a value
    n: int  # post-edits with a value


@dataclass
class DocumentSummary:
    document: str
    segments: int
    post_edits: int
    annotators: int
    conditions: list[str]
    words: int
    effort: dict[str, EffortTotal]


@dataclass
class DocumentsSummary:
    documents: list[DocumentSummary]
    without_document: int  # post-edits of items with no document: in no row
    practice_left_out: int  # post-edits of practice items left out (0 when practice is included)
    efforts: list[str]
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return jsonable(asdict(self))

    def note_practice_left_out(self, n: int) -> None:
        """Practice post-edits left out before the frame was built (the ORM side's filter)."""
        self.practice_left_out = n
        note_practice(self.messages, n)


def note_practice(messages: list[str], n: int) -> None:
    """The one message saying how many practice post-edits were left out (replacing an earlier one)."""
    messages[:] = [m for m in messages if not m.endswith(PRACTICE_NOTE)]
    if n:
        messages.insert(0, f"{_post_edits(n)}{PRACTICE_NOTE}")


PRACTICE_NOTE = " of practice items left out"


def document_summary(
    frame: pd.DataFrame,
    *,
    efforts: Sequence[str] = EFFORT_COLUMNS,
    include_practice: bool = False,
    document: str = DOCUMENT,
    item: str = ITEM,
    annotator: str = ANNOTATOR,
    condition: str = CONDITION,
    practice: str = PRACTICE,
    words: str = WORDS,
) -> DocumentsSummary:
    """One summary per document, in document order (by name); see the module's docstring."""
    missing = [c for c in (document, item, annotator, *efforts) if c not in frame]
    if missing:
        raise ValueError(f"the frame has no column {missing[0]!r}")
    rows, left_out = _without_practice(frame, practice) if not include_practice else (frame, 0)
    names = rows[document].fillna("").astype(str)
    in_document = names != ""
    summary = DocumentsSummary(
        documents=[],
        without_document=int((~in_document).sum()),
        practice_left_out=left_out,
        efforts=list(efforts),
    )
    kept = rows[in_document.to_numpy()]
    summary.documents = _per_document(kept, names[in_document], efforts, item, annotator, condition, words)
    note_practice(summary.messages, left_out)
    if summary.without_document:
        summary.messages.append(f"{_post_edits(summary.without_document)} of items without a document: in no row")
    if not summary.documents:
        summary.messages.append("no post-edit of this selection belongs to a document")
    return summary


def _post_edits(n: int) -> str:
    return f"{n} post-edit{'' if n == 1 else 's'}"


def _without_practice(frame: pd.DataFrame, practice: str) -> tuple[pd.DataFrame, int]:
    if practice not in frame:
        return frame, 0
    flags = frame[practice].fillna(False).astype(bool).to_numpy()
    return frame[~flags], int(flags.sum())


def _per_document(
    rows: pd.DataFrame,
    names: pd.Series,
    efforts: Sequence[str],
    item: str,
    annotator: str,
    condition: str,
    words: str,
) -> list[DocumentSummary]:
    """Every document's figures by one grouped aggregation each (a loop over groups costs ~1 s per 100,000 rows)."""
    if rows.empty:
        return []
    keys = names.to_numpy()
    grouped = rows.groupby(keys, sort=True)
    segments, annotators, post_edits = grouped[item].nunique(), grouped[annotator].nunique(), grouped.size()
    counted = pd.to_numeric(rows[words], errors="coerce").fillna(0) if words in rows else pd.Series(0, index=rows.index)
    word_sums = counted.groupby(keys, sort=True).sum()
    seen = _conditions_seen(rows, keys, condition)
    totals = {}
    for column in efforts:
        values = pd.to_numeric(rows[column], errors="coerce").astype(float).groupby(keys, sort=True)
        totals[column] = (values.sum(min_count=1), values.mean(), values.count())
    return [
        DocumentSummary(
            document=str(name),
            segments=int(segments[name]),
            post_edits=int(post_edits[name]),
            annotators=int(annotators[name]),
            conditions=seen.get(name, []),
            words=int(word_sums[name]),
            effort={column: _effort_total(*(part[name] for part in totals[column])) for column in efforts},
        )
        for name in post_edits.index
    ]


def _conditions_seen(rows: pd.DataFrame, keys: np.ndarray, condition: str) -> dict[str, list[str]]:
    if condition not in rows:
        return {}
    pairs = pd.DataFrame({"document": keys, "condition": rows[condition].fillna("").astype(str).to_numpy()})
    pairs = pairs[pairs["condition"] != ""].drop_duplicates().sort_values(["document", "condition"])
    return {str(name): list(group["condition"]) for name, group in pairs.groupby("document", sort=False)}


def _effort_total(total: float, mean: float, n: int) -> EffortTotal:
    if not n:
        return EffortTotal(total=None, mean=None, n=0)
    return EffortTotal(total=float(total), mean=float(mean), n=int(n))


def document_columns(efforts: Sequence[str]) -> list[str]:
    """The columns of document_rows, in order (a CSV without documents still has its header)."""
    per_effort = [f"{column}_{part}" for column in efforts for part in ("total", "mean", "n")]
    return ["document", "segments", "post_edits", "annotators", "conditions", "words", *per_effort]


def document_rows(summary: DocumentsSummary) -> list[dict]:
    """One flat row per document (the CSV download and the analyze command's table): conditions
    space-separated, then `<field>_total`, `<field>_mean`, `<field>_n` per effort field."""
    rows = []
    for doc in summary.documents:
        row: dict = {
            "document": doc.document,
            "segments": doc.segments,
            "post_edits": doc.post_edits,
            "annotators": doc.annotators,
            "conditions": " ".join(doc.conditions),
            "words": doc.words,
        }
        for column in summary.efforts:
            effort = doc.effort[column]
            row.update({f"{column}_total": effort.total, f"{column}_mean": effort.mean, f"{column}_n": effort.n})
        rows.append(jsonable(row))
    return rows
