"""The analysis options' own fields and checks, shared by the one serializer (metrics.analysis_options)
and the other requests that take the same kinds of value: yes/no flags, text that reaches a query,
a condition's name, an idle threshold, an analysis target, pause thresholds."""

import math
from collections.abc import Iterable, Sequence

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotations.process import (
    MEASURES,
    THRESHOLD_MEASURES,
    MeasureNameError,
    measure_name,
    parse_measure,
    pause_thresholds,
)
from annotations.process.measures import threshold_text
from editlab import limits
from editlab.refusals import Refusal
from metrics.analysis.conditions import NAME_SHOWN


class SelectionError(Refusal, ValueError):
    """A selection parameter is invalid; the message names it."""


MAX_IDLE_THRESHOLD_S = limits.IDLE_THRESHOLD_MAX_S  # the projects' bound (editlab.limits)


def idle_seconds(value: float | str | None) -> float | None:
    """An idle threshold in seconds (None when not given); a SelectionError says what is wrong with it."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise SelectionError(f"idle threshold {str(value)[:40]!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_IDLE_THRESHOLD_S:
        raise SelectionError(f"idle threshold must be more than 0 and at most {MAX_IDLE_THRESHOLD_S:g} seconds")
    return seconds


FLAG_VALUES = {"": False, "0": False, "false": False, "off": False, "1": True, "true": True, "on": True}
FLAG_CHOICES = "1, 0, true, false, on, off"


def flag_parse(value: str, *, name: str, refusal: type[Refusal] = SelectionError) -> bool:
    """A yes/no parameter (the options' flags, the export's include_practice): anything but
    FLAG_VALUES (any case, around spaces) is refused, naming the parameter."""
    try:
        return FLAG_VALUES[value.strip().lower()]
    except KeyError:
        raise refusal(f"{name}: {value[:40]!r} is not one of {FLAG_CHOICES}") from None


@extend_schema_field(OpenApiTypes.BOOL)
class FlagField(serializers.Field):
    """A yes/no option, parsed as flag_parse parses it (the command passes booleans)."""

    default_error_messages = {"invalid": "Must be a valid boolean: {input} is not one of " + FLAG_CHOICES + "."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and data.strip().lower() in FLAG_VALUES:
            return FLAG_VALUES[data.strip().lower()]
        self.fail("invalid", input=repr(str(data)[:40]))

    def to_representation(self, value):
        return bool(value)


class TextField(serializers.CharField):
    """Text that reaches a query: a NUL is refused by name (PostgreSQL cannot hold one)."""

    default_error_messages = {"nul": "{name} contains a NUL character: Null characters are not allowed."}

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            self.fail("nul", name=self.field_name)
        return super().to_internal_value(data)


class ConditionNameField(TextField):
    """A baseline condition: a name too long to be one is refused as not a condition."""

    default_error_messages = {
        "too_long": "baseline {shown!r} is not a condition: Ensure this field has no more than {max_length} characters."
    }

    def to_internal_value(self, data):
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("too_long", shown=data[:NAME_SHOWN] + "…", max_length=self.max_length)
        return super().to_internal_value(data)


class SecondsField(serializers.FloatField):
    """An idle threshold in seconds, checked by idle_seconds."""

    def to_internal_value(self, data):
        try:
            return idle_seconds(data)
        except SelectionError as exc:
            raise serializers.ValidationError(str(exc)) from None


def process_target(target: str, targets: Iterable[str]) -> tuple[str, float | None] | None:
    """None for an effort target (one of `targets`), else the process measure a target names, with its
    threshold (annotations.process.parse_measure); a SelectionError says what is wrong with it."""
    if target in targets:
        return None
    try:
        return parse_measure(target)
    except MeasureNameError as exc:
        if target.partition("@")[0].strip() in (*MEASURES, *THRESHOLD_MEASURES):
            raise SelectionError(f"target {target[:80]!r}: {exc}") from None
        raise SelectionError(
            f"target {target[:80]!r} is not one of: {', '.join(targets)}, or a process measure (docs/process.md): "
            f"{', '.join(MEASURES)}, or at a pause threshold T in ms: "
            + ", ".join(f"{name}@T" for name in THRESHOLD_MEASURES)
        ) from None


def target_groups(*, targets: Sequence[str], chosen: str = "", thresholds: str | None = None) -> list[dict]:
    """The report page's target choices, grouped: the effort targets, the process measures without a
    threshold, then the threshold measures at each pause threshold of `thresholds` (the page's
    pause_thresholds; the defaults when absent or refused, the refusal is the analysis's to show) and
    at the chosen target's own threshold. Each group is {"label", "targets"}."""
    try:
        listed = set(pause_thresholds(thresholds))
    except MeasureNameError:
        listed = set(pause_thresholds(None))
    try:
        chosen_at = parse_measure(chosen)[1]
    except MeasureNameError:
        chosen_at = None
    if chosen_at is not None:
        listed.add(chosen_at)
    groups = [
        {"label": "effort", "targets": list(targets)},
        {"label": "process (docs/process.md)", "targets": list(MEASURES)},
    ]
    for threshold in sorted(listed):
        groups.append(
            {
                "label": f"process, pause threshold {threshold:g} ms",
                "targets": [measure_name(name, threshold) for name in THRESHOLD_MEASURES],
            }
        )
    return groups


class TargetField(TextField):
    """An analysis target: an effort target (`choices`) or a process measure (process_target)."""

    def __init__(self, *, choices: Sequence[str], **kwargs) -> None:
        self.choices = tuple(choices)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        target = super().to_internal_value(data).strip()
        try:
            process_target(target, self.choices)
        except SelectionError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return target


@extend_schema_field(OpenApiTypes.STR)
class PauseThresholdsField(serializers.Field):
    """Comma-separated pause thresholds in ms (a list also), checked by annotations.process.pause_thresholds."""

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError("pause_thresholds contains a NUL character")
        if not isinstance(data, (str, list, tuple)):
            raise serializers.ValidationError(f"{str(data)[:40]!r} is not a comma-separated list of milliseconds")
        try:
            return pause_thresholds(data)
        except MeasureNameError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value):
        return ",".join(threshold_text(threshold) for threshold in value)
