"""Reference documents as the annotator sees them, and the same text for the metrics.

`Item.references` holds what the import gave: strings (a PET reference translation),
objects such as EditEval's retrieved documents `{"url", "title", "text"}`, or anything
else JSON holds. The editor shows each as a title and a text; the `with_references`
metrics must read exactly what the annotator read, never a Python repr of the object.
Pure functions: nothing here touches the database.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TITLE_KEYS = ("title", "name")
TEXT_KEYS = ("text", "content", "body")


@dataclass(frozen=True)
class Reference:
    title: str  # shown as the heading; "" when the document has none (the page numbers it)
    text: str
    url: str = ""  # shown as text beside the title (where it came from), not part of the document

    @property
    def metric_text(self) -> str:
        """What the with_references metrics read: the document's own title and text, as shown."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def references_shown(raw: Any) -> list[Reference]:
    """Each reference document as (title, text, url); strings, objects or anything else."""
    if raw in (None, "", [], {}):
        return []
    return [_reference(entry) for entry in (raw if isinstance(raw, list) else [raw])]


def reference_texts(raw: Any) -> tuple[str, ...]:
    """The reference documents as the metrics read them (a string stays exactly itself)."""
    return tuple(reference.metric_text for reference in references_shown(raw))


def _reference(entry: Any) -> Reference:
    if isinstance(entry, str):
        return Reference("", entry)
    if isinstance(entry, dict):
        title = _first_text(entry, TITLE_KEYS)
        text = _first_text(entry, TEXT_KEYS)
        if text is None and any(isinstance(entry.get(key), str) for key in TEXT_KEYS):
            text = ""  # an empty document is still a document, not a dump of its fields
        url = entry.get("url")
        if text is not None:
            return Reference(title or "", text, url if isinstance(url, str) else "")
        # No text to show: the whole object, readable, rather than nothing.
        return Reference(title or "", _dump(entry), url if isinstance(url, str) else "")
    return Reference("", _dump(entry))


def _first_text(entry: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
