"""Reads of the synthetic edits (origin `simulated`, annotations.services.simulated): which scenarios a
project's edits were made under, and one row per edit with its length and compression distance, the
frame metrics.analysis.scenarios analyses.

A synthetic edit's scenario is its condition. Its distance is the stored compression value of the
variant asked for: `plain` (the item's output -> the edit) or `with_references` (the output with the
expert knowledge -> the edit), as for human post-edits. Practice items' edits are left out, as the
human analysis leaves them out by default.
"""

import json

import pandas as pd
from django.db.models import Count, F, FilteredRelation, Max, Q, QuerySet
from django.db.models.functions import Length

from annotations.models import PostEdit, Project
from metrics.analysis.common import ITEM
from metrics.analysis.scenarios import DISTANCE, LENGTH, SCENARIO, scenario_order
from metrics.models import MetricValue

SCENARIO_METRIC = "compression"
COLUMNS = ("post_edit_id", ITEM, SCENARIO, LENGTH, DISTANCE)


def simulated_queryset(*, project: Project) -> QuerySet[PostEdit]:
    """The project's submitted synthetic edits (not of practice items), by id."""
    return (
        PostEdit.objects.completed()
        .filter(assignment__item__project=project, origin=PostEdit.SIMULATED, assignment__item__practice=False)
        .order_by("id")
    )


def project_has_simulated(*, project: Project) -> bool:
    return simulated_queryset(project=project).exists()


def simulated_scenarios(*, project: Project) -> list[str]:
    """The scenarios of the project's synthetic edits, the paper's first (normal, similar, fast)."""
    names = simulated_queryset(project=project).values_list("condition", flat=True).distinct()
    return scenario_order([name for name in names if name])


def simulated_edit_frame(
    *, project: Project, variant: str = MetricValue.PLAIN, metric: str = SCENARIO_METRIC
) -> pd.DataFrame:
    """One row per synthetic edit: post_edit_id, external_id, scenario, length (characters of the edit)
    and distance (the stored `metric` value of `variant`, NaN where none is stored). One query."""
    rows = (
        simulated_queryset(project=project)
        .annotate(
            value=FilteredRelation(
                "metric_values", condition=Q(metric_values__metric=metric, metric_values__variant=variant)
            )
        )
        .values_list("id", F("assignment__item__external_id"), "condition", Length("text"), F("value__value"))
    )
    frame = pd.DataFrame.from_records(list(rows), columns=list(COLUMNS))
    frame[LENGTH] = pd.to_numeric(frame[LENGTH]).astype(float)
    frame[DISTANCE] = pd.to_numeric(frame[DISTANCE], errors="coerce").astype(float)
    return frame


def simulated_fingerprint(*, project: Project, variant: str = MetricValue.PLAIN) -> str:
    """Changes whenever a synthetic edit or one of its distances of `variant` is stored or changed."""
    edits = simulated_queryset(project=project)
    stamp = edits.aggregate(n=Count("id"), changed=Max("updated"))
    if not stamp["n"]:  # no synthetic edit, so none of their values: what the values' query would count
        return json.dumps([0, str(stamp["changed"]), 0, "None"])
    values = MetricValue.objects.filter(
        post_edit__in=edits.values("id"), metric=SCENARIO_METRIC, variant=variant
    ).aggregate(n=Count("id"), changed=Max("computed_at"))
    return json.dumps([stamp["n"], str(stamp["changed"]), values["n"], str(values["changed"])])
