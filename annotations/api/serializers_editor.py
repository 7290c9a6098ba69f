"""Input and output serializers of the editor endpoints (the editor <-> server contract).

The wire's short event names (k, it, s, e, ...) end here: validate_events hands the services
LogEvents whose fields are words (kind, input_type, sel_start, sel_end, ...); messages to the client
keep naming the wire's fields.

Events are validated by one plain function (a batch holds up to EDITLAB_EVENTS_MAX_PER_BATCH of
them; a nested serializer per event would be slow and its errors hard to read); every message names
the event index, its seq and the field.
"""

import math
from collections.abc import Mapping
from itertools import pairwise

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotations.log_event import LogEvent
from editlab import limits

EVENT_KINDS = frozenset(
    {
        "load",
        "keydown",
        "beforeinput",
        "input",
        "paste",
        "cut",
        "copy",
        "select",
        "mousedown",
        "focus",
        "blur",
        "visibility",
        "compositionstart",
        "compositionupdate",
        "compositionend",
        "submit",
    }
)
REQUIRED_BY_KIND = {
    "keydown": ("key",),
    "beforeinput": ("it", "s", "e"),
    "input": ("it", "s", "len"),
    "select": ("s", "e"),
    "visibility": ("state",),
    "load": ("data", "len"),
}
# The top seq the server accepts: the next one (the editor's next_seq) must still fit the column.
SEQ_MAX = limits.MAX_INT - 1
T_MAX_MS = 1e10  # ~115 days in one page load
SHORT_TEXT_MAX = {"key": 64, "code": 64, "it": 64, "src": 32}
VISIBILITY_STATES = ("hidden", "visible")


def _storable(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate"
    return None


# One check per field, each saying why a value is not acceptable (or None). A batch holds up to
# EDITLAB_EVENTS_MAX_PER_BATCH events of ~5 fields: the checks are the hot path of every event batch,
# so they test exact JSON types (`type(value) is int` also refuses true/false) and are looked up by name.


def _integer(high: int, message: str):
    def check(value) -> str | None:
        return None if type(value) is int and 0 <= value <= high else message

    return check


def _time(value) -> str | None:
    if type(value) not in (int, float) or not math.isfinite(value):
        return "must be a number (ms since the page load)"
    if not 0 <= value <= T_MAX_MS:
        return f"must be between 0 and {T_MAX_MS:.0f}"
    return None


def _flag(value) -> str | None:
    return None if type(value) is bool else "must be true or false"


def _state(value) -> str | None:
    return None if value in VISIBILITY_STATES else 'must be "hidden" or "visible"'


def _text(limit: int | None):
    def check(value) -> str | None:
        if type(value) is not str:
            return "must be a string"
        if limit is not None and len(value) > limit:
            return f"is longer than {limit} characters"
        return _storable(value)

    return check


FIELD_CHECKS = {
    "seq": _integer(
        SEQ_MAX, f"must be an integer between 0 and {SEQ_MAX} (the seq after it must still fit in 32 bits)"
    ),
    "s": _integer(limits.MAX_INT, f"must be an integer between 0 and {limits.MAX_INT}"),
    "e": _integer(limits.MAX_INT, f"must be an integer between 0 and {limits.MAX_INT}"),
    "len": _integer(limits.MAX_INT, f"must be an integer between 0 and {limits.MAX_INT}"),
    "t": _time,
    "mods": _integer(15, "must be an integer 0..15 (bits: 1 ctrl, 2 shift, 4 alt, 8 meta)"),
    "rep": _flag,
    "f": _flag,
    "state": _state,
    **{name: _text(SHORT_TEXT_MAX.get(name)) for name in ("key", "code", "it", "src", "data")},
}


def _check_field(name: str, value) -> str | None:
    """Why value is not acceptable for field `name`, or None."""
    check = FIELD_CHECKS.get(name)
    return None if check is None else check(value)


# Each wire field and the LogEvent field it becomes.
WIRE_NAMES = {
    "seq": "seq",
    "t": "t_ms",
    "k": "kind",
    "key": "key",
    "code": "code",
    "mods": "modifiers",
    "rep": "repeat",
    "it": "input_type",
    "s": "sel_start",
    "e": "sel_end",
    "data": "data",
    "len": "length_after",
    "state": "state",
    "src": "source",
    "f": "full_text",
}
ALLOWED_FIELDS = frozenset(WIRE_NAMES)


def event_from_wire(event: Mapping, visit: str = "") -> LogEvent:
    """A contract EVENT dict (as the browser sends it) as a LogEvent of visit `visit` (its page_id)."""
    return LogEvent(visit=visit, **{WIRE_NAMES[name]: value for name, value in event.items() if value is not None})


def _event_error(event) -> str | None:
    if not isinstance(event, dict):
        return "is not a JSON object"
    if not ALLOWED_FIELDS.issuperset(event):
        return f"has unknown field {sorted(set(event) - ALLOWED_FIELDS)[0]!r}"
    for name in ("seq", "t", "k"):
        if name not in event:
            return f"misses the field {name!r}"
    kind = event["k"]
    if not isinstance(kind, str) or kind not in EVENT_KINDS:
        return f"field 'k': unknown event kind {kind!r}"
    for name in REQUIRED_BY_KIND.get(kind, ()):
        if name not in event:
            return f"({kind}) misses the field {name!r}"
    for name, value in event.items():
        check = FIELD_CHECKS.get(name)  # "k" has none: checked above
        problem = check(value) if check is not None else None
        if problem:
            return f"field {name!r} {problem}"
    if kind in ("beforeinput", "select") and event["e"] < event["s"]:
        return "field 'e' is smaller than 's'"
    return None


def validate_events(raw) -> list[LogEvent]:
    """The batch's events if all are well-formed, else a ValidationError naming the first problem."""
    if not isinstance(raw, list):
        raise serializers.ValidationError("events must be a list")
    limit = settings.EDITLAB_EVENTS_MAX_PER_BATCH
    if len(raw) > limit:
        raise serializers.ValidationError(
            f"{len(raw)} events in one batch; at most {limit} (EDITLAB_EVENTS_MAX_PER_BATCH) are accepted"
        )
    first_index: dict[int, int] = {}
    for index, event in enumerate(raw):
        problem = _event_error(event)
        if problem:
            seq = event.get("seq") if isinstance(event, dict) else None
            where = f"event {index}" + (f" (seq {seq})" if _check_field("seq", seq) is None else "")
            raise serializers.ValidationError(f"{where} {problem}")
        if event["seq"] in first_index:
            raise serializers.ValidationError(
                f"event {index} (seq {event['seq']}) repeats the seq of event {first_index[event['seq']]}"
            )
        first_index[event["seq"]] = index
    ordered = sorted(raw, key=lambda event: event["seq"])
    for earlier, later in pairwise(ordered):
        if later["t"] < earlier["t"]:
            raise serializers.ValidationError(
                f"event {first_index[later['seq']]} (seq {later['seq']}) field 't' decreases: "
                f"{later['t']} after {earlier['t']} at seq {earlier['seq']}"
            )
    return [event_from_wire(event) for event in raw]


class EventSerializer(serializers.Serializer):
    """One browser event (documentation of the wire format; validated by validate_events)."""

    seq = serializers.IntegerField(
        min_value=0, max_value=SEQ_MAX, help_text="Consecutive per post-edit across page loads."
    )
    t = serializers.FloatField(
        min_value=0,
        max_value=T_MAX_MS,
        help_text="ms since this page load (performance.now()); never decreases within a page load.",
    )
    k = serializers.ChoiceField(choices=sorted(EVENT_KINDS))
    key = serializers.CharField(required=False, max_length=64)
    code = serializers.CharField(required=False, max_length=64)
    mods = serializers.IntegerField(
        required=False, min_value=0, max_value=15, help_text="1 ctrl, 2 shift, 4 alt, 8 meta"
    )
    rep = serializers.BooleanField(required=False)
    it = serializers.CharField(required=False, max_length=64, help_text="InputEvent.inputType")
    s = serializers.IntegerField(required=False, min_value=0, help_text="UTF-16 offset")
    e = serializers.IntegerField(required=False, min_value=0, help_text="UTF-16 offset")
    # Declared fields move into _declared_fields: this does not hide Serializer.data at run time.
    data = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)  # type: ignore[assignment]
    len = serializers.IntegerField(required=False, min_value=0, help_text="UTF-16 length of the text")
    state = serializers.ChoiceField(required=False, choices=VISIBILITY_STATES)
    src = serializers.CharField(required=False, max_length=32)
    f = serializers.BooleanField(required=False, help_text="data is the full text after the change")


@extend_schema_field(EventSerializer(many=True))
class EventsField(serializers.Field):
    def to_internal_value(self, data):
        return validate_events(data)

    def to_representation(self, value):
        return value


class TextField(serializers.CharField):
    """A JSON string, kept as typed: no trimming, blank allowed, numbers NOT turned into text."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class EventsInputSerializer(serializers.Serializer):
    page_id = serializers.UUIDField()
    events = EventsField()


class EventsOutputSerializer(serializers.Serializer):
    stored = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    gaps = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    max_seq = serializers.IntegerField()

    def to_representation(self, instance) -> dict:
        # The answer to every event batch: its four values as they are (all ints). The fields above
        # document it for the schema; they are not run per request.
        return {
            "stored": instance.stored,
            "duplicates": instance.duplicates,
            "gaps": [[first, last] for first, last in instance.gaps],
            "max_seq": instance.max_seq,
        }


class DraftInputSerializer(serializers.Serializer):
    page_id = serializers.UUIDField()
    text = TextField()
    version = serializers.IntegerField(min_value=0)

    def validate_text(self, value: str) -> str:
        """The limit every text of the editor has, the one import checks (editlab/limits.py)."""
        problem = limits.text_size_problem(value, limit=settings.EDITLAB_TEXT_MAX_BYTES)
        if problem:
            raise serializers.ValidationError(problem, code="too_large")
        return value


class DraftOutputSerializer(serializers.Serializer):
    version = serializers.IntegerField()


class SubmitInputSerializer(DraftInputSerializer):
    last_seq = serializers.IntegerField(min_value=-1, max_value=limits.MAX_INT)


class SubmitOutputSerializer(serializers.Serializer):
    next_url = serializers.CharField()
    diff_url = serializers.CharField()


class SkipInputSerializer(serializers.Serializer):
    page_id = serializers.UUIDField()
    reason = TextField(max_length=2000)


class SkipOutputSerializer(serializers.Serializer):
    next_url = serializers.CharField()
