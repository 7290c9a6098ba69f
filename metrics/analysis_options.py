"""The one front door for analysis options: the report page, the analysis API and the analyze
command parse a request's options here, with the same names, defaults, ranges and messages.

A Selection says which post-edits (project, annotators, task type, origin, flagged, practice) and
which target and variant; the analysis Settings say how (k, test size, seed, CV repeats, log time,
mixed models); a baseline names the condition the others are compared with.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.http import QueryDict
from rest_framework import serializers

from annotations.design import DesignError
from annotations.models import PostEdit, Project
from annotations.process import DEFAULT_PAUSE_THRESHOLDS_MS
from metrics.analysis import (
    DEFAULT_SETTINGS,
    BaselineError,
    Settings,
)
from metrics.analysis.conditions import CONDITION, pick_baseline
from metrics.analysis_fields import (  # noqa: F401
    FLAG_CHOICES,
    FLAG_VALUES,
    MAX_IDLE_THRESHOLD_S,
    ConditionNameField,
    FlagField,
    PauseThresholdsField,
    SecondsField,
    SelectionError,
    TargetField,
    TextField,
    flag_parse,
    idle_seconds,
    process_target,
    target_groups,
)
from metrics.models import MetricValue
from metrics.selectors import (
    TARGETS,
    VARIANTS,
    annotator_names,
    post_edit_queryset,
)

# (FLAG_CHOICES, FLAG_VALUES, MAX_IDLE_THRESHOLD_S, FlagField, flag_parse, target_groups: other modules
# import them from here.)

ORIGINS = (PostEdit.LIVE, PostEdit.IMPORTED)


@dataclass(frozen=True)
class Selection:
    project: Project
    target: str
    variant: str = MetricValue.PLAIN
    annotators: tuple[str, ...] = ()
    task_type: str = ""
    origin: str = ""
    exclude_flagged: bool = False
    idle_threshold_s: float | None = None  # active time recomputed from the event logs at this threshold
    include_practice: bool = False  # practice items' post-edits are left out unless asked for
    pause_thresholds_ms: tuple[float, ...] = DEFAULT_PAUSE_THRESHOLDS_MS  # a process target's thresholds

    @property
    def target_column(self) -> str:
        """The frame's column: an effort field, or the process measure's own name (docs/process.md)."""
        return TARGETS.get(self.target, self.target)

    @property
    def filters(self) -> dict:
        """The post_edit_queryset / post_edit_frame arguments of this selection."""
        return {
            "project": self.project,
            "annotators": self.annotators or None,
            "task_type": self.task_type or None,
            "origin": self.origin or None,
            "exclude_flagged": self.exclude_flagged,
            "include_practice": self.include_practice,
        }

    def as_params(self) -> dict[str, str | list[str]]:
        """Query parameters that rebuild this selection (for links and plot URLs)."""
        params: dict[str, str | list[str]] = {"target": self.target, "variant": self.variant}
        if self.annotators:
            params["annotators"] = list(self.annotators)
        if self.task_type:
            params["task_type"] = self.task_type
        if self.origin:
            params["origin"] = self.origin
        if self.exclude_flagged:
            params["exclude_flagged"] = "1"
        if self.idle_threshold_s is not None:
            params["idle_threshold"] = f"{self.idle_threshold_s:g}"
        if self.include_practice:
            params["include_practice"] = "1"
        if self.pause_thresholds_ms != DEFAULT_PAUSE_THRESHOLDS_MS:
            params["pause_thresholds"] = ",".join(f"{threshold:g}" for threshold in self.pause_thresholds_ms)
        return params

    def describe(self) -> dict:
        return {
            "project": self.project.name,
            "project_id": self.project.pk,
            "target": self.target,
            "target_column": self.target_column,
            "variant": self.variant,
            "annotators": list(self.annotators),
            "task_type": self.task_type or None,
            "origin": self.origin or None,
            "exclude_flagged": self.exclude_flagged,
            "idle_threshold_s": self.idle_threshold_s,
            "include_practice": self.include_practice,
            "pause_thresholds_ms": list(self.pause_thresholds_ms),
        }


def _split_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Annotators as a list, or one comma-separated string (the command line, the API)."""
    if not value:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    return tuple(dict.fromkeys(name.strip() for item in items for name in item.split(",") if name.strip()))


def selection_build(
    *,
    project: Project,
    target: str | None,
    variant: str | None = None,
    annotators: str | Sequence[str] | None = None,
    task_type: str | None = None,
    origin: str | None = None,
    exclude_flagged: bool = False,
    idle_threshold_s: float | str | None = None,
    include_practice: bool = False,
    pause_thresholds_ms: Sequence[float] = DEFAULT_PAUSE_THRESHOLDS_MS,
) -> Selection:
    """Validate the selection parameters; a SelectionError names the bad one and the choices."""
    texts = {
        "target": target,
        "variant": variant,
        "task_type": task_type,
        "origin": origin,
        "annotators": ",".join(annotators) if annotators and not isinstance(annotators, str) else annotators,
    }
    for name, text in texts.items():
        if text and "\x00" in text:  # PostgreSQL refuses NUL in text: say so instead of failing
            raise SelectionError(f"{name} contains a NUL character")
    target = (target or "").strip()
    process_target(target, TARGETS)
    variant = (variant or MetricValue.PLAIN).strip()
    if variant not in VARIANTS:
        raise SelectionError(f"variant {variant!r} is not one of: {', '.join(VARIANTS)}")
    origin = (origin or "").strip()
    if origin and origin not in ORIGINS:
        raise SelectionError(f"origin {origin!r} is not one of: {', '.join(ORIGINS)}")
    names = _split_names(annotators)
    if names:
        known = set(annotator_names(project=project))
        unknown = [name for name in names if name not in known]
        if unknown:
            raise SelectionError(f"annotator {unknown[0]!r} has no submitted post-edit in project {project.name!r}")
    return Selection(
        project=project,
        target=target,
        variant=variant,
        annotators=names,
        task_type=(task_type or "").strip(),
        origin=origin,
        exclude_flagged=bool(exclude_flagged),
        idle_threshold_s=_idle_threshold(idle_threshold_s, target),
        include_practice=bool(include_practice),
        pause_thresholds_ms=tuple(pause_thresholds_ms),
    )


def _idle_threshold(value: float | str | None, target: str) -> float | None:
    """Seconds, for the active_time target only; a SelectionError says what is wrong with it."""
    seconds = idle_seconds(value)
    if seconds is not None and target != "active_time":
        raise SelectionError("an idle threshold applies to the active_time target only")
    return seconds


TIME_TARGETS = ("wall_time", "active_time")


def settings_build(
    *,
    selection: Selection,
    k: int = DEFAULT_SETTINGS.k,
    test_size: float = DEFAULT_SETTINGS.test_size,
    seed: int = DEFAULT_SETTINGS.seed,
    cv_repeats: int = DEFAULT_SETTINGS.cv_repeats,
    log_time: bool = False,
    mixed_models: bool = True,
) -> Settings:
    """The analysis settings for a selection; a SelectionError names a bad one."""
    if log_time and selection.target not in TIME_TARGETS:
        raise SelectionError(
            f"log time applies to the time targets ({', '.join(TIME_TARGETS)}), not to {selection.target}"
        )
    try:
        return Settings(
            k=k,
            test_size=test_size,
            seed=seed,
            cv_repeats=cv_repeats,
            log_target=log_time,
            mixed_models=mixed_models,
        )
    except ValueError as exc:
        raise SelectionError(str(exc)) from None


MAX_BASELINE = 200


def declared_conditions(project: Project) -> list[str]:
    """The project's declared condition names, in order (none when the stored JSON is malformed)."""
    try:
        return [condition.name for condition in project.declared_conditions()]
    except DesignError:
        return []


def baseline_build(*, selection: Selection, baseline: str | None) -> str | None:
    """The baseline condition asked for (None: the first declared one); a SelectionError when it is
    neither declared nor the condition of an edit in the selection, listing the valid ones."""
    baseline = (baseline or "").strip()
    if not baseline:
        return None
    if "\x00" in baseline:
        raise SelectionError("baseline contains a NUL character")
    present = post_edit_queryset(**selection.filters).exclude(condition="").values_list(CONDITION, flat=True)
    try:
        return pick_baseline(
            baseline[: MAX_BASELINE + 1],
            conditions=sorted(set(present)),
            declared=declared_conditions(selection.project),
        )
    except BaselineError as exc:
        raise SelectionError(str(exc)) from None


def analysis_request_build(*, project: Project, params: Mapping) -> tuple[Selection, Settings, str | None]:
    """The selection, settings and baseline of one analysis request, from the already-checked
    options the API and the analyze command share (the same names in both); a SelectionError names
    what is wrong."""
    selection = selection_build(
        project=project,
        target=params["target"],
        variant=params["variant"],
        annotators=params["annotators"],
        task_type=params["task_type"],
        origin=params["origin"],
        exclude_flagged=params["exclude_flagged"],
        idle_threshold_s=params["idle_threshold"],
        include_practice=params["include_practice"],
        pause_thresholds_ms=params["pause_thresholds"],
    )
    baseline = baseline_build(selection=selection, baseline=params["baseline"])
    settings = settings_build(
        selection=selection,
        k=params["k"],
        test_size=params["test_size"],
        seed=params["seed"],
        cv_repeats=params["cv_repeats"],
        log_time=params["log_time"],
        mixed_models=params["mixed_models"],
    )
    return selection, settings, baseline


def settings_params(settings: Settings) -> dict[str, str]:
    """Query parameters that rebuild the settings (for links and plot URLs): those not at their default."""
    params = {
        name: str(getattr(settings, name))
        for name in ("k", "test_size", "seed", "cv_repeats")
        if getattr(settings, name) != getattr(DEFAULT_SETTINGS, name)
    }
    if settings.log_target:
        params["log_time"] = "1"
    if not settings.mixed_models:
        params["mixed_models"] = "0"
    return params


# ------------------------------------------------------------------------ the one serializer


def _one_of(name: str, choices) -> dict:
    return {"invalid_choice": f"{name} {{input!r}} is not one of: {', '.join(choices)}"}


_SHARE = {"min_value": "test_size must be between 0 and 1, at least {min_value}"}
_SHARE_MAX = {"max_value": "test_size must be between 0 and 1, at most {max_value}"}


class AnalysisOptionsSerializer(serializers.Serializer):
    """Every analysis option of the report page, the analysis API and the analyze command."""

    target = TargetField(
        choices=list(TARGETS), help_text="The effort to explain, or a process measure (docs/process.md)."
    )
    pause_thresholds = PauseThresholdsField(
        required=False, default=DEFAULT_PAUSE_THRESHOLDS_MS, help_text="Pause thresholds in ms, comma-separated."
    )
    variant = serializers.ChoiceField(
        choices=list(VARIANTS), default=VARIANTS[0], error_messages=_one_of("variant", VARIANTS)
    )
    annotators = TextField(
        required=False, allow_blank=True, default="", help_text="Comma-separated usernames; empty = all."
    )
    task_type = TextField(required=False, allow_blank=True, default="", max_length=100)
    origin = serializers.ChoiceField(
        choices=["", *ORIGINS], required=False, default="", error_messages=_one_of("origin", ORIGINS)
    )
    k = serializers.IntegerField(required=False, default=DEFAULT_SETTINGS.k, min_value=1, max_value=100)
    test_size = serializers.FloatField(
        required=False,
        default=DEFAULT_SETTINGS.test_size,
        min_value=0.05,
        max_value=0.95,
        error_messages={**_SHARE, **_SHARE_MAX},
    )
    seed = serializers.IntegerField(required=False, default=DEFAULT_SETTINGS.seed, min_value=0, max_value=2**32 - 1)
    cv_repeats = serializers.IntegerField(
        required=False, default=DEFAULT_SETTINGS.cv_repeats, min_value=1, max_value=50
    )
    exclude_flagged = FlagField(
        required=False,
        default=False,
        help_text="Leave out post-edits with a flag (clipped time, replay mismatch, ...).",
    )
    idle_threshold = SecondsField(
        required=False,
        default=None,
        allow_null=True,
        help_text="Seconds (target active_time only): active time recomputed from the event logs at this threshold.",
    )
    log_time = FlagField(
        required=False, default=False, help_text="The mixed models explain log(time) (time targets only)."
    )
    mixed_models = FlagField(required=False, default=True, help_text="Fit the mixed-effects models.")
    include_practice = FlagField(
        required=False, default=False, help_text="Keep the post-edits of practice items (left out by default)."
    )
    baseline = ConditionNameField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_BASELINE,
        help_text="The condition the others are compared with; empty = the first declared condition.",
    )


# ------------------------------------------------------------------------ the three entry points
# One serializer (above) says every option's name, type, default and range; the API
# answers its errors in DRF's shape, the page and the command as one sentence (a SelectionError).


def analysis_options_check(data: Mapping) -> dict:
    """The options of `data` (a QueryDict, or the command's dict), through the one serializer, with
    their defaults; a SelectionError names the first bad one."""
    serializer = AnalysisOptionsSerializer(data=data)
    if not serializer.is_valid():
        name, problems = next(iter(serializer.errors.items()))
        text = str(problems[0])
        spoken = name.replace("_", " ")
        raise SelectionError(text if text.startswith((name, spoken)) else f"{name}: {text}")
    return dict(serializer.validated_data)


PAGE_TARGET = "keystrokes"  # what the report page shows before a target is chosen


def page_options(query: QueryDict) -> QueryDict:
    """The report page's query as the serializer's data: annotators (a multiple choice) as one
    comma-separated value, and the page's first target when none is chosen yet."""
    data = query.copy()
    if "annotators" in data:
        data.setlist("annotators", [",".join(query.getlist("annotators"))])
    if not data.get("target", "").strip():
        data["target"] = PAGE_TARGET
    return data


def analysis_request_from_query(*, project: Project, query: QueryDict) -> tuple[Selection, Settings, str | None]:
    """The report page's (and its downloads' and plots') selection, settings and baseline."""
    return analysis_request_build(project=project, params=analysis_options_check(page_options(query)))
