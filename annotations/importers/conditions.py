"""A finished study's conditions: each declared on the project or by the file, and the text each
post-edit started from (what its condition showed).

A condition the project lacks is declared by the import when the file says what its post-editors
started from (plan_conditions); the start texts of a long table become the items' outputs.
"""

from __future__ import annotations

from annotations.design import Condition, DesignError, parse_conditions
from annotations.importers.base import ImportPlan, ItemRow, PostEditRow, fail
from annotations.importers.checks import PostEditFacts
from annotations.models import Project


def plan_conditions(
    project: Project, plan: ImportPlan, facts: PostEditFacts
) -> tuple[dict[str, Condition], list[Condition]]:
    """The conditions the plan's post-edits name, each declared on the project or declared now.

    A condition the project lacks is declared when the file says what its post-editors started
    from: the texts of a start_text column (an empty editor when all are empty), or an output
    named like the condition. Anything else is refused: only the researcher knows it.
    """
    used = facts.conditions
    if not used:
        return {}, []
    try:
        declared = {condition.name: condition for condition in parse_conditions(project.conditions)}
    except DesignError as exc:
        raise fail(
            f"the project's declared conditions cannot be read ({exc}); fix them on the project first",
            next(iter(used.values())),
            "condition",
        ) from None
    new: list[Condition] = []
    for name, origin in used.items():
        if name in declared:
            continue
        twin = next((known for known in declared if known.casefold() == name.casefold()), None)
        if twin is not None:
            raise fail(f"condition {name!r} differs from the condition {twin!r} only in case", origin, "condition")
        known, output = _shown_output(name, plan)
        if not known:
            names = ", ".join(map(repr, declared)) or "none"
            raise fail(
                f"condition {name!r} is not declared on project {project.name!r} (it declares {names}) and the file "
                "does not say what its post-editors started from: declare it on the project first, or give the "
                f"text it showed (an output:{name} column, or a start_text column)",
                origin,
                "condition",
            )
        declared[name] = Condition(name=name, output=output, highlights=False)
        new.append(declared[name])
    return declared, new


def _shown_output(name: str, plan: ImportPlan) -> tuple[bool, str | None]:
    """(whether the file tells, the output condition `name` showed: None for an empty editor)."""
    texts = [row.start_texts[name][0] for row in plan.items if name in row.start_texts]
    if texts:
        return True, (name if any(texts) else None)
    if any(name in row.outputs for row in plan.items):
        return True, name
    return False, None


def starting_texts(plan: ImportPlan, declared: dict[str, Condition], facts: PostEditFacts) -> Starts:
    """The text each post-edit with a condition started from (its PostEdit.start_override), once each
    item has the output its post-edits' conditions show; fills items' outputs from a start_text
    column and model outputs left to the outputs."""
    for row in plan.items:
        for name, (text, origin) in row.start_texts.items():
            output = declared[name].output
            if output is None:
                if text:
                    raise fail(
                        f"condition {name!r} shows an empty editor (translating from scratch), but this post-editor "
                        "started from a text",
                        origin,
                        "start_text",
                    )
                continue
            if not text:
                raise fail(
                    f"condition {name!r} shows the output {output!r}, but this post-editor started from an empty text",
                    origin,
                    "start_text",
                )
            known = row.outputs.setdefault(output, text)
            if known != text:
                raise fail(
                    f"differs from the item's output {output!r}, which condition {name!r} shows", origin, "start_text"
                )
        if row.model_output_from_outputs and not row.model_output:
            row.model_output = next(iter(row.outputs.values()), "")
    items = {row.external_id: row for row in plan.items}
    for (external_id, condition), origin in facts.item_conditions.items():
        output = declared[condition].output
        if output is not None and output not in items[external_id].outputs:
            has = ", ".join(map(repr, items[external_id].outputs)) or "none"
            raise fail(
                f"condition {condition!r} shows the output {output!r}, which item "
                f"{external_id!r} does not have (its outputs: {has})",
                origin,
                "condition",
            )
    return Starts(declared, items)


class Starts:
    """The text a post-edit with a condition started from (its PostEdit.start_override; None without
    a condition), once starting_texts has checked that every item has what its conditions show."""

    def __init__(self, declared: dict[str, Condition], items: dict[str, ItemRow]) -> None:
        self._declared = declared
        self._items = items

    def of(self, row: PostEditRow) -> str | None:
        if not row.condition:
            return None
        output = self._declared[row.condition].output
        return "" if output is None else self._items[row.external_id].outputs[output]
