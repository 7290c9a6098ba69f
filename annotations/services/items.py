"""Items: add items to a project through the importers' one writer (the API's bulk create)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from annotations.models import Item, Project
from annotations.services.errors import ServiceError


@dataclass
class ItemsCreated:
    created: int
    skipped: int
    items: list[Item]


@transaction.atomic
def item_create_bulk(*, project: Project, items: Sequence[dict[str, Any]]) -> ItemsCreated:
    """Add items to a project through the importers' one writer (same checks, positions,
    instruction draw and re-import policy: an identical item already there is skipped,
    the same external_id with other text is refused). Nothing is stored on error."""
    # Imported here so a problem in the importers cannot break the other admin services.
    from annotations.importers.base import ImportDataError, ItemRow, Origin, Plan
    from annotations.importers.store import ImportReport, plan_store

    rows = [ItemRow(origin=Origin(file="items", line=number), **item) for number, item in enumerate(items, start=1)]
    report = ImportReport(project=project.name, fmt="api", files=["items"])
    project = Project.objects.select_for_update().get(pk=project.pk)
    try:
        plan_store(project=project, plan=Plan(fmt="api", items=rows), report=report)
    except ImportDataError as exc:
        index = "" if exc.line is None else f"[{exc.line - 1}]"
        field_name = f".{exc.field}" if exc.field else ""
        raise ServiceError(f"items{index}{field_name}: {exc.message}") from None
    stored = project.items.filter(external_id__in=[row.external_id for row in rows]).order_by("position", "id")
    return ItemsCreated(created=report.items_created, skipped=report.items_skipped, items=list(stored))
