"""The event type of the wire: one logged browser event as the editor's API receives it and the
event store keeps it (pure; no Django). Replay, highlights and effort read logs of these."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One logged browser event; `visit` is its visit's page_id. The wire's short names (k, it, s, e,
    ...) are translated at the boundary (annotations/api/serializers_editor.py: event_from_wire)."""

    seq: int
    t_ms: float
    kind: str
    visit: str = ""
    key: str = ""
    code: str = ""
    modifiers: int = 0
    repeat: bool = False
    input_type: str = ""
    sel_start: int | None = None
    sel_end: int | None = None
    data: str = ""
    length_after: int | None = None
    state: str = ""
    source: str = ""
    full_text: bool = False
