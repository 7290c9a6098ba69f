"""The metrics page's counts kept by database triggers (metrics.coverage_kept) never drift: after any
generated sequence of writes (values computed, recomputed, made stale, inserted in raw SQL, deleted; work
reopened or submitted again, one row or many at a time; items given or stripped of references and gold edits,
moved to another project; reviews with values; post-edits, items and projects deleted) the kept counts equal
the ones recounted from the rows, and the page's coverage equals the recounted coverage and the compute
plan's. Run on SQLite and on PostgreSQL (DATABASE_URL)."""

import pytest
from django.db import connection
from django.db.models import Count, F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, Item, PostEdit, Project
from metrics import coverage_kept
from metrics.models import CoveragePostEdits, CoverageValues, MetricValue
from metrics.selectors_coverage import _EMPTY, _NO_GOLD, _holds, metric_coverage, metric_coverage_recounted
from metrics.services import metric_values_compute
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    PostEditFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)
from tests.metrics.test_coverage_counts import GOLD, REFERENCES, json, planned

pytestmark = pytest.mark.django_db

METRICS = ["levenshtein", "exact_match", "sari"]  # sari is gold-based: not applicable without gold edits
STATUSES = [Assignment.SUBMITTED, Assignment.IN_PROGRESS, Assignment.SKIPPED, Assignment.PENDING]


def recounted() -> tuple[dict, dict]:
    """(project, has references, has gold) -> post-edits, and + (metric, variant, version) -> values,
    counted by the ORM from the rows (the rule of metrics.selectors_coverage)."""
    counted = {"assignment__status": Assignment.SUBMITTED, "assignment__reviews__isnull": True}
    kind = {
        "project": F("assignment__item__project_id"),
        "references": _holds("assignment__item__references", _EMPTY),
        "gold": _holds("assignment__item__gold_edits", _NO_GOLD),
    }
    post_edits = PostEdit.objects.filter(**counted).values(**kind).annotate(n=Count("id")).order_by()
    values = (
        MetricValue.objects.filter(**{f"post_edit__{key}": value for key, value in counted.items()})
        .values(
            project=F("post_edit__assignment__item__project_id"),
            references=_holds("post_edit__assignment__item__references", _EMPTY),
            gold=_holds("post_edit__assignment__item__gold_edits", _NO_GOLD),
            m=F("metric"),
            v=F("variant"),
            version=F("metric_version"),
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    return (
        {(r["project"], r["references"], r["gold"]): r["n"] for r in post_edits},
        {(r["project"], r["references"], r["gold"], r["m"], r["v"], r["version"]): r["n"] for r in values},
    )


def kept() -> tuple[dict, dict]:
    post_edits = CoveragePostEdits.objects.exclude(n=0)
    values = CoverageValues.objects.exclude(n=0)
    return (
        {(r.project_id, r.has_references, r.has_gold): r.n for r in post_edits},
        {(r.project_id, r.has_references, r.has_gold, r.metric, r.variant, r.metric_version): r.n for r in values},
    )


def _nth(queryset, index: int):
    rows = list(queryset.order_by("pk"))
    return rows[index % len(rows)] if rows else None


def _raw_values(metric: str) -> None:
    """A value of `metric` for every submitted post-edit lacking one, in one raw INSERT ... SELECT (as
    editlab.benchmarks.scale_copies stores them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO metrics_metricvalue (post_edit_id, metric, variant, value, metric_version, input_hash, "
            "computed_at) SELECT p.id, %s, 'plain', 0.5, 'raw', '', CURRENT_TIMESTAMP FROM annotations_postedit p "
            "JOIN annotations_assignment a ON a.id = p.assignment_id WHERE a.status = 'submitted' "
            "ON CONFLICT (post_edit_id, metric, variant) DO NOTHING",
            [metric],
        )


def apply(operation: tuple) -> None:  # noqa: C901, PLR0912  # one branch per kind of write
    kind, *args = operation
    if kind == "compute":
        project = _nth(Project.objects.all(), args[0])
        if project is not None:
            metric_values_compute(project=project, metrics=[METRICS[args[1]]], variants=[args[2]])
    elif kind == "stale":
        MetricValue.objects.filter(metric=METRICS[args[0]]).update(metric_version="0-old")
    elif kind == "raw":
        _raw_values(METRICS[args[0]])
    elif kind == "delete values":
        MetricValue.objects.filter(metric=METRICS[args[0]], post_edit_id__gte=args[1]).delete()
    elif kind == "status":
        assignment = _nth(Assignment.objects.filter(post_edit__isnull=False), args[0])
        if assignment is not None:
            assignment.status = args[1]
            assignment.save(update_fields=["status"])
    elif kind == "bulk status":
        project = _nth(Project.objects.all(), args[0])
        Assignment.objects.filter(item__project=project, status=args[1]).update(status=args[2])
    elif kind == "item":
        item = _nth(Item.objects.all(), args[0])
        if item is not None:
            Item.objects.filter(pk=item.pk).update(references=json(args[1]), gold_edits=json(args[2]))
    elif kind == "move":
        item, project = _nth(Item.objects.all(), args[0]), _nth(Project.objects.all(), args[1])
        if item is not None:
            Item.objects.filter(pk=item.pk).update(project=project)
    elif kind == "new":
        item = _nth(Item.objects.all(), args[0])
        if item is not None:
            factory = SubmittedPostEditFactory if args[1] == Assignment.SUBMITTED else PostEditFactory
            factory(assignment=AssignmentFactory(item=item, annotator=UserFactory(), status=args[1]))
    elif kind == "review":
        reviewed = _nth(PostEdit.objects.filter(assignment__reviews__isnull=True, reviews__isnull=True), args[0])
        if reviewed is not None:
            review = SubmittedPostEditFactory(
                assignment=AssignmentFactory(
                    item=reviewed.assignment.item, annotator=UserFactory(), reviews=reviewed, status=args[1]
                )
            )
            MetricValue.objects.create(post_edit=review, metric=METRICS[0], metric_version="1", value=1.0)
    elif kind == "delete post-edit":
        post_edit = _nth(PostEdit.objects.all(), args[0])
        if post_edit is not None:
            post_edit.delete()
    elif kind == "delete assignment":
        assignment = _nth(Assignment.objects.all(), args[0])
        if assignment is not None:
            assignment.delete()
    elif kind == "delete item":
        item = _nth(Item.objects.all(), args[0])
        if item is not None:
            item.delete()
    elif kind == "delete project":
        project = _nth(Project.objects.all(), args[0])
        if project is not None and Project.objects.count() > 1:
            project.delete()


index = st.integers(0, 20)
metric = st.integers(0, len(METRICS) - 1)
status = st.sampled_from(STATUSES)
operations = st.one_of(
    st.tuples(st.just("compute"), index, metric, st.sampled_from(["plain", "with_references"])),
    st.tuples(st.just("stale"), metric),
    st.tuples(st.just("raw"), metric),
    st.tuples(st.just("delete values"), metric, st.integers(0, 10**6)),
    st.tuples(st.just("status"), index, status),
    st.tuples(st.just("bulk status"), index, status, status),
    st.tuples(st.just("item"), index, st.sampled_from(REFERENCES), st.sampled_from(GOLD)),
    st.tuples(st.just("move"), index, index),
    st.tuples(st.just("new"), index, status),
    st.tuples(st.just("review"), index, status),
    st.tuples(st.just("delete post-edit"), index),
    st.tuples(st.just("delete assignment"), index),
    st.tuples(st.just("delete item"), index),
    st.tuples(st.just("delete project"), index),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    items=st.lists(st.tuples(st.sampled_from(REFERENCES), st.sampled_from(GOLD)), min_size=4, max_size=4),
    writes=st.lists(operations, max_size=12),
)
def test_the_kept_counts_equal_the_recounted_ones_after_any_writes(items, writes):
    projects = [ProjectFactory(), ProjectFactory()]
    for n, (references, gold) in enumerate(items):
        item = ItemFactory(project=projects[n % 2], references=json(references), gold_edits=json(gold))
        SubmittedPostEditFactory(assignment=AssignmentFactory(item=item, annotator=UserFactory(), status="submitted"))
    metric_values_compute(project=projects[0], metrics=METRICS[:2])
    for write in writes:
        apply(write)
        assert kept() == recounted(), write
    for project in Project.objects.all():
        coverage = metric_coverage(project=project, metrics=METRICS)
        assert coverage == metric_coverage_recounted(project=project, metrics=METRICS)
        # The plan also finds stale the values whose texts changed since (an item's references changed):
        # the page does not read texts (test_coverage_counts); stored values count the same.
        post_edits, plan = planned(project, METRICS)
        assert coverage[0] == post_edits
        for key, cell in coverage[1].items():
            expected = plan[key]
            assert (cell.up_to_date + cell.stale, cell.missing, cell.not_applicable) == (
                expected.up_to_date + expected.stale,
                expected.missing,
                expected.not_applicable,
            ), key


def test_counts_move_with_a_reopened_post_edit_and_come_back_on_submit(annotator):
    project = ProjectFactory()
    rich = ItemFactory(project=project, references=["A reference."])
    post_edit = SubmittedPostEditFactory(assignment__item=rich, assignment__annotator=annotator)
    metric_values_compute(project=project, metrics=["levenshtein"])
    assert kept() == (
        {(project.pk, True, False): 1},
        {
            (project.pk, True, False, "levenshtein", "plain", "1"): 1,
            (project.pk, True, False, "levenshtein", "with_references", "1"): 1,
        },
    )
    Assignment.objects.filter(pk=post_edit.assignment_id).update(status=Assignment.IN_PROGRESS)
    assert kept() == ({}, {})
    assert metric_coverage(project=project, metrics=["levenshtein"])[0] == 0
    Assignment.objects.filter(pk=post_edit.assignment_id).update(status=Assignment.SUBMITTED)
    Item.objects.filter(pk=rich.pk).update(references=[])
    assert kept() == ({(project.pk, False, False): 1}, {(project.pk, False, False, "levenshtein", "plain", "1"): 1,
                                                        (project.pk, False, False, "levenshtein", "with_references", "1"): 1})  # fmt: skip
    # The page counts the with_references value of an item without references as not applicable.
    _, coverage = metric_coverage(project=project, metrics=["levenshtein"])
    cell = coverage[("levenshtein", "with_references")]
    assert (cell.up_to_date, cell.missing, cell.not_applicable) == (0, 0, 1)
    project.delete()
    assert kept() == ({}, {})


def test_the_migration_counts_what_was_stored_before_the_triggers(annotator):
    """fill_sql (run by migration metrics 0005 after creating the triggers) recounts every row."""
    project = ProjectFactory()
    for n in range(3):
        SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=UserFactory(), text=f"{n}")
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    before = kept()
    with connection.cursor() as cursor:
        for statement in coverage_kept.drop_sql(connection.vendor):
            cursor.execute(statement)
        cursor.execute("DELETE FROM metrics_metricvalue")
        cursor.execute(f"DELETE FROM {coverage_kept.VALUES}")
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    assert kept() == (before[0], {})  # written with no trigger: not counted
    with connection.cursor() as cursor:
        for statement in [*coverage_kept.create_sql(connection.vendor), *coverage_kept.fill_sql(connection.vendor)]:
            cursor.execute(statement)
    assert kept() == before == recounted()
    assert before[1] == {(project.pk, False, False, "levenshtein", "plain", "1"): 3}


def test_every_trigger_is_there_after_the_migrations():
    assert coverage_kept.present_triggers(connection) == coverage_kept.trigger_names(connection.vendor)
    # insert, delete, update of values, post-edits, assignments and items (on SQLite, for the last three, one
    # trigger for the post-edit count, one for the values); a new project's
    expected = 13 if connection.vendor == "postgresql" else 22
    assert len(coverage_kept.trigger_names(connection.vendor)) == expected


def test_a_new_project_starts_with_no_counts():
    """Rows left under a project's id (a flush deleting projects first, then resetting the ids) go."""
    project = ProjectFactory()
    CoverageValues.objects.create(
        project_id=project.pk + 1, has_references=False, has_gold=False, metric="chrf", variant="plain",
        metric_version="1", n=-3,
    )  # fmt: skip
    CoveragePostEdits.objects.create(project_id=project.pk + 1, has_references=False, has_gold=False, n=-1)
    newer = ProjectFactory()
    assert newer.pk == project.pk + 1
    assert kept() == ({}, {})


def test_a_lost_trigger_is_recreated_and_the_counts_recounted(annotator):
    """As after a migration that rebuilds a table on SQLite (the table's triggers go with it)."""
    project = ProjectFactory()
    SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=annotator)
    assert not coverage_kept.heal(connection)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER annotations_postedit_coverage_insert ON annotations_postedit")
        else:
            cursor.execute("DROP TRIGGER annotations_postedit_coverage_insert")
    SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=UserFactory())
    assert kept()[0] == {(project.pk, False, False): 1}  # the second one went uncounted
    assert coverage_kept.heal(connection)
    assert coverage_kept.present_triggers(connection) == coverage_kept.trigger_names(connection.vendor)
    assert kept() == recounted() == ({(project.pk, False, False): 2}, {})
