"""A project's evaluations as the WMT MQM TSV, and its MQM segment scores as WMT's avg_seg_scores TSV.

The MQM TSV has one row per error span (its `<v>` marks put back into the target, or the source for a
source-side span) and one "No-error" row per evaluation without spans; columns as the import reads them
(annotations.importers.mqm.COLUMNS), no quoting: a tab or newline inside a text is written as a space
(an imported text holds none). Texts are not neutralised against spreadsheet formulas: the file is
for Marot and other MQM tools, and must round-trip. docs/quality.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from annotations.importers.mqm import COLUMNS
from annotations.models import ErrorSpan, Project
from annotations.typology import NO_ERROR, SEVERITY_SPELLING, mark, project_typology
from metrics.analysis.mqm import format_score, published, segment_scores
from metrics.selectors_quality import evaluation_records, ratings

SCORE_COLUMNS = ("system", "mqm_avg_score", "seg_id")
_BREAKS = re.compile(r"[\t\r\n]")


def _cell(text: str) -> str:
    return _BREAKS.sub(" ", text)


def mqm_rows(project: Project) -> Iterator[list[str]]:
    """The TSV's rows, the header first."""
    yield list(COLUMNS)
    for record in evaluation_records(project):
        head = [record.system, record.doc, record.doc_id, record.seg_id, record.rater]
        if not record.spans:
            yield [*head, record.source, record.text, NO_ERROR, NO_ERROR, ""]
        for span in record.spans:
            source, target = record.source, record.text
            if span.side == ErrorSpan.SOURCE:
                source = mark(source, span.start, span.end, span.open_end)
            else:
                target = mark(target, span.start, span.end, span.open_end)
            yield [*head, source, target, span.category, SEVERITY_SPELLING[span.severity], span.comment]


def mqm_export_stream(project: Project) -> Iterator[bytes]:
    """The MQM TSV, encoded, a few hundred rows per chunk."""
    lines: list[str] = []
    for row in mqm_rows(project):
        lines.append("\t".join(_cell(cell) for cell in row) + "\n")
        if len(lines) >= 500:
            yield "".join(lines).encode("utf-8")
            lines = []
    if lines:
        yield "".join(lines).encode("utf-8")


def _segment_order(seg_id: str) -> tuple[int, int | str]:
    return (0, int(seg_id)) if seg_id.isdigit() else (1, seg_id)


def avg_seg_score_rows(project: Project) -> list[tuple[str, str, str]]:
    """(system, mqm_avg_score, seg_id) per rated system and segment, the score in WMT's sign and format,
    ordered by system and segment number."""
    scores = segment_scores(ratings(project), project_typology(project.quality).weights)
    ordered = sorted(scores.items(), key=lambda pair: (pair[0][0], _segment_order(pair[0][1])))
    return [(system, format_score(published(score)), seg_id) for (system, seg_id), score in ordered]


def avg_seg_scores_tsv(project: Project) -> str:
    rows = [SCORE_COLUMNS, *avg_seg_score_rows(project)]
    return "".join("\t".join(_cell(cell) for cell in row) + "\n" for row in rows)
