"""Items: add items to a project through the importers' one writer (the API's bulk create)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction

from annotations.models import Item, Project
from annotations.services.errors import ServiceError

if TYPE_CHECKING:
    from annotations.importers.base import ItemRow, Origin


@dataclass
class ItemsCreated:
    created: int
    skipped: int
    items: list[Item]


def _row(item: dict[str, Any], origin: Origin) -> ItemRow:
    """An item's fields as the importers read them: the design fields through the same checks."""
    from annotations.importers import study
    from annotations.importers.base import ItemRow

    fields = dict(item)
    # Popped before **fields is unpacked: each design field is passed once, checked.
    document = study.document_id(fields.pop("document", ""), origin=origin)
    document_position = study.document_position(
        fields.pop("document_position", None), origin=origin, field="document_position"
    )
    outputs = study.outputs(fields.pop("outputs", None), origin=origin)
    highlights = study.highlights(fields.pop("highlights", None), origin=origin)
    practice = study.practice(fields.pop("practice", False), origin=origin)
    return ItemRow(
        origin=origin,
        **fields,
        document=document,
        document_position=document_position,
        outputs=outputs,
        highlights=highlights,
        practice=practice,
    )


@transaction.atomic
def item_create_bulk(*, project: Project, items: Sequence[dict[str, Any]]) -> ItemsCreated:
    """Add items to a project through the importers' one writer (same checks, positions,
    instruction draw and re-import policy: an identical item already there is skipped,
    the same external_id with other text is refused). Nothing is stored on error."""
    # Imported here so a problem in the importers cannot break the other admin services.
    from annotations.importers.base import ImportDataError, ImportPlan, Origin
    from annotations.importers.store import ImportReport, plan_store

    report = ImportReport(project=project.name, fmt="api", files=["items"])
    project = Project.objects.select_for_update().get(pk=project.pk)
    try:
        rows = [_row(item, Origin(file="items", line=number)) for number, item in enumerate(items, start=1)]
        plan_store(project=project, plan=ImportPlan(fmt="api", items=rows), report=report)
    except ImportDataError as exc:
        index = "" if exc.line is None else f"[{exc.line - 1}]"
        # The store names a document position as the table's column does; the API's field is document_position.
        field = "document_position" if exc.field == "position" else exc.field
        field_name = f".{field}" if field else ""
        raise ServiceError(f"items{index}{field_name}: {exc.message}") from None
    stored = project.items.filter(external_id__in=[row.external_id for row in rows]).order_by("position", "id")
    return ItemsCreated(created=report.items_created, skipped=report.items_skipped, items=list(stored))
