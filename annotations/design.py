"""Designed studies (pure; no Django): conditions, the Latin-square plan, highlight spans, languages.

A project declares conditions (name, which output prefills the editor or none, highlights on or
off). A Latin-square design gives every annotator every document exactly once, the condition of
annotator i on document j being conditions[(i + j) mod C]: each annotator meets each condition on
floor(D/C) or ceil(D/C) of their documents, and each document is seen under each condition by
floor(A/C) or ceil(A/C) annotators, for any numbers A, D, C (the balance holds for every prefix of
annotators too, so crowd participants can take slots one at a time). Each annotator's documents
come in a rotated order (annotator i starts at document i mod D), so that no document is always
edited first or last.
"""

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from editlab.refusals import Refusal

CONDITION_NAME = re.compile(r"^[\w][\w .\-]{0,99}$")
LABEL_MAX = 100
# The most annotators and conditions one Latin-square plan takes (the Design page, the plan and assign
# API, the CLI): a plan's page and answer hold a row per annotator. The page posts one field per ticked
# annotator and condition, so DATA_UPLOAD_MAX_NUMBER_FIELDS (settings) must exceed their sum.
DESIGN_MAX_ANNOTATORS = 1000
DESIGN_MAX_CONDITIONS = 100


class DesignError(Refusal, ValueError):
    """A design that cannot be made; the message says why and what would work."""


# ---------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Condition:
    name: str
    output: str | None  # the system whose output prefills the editor; None: an empty editor
    highlights: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "output": self.output, "highlights": self.highlights}


def parse_conditions(value: Any, *, where: str = "conditions") -> list[Condition]:
    """Conditions from their JSON form, each problem named by its place."""
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        raise DesignError(f"{where}: must be a list of conditions")
    conditions: list[Condition] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        place = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise DesignError(f"{place}: must be an object with name, output and highlights")
        unknown = set(entry) - {"name", "output", "highlights"}
        if unknown:
            raise DesignError(f"{place}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        name = entry.get("name")
        if not isinstance(name, str) or not CONDITION_NAME.match(name) or name != name.strip():
            raise DesignError(
                f"{place}.name: must be 1-100 letters, digits, spaces, '.', '-' or '_' (no commas), got {name!r}"
            )
        if name.casefold() in seen:
            raise DesignError(f"{place}.name: {name!r} is declared twice")
        seen.add(name.casefold())
        output = entry.get("output")
        if output is not None and (not isinstance(output, str) or not output.strip() or len(output) > 100):
            raise DesignError(f"{place}.output: must be a system name (1-100 characters) or null for an empty editor")
        highlights = entry.get("highlights", False)
        if not isinstance(highlights, bool):
            raise DesignError(f"{place}.highlights: must be true or false")
        conditions.append(Condition(name=name, output=output, highlights=highlights))
    return conditions


def condition_names(text: str, declared: Sequence[Condition]) -> list[str]:
    """Names from a comma-separated list (the CLI's --conditions), each one declared."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {condition.name for condition in declared}
    unknown = [name for name in names if name not in known]
    if unknown:
        available = ", ".join(sorted(known)) or "none (declare them on the project first)"
        raise DesignError(f"conditions: unknown {', '.join(map(repr, unknown))}; the project declares {available}")
    if len(set(names)) != len(names):
        raise DesignError("conditions: a condition is named twice")
    return names


# ---------------------------------------------------------------- the Latin square


@dataclass(frozen=True)
class Cell:
    annotator: str
    document: str
    condition: str
    order: int  # the document's place in this annotator's queue, from 0


@dataclass(frozen=True)
class LatinSquarePlan:
    annotators: tuple[str, ...]
    documents: tuple[str, ...]
    conditions: tuple[str, ...]
    cells: tuple[Cell, ...]

    def condition_of(self, annotator: str, document: str) -> str:
        for cell in self.cells:
            if cell.annotator == annotator and cell.document == document:
                return cell.condition
        raise KeyError((annotator, document))

    def per_annotator(self) -> dict[str, Counter]:
        counts: dict[str, Counter] = {a: Counter() for a in self.annotators}
        for cell in self.cells:
            counts[cell.annotator][cell.condition] += 1
        return counts

    def per_document(self) -> dict[str, Counter]:
        counts: dict[str, Counter] = {d: Counter() for d in self.documents}
        for cell in self.cells:
            counts[cell.document][cell.condition] += 1
        return counts

    def rows(self) -> list[dict[str, Any]]:
        """One row per annotator: their documents in queue order with each one's condition."""
        by_annotator: dict[str, list[Cell]] = {a: [] for a in self.annotators}
        for cell in self.cells:
            by_annotator[cell.annotator].append(cell)
        counts = self.per_annotator()  # once: per row it made a plan of A annotators cost A times the plan
        return [
            {
                "annotator": annotator,
                "documents": [
                    {"document": c.document, "condition": c.condition}
                    for c in sorted(by_annotator[annotator], key=lambda c: c.order)
                ],
                "conditions": dict(sorted(counts[annotator].items())),
            }
            for annotator in self.annotators
        ]


def _check_names(kind: str, names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        duplicate = next(name for name, n in Counter(names).items() if n > 1)
        raise DesignError(f"{kind}: {duplicate!r} is listed twice")


def latin_square_row(slot: int, *, documents: Sequence[str], conditions: Sequence[str]) -> list[tuple[str, str]]:
    """The (document, condition) queue of the annotator in `slot` (0, 1, ...), in queue order."""
    d, c = len(documents), len(conditions)
    order = [(slot + k) % d for k in range(d)]
    return [(documents[j], conditions[(slot + j) % c]) for j in order]


def latin_square(*, annotators: Sequence[str], documents: Sequence[str], conditions: Sequence[str]) -> LatinSquarePlan:
    """The plan, or a DesignError saying what would work."""
    _check_names("annotators", annotators)
    _check_names("documents", documents)
    _check_names("conditions", conditions)
    a, d, c = len(annotators), len(documents), len(conditions)
    if c < 1:
        raise DesignError("conditions: name at least one condition (declared on the project)")
    if d < 1:
        raise DesignError("documents: the project has no documents (items need a document id and position)")
    if a < c:
        raise DesignError(
            f"{a} annotator(s) for {c} conditions: for every document to be seen under every condition, "
            f"at least {c} annotators are needed; add {c - a} annotator(s) or use fewer conditions"
        )
    if d < c:
        raise DesignError(
            f"{d} document(s) for {c} conditions: for every annotator to meet every condition, at least {c} "
            f"documents are needed; import more documents, split long ones, or use fewer conditions"
        )
    cells = tuple(
        Cell(annotator=annotator, document=document, condition=condition, order=k)
        for i, annotator in enumerate(annotators)
        for k, (document, condition) in enumerate(latin_square_row(i, documents=documents, conditions=conditions))
    )
    return LatinSquarePlan(tuple(annotators), tuple(documents), tuple(conditions), cells)


# ---------------------------------------------------------------- highlight spans


def parse_spans(value: Any, text: str, *, where: str = "highlights") -> list[tuple[int, int, str]]:
    """Spans [start, end, label] over `text` (code point offsets, end exclusive), sorted, not overlapping."""
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        raise DesignError(f"{where}: must be a list of [start, end, label]")
    spans: list[tuple[int, int, str]] = []
    for index, span in enumerate(value):
        place = f"{where}[{index}]"
        if not isinstance(span, list | tuple) or len(span) not in (2, 3):
            raise DesignError(f"{place}: must be [start, end, label]")
        start, end = span[0], span[1]
        label = span[2] if len(span) == 3 else ""
        if any(isinstance(x, bool) or not isinstance(x, int) for x in (start, end)):
            raise DesignError(f"{place}: start and end must be whole numbers")
        if not 0 <= start < end <= len(text):
            raise DesignError(
                f"{place}: [{start}, {end}] is outside the text (0 <= start < end <= {len(text)} characters)"
            )
        if not isinstance(label, str) or len(label) > LABEL_MAX:
            raise DesignError(f"{place}: the label must be text of at most {LABEL_MAX} characters")
        spans.append((start, end, label))
    spans.sort()
    for (s1, e1, _), (s2, e2, _) in zip(spans, spans[1:], strict=False):
        if s2 < e1:
            raise DesignError(f"{where}: spans [{s1}, {e1}] and [{s2}, {e2}] overlap")
    return spans


# ---------------------------------------------------------------- languages

# BCP 47 (RFC 5646) in the forms studies use: language, optional script, region, variants.
LANGUAGE_TAG = re.compile(
    r"^[A-Za-z]{2,3}(-[A-Za-z]{3}){0,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$"
)
RTL_SCRIPTS = frozenset({"arab", "hebr", "syrc", "thaa", "nkoo", "adlm", "rohg", "mand", "samr", "mend"})
RTL_LANGUAGES = frozenset(
    {"ar", "arb", "he", "iw", "fa", "pes", "prs", "ur", "ps", "yi", "dv", "ckb", "sd", "ug", "syr"}
)


def language_error(tag: str) -> str | None:
    """Why `tag` is not a BCP 47 language tag, or None when it is one (or empty: unknown)."""
    if tag == "":
        return None
    if len(tag) > 35 or not LANGUAGE_TAG.match(tag):
        return f"{tag!r} is not a BCP 47 language tag (e.g. en, de-CH, ar, zh-Hant, sr-Latn)"
    return None


def direction(tag: str) -> str:
    """The text direction for a language tag: "rtl", "ltr", or "auto" when the language is unknown."""
    if not tag or language_error(tag):
        return "auto"
    parts = tag.lower().split("-")
    scripts = [part for part in parts[1:] if len(part) == 4 and part.isalpha()]
    if scripts:
        return "rtl" if scripts[0] in RTL_SCRIPTS else "ltr"
    return "rtl" if parts[0] in RTL_LANGUAGES else "ltr"
