"""Pure: a project's error typology and MQM weights, the `<v>` span marks of the WMT MQM TSV, and the
checks every error span and ESA score passes (docs/quality.md).

A project's `quality` JSON holds `{"categories": [...], "weights": {...}}`; either key missing means the
default: the MQM core typology with WMT 2020's subcategories (Freitag et al. 2021, table 10) and WMT's
weights (major 5, minor 1, minor Fluency/Punctuation 0.1, Non-translation 25, neutral 0, critical as major).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from editlab.refusals import Refusal

MQM_CORE: tuple[str, ...] = (
    "Accuracy/Addition",
    "Accuracy/Omission",
    "Accuracy/Mistranslation",
    "Accuracy/Untranslated text",
    "Fluency/Punctuation",
    "Fluency/Spelling",
    "Fluency/Grammar",
    "Fluency/Register",
    "Fluency/Inconsistency",
    "Fluency/Character encoding",
    "Terminology/Inappropriate for context",
    "Terminology/Inconsistent use of terminology",
    "Style/Awkward",
    "Locale convention/Address format",
    "Locale convention/Currency format",
    "Locale convention/Date format",
    "Locale convention/Name format",
    "Locale convention/Telephone format",
    "Locale convention/Time format",
    "Other",
    "Source error",
    "Non-translation",
)
NON_TRANSLATION = "Non-translation"
NO_ERROR = "No-error"
SEVERITIES = ("minor", "major", "critical", "neutral")
# How the WMT TSV spells each severity (the export writes it so).
SEVERITY_SPELLING = {"minor": "Minor", "major": "Major", "critical": "Critical", "neutral": "Neutral"}
ESA_MIN, ESA_MAX = 0.0, 100.0
MAX_CATEGORIES = 500
MAX_CATEGORY_LENGTH = 200
OPEN, CLOSE = "<v>", "</v>"


class TypologyError(ValueError):
    """A typology, weight, span or score that does not fit; `field` names what is wrong."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class TypologyMalformed(Refusal):
    """The typology a project stored does not parse: its scores cannot be computed until an admin fixes it."""

    code = "typology_malformed"


def project_typology(quality: Any) -> Typology:
    """The typology of a project's stored `quality` JSON, for the readers of its scores; TypologyMalformed
    (a refusal: the page, the API and the commands show it) when it is malformed."""
    try:
        return parse_typology(quality)
    except TypologyError as exc:
        raise TypologyMalformed(f"the project's typology is malformed: {exc.field}: {exc.message}") from None


@dataclass(frozen=True)
class Weights:
    """MQM weights per severity; `categories` overrides them per category and severity (WMT: minor
    Fluency/Punctuation 0.1); `critical` None weighs a critical error as a major one; a category starting
    with "Non-translation" (WMT 2020 writes "Non-translation!") weighs `non_translation` whatever its severity."""

    major: float = 5.0
    minor: float = 1.0
    critical: float | None = None
    neutral: float = 0.0
    non_translation: float = 25.0
    categories: dict[str, dict[str, float]] = field(default_factory=lambda: {"Fluency/Punctuation": {"minor": 0.1}})

    def weight(self, category: str, severity: str) -> float:
        if category.startswith(NON_TRANSLATION):
            return self.non_translation
        override = self.categories.get(category, {}).get(severity)
        if override is not None:
            return override
        if severity == "critical":
            return self.major if self.critical is None else self.critical
        return float(getattr(self, severity))

    def as_json(self) -> dict[str, Any]:
        return {
            "major": self.major,
            "minor": self.minor,
            "critical": self.critical,
            "neutral": self.neutral,
            "non_translation": self.non_translation,
            "categories": self.categories,
        }


@dataclass(frozen=True)
class Typology:
    categories: tuple[str, ...] = MQM_CORE
    weights: Weights = field(default_factory=Weights)

    def check_category(self, category: str) -> None:
        if category in self.categories:
            return
        if category.startswith(NON_TRANSLATION) and NON_TRANSLATION in self.categories:
            return  # "Non-translation!" as WMT 2020 spells it
        raise TypologyError(f"category {_cut(category)} is not in the project's typology", "category")

    def as_json(self) -> dict[str, Any]:
        return {"categories": list(self.categories), "weights": self.weights.as_json()}


def parse_typology(value: Any) -> Typology:
    """A project's `quality` JSON as a Typology (the defaults for what it leaves out)."""
    if value in (None, {}):
        return Typology()
    if not isinstance(value, dict):
        raise TypologyError("must be an object with categories and weights", "quality")
    unknown = sorted(set(value) - {"categories", "weights"})
    if unknown:
        raise TypologyError(f"unknown key {unknown[0]!r} (categories, weights)", "quality")
    categories = MQM_CORE
    if "categories" in value:
        raw = value["categories"]
        if not isinstance(raw, list) or not raw or len(raw) > MAX_CATEGORIES:
            raise TypologyError(f"must be a list of 1 to {MAX_CATEGORIES} category names", "categories")
        for n, name in enumerate(raw):
            if not isinstance(name, str) or not name.strip() or len(name) > MAX_CATEGORY_LENGTH:
                raise TypologyError(f"entry {n} must be a name of 1 to {MAX_CATEGORY_LENGTH} characters", "categories")
            if name == NO_ERROR:
                raise TypologyError(f"{NO_ERROR!r} marks a rating without errors; it is not a category", "categories")
        if len(set(raw)) != len(raw):
            raise TypologyError("names a category twice", "categories")
        categories = tuple(raw)
    weights = Weights() if "weights" not in value else parse_weights(value["weights"])
    return Typology(categories=categories, weights=weights)


def parse_weights(value: Any) -> Weights:
    if not isinstance(value, dict):
        raise TypologyError("must be an object", "weights")
    defaults = Weights()
    unknown = sorted(set(value) - {"major", "minor", "critical", "neutral", "non_translation", "categories"})
    if unknown:
        raise TypologyError(f"unknown weight {unknown[0]!r}", "weights")
    numbers: dict[str, Any] = {}
    for name in ("major", "minor", "neutral", "non_translation"):
        numbers[name] = _weight(value.get(name, getattr(defaults, name)), f"weights.{name}")
    critical = value.get("critical")
    numbers["critical"] = None if critical is None else _weight(critical, "weights.critical")
    categories = value.get("categories", defaults.categories)
    if not isinstance(categories, dict):
        raise TypologyError("must be an object: category -> {severity: weight}", "weights.categories")
    parsed: dict[str, dict[str, float]] = {}
    for category, by_severity in categories.items():
        where = f"weights.categories.{_cut(category, 40)}"
        if not isinstance(by_severity, dict) or not set(by_severity) <= set(SEVERITIES):
            raise TypologyError(f"must be an object of severities ({', '.join(SEVERITIES)}) to weights", where)
        parsed[category] = {severity: _weight(w, where) for severity, w in by_severity.items()}
    return Weights(categories=parsed, **numbers)


def _weight(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise TypologyError(f"must be a finite number >= 0, got {_cut(value)}", where)
    return float(value)


def parse_severity(text: str) -> str:
    """A severity as the TSV writes it (Major, minor, ...) in its stored form, or TypologyError."""
    severity = text.strip().lower()
    if severity not in SEVERITIES:
        raise TypologyError(f"severity {_cut(text)} is not one of {', '.join(SEVERITY_SPELLING.values())}", "severity")
    return severity


def check_span(start: Any, end: Any, length: int, field: str = "span") -> None:
    """A span [start, end) over a text of `length` characters; (None, None) is an error without a span."""
    if start is None and end is None:
        return
    if start is None or end is None:
        raise TypologyError("needs both start and end, or neither", field)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
        raise TypologyError("start and end must be whole numbers", field)
    if start < 0 or end > length:
        raise TypologyError(f"[{start}, {end}) lies outside the text's {length} characters", field)
    if start > end:
        raise TypologyError(f"is inverted: start {start} after end {end}", field)


def check_esa(score: Any) -> float | None:
    """An ESA score: None, or a number from 0 to 100."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise TypologyError(f"must be a number from 0 to 100, got {_cut(score)}", "esa_score")
    if not ESA_MIN <= score <= ESA_MAX:
        raise TypologyError(f"{score!r} is outside 0-100", "esa_score")
    return float(score)


@dataclass(frozen=True)
class Marked:
    """A text with its `<v>` marks taken out: the span they marked, and whether `</v>` was missing."""

    text: str
    start: int | None = None
    end: int | None = None
    open_end: bool = False


def parse_marks(marked: str, field: str) -> Marked:
    """One `<v>…</v>` span (or none) in a WMT MQM text. A final `<v>` without `</v>` runs to the end of
    the text (the published WMT 2021 TED files have two); any other imbalance is refused."""
    opens, closes = marked.count(OPEN), marked.count(CLOSE)
    if opens == 0 and closes == 0:
        return Marked(marked)
    if opens > 1 or closes > 1:
        raise TypologyError(f"has {opens} {OPEN} and {closes} {CLOSE}; a row marks at most one span", field)
    start = marked.find(OPEN)
    if start < 0:
        raise TypologyError(f"has {CLOSE} without {OPEN}", field)
    if closes == 0:
        return Marked(marked[:start] + marked[start + len(OPEN) :], start, len(marked) - len(OPEN), True)
    close = marked.find(CLOSE)
    if close < start:
        raise TypologyError(f"has {CLOSE} before {OPEN}", field)
    text = marked[:start] + marked[start + len(OPEN) : close] + marked[close + len(CLOSE) :]
    return Marked(text, start, close - len(OPEN))


def mark(text: str, start: int | None, end: int | None, open_end: bool = False) -> str:
    """`text` with the span's `<v>` marks put back (parse_marks' inverse)."""
    if start is None or end is None:
        return text
    closing = "" if open_end else CLOSE
    return text[:start] + OPEN + text[start:end] + closing + text[end:]


def _cut(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
