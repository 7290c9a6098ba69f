"""Copy a study's items into a new project, to run it again with live annotators.

An imported finished study keeps its post-edits for comparison; its copy holds the same items
(same external ids, documents, outputs, highlights, practice flags, instructions, references)
and nothing else, so it is batched or assigned like any new project, and the analysis can
compare live and imported effort item by item (by external_id).
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotations.importers.base import max_length
from annotations.models import Item, Project
from annotations.services.errors import ServiceError

NAME_MAX = max_length(Project, "name")
BULK_SIZE = 1000
# What the source's history says about its own batches and assignments: not the copy's.
NOT_COPIED_META = ("batching", "designs", "copied_from")
ITEM_FIELDS = Item.DATA_FIELDS


@dataclass
class CopyResult:
    project: Project
    items: int
    practice_items: int


@transaction.atomic
def project_copy_items(*, source: Project, target_name: str, include_practice: bool = True) -> CopyResult:
    """A new project called `target_name` with the source's settings and a copy of each of its items.

    Settings: guidelines, task type, instructions and their seed, idle threshold, overlap,
    languages, context, declared conditions, metadata (without the source's batching and design
    history); the design starts as `simple` (nothing is assigned yet). Items keep their order,
    external ids, documents and positions, outputs, highlights, practice flags (practice items
    are left out with include_practice=False), own and drawn instructions (annotators of the copy
    see the instruction the source's saw), references, gold edits, task type and metadata. No
    batch, assignment or post-edit is copied. The source is not changed.
    """
    name = (target_name or "").strip()
    if not name:
        raise ServiceError("name: must not be empty")
    if len(name) > NAME_MAX:
        raise ServiceError(f"name: at most {NAME_MAX} characters")
    # The row lock keeps the source's items still while they are read (PostgreSQL; SQLite locks the database).
    source = Project.objects.select_for_update().get(pk=source.pk)
    if Project.objects.filter(name=name).exists():
        raise ServiceError(f"name: a project called {name!r} already exists")
    meta = {key: value for key, value in source.meta.items() if key not in NOT_COPIED_META}
    target = Project.objects.create(
        name=name,
        guidelines=source.guidelines,
        task_type=source.task_type,
        instructions=source.instructions,
        instruction_seed=source.instruction_seed,
        idle_threshold_s=source.idle_threshold_s,
        overlap=source.overlap,
        source_lang=source.source_lang,
        target_lang=source.target_lang,
        context=source.context,
        context_window=source.context_window,
        conditions=source.conditions,
        meta=meta,
    )
    items = source.items.order_by("position", "id")
    if not include_practice:
        items = items.filter(practice=False)
    copied = practice = 0
    chunk: list[Item] = []
    for values in items.values(*ITEM_FIELDS).iterator(chunk_size=2000):
        chunk.append(Item(project=target, **values))
        practice += values["practice"]
        if len(chunk) == BULK_SIZE:
            copied += len(Item.objects.bulk_create(chunk))
            chunk = []
    copied += len(Item.objects.bulk_create(chunk)) if chunk else 0
    target.meta = {
        **meta,
        "copied_from": {
            "project": source.name,
            "project_id": source.pk,
            "items": copied,
            "practice_left_out": not include_practice,
            "at": timezone.now().isoformat(),
        },
    }
    target.save(update_fields=["meta"])
    return CopyResult(project=target, items=copied, practice_items=practice)
