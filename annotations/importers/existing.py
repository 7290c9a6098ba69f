"""What the project already holds of a plan: the items and post-edits a re-import skips, the
positions its documents have taken, the annotator accounts its post-edits belong to.

Re-import policy: an item whose external_id already exists in the project with the same source,
model_output and design (document, position, outputs, highlights, practice) is skipped (counted);
the same id with anything different stops the import. A post-edit that already exists (same item,
same annotator, imported, same text and condition) is skipped; any other existing assignment for
that pair stops it. Positions are unique per document, against the items already stored too (a
segment without a position gets the next one after its document's last).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.contrib.auth import get_user_model

from annotations.importers.base import ItemRow, Origin, PostEditRow, fail
from annotations.models import Assignment, PostEdit, Project
from annotations.roles import is_annotator


def existing_items(project: Project, rows: list[ItemRow]) -> dict[str, tuple[int, ItemRow]]:
    """Items of the project with the plan's ids; the same id with other text is a conflict."""
    wanted = {row.external_id: row for row in rows}
    found: dict[str, tuple[int, ItemRow]] = {}
    for ids in chunks(list(wanted)):
        stored = project.items.filter(external_id__in=ids).values_list("external_id", "id", *COMPARED)
        for external_id, pk, *values in stored:
            row = wanted[external_id]
            changed = _first_difference(row, dict(zip(COMPARED, values, strict=True)))
            if changed:
                raise fail(
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


def check_positions(project: Project, rows: list[ItemRow], new_rows: list[ItemRow]) -> None:
    """New segments' positions are free in their documents; segments without one get the next
    positions after their document's last (stored or in the plan), in the plan's order."""
    documents = sorted({row.document for row in new_rows if row.document})
    if not documents:
        return
    taken: dict[str, dict[int, str]] = defaultdict(dict)
    for names in chunks(documents):
        stored = project.items.filter(document__in=names, document_position__isnull=False)
        for document, position, external_id in stored.values_list("document", "document_position", "external_id"):
            assert position is not None  # filtered above
            taken[document][position] = external_id
    for row in new_rows:
        if row.document and row.document_position is not None:
            holder = taken[row.document].get(row.document_position)
            if holder is not None:
                raise fail(
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


def chunks(values: list, size: int = 2000):
    # Keeps each IN (...) well under SQLite's bound-parameter limit.
    for start in range(0, len(values), size):
        yield values[start : start + size]


def plan_annotators(first_row: dict[str, Origin]) -> dict[str, object | None]:
    """Every annotator name of the plan (-> its first row) -> its existing account (None: to be created)."""
    User = get_user_model()
    existing = {
        user.username: user for names in chunks(list(first_row)) for user in User.objects.filter(username__in=names)
    }
    for name, user in existing.items():
        if not is_annotator(user):
            raise fail(
                f"user {name!r} exists and is not an annotator; imported work is only attached to annotator accounts",
                first_row[name],
                "annotator",
            )
    return {name: existing.get(name) for name in first_row}


def existing_post_edits(
    rows: Iterable[PostEditRow], existing: dict[str, tuple[int, ItemRow]], annotators: dict
) -> set[tuple[str, str]]:
    """(external_id, annotator) pairs already imported identically; anything else there stops.

    The stored assignments of the plan's existing items and accounts are read first; the rows
    (iterable again: a list or a spool) are then compared with them one by one, none kept."""
    users = {user.pk: name for name, user in annotators.items() if user is not None}
    items = {pk: external_id for external_id, (pk, _) in existing.items()}
    if not users or not items:
        return set()
    stored = {
        (items[item_id], users[user_id]): found
        for item_ids in chunks(list(items))
        for item_id, user_id, *found in Assignment.objects.filter(
            annotator_id__in=list(users), item_id__in=item_ids
        ).values_list(
            "item_id", "annotator_id", "status", "post_edit__origin", "post_edit__text", "post_edit__condition"
        )
    }
    same: set[tuple[str, str]] = set()
    for row in rows:
        key = (row.external_id, row.annotator)
        found = stored.get(key)
        if found is None:
            continue
        status, origin, text, condition = found
        imported = status == Assignment.SUBMITTED and origin == PostEdit.IMPORTED
        if imported and (text, condition or "") == (row.text, row.condition):
            same.add(key)
            continue
        what = "a different post-edit" if status == Assignment.SUBMITTED else f"an assignment ({status})"
        raise fail(
            f"annotator {key[1]!r} already has {what} of item {key[0]!r} in this project; nothing is overwritten",
            row.origin,
            "annotator",
        )
    return same
