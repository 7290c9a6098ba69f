"""The post-edits view reads a page's ids either by a walk in id order (a project dense among all
assignments) or through the project's items, sorted: both give the same pages, never another project's
rows, under every filter and marker; and the choice follows the density."""

import random

import pytest

from annotations import selectors_items
from annotations.items_forms import ANY_FLAG, NO_CONDITION, NO_FLAG, ItemFilters
from annotations.models import Assignment, Item, PostEdit
from annotations.selectors_items import PAGE_SIZE, post_edits_page
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _interleaved_projects() -> tuple:
    """Two projects whose assignments are made in turn (their ids interleave), of every status and
    condition, some with a post-edit, flagged or not."""
    chosen = random.Random(24)
    annotators = [UserFactory(username=f"walker-{n}") for n in range(3)]
    projects = [ProjectFactory(), ProjectFactory()]
    items = {
        project.pk: Item.objects.bulk_create(
            Item(project=project, external_id=f"p{project.pk}-{n:03d}", model_output=f"Text {n}.", position=n)
            for n in range(40)
        )
        for project in projects
    }
    statuses = [status for status, _ in Assignment.STATUS_CHOICES]
    for n in range(40):
        for project in projects:
            for annotator in annotators[: 1 + n % 3]:
                assignment = Assignment.objects.create(
                    item=items[project.pk][n],
                    annotator=annotator,
                    status=chosen.choice(statuses),
                    condition=chosen.choice(["", "mt"]),
                )
                if assignment.status != Assignment.PENDING:
                    PostEdit.objects.create(
                        assignment=assignment, text="t", flags=chosen.choice([[], ["key_rate"], ["wall_clipped"]])
                    )
    return projects, annotators


FILTERS = [
    {},
    {"status": Assignment.SUBMITTED},
    {"annotator": "walker-1"},
    {"condition": NO_CONDITION},
    {"flag": NO_FLAG},
    {"flag": ANY_FLAG},
    {"flag": "key_rate", "q": "p"},
]


def _pages(project, filters: dict) -> list[list[int]]:
    """Every page of the view from the first by `after`, then back from the last by `before`: the ids."""
    pages, after = [], None
    while True:
        page = post_edits_page(project=project, filters=ItemFilters(view="post-edits", after=after, **filters))
        pages.append([row["assignment_id"] for row in page.rows])
        if page.next_after is None:
            break
        after = page.next_after
    before = pages[-1][0] if pages[-1] and len(pages) > 1 else None
    while before is not None:
        page = post_edits_page(project=project, filters=ItemFilters(view="post-edits", before=before, **filters))
        pages.append([row["assignment_id"] for row in page.rows])
        before = page.previous_before
    return pages


@pytest.mark.parametrize("filters", FILTERS)
def test_the_walk_and_the_sorted_read_give_the_same_pages_of_the_projects_rows(monkeypatch, filters):
    projects, _ = _interleaved_projects()
    for project in projects:
        monkeypatch.setattr(selectors_items, "_walks", lambda total, highest: True)
        walked = _pages(project, filters)
        monkeypatch.setattr(selectors_items, "_walks", lambda total, highest: False)
        sorted_ = _pages(project, filters)
        assert walked == sorted_
        forwards = [assignment for page in sorted_ for assignment in page]
        expected = selectors_items._selected(project, ItemFilters(view="post-edits", **filters)).order_by("id")
        ids = list(expected.values_list("id", flat=True))
        assert forwards[: len(ids)] == ids  # every matching row once, in id order, then the pages back
        assert set(forwards) <= set(Assignment.objects.filter(item__project=project).values_list("id", flat=True))
        assert all(len(page) <= PAGE_SIZE for page in sorted_)


def test_a_project_dense_among_all_assignments_is_walked_a_sparse_one_sorted():
    assert selectors_items._walks(1_000_000, 1_000_000)
    assert selectors_items._walks(100, 100)
    assert not selectors_items._walks(100, 1_000_000)  # 10 000 > 100²: the walk would read 10 000 rows a page
    assert not selectors_items._walks(0, 0)
