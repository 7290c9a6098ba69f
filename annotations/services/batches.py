"""Batches: cut a project's unbatched items into ordered batches."""

import random
from collections.abc import Iterable

from django.db import connection, transaction

from annotations.models import Batch, Item, Project
from annotations.services.errors import ServiceError


@transaction.atomic
def batch_make(*, project: Project, size: int, shuffle_seed: int | None = None) -> list[Batch]:
    """Cut the project's unbatched items into batches of `size` (the last may be smaller).

    Order: the items' import order (Item.position), or a random order drawn from
    `shuffle_seed` (the same seed and items give the same batches). Size and seed are
    recorded in the project's meta["batching"], so the cut can be reproduced.
    """
    if size < 1:
        raise ServiceError("size: must be at least 1")
    project = Project.objects.select_for_update().get(pk=project.pk)
    items = list(project.items.unbatched().order_by("position", "id"))
    if not items:
        return []
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(items)
    start_number = _next_batch_number(project)
    chunks = [items[offset : offset + size] for offset in range(0, len(items), size)]
    batches = Batch.objects.bulk_create(
        [Batch(project=project, name=f"batch {start_number + n:03d}") for n in range(len(chunks))]
    )
    _set_batch_membership(
        (batch.pk, batch_position, item.pk)
        for batch, chunk in zip(batches, chunks, strict=True)
        for batch_position, item in enumerate(chunk)
    )
    history = project.meta.get("batching", [])
    history.append({"batches": [b.name for b in batches], "size": size, "shuffle_seed": shuffle_seed})
    project.meta = {**project.meta, "batching": history}
    project.save(update_fields=["meta"])
    return batches


def _set_batch_membership(rows: Iterable[tuple[int, int, int]]) -> None:
    """(batch id, batch position, item id) rows in one executemany: bulk_update's CASE
    expressions took ~8 s for 20,000 items, this takes a fraction of a second."""
    quote = connection.ops.quote_name
    table = quote(Item._meta.db_table)
    batch_column = quote(Item._meta.get_field("batch").column)
    position_column = quote(Item._meta.get_field("batch_position").column)
    sql = f"UPDATE {table} SET {batch_column} = %s, {position_column} = %s WHERE {quote(Item._meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(sql, list(rows))


def _next_batch_number(project: Project) -> int:
    taken = set(project.batches.values_list("name", flat=True))
    number = len(taken) + 1
    while f"batch {number:03d}" in taken:
        number += 1
    return number
