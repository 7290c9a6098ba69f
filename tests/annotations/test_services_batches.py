import random

import pytest

from annotations.models import Batch, Item
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError
from tests.factories import ItemFactory, ProjectFactory


def _items(project, n):
    return [ItemFactory(project=project, external_id=f"i{k}", position=k) for k in range(n)]


def _membership(project):
    return [
        (batch.name, list(batch.items.order_by("batch_position").values_list("external_id", flat=True)))
        for batch in project.batches.order_by("id")
    ]


def test_it_cuts_unbatched_items_in_import_order(db):
    project = ProjectFactory()
    _items(project, 7)
    batches = batch_make(project=project, size=3)
    assert [b.name for b in batches] == ["batch 001", "batch 002", "batch 003"]
    assert _membership(project) == [
        ("batch 001", ["i0", "i1", "i2"]),
        ("batch 002", ["i3", "i4", "i5"]),
        ("batch 003", ["i6"]),
    ]
    positions = list(
        Item.objects.filter(batch=batches[0]).order_by("batch_position").values_list("batch_position", flat=True)
    )
    assert positions == [0, 1, 2]


def test_a_seed_gives_a_reproducible_random_order(db):
    project = ProjectFactory()
    _items(project, 10)
    batch_make(project=project, size=4, shuffle_seed=7)
    expected = [f"i{k}" for k in range(10)]
    random.Random(7).shuffle(expected)
    flat = [external_id for _, ids in _membership(project) for external_id in ids]
    assert flat == expected
    assert flat != sorted(flat, key=lambda e: int(e[1:]))
    assert project.__class__.objects.get(pk=project.pk).meta["batching"] == [
        {"batches": ["batch 001", "batch 002", "batch 003"], "size": 4, "shuffle_seed": 7}
    ]


def test_only_unbatched_items_are_cut_and_names_continue(db):
    project = ProjectFactory()
    _items(project, 4)
    batch_make(project=project, size=4)
    assert batch_make(project=project, size=4) == []
    ItemFactory(project=project, external_id="late", position=99)
    (late,) = batch_make(project=project, size=4)
    assert late.name == "batch 002"
    assert list(late.items.values_list("external_id", flat=True)) == ["late"]
    other = ProjectFactory()
    _items(other, 2)
    assert [b.name for b in batch_make(project=other, size=5)] == ["batch 001"]


def test_it_refuses_a_size_below_one(db):
    project = ProjectFactory()
    _items(project, 2)
    with pytest.raises(ServiceError, match="size: must be at least 1"):
        batch_make(project=project, size=0)
    assert not Batch.objects.exists()
