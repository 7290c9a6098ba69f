"""The one writer every importer shares: checks a plan against the project, then
stores it with bulk inserts inside the caller's transaction.

Re-import policy: an item whose external_id already exists in the project with the
same source, model_output and design (document, position, outputs, highlights, practice)
is skipped (counted); the same id with anything different stops the import. A post-edit
that already exists (same item, same annotator, imported, same text and condition) is
skipped; any other existing assignment for that pair stops it.

Study design: positions are unique per document, in the file and against the items already
stored (a segment without a position gets the next one after its document's last); highlight
spans must lie inside the output they are over, without overlapping; a finished study's
conditions must be declared on the project, or be declared by the import when the file says
what they showed (`_conditions`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db.models import Max
from django.utils import timezone

from annotations.design import Condition, DesignError, parse_conditions, parse_spans
from annotations.importers.base import (
    ImportDataError,
    ImportPlan,
    ItemRow,
    Origin,
    PostEditRow,
    max_length,
    normalize_line_endings,
    removed_before,
)
from annotations.importers.study import id_problem, output_name
from annotations.models import Assignment, Item, PostEdit, Project
from annotations.roles import ANNOTATOR, is_annotator, set_role
from editlab import limits

BULK_SIZE = 1000
MAX_EXTERNAL_ID = max_length(Item, "external_id")
MAX_TASK_TYPE = max_length(Item, "task_type")


@dataclass
class ImportReport:
    project: str
    fmt: str
    files: list[str] = field(default_factory=list)
    project_id: int | None = None
    project_created: bool = False
    items_created: int = 0
    items_skipped: int = 0
    post_edits_created: int = 0
    post_edits_skipped: int = 0
    annotators_created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"Imported {', '.join(self.files)} ({self.fmt}) into project {self.project!r}"
            + (" (created)" if self.project_created else "")
            + ":",
            f"  items created: {self.items_created}, skipped as already present: {self.items_skipped}",
        ]
        if self.post_edits_created or self.post_edits_skipped:
            lines.append(
                f"  post-edits created: {self.post_edits_created}, "
                f"skipped as already present: {self.post_edits_skipped}"
            )
        if self.annotators_created:
            lines.append(f"  inactive annotator accounts created: {', '.join(self.annotators_created)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


def plan_store(*, project: Project, plan: ImportPlan, report: ImportReport) -> None:
    """Check the plan against itself and the project, then write it; raises before writing."""
    _check_plan(plan)
    _check_design(plan)
    _normalize_line_endings(plan, report)
    _check_text_sizes(plan)
    declared, new_conditions = _conditions(project, plan)
    starts = _starting_texts(plan, declared)
    existing = _existing_items(project, plan.items)
    new_items = [row for row in plan.items if row.external_id not in existing]
    _check_positions(project, plan.items, new_items)
    annotators = _annotators(plan.post_edits)
    skipped_post_edits = _existing_post_edits(plan.post_edits, existing, annotators)

    _update_project(project, plan, report, new_conditions)
    item_ids = {external_id: pk for external_id, (pk, _) in existing.items()}
    item_ids.update(_create_items(project, new_items))
    report.items_created = len(new_items)
    report.items_skipped = len(plan.items) - len(new_items)

    users = {name: _annotator_account(name, user, report) for name, user in annotators.items()}
    to_create = [row for row in plan.post_edits if (row.external_id, row.annotator) not in skipped_post_edits]
    _create_post_edits(plan, to_create, item_ids, users, starts)
    report.post_edits_created = len(to_create)
    report.post_edits_skipped = len(skipped_post_edits)


def _fail(message: str, origin: Origin, field: str | None = None) -> ImportDataError:
    return ImportDataError(message, file=origin.file, line=origin.line, field=field)


def _check_plan(plan: ImportPlan) -> None:
    seen: dict[str, Origin] = {}
    places: dict[tuple[str, int], ItemRow] = {}
    for row in plan.items:
        if row.document_position is not None and not row.document:
            raise _fail(
                "a position needs a document: it is the segment's place in its document", row.origin, "position"
            )
        if row.document and row.document_position is not None:
            first_at = places.setdefault((row.document, row.document_position), row)
            if first_at is not row:
                raise _fail(
                    f"document {row.document!r} has a segment at position {row.document_position} twice "
                    f"(item {first_at.external_id!r} at {first_at.origin.file}, line {first_at.origin.line}); "
                    "positions are unique per document",
                    row.origin,
                    "position",
                )
        problem = id_problem(row.external_id, what="item id", max_chars=MAX_EXTERNAL_ID)
        if problem:
            raise _fail(problem, row.origin, "external_id")
        if len(row.task_type) > MAX_TASK_TYPE:
            raise _fail(f"task type is longer than {MAX_TASK_TYPE} characters", row.origin, "task_type")
        first = seen.setdefault(row.external_id, row.origin)
        if first is not row.origin:
            raise _fail(
                f"duplicate id {row.external_id!r} (first at {first.file}, line {first.line})",
                row.origin,
                "external_id",
            )
    pairs: dict[tuple[str, str], Origin] = {}
    username = UnicodeUsernameValidator()
    for post_edit in plan.post_edits:
        try:
            username(post_edit.annotator)
        except ValidationError:
            raise _fail(
                f"annotator name {post_edit.annotator!r} is not a valid username "
                "(letters, digits and @ . + - _ only, at most 150 characters)",
                post_edit.origin,
                "annotator",
            ) from None
        if len(post_edit.annotator) > 150:
            raise _fail("annotator name is longer than 150 characters", post_edit.origin, "annotator")
        first = pairs.setdefault((post_edit.external_id, post_edit.annotator), post_edit.origin)
        if first is not post_edit.origin:
            raise _fail(
                f"annotator {post_edit.annotator!r} edits item {post_edit.external_id!r} twice "
                f"(first at {first.file}, line {first.line})",
                post_edit.origin,
                "annotator",
            )


def _existing_items(project: Project, rows: list[ItemRow]) -> dict[str, tuple[int, ItemRow]]:
    """Items of the project with the plan's ids; the same id with other text is a conflict."""
    wanted = {row.external_id: row for row in rows}
    found: dict[str, tuple[int, ItemRow]] = {}
    for ids in _chunks(list(wanted)):
        stored = project.items.filter(external_id__in=ids).values_list("external_id", "id", *COMPARED)
        for external_id, pk, *values in stored:
            row = wanted[external_id]
            changed = _first_difference(row, dict(zip(COMPARED, values, strict=True)))
            if changed:
                raise _fail(
                    f"duplicate id {external_id!r}: project {project.name!r} already has this item "
                    f"with a different {changed}",
                    row.origin,
                    "external_id",
                )
            found[external_id] = (pk, row)
    return found


COMPARED = ("model_output", "source", "document", "document_position", "outputs", "highlights", "practice")


def _first_difference(row: ItemRow, stored: dict) -> str | None:
    """The first of COMPARED on which the plan's row and the stored item differ (a position the
    plan leaves to the store is no difference)."""
    for name in COMPARED:
        if name == "document_position" and row.document_position is None:
            continue
        if getattr(row, name) != stored[name]:
            return "position" if name == "document_position" else name
    return None


def _check_positions(project: Project, rows: list[ItemRow], new_rows: list[ItemRow]) -> None:
    """New segments' positions are free in their documents; segments without one get the next
    positions after their document's last (stored or in the plan), in the plan's order."""
    documents = sorted({row.document for row in new_rows if row.document})
    if not documents:
        return
    taken: dict[str, dict[int, str]] = defaultdict(dict)
    for names in _chunks(documents):
        stored = project.items.filter(document__in=names, document_position__isnull=False)
        for document, position, external_id in stored.values_list("document", "document_position", "external_id"):
            assert position is not None  # filtered above
            taken[document][position] = external_id
    for row in new_rows:
        if row.document and row.document_position is not None:
            holder = taken[row.document].get(row.document_position)
            if holder is not None:
                raise _fail(
                    f"document {row.document!r} already has a segment at position {row.document_position} in "
                    f"project {project.name!r} (item {holder!r}); positions are unique per document",
                    row.origin,
                    "position",
                )
    last = {document: max(taken[document], default=0) for document in documents}
    for row in rows:
        if row.document in last and row.document_position is not None:
            last[row.document] = max(last[row.document], row.document_position)
    for row in new_rows:
        if row.document and row.document_position is None:
            last[row.document] += 1
            row.document_position = last[row.document]


def _check_design(plan: ImportPlan) -> None:
    """Outputs are text under valid names; highlight spans lie inside the output they are over."""
    for row in plan.items:
        for name, text in row.outputs.items():
            output_name(name, origin=row.origin, field="outputs")
            if not isinstance(text, str):
                raise _fail("an output must be text", row.origin, f"outputs.{name}")
        for name, spans in list(row.highlights.items()):
            shown_text = row.outputs.get(name)
            if shown_text is None:
                has = ", ".join(map(repr, row.outputs)) or "none"
                raise _fail(
                    f"highlights over the output {name!r}, which this item does not have (its outputs: {has})",
                    row.origin,
                    f"highlights.{name}",
                )
            try:
                parsed = parse_spans(spans, shown_text, where=f"highlights.{name}")
            except DesignError as exc:
                place, _, problem = str(exc).partition(": ")
                raise _fail(problem, row.origin, place) from None
            row.highlights[name] = [list(span) for span in parsed]


class _Endings:
    """Counts the line endings normalized in one import."""

    def __init__(self) -> None:
        self.crlf = 0
        self.cr = 0
        self.texts = 0

    def text(self, value: str) -> str:
        normalized, crlf, cr = normalize_line_endings(value)
        if crlf or cr:
            self.crlf, self.cr, self.texts = self.crlf + crlf, self.cr + cr, self.texts + 1
        return normalized

    def texts_in(self, values: list) -> list:
        return [self.text(value) if isinstance(value, str) else value for value in values]


def _normalize_line_endings(plan: ImportPlan, report: ImportReport) -> None:
    """Every CRLF and lone CR of the texts becomes LF, as a browser's textarea gives them (a CR left
    in would be an edit nobody typed); highlight spans move with the text they lie over, and an
    imported post-edit keeps in origin_detail how many line endings it had of each kind."""
    endings = _Endings()
    for row in plan.items:
        for name in ("model_output", "source", "instruction"):
            setattr(row, name, endings.text(getattr(row, name)))
        for name, text in list(row.outputs.items()):
            removed = removed_before(text)
            row.outputs[name] = endings.text(text)
            if removed and name in row.highlights:
                row.highlights[name] = [
                    [start - bisect_left(removed, start), end - bisect_left(removed, end), *rest]
                    for start, end, *rest in row.highlights[name]
                ]
        row.references = endings.texts_in(row.references)
        row.gold_edits = endings.texts_in(row.gold_edits)
        row.start_texts = {key: (endings.text(text), at) for key, (text, at) in row.start_texts.items()}
    for post_edit in plan.post_edits:
        normalized, crlf, cr = normalize_line_endings(post_edit.text)
        if crlf or cr:
            post_edit.line_endings = {"crlf": crlf, "cr": cr}
            endings.crlf, endings.cr, endings.texts = endings.crlf + crlf, endings.cr + cr, endings.texts + 1
        post_edit.text = normalized
    if endings.texts:
        report.notes.append(
            f"line endings normalized to LF in {endings.texts:,} text(s): {endings.crlf:,} CRLF, {endings.cr:,} CR"
        )


def _check_text_sizes(plan: ImportPlan) -> None:
    """Every text the editor would edit fits the editor's limit (editlab/limits.py)."""
    limit = settings.EDITLAB_TEXT_MAX_BYTES
    for row in plan.items:
        texts = [("model_output", row.model_output), *((f"outputs.{n}", t) for n, t in row.outputs.items())]
        for name, text in texts:
            problem = limits.text_size_problem(text, limit=limit)
            if problem:
                raise _fail(problem, row.origin, name)
    for post_edit in plan.post_edits:
        problem = limits.text_size_problem(post_edit.text, limit=limit)
        if problem:
            raise _fail(problem, post_edit.origin, "text")


def _conditions(project: Project, plan: ImportPlan) -> tuple[dict[str, Condition], list[Condition]]:
    """The conditions the plan's post-edits name, each declared on the project or declared now.

    A condition the project lacks is declared when the file says what its post-editors started
    from: the texts of a start_text column (an empty editor when all are empty), or an output
    named like the condition. Anything else is refused: only the researcher knows it.
    """
    used: dict[str, Origin] = {}
    for row in plan.post_edits:
        if row.condition:
            used.setdefault(row.condition, row.origin)
    if not used:
        return {}, []
    try:
        declared = {condition.name: condition for condition in parse_conditions(project.conditions)}
    except DesignError as exc:
        raise _fail(
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
            raise _fail(f"condition {name!r} differs from the condition {twin!r} only in case", origin, "condition")
        known, output = _shown_output(name, plan)
        if not known:
            names = ", ".join(map(repr, declared)) or "none"
            raise _fail(
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


def _starting_texts(plan: ImportPlan, declared: dict[str, Condition]) -> dict[tuple[str, str], str]:
    """The text each post-edit with a condition started from (its PostEdit.start_override); fills
    items' outputs from a start_text column and model outputs left to the outputs."""
    for row in plan.items:
        for name, (text, origin) in row.start_texts.items():
            output = declared[name].output
            if output is None:
                if text:
                    raise _fail(
                        f"condition {name!r} shows an empty editor (translating from scratch), but this post-editor "
                        "started from a text",
                        origin,
                        "start_text",
                    )
                continue
            if not text:
                raise _fail(
                    f"condition {name!r} shows the output {output!r}, but this post-editor started from an empty text",
                    origin,
                    "start_text",
                )
            known = row.outputs.setdefault(output, text)
            if known != text:
                raise _fail(
                    f"differs from the item's output {output!r}, which condition {name!r} shows", origin, "start_text"
                )
        if row.model_output_from_outputs and not row.model_output:
            row.model_output = next(iter(row.outputs.values()), "")
    items = {row.external_id: row for row in plan.items}
    starts: dict[tuple[str, str], str] = {}
    for post_edit in plan.post_edits:
        if not post_edit.condition:
            continue
        output = declared[post_edit.condition].output
        start = "" if output is None else items[post_edit.external_id].outputs.get(output)
        if start is None:
            has = ", ".join(map(repr, items[post_edit.external_id].outputs)) or "none"
            raise _fail(
                f"condition {post_edit.condition!r} shows the output {output!r}, which item "
                f"{post_edit.external_id!r} does not have (its outputs: {has})",
                post_edit.origin,
                "condition",
            )
        starts[(post_edit.external_id, post_edit.annotator)] = start
    return starts


def _chunks(values: list, size: int = 2000):
    # Keeps each IN (...) well under SQLite's bound-parameter limit.
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _annotators(rows: list[PostEditRow]) -> dict[str, object | None]:
    """Every annotator name of the plan -> its existing account (None: to be created)."""
    first_row: dict[str, PostEditRow] = {}
    for row in rows:
        first_row.setdefault(row.annotator, row)
    User = get_user_model()
    existing = {user.username: user for user in User.objects.filter(username__in=list(first_row))}
    for name, user in existing.items():
        if not is_annotator(user):
            raise _fail(
                f"user {name!r} exists and is not an annotator; imported work is only attached to annotator accounts",
                first_row[name].origin,
                "annotator",
            )
    return {name: existing.get(name) for name in first_row}


def _existing_post_edits(
    rows: list[PostEditRow], existing: dict[str, tuple[int, ItemRow]], annotators: dict
) -> set[tuple[str, str]]:
    """(external_id, annotator) pairs already imported identically; anything else there stops."""
    users = {user.pk: name for name, user in annotators.items() if user is not None}
    items = {pk: external_id for external_id, (pk, _) in existing.items()}
    if not users or not items:
        return set()
    wanted = {(row.external_id, row.annotator): row for row in rows}
    stored = [
        found
        for item_ids in _chunks(list(items))
        for found in Assignment.objects.filter(annotator_id__in=list(users), item_id__in=item_ids).values_list(
            "item_id", "annotator_id", "status", "post_edit__origin", "post_edit__text", "post_edit__condition"
        )
    ]
    same: set[tuple[str, str]] = set()
    for item_id, user_id, status, origin, text, condition in stored:
        key = (items[item_id], users[user_id])
        row = wanted.get(key)
        if row is None:
            continue
        imported = status == Assignment.SUBMITTED and origin == PostEdit.IMPORTED
        if imported and (text, condition or "") == (row.text, row.condition):
            same.add(key)
            continue
        what = "a different post-edit" if status == Assignment.SUBMITTED else f"an assignment ({status})"
        raise _fail(
            f"annotator {key[1]!r} already has {what} of item {key[0]!r} in this project; nothing is overwritten",
            row.origin,
            "annotator",
        )
    return same


def _update_project(project: Project, plan: ImportPlan, report: ImportReport, new_conditions: list[Condition]) -> None:
    """Fill what the file defines without overwriting what the project already has."""
    changed: list[str] = []
    if new_conditions:
        project.conditions = [*project.conditions, *(condition.as_json() for condition in new_conditions)]
        changed.append("conditions")
        shows = ", ".join(
            f"{c.name} ({'an empty editor' if c.output is None else f'output {c.output!r}'})" for c in new_conditions
        )
        report.notes.append(
            f"declared the file's conditions on the project: {shows}; without highlights "
            "(turn them on in the project's conditions if the study showed them)"
        )
    if plan.task_type and not project.task_type:
        project.task_type = plan.task_type[:MAX_TASK_TYPE]
        changed.append("task_type")
    for key, value in plan.project_meta.items():
        if key not in project.meta:
            project.meta = {**project.meta, key: value}
            changed.append("meta")
        elif project.meta[key] != value:
            report.notes.append(f"the project's metadata {key!r} differs from the file's; kept the project's")
    if changed:
        project.save(update_fields=sorted(set(changed)))


def _create_items(project: Project, rows: list[ItemRow]) -> dict[str, int]:
    if not rows:
        return {}
    last = project.items.aggregate(last=Max("position"))["last"]
    start = 0 if last is None else last + 1
    items = [
        Item(
            project=project,
            external_id=row.external_id,
            source=row.source,
            model_output=row.model_output,
            instruction=row.instruction,
            references=row.references,
            gold_edits=row.gold_edits,
            task_type=row.task_type,
            meta=row.meta,
            position=start + n,
            document=row.document,
            document_position=row.document_position,
            outputs=row.outputs,
            highlights=row.highlights,
            practice=row.practice,
        )
        for n, row in enumerate(rows)
    ]
    project.draw_instructions(items)
    # SQLite >= 3.35 and PostgreSQL both return the new primary keys from bulk inserts.
    created = Item.objects.bulk_create(items, batch_size=BULK_SIZE)
    return {item.external_id: item.pk for item in created}


def _annotator_account(name: str, user, report: ImportReport):
    """An existing annotator, or a new inactive one: it only owns imported work, nobody logs in as it."""
    if user is not None:
        return user
    User = get_user_model()
    user = User(username=name, is_active=False)
    user.set_unusable_password()
    user.save()
    set_role(user, ANNOTATOR)
    report.annotators_created.append(name)
    return user


def _create_post_edits(
    plan: ImportPlan,
    rows: list[PostEditRow],
    item_ids: dict[str, int],
    users: dict,
    starts: dict[tuple[str, str], str],
) -> None:
    if not rows:
        return
    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                item_id=item_ids[row.external_id],
                annotator=users[row.annotator],
                status=Assignment.SUBMITTED,
                finished=now,
                condition=row.condition,
            )
            for row in rows
        ],
        batch_size=BULK_SIZE,
    )
    PostEdit.objects.bulk_create(
        [
            PostEdit(
                assignment=assignment,
                text=row.text,
                draft_text=row.text,
                origin=PostEdit.IMPORTED,
                origin_detail={
                    "format": plan.fmt,
                    "file": row.origin.file,
                    "line": row.origin.line,
                    **({"line_endings": row.line_endings} if row.line_endings else {}),
                },
                definition_version=plan.definition_version,
                submitted_at=now,
                extra=row.extra,
                condition=row.condition,
                start_override=starts.get((row.external_id, row.annotator)),
                **row.effort,
            )
            for assignment, row in zip(assignments, rows, strict=True)
        ],
        batch_size=BULK_SIZE,
    )
