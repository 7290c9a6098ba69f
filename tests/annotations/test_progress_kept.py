"""The progress figures the database keeps (annotations/models/progress.py, kept by the triggers of
annotations/progress_triggers.py) equal the ones recomputed from the assignments, items and post-edits
after any sequence of writes: assignments made (one by one or by the importer's bulk insert, COPY on
PostgreSQL), started, saved, submitted, skipped, reset, moved and deleted, flags and times changed,
items moved between batches and projects, batches and projects deleted, reviews made. Run on SQLite
and on PostgreSQL (DATABASE_URL)."""

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.importers.bulk import Inserter
from annotations.models import Assignment, Batch, Item, PostEdit, ProgressCell, ProgressEntry, Project
from annotations.selectors_progress import project_progress
from tests.annotations.test_progress_aggregates import assert_equal_to_oracle
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

FLAGS = ["wall_clipped", "keys_uncorroborated", "key_rate"]
STATUSES = [Assignment.SUBMITTED, Assignment.IN_PROGRESS, Assignment.PENDING, Assignment.SKIPPED]
BASE = timezone.now().replace(microsecond=0) - timedelta(days=30)
ITEMS = 10


def moment(step: int) -> timezone.datetime:
    """Moments a few microseconds to seconds apart (whole seconds too: SQLite stores them shorter)."""
    return BASE + timedelta(microseconds=step * 250_000 if step % 3 else step * 1_000_000)


def recomputed() -> tuple[dict, dict]:
    """The entries and the non-empty cells as they should be, from the assignments, items and post-edits."""
    entries, cells = {}, {}
    rows = Assignment.objects.first_pass().values_list(
        "id",
        "item__project_id",
        "annotator_id",
        "item__batch_id",
        "condition",
        "status",
        "post_edit__flags",
        "started",
        "finished",
        "post_edit__updated",
        "post_edit__uncorroborated_keys",
        "post_edit__active_ms",
    )
    for aid, project, annotator, batch, condition, status, flags, started, finished, updated, keys, active in rows:
        counted = tuple(flags) if status == Assignment.SUBMITTED and flags else None
        moments = [m for m in (started, finished, updated) if m is not None]
        latest = max(moments) if moments else None
        key = (project, annotator, batch or 0, condition, status, counted)
        entries[aid] = (*key, latest, keys, active)
        n, keys_sum, timed, cell_latest = cells.get(key, (0, 0, 0, None))
        cells[key] = (
            n + 1,
            keys_sum + (keys or 0),
            timed + (status == Assignment.SUBMITTED and active is not None),
            latest if cell_latest is None or (latest is not None and latest > cell_latest) else cell_latest,
        )
    return entries, cells


def kept() -> tuple[dict, dict]:
    def flags(text: str) -> tuple | None:
        return tuple(json.loads(text)) if text else None

    entries = {
        e.assignment_id: (
            e.project_id,
            e.annotator_id,
            e.batch_key,
            e.condition,
            e.status,
            flags(e.flags),
            e.moment,
            e.uncorroborated,
            e.active_ms,
        )
        for e in ProgressEntry.objects.all()
    }
    cells = {}
    for c in ProgressCell.objects.all():
        if c.n == 0:  # an emptied cell holds nothing
            assert (c.uncorroborated, c.timed, c.latest) == (0, 0, None)
            continue
        cells[(c.project_id, c.annotator_id, c.batch_key, c.condition, c.status, flags(c.flags))] = (
            c.n,
            c.uncorroborated,
            c.timed,
            c.latest,
        )
    return entries, cells


class World:
    """Two projects, their items and batches, four annotators; the writes a sequence is made of."""

    def __init__(self) -> None:
        self.users = [UserFactory(username=f"kept-{n}", role="annotator") for n in range(4)]
        self.projects = [ProjectFactory(conditions=[{"name": "A", "output": None}]) for _ in range(2)]
        self.batches = [Batch.objects.create(project=p, name=f"b{n}") for p in self.projects for n in range(2)]
        # Item n in project n % 2, in its first batch, its second or none by turns.
        self.items = [
            Item.objects.create(
                project=self.projects[n % 2],
                external_id=f"k{n}",
                model_output="x",
                position=n,
                batch=[*self.batches[2 * (n % 2) : 2 * (n % 2) + 2], None][(n // 2) % 3],
            )
            for n in range(ITEMS)
        ]
        self.clock = 0

    def now(self) -> timezone.datetime:
        self.clock += 1
        return moment(self.clock)

    def assignment(self, item: int, annotator: int) -> Assignment | None:
        return (
            Assignment.objects.first_pass()
            .filter(item=self.items[item], annotator=self.users[annotator])
            .select_related("post_edit")
            .first()
        )

    def apply(self, op: tuple) -> None:
        name, item, annotator, value = op
        work = self.assignment(item, annotator)
        if name == "assign":
            if work is None:
                Assignment.objects.create(
                    item=self.items[item], annotator=self.users[annotator], condition=["", "", "A", "B"][value % 4]
                )
            return
        if name == "bulk":
            self.bulk(item, value)
            return
        if name == "move_item":
            target = self.items[item]
            choice = value % 4
            if choice == 3:  # to the other project (its batch dropped: another project's)
                other = next(p for p in self.projects if p.pk != target.project_id)
                Item.objects.filter(pk=target.pk).update(project=other, batch=None)
            else:
                batches = list(Batch.objects.filter(project_id=target.project_id).order_by("pk"))
                batch = batches[choice] if choice < len(batches) else None
                Item.objects.filter(pk=target.pk).update(batch=batch)
            self.items[item].refresh_from_db()
            return
        if name == "delete_batch":  # its items left in no batch (SET_NULL)
            batch = Batch.objects.filter(items__isnull=False).order_by("pk").first()
            if batch is not None:
                batch.delete()
            return
        # The other writes work on one of the assignments there are (`annotator` picks which).
        works = list(Assignment.objects.first_pass().select_related("post_edit").order_by("pk"))
        if not works:
            return
        work = works[(item * 4 + annotator) % len(works)]
        annotator = self.users.index(next(u for u in self.users if u.pk == work.annotator_id))
        item = next(n for n, i in enumerate(self.items) if i.pk == work.item_id)
        post_edit = getattr(work, "post_edit", None)
        if name == "start":
            Assignment.objects.filter(pk=work.pk).update(status=Assignment.IN_PROGRESS, started=self.now())
        elif name == "save":  # a draft save: the post-edit made or saved (updated is auto_now)
            if post_edit is None:
                PostEdit.objects.create(assignment=work, draft_text="d")
            else:
                post_edit.draft_text = f"d{value}"
                post_edit.save()
                PostEdit.objects.filter(pk=post_edit.pk).update(updated=self.now())
        elif name == "submit":
            if post_edit is None:
                post_edit = PostEdit.objects.create(assignment=work)
            PostEdit.objects.filter(pk=post_edit.pk).update(
                text="t",
                active_ms=None if value % 5 == 0 else value % 7,
                flags=FLAGS[: value % 3],
                uncorroborated_keys=None if value % 4 == 0 else value,
                updated=self.now(),
            )
            work.status, work.finished = Assignment.SUBMITTED, self.now()
            work.save()
        elif name == "skip":
            Assignment.objects.filter(pk=work.pk).update(status=Assignment.SKIPPED, finished=self.now())
        elif name == "reset":  # back to pending, its post-edit gone
            PostEdit.objects.filter(assignment=work).delete()
            Assignment.objects.filter(pk=work.pk).update(status=Assignment.PENDING, started=None, finished=None)
        elif name == "flags" and post_edit is not None:
            PostEdit.objects.filter(pk=post_edit.pk).update(flags=FLAGS[value % 3 :])
        elif name == "time" and post_edit is not None:
            PostEdit.objects.filter(pk=post_edit.pk).update(active_ms=None if value == 0 else value)
        elif name == "touch" and post_edit is not None:  # any moment, an earlier one too
            PostEdit.objects.filter(pk=post_edit.pk).update(updated=moment(value))
        elif name == "condition":
            Assignment.objects.filter(pk=work.pk).update(condition=["", "A", "B"][value % 3])
        elif name == "hand_over":  # to another annotator who has none of this item
            other = self.users[(annotator + 1 + value % 3) % 4]
            if self.assignment(item, (annotator + 1 + value % 3) % 4) is None:
                Assignment.objects.filter(pk=work.pk).update(annotator=other)
        elif name == "review" and post_edit is not None and work.status == Assignment.SUBMITTED:
            reviewer = self.users[(annotator + 1) % 4]
            if not Assignment.objects.filter(reviews=post_edit).exists():
                review = Assignment.objects.create(item=work.item, annotator=reviewer, reviews=post_edit)
                PostEdit.objects.create(assignment=review, text="r", active_ms=5, flags=["key_rate"])
        elif name == "delete":
            work.delete()

    def bulk(self, item: int, value: int) -> None:
        """The importer's bulk insert of assignments and their post-edits (COPY on PostgreSQL)."""
        free = [u for u in self.users if not Assignment.objects.filter(item=self.items[item], annotator=u).exists()]
        if not free:
            return
        finished = self.now()
        ids = Inserter(Assignment, ["item_id", "annotator_id", "status", "condition", "finished"]).insert_returning(
            [
                (self.items[item].pk, u.pk, STATUSES[(value + n) % 4], "A" if n % 2 else "", finished)
                for n, u in enumerate(free)
            ]
        )
        Inserter(PostEdit, ["assignment_id", "text", "active_ms", "flags", "uncorroborated_keys"]).insert(
            [(pk, "t", (value + n) % 6 or None, FLAGS[: (value + n) % 3], n) for n, pk in enumerate(ids)]
        )


operations = st.tuples(
    st.sampled_from(
        [
            "assign",
            "assign",
            "start",
            "save",
            "submit",
            "submit",
            "skip",
            "reset",
            "flags",
            "time",
            "touch",
            "touch",
            "condition",
            "hand_over",
            "review",
            "delete",
            "bulk",
            "move_item",
            "delete_batch",
        ]
    ),
    st.integers(0, ITEMS - 1),
    st.sampled_from([0, 0, 0, 1, 2, 3]),  # most work one annotator's: cells of several entries
    st.integers(0, 20),
)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    first=st.lists(
        st.tuples(st.integers(0, ITEMS - 1), st.integers(0, 3), st.integers(0, 20)), min_size=3, max_size=12
    ),
    sequence=st.lists(operations, min_size=15, max_size=50),
)
def test_the_kept_figures_equal_the_recomputed_ones_after_any_writes(first, sequence):
    with transaction.atomic():  # each example on its own rows
        world = World()
        for item, annotator, value in first:
            world.apply(("assign", item, annotator, value))
        for op in sequence:
            world.apply(op)
            assert kept() == recomputed(), op
        for project in world.projects:
            assert project_progress(project=project).total.total == (
                Assignment.objects.first_pass().filter(item__project=project).count()
            )
        transaction.set_rollback(True)


def test_a_project_deleted_leaves_no_figures():
    world = World()
    for n in range(ITEMS):
        world.apply(("assign", n, 0, n))
        world.apply(("submit", n, 0, n))
    assert ProgressCell.objects.filter(n__gt=0).exists()
    for project in world.projects:
        project.delete()
    assert not ProgressEntry.objects.exists()
    assert not ProgressCell.objects.exists()


def test_the_page_reads_the_kept_figures_equal_to_a_row_by_row_count():
    """The progress page's figures after a sequence of writes, against the row-by-row oracle."""
    world = World()
    for n, op in enumerate(["assign", "start", "save", "submit", "assign", "skip", "assign", "submit"] * 3):
        world.apply((op, n % ITEMS, n % 4, n))
    Item.objects.filter(pk=world.items[0].pk).update(batch=None)
    for project in world.projects:
        assert_equal_to_oracle(Project.objects.get(pk=project.pk))


def test_a_cells_latest_moment_is_read_anew_when_its_holder_leaves_or_goes_back():
    """Three submitted post-edits in one cell: the latest one reset, then the next saved at an earlier moment."""
    world = World()
    items = [0, 2, 4]  # project 0, first batch, second, none: moved into one batch below
    for n in items:
        Item.objects.filter(pk=world.items[n].pk).update(batch=world.batches[0])
        world.apply(("assign", n, 0, 0))
        work = world.assignment(n, 0)
        PostEdit.objects.create(assignment=work, text="t")
        Assignment.objects.filter(pk=work.pk).update(status=Assignment.SUBMITTED)
    for n, step in zip(items, (10, 20, 30), strict=True):
        PostEdit.objects.filter(assignment=world.assignment(n, 0)).update(updated=moment(step))
    (cell,) = ProgressCell.objects.filter(n__gt=0)
    assert (cell.n, cell.latest) == (3, moment(30))
    PostEdit.objects.filter(assignment=world.assignment(4, 0)).delete()
    Assignment.objects.filter(pk=world.assignment(4, 0).pk).update(status=Assignment.PENDING)
    cell.refresh_from_db()
    assert (cell.n, cell.latest) == (2, moment(20))
    PostEdit.objects.filter(assignment=world.assignment(2, 0)).update(updated=moment(5))
    cell.refresh_from_db()
    assert (cell.n, cell.latest) == (2, moment(10))
    assert kept() == recomputed()
