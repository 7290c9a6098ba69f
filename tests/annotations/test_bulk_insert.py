"""importers.bulk.Inserter writes what bulk_create would: every text and JSON value read back equal, on
SQLite (multi-row INSERT) and PostgreSQL (COPY, whose text format escapes tabs, newlines and backslashes)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.importers.bulk import Inserter
from annotations.models import Item
from tests.factories import ProjectFactory

# Any text PostgreSQL stores (no NUL, no lone surrogate), with the characters COPY escapes made common.
TEXT = st.lists(
    st.one_of(
        st.sampled_from(["\t", "\n", "\r", "\\", "\\N", "\\.", '"', "'", ",", "é", "語", "🙂"]),
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
    ),
    max_size=40,
).map("".join)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
ROW = st.tuples(TEXT, TEXT, st.lists(TEXT, max_size=3), st.dictionaries(TEXT, JSON, max_size=3))


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=1, max_size=12))
def test_inserted_rows_read_back_as_given_with_their_ids_in_order(rows):
    project = ProjectFactory()
    inserter = Inserter(Item, ("project_id", "external_id", "model_output", "references", "meta", "position"))
    given_rows = [
        (project.pk, f"{n}:{external}", output, references, meta, n)
        for n, (external, output, references, meta) in enumerate(rows)
    ]
    pks = inserter.insert_returning(given_rows)

    assert len(set(pks)) == len(rows)
    stored = {item.pk: item for item in Item.objects.filter(project=project)}
    assert sorted(stored) == sorted(pks)
    for pk, (_, external, output, references, meta, position) in zip(pks, given_rows, strict=True):
        item = stored[pk]
        assert (item.external_id, item.model_output, item.references, item.meta, item.position) == (
            external,
            output,
            references,
            meta,
            position,
        )
        assert (item.source, item.gold_edits, item.practice) == ("", [], False)  # the model's defaults


@pytest.mark.django_db
def test_the_next_object_created_takes_a_fresh_id_after_inserted_ones():
    """On PostgreSQL the ids come from the table's sequence, so the ORM's next insert cannot collide."""
    project = ProjectFactory()
    pks = Inserter(Item, ("project_id", "external_id", "position")).insert_returning(
        [(project.pk, f"i{n}", n) for n in range(5)]
    )
    later = Item.objects.create(project=project, external_id="later", position=5)
    assert later.pk > max(pks)
    assert Item.objects.filter(project=project).count() == 6


@pytest.mark.django_db
def test_insert_without_ids_writes_every_row():
    project = ProjectFactory()
    Inserter(Item, ("project_id", "external_id", "model_output", "position")).insert(
        [(project.pk, f"i{n}", "a\tb\\n\nc", n) for n in range(3)]
    )
    assert list(
        Item.objects.filter(project=project).order_by("position").values_list("external_id", "model_output")
    ) == [(f"i{n}", "a\tb\\n\nc") for n in range(3)]
