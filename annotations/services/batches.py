"""Batches: cut a project's unbatched items into ordered batches."""

import random
from collections.abc import Iterable

from django.db import connection, transaction

from annotations.models import Batch, Item, Project
from annotations.selectors import Document, group_documents
from annotations.services.errors import ServiceError
from editlab.db import column


@transaction.atomic
def batch_make(*, project: Project, size: int, shuffle_seed: int | None = None) -> list[Batch]:
    """Cut the project's unbatched items into batches of about `size` items, never splitting a
    document: a batch takes whole documents while they fit, and a document longer than `size`
    is a batch of its own. Practice items come first. An item without a document is a document
    of its own, so a project without documents is cut into batches of exactly `size` (the last
    may be smaller).

    Order: the documents' import order (Item.position), segments in document order, or the
    documents in a random order drawn from `shuffle_seed` (the same seed and items give the
    same batches). Size and seed are recorded in the project's meta["batching"], so the cut can
    be reproduced.
    """
    if size < 1:
        raise ServiceError("size: must be at least 1")
    project = Project.objects.select_for_update().get(pk=project.pk)
    unbatched = project.items.unbatched()
    practice = group_documents(unbatched.filter(practice=True))
    documents = group_documents(unbatched.filter(practice=False))
    if not practice and not documents:
        return []
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(documents)
    start_number = _next_batch_number(project)
    chunks = _whole_documents(practice + documents, size)
    batches = Batch.objects.bulk_create(
        [Batch(project=project, name=f"batch {start_number + n:03d}") for n in range(len(chunks))]
    )
    _set_batch_membership(
        (batch.pk, batch_position, item_id)
        for batch, chunk in zip(batches, chunks, strict=True)
        for batch_position, item_id in enumerate(chunk)
    )
    history = project.meta.get("batching", [])
    history.append({"batches": [b.name for b in batches], "size": size, "shuffle_seed": shuffle_seed})
    project.meta = {**project.meta, "batching": history}
    project.save(update_fields=["meta"])
    return batches


def _whole_documents(documents: list[Document], size: int) -> list[list[int]]:
    chunks: list[list[int]] = []
    for document in documents:
        if not chunks or len(chunks[-1]) + len(document.item_ids) > size:
            chunks.append([])
        chunks[-1].extend(document.item_ids)
    return [chunk for chunk in chunks if chunk]


def _set_batch_membership(rows: Iterable[tuple[int, int, int]]) -> None:
    """(batch id, batch position, item id) rows in one executemany: bulk_update's CASE
    expressions took ~8 s for 20,000 items, this takes a fraction of a second."""
    quote = connection.ops.quote_name
    table = quote(Item._meta.db_table)
    batch_column = quote(column(Item._meta.get_field("batch")))
    position_column = quote(column(Item._meta.get_field("batch_position")))
    sql = f"UPDATE {table} SET {batch_column} = %s, {position_column} = %s WHERE {quote(column(Item._meta.pk))} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(sql, list(rows))


def _next_batch_number(project: Project) -> int:
    taken = set(project.batches.values_list("name", flat=True))
    number = len(taken) + 1
    while f"batch {number:03d}" in taken:
        number += 1
    return number
