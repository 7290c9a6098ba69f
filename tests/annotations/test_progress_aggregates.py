"""The progress page's figures aggregated by the database equal a row-by-row count (the implementation
that read every assignment, kept here as the oracle), in a constant number of queries."""

import statistics
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, Batch, Item, PostEdit, Project
from annotations.selectors_progress import (
    _STATUS_FIELD,
    NO_CONDITION,
    ProgressRow,
    _condition_rows,
    _declared_condition_names,
    project_progress,
)
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

FLAGS = ["wall_clipped", "keys_uncorroborated", "key_rate", "replay_mismatch", "event_gap"]
STATUSES = [Assignment.SUBMITTED, Assignment.IN_PROGRESS, Assignment.PENDING, Assignment.SKIPPED]
CONDITIONS = ["", "A", "B", "renamed"]
BASE = timezone.now().replace(microsecond=0) - timedelta(days=30)


def oracle(project: Project) -> dict:
    """Every assignment read one by one, as the progress page did before it aggregated in SQL."""
    rows = Assignment.objects.filter(item__project=project).values_list(
        "annotator_id",
        "annotator__username",
        "item__batch_id",
        "condition",
        "status",
        "post_edit__active_ms",
        "started",
        "finished",
        "post_edit__updated",
        "post_edit__flags",
        "post_edit__uncorroborated_keys",
    )
    by_annotator: dict = {}
    by_batch: dict = {}
    declared = _declared_condition_names(project)
    by_condition = {name: ProgressRow(label=name, key=name) for name in declared}
    total = ProgressRow(label="all")
    values: dict[int, list] = {}
    batch_names = dict(project.batches.values_list("id", "name"))
    for user_id, username, batch_id, condition, status, active_ms, started, finished, updated, flags, keys in rows:
        targets = (
            by_annotator.setdefault(user_id, ProgressRow(label=username, key=user_id)),
            by_batch.setdefault(batch_id, ProgressRow(label=batch_names.get(batch_id, "(no batch)"), key=batch_id)),
            by_condition.setdefault(condition, ProgressRow(label=condition or NO_CONDITION, key=condition)),
            total,
        )
        moments = [moment for moment in (started, finished, updated) if moment is not None]
        latest = max(moments) if moments else None
        for row in targets:
            setattr(row, _STATUS_FIELD[status], getattr(row, _STATUS_FIELD[status]) + 1)
            if latest is not None and (row.last_activity is None or latest > row.last_activity):
                row.last_activity = latest
            if status == Assignment.SUBMITTED and active_ms is not None:
                values.setdefault(id(row), []).append(active_ms)
            if status == Assignment.SUBMITTED and flags:
                row.flagged += 1
                for flag in flags:
                    row.flag_counts[flag] = row.flag_counts.get(flag, 0) + 1
            row.uncorroborated_keys += keys or 0
    for row in (*by_annotator.values(), *by_batch.values(), *by_condition.values(), total):
        row.median_active_ms = statistics.median(values[id(row)]) if id(row) in values else None
    return {
        "by_annotator": sorted(by_annotator.values(), key=lambda r: r.label),
        "by_batch": sorted(by_batch.values(), key=lambda r: (r.key is None, r.label)),
        "by_condition": _condition_rows(by_condition, declared),
        "total": total,
        "items": project.items.count(),
        "unbatched_items": project.items.unbatched().count(),
        "unassigned_items": project.items.filter(assignments__isnull=True).count(),
    }


def figures(row: ProgressRow) -> tuple:
    return (
        row.label,
        row.key,
        row.submitted,
        row.in_progress,
        row.pending,
        row.skipped,
        row.total,
        row.percent_done,
        row.median_active_ms,
        row.last_activity,
        row.flagged,
        row.flag_counts,
        row.uncorroborated_keys,
    )


def assert_equal_to_oracle(project: Project) -> None:
    expected = oracle(project)
    progress = project_progress(project=project)
    for name in ("by_annotator", "by_batch", "by_condition"):
        assert [figures(row) for row in getattr(progress, name)] == [figures(row) for row in expected[name]], name
    assert figures(progress.total) == figures(expected["total"])
    assert (progress.items, progress.unbatched_items, progress.unassigned_items) == (
        expected["items"],
        expected["unbatched_items"],
        expected["unassigned_items"],
    )


annotators = st.sampled_from(range(4))
assignment = st.fixed_dictionaries(
    {
        "item": st.integers(0, 7),
        "annotator": annotators,
        "status": st.sampled_from(STATUSES),
        "condition": st.sampled_from(CONDITIONS),
        "post_edit": st.booleans(),
        "active_ms": st.none() | st.integers(0, 6) | st.integers(0, 10**9),
        "flags": st.lists(st.sampled_from(FLAGS), max_size=3),
        "keys": st.none() | st.integers(0, 50),
        "started": st.none() | st.integers(0, 10**6),
        "finished": st.none() | st.integers(0, 10**6),
        "updated": st.integers(0, 10**6),
    }
)


def build(project: Project, specs: list[dict], batches: int, users: list) -> None:
    """Items spread over `batches` batches (and none), the specs' assignments, with post-edits on request
    (always for submitted ones) and their moments set after saving (updated is auto_now)."""
    made = [Batch.objects.create(project=project, name=f"batch {n:02}") for n in range(batches)]
    items = [
        Item.objects.create(
            project=project,
            external_id=f"i{n}",
            model_output="x",
            position=n,
            batch=made[n % (batches + 1)] if n % (batches + 1) < batches else None,
        )
        for n in range(8)
    ]
    seen: set = set()
    for spec in specs:
        key = (spec["item"], spec["annotator"])
        if key in seen:
            continue
        seen.add(key)
        moment = {
            name: None if spec[name] is None else BASE + timedelta(seconds=spec[name])
            for name in ("started", "finished")
        }
        work = Assignment.objects.create(
            item=items[spec["item"]],
            annotator=users[spec["annotator"]],
            status=spec["status"],
            condition=spec["condition"],
            **moment,
        )
        if spec["post_edit"] or spec["status"] == Assignment.SUBMITTED:
            post_edit = PostEdit.objects.create(
                assignment=work,
                text="y",
                active_ms=spec["active_ms"],
                flags=spec["flags"],
                uncorroborated_keys=spec["keys"],
            )
            PostEdit.objects.filter(pk=post_edit.pk).update(updated=BASE + timedelta(seconds=spec["updated"]))


@pytest.fixture
def users():
    return [UserFactory(username=f"ed-{n}", role="annotator") for n in range(4)]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    specs=st.lists(assignment, max_size=30),
    batches=st.integers(0, 2),
    declared=st.sampled_from([[], ["A"], ["B", "A"]]),
)
def test_the_aggregated_progress_equals_a_row_by_row_count(users, specs, batches, declared):
    project = ProjectFactory(conditions=[{"name": name, "output": None} for name in declared])
    build(project, specs, batches, users)
    assert_equal_to_oracle(project)


def test_medians_of_odd_and_even_groups_and_ties_are_those_of_statistics(users):
    project = ProjectFactory()
    specs = [{"item": n, "annotator": 0, "active_ms": ms, "condition": ""} for n, ms in enumerate([5, 1, 3])] + [
        {"item": n, "annotator": 1, "active_ms": ms, "condition": ""} for n, ms in enumerate([4, 4, 1, 8])
    ]
    full = [
        {"status": Assignment.SUBMITTED, "post_edit": True, "flags": [], "keys": None, "started": None}
        | {"finished": None, "updated": 0}
        | spec
        for spec in specs
    ]
    build(project, full, 1, users)
    progress = project_progress(project=project)
    assert [(row.label, row.median_active_ms) for row in progress.by_annotator] == [("ed-0", 3), ("ed-1", 4.0)]
    assert progress.total.median_active_ms == 4  # 1 1 3 4 4 5 8
    assert_equal_to_oracle(project)


def test_the_query_count_does_not_grow_with_the_assignments(users):
    counts = []
    for size in (3, 30):
        project = ProjectFactory(conditions=[{"name": "A", "output": None}])
        specs = [
            {
                "item": n % 8,
                "annotator": (n // 8) % 4,
                "status": STATUSES[n % 4],
                "condition": CONDITIONS[n % 3],
                "post_edit": True,
                "active_ms": n * 100,
                "flags": FLAGS[: n % 3],
                "keys": n,
                "started": n,
                "finished": n + 1,
                "updated": n + 2,
            }
            for n in range(size)
        ]
        build(project, specs, 2, users)
        with CaptureQueriesContext(connection) as queries:
            project_progress(project=project)
        counts.append(len(queries))
    assert counts[0] == counts[1]
