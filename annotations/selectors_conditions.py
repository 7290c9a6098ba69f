"""Reads about a project's conditions: what already carries each name, and what the conditions need
against what the items carry (the settings page's summary)."""

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Q

from annotations.design import Condition, DesignError, parse_conditions
from annotations.models import Assignment, Item, PostEdit, Project


@dataclass
class ConditionUsage:
    """What already carries a condition's name in a project."""

    assignments: int = 0  # live and imported
    imported: int = 0
    post_edits: int = 0  # started (live: opened at least once) or imported
    live_post_edits: int = 0
    in_design: bool = False  # counterbalanced by the project's Latin-square design

    @property
    def holds_name(self) -> bool:
        return bool(self.assignments or self.in_design)

    def describe(self) -> str:
        parts = []
        if self.assignments:
            imported = f", {self.imported} of them imported" if self.imported else ""
            parts.append(f"{self.assignments} assignment(s){imported}")
        if self.in_design:
            parts.append("the project's Latin-square design (crowd participants join it)")
        return " and ".join(parts) or "nothing"


def designed_conditions(*, project: Project) -> list[str]:
    """The conditions the project's current Latin-square design counterbalances (none for a simple design)."""
    if project.design != Project.DESIGN_LATIN_SQUARE:
        return []
    designs = project.meta.get("designs") if isinstance(project.meta, dict) else None
    latin = [d for d in designs or [] if isinstance(d, dict) and d.get("design") == Project.DESIGN_LATIN_SQUARE]
    if not latin:
        return []
    return [name for name in latin[-1].get("conditions") or [] if isinstance(name, str)]


def condition_usage(*, project: Project) -> dict[str, ConditionUsage]:
    """Per condition name: the assignments and post-edits that carry it, and whether the design does."""
    rows = (
        Assignment.objects.first_pass()
        .filter(item__project=project)
        .exclude(condition="")
        .values("condition")
        .annotate(
            n=Count("id"),
            imported=Count("id", filter=Q(post_edit__origin=PostEdit.IMPORTED)),
            post_edits=Count("post_edit"),
            live=Count("post_edit", filter=Q(post_edit__origin=PostEdit.LIVE)),
        )
        .order_by("condition")
    )
    usage = {
        row["condition"]: ConditionUsage(
            assignments=row["n"], imported=row["imported"], post_edits=row["post_edits"], live_post_edits=row["live"]
        )
        for row in rows
    }
    for name in designed_conditions(project=project):
        usage.setdefault(name, ConditionUsage()).in_design = True
    return usage


def output_counts(*, project: Project) -> dict[str, int]:
    """How many of the project's non-practice items carry each named output."""
    return _json_key_counts(project=project, column="outputs")


def _json_key_counts(*, project: Project, column: str) -> dict[str, int]:
    """How many of the project's non-practice items carry each key of a JSON object column
    (outputs, highlights), counted by the database: a project's outputs are its largest texts."""
    if column not in ("outputs", "highlights"):
        raise ValueError(column)
    table = Item._meta.db_table
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT k, COUNT(*) FROM {table} i CROSS JOIN LATERAL jsonb_object_keys("
            f"CASE WHEN jsonb_typeof(i.{column}) = 'object' THEN i.{column} ELSE '{{}}'::jsonb END) AS k "
            "WHERE i.project_id = %s AND NOT i.practice GROUP BY k"
        )
    elif connection.vendor == "sqlite":
        sql = (
            f"SELECT j.key, COUNT(*) FROM {table} i, json_each("
            f"CASE WHEN json_type(i.{column}) = 'object' THEN i.{column} ELSE '{{}}' END) AS j "
            "WHERE i.project_id = %s AND NOT i.practice GROUP BY j.key"
        )
    else:  # another database: read the objects (slower, same answer)
        counts: dict[str, int] = {}
        for value in project.items.filter(practice=False).values_list(column, flat=True).iterator(chunk_size=500):
            for key in value if isinstance(value, dict) else ():
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))
    with connection.cursor() as cursor:
        cursor.execute(sql, [project.pk])
        return dict(sorted((str(key), count) for key, count in cursor.fetchall()))


@dataclass
class ConditionCoverage:
    condition: Condition
    usage: ConditionUsage
    items_lacking: int = 0  # non-practice items without the condition's output
    items_with_spans: int = 0  # non-practice items with highlight spans over its output


@dataclass
class StudySettings:
    """What a project's conditions need and what its items carry (the settings page's summary)."""

    items: int  # not counting practice items (those are shown with no condition)
    practice_items: int
    documents: int
    outputs: dict[str, int]  # output name -> items carrying it
    highlights: dict[str, int]  # output name -> items with spans over it
    conditions: list[ConditionCoverage]
    undeclared: dict[str, ConditionUsage]  # names work carries that the project does not declare
    conditions_error: str = ""  # the stored list does not parse
    warnings: list[str] = field(default_factory=list)

    @property
    def output_rows(self) -> list[tuple[str, int, int]]:
        """(output, items carrying it, items with highlight spans over it), by name."""
        return [(name, count, self.highlights.get(name, 0)) for name, count in self.outputs.items()]


def study_settings(*, project: Project) -> StudySettings:
    items = project.items.filter(practice=False)
    item_count = items.count()
    documents = items.exclude(document="").values("document").distinct().count() + items.filter(document="").count()
    outputs = _json_key_counts(project=project, column="outputs")
    highlights = _json_key_counts(project=project, column="highlights")
    usage = condition_usage(project=project)
    error = ""
    try:
        declared = parse_conditions(project.conditions)
    except DesignError as exc:
        declared, error = [], str(exc)
    coverage = [
        ConditionCoverage(
            condition=condition,
            usage=usage.get(condition.name, ConditionUsage()),
            items_lacking=0 if condition.output is None else item_count - outputs.get(condition.output, 0),
            items_with_spans=0 if condition.output is None else highlights.get(condition.output, 0),
        )
        for condition in declared
    ]
    names = {condition.name for condition in declared}
    summary = StudySettings(
        items=item_count,
        practice_items=project.items.filter(practice=True).count(),
        documents=documents,
        outputs=outputs,
        highlights=highlights,
        conditions=coverage,
        undeclared={name: used for name, used in usage.items() if name not in names},
        conditions_error=error,
    )
    summary.warnings = _condition_warnings(summary)
    return summary


def _condition_warnings(summary: StudySettings) -> list[str]:
    warnings = []
    if summary.conditions_error:
        warnings.append(f"The stored conditions cannot be read: {summary.conditions_error}.")
    for entry in summary.conditions:
        condition = entry.condition
        if condition.output is not None and entry.items_lacking:
            have = ", ".join(summary.outputs) or "none"
            warnings.append(
                f"Condition {condition.name!r} shows output {condition.output!r}, which {entry.items_lacking} of "
                f"{summary.items} item(s) lack (the items carry: {have}): under it they would start from an "
                "empty editor instead, flagged condition_output_missing."
            )
        elif condition.output is not None and condition.output not in summary.outputs:
            warnings.append(
                f"Condition {condition.name!r} shows output {condition.output!r}, which no item carries yet: "
                "import items with it (outputs, or output:NAME=column in a table) before assigning work."
            )
        if condition.highlights and condition.output is None:
            warnings.append(
                f"Condition {condition.name!r} turns highlights on over an empty editor: there is nothing to highlight."
            )
        elif condition.highlights and summary.items and not entry.items_with_spans:
            warnings.append(
                f"Condition {condition.name!r} turns highlights on, but no item has spans over {condition.output!r}."
            )
    for name, used in summary.undeclared.items():
        warnings.append(
            f"{used.describe()} carry the condition {name!r}, which the project does not declare; declare it "
            "again (until then an item opened under it starts from an empty editor, flagged condition_unknown)."
        )
    return warnings
