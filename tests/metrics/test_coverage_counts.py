"""The metrics page's coverage, counted by the database, equals the compute plan's on generated projects
(references and gold edits of every shape, live, imported and simulated post-edits, open work, values up
to date, of an older version, missing or stored where they no longer apply), in a constant number of queries."""

import pytest
from django.db import connection
from django.db.models import JSONField, Value
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, PostEdit
from metrics import text as text_metrics
from metrics.models import MetricValue
from metrics.selectors import VARIANTS, post_edit_queryset
from metrics.selectors_coverage import metric_coverage
from metrics.services import ComputeReport, _rows, compute_plan, metric_values_compute, resolve_metrics
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

METRICS = resolve_metrics(None)
REFERENCES = [[], "", {}, "null", ["a reference"], "one document", [{"title": "T", "text": "doc"}], [""], {"url": "u"}]
GOLD = [[], "", "null", {}, 0, False, ["a gold edit"], "gold", ["g1", "g2"]]


def json(value):
    """A JSON field's value; "null" is JSON null (Python's None would be SQL NULL, which the fields refuse)."""
    return Value(None, output_field=JSONField()) if value == "null" else value


def planned(project, metrics=None, variants=VARIANTS):
    names = resolve_metrics(metrics)
    report = ComputeReport(metrics=names, variants=list(variants))
    selection = post_edit_queryset(project=project, include_simulated=True)
    plan = compute_plan(selection, names, list(variants), report)
    return report.post_edits, {(m, v): plan.coverage[(m, v)] for m in names for v in variants}


def hashes(project) -> dict:
    """(post-edit id, variant, needs gold) -> the input hash of its current texts."""
    selection = PostEdit.objects.filter(assignment__item__project=project)
    return {
        (row.id, variant, gold): row.hash_for(variant=variant, needs_gold=gold)
        for row in _rows(selection)
        for variant in VARIANTS
        for gold in (False, True)
    }


post_edit = st.fixed_dictionaries(
    {
        "item": st.integers(0, 5),
        "origin": st.sampled_from([PostEdit.LIVE, PostEdit.IMPORTED, PostEdit.SIMULATED]),
        "status": st.sampled_from([Assignment.SUBMITTED] * 3 + [Assignment.IN_PROGRESS, Assignment.SKIPPED]),
        "start": st.none() | st.just("") | st.just("A start."),
        # (metric index, variant, current version?) of the values stored for it
        "values": st.lists(
            st.tuples(st.integers(0, len(METRICS) - 1), st.sampled_from(VARIANTS), st.booleans()), max_size=6
        ),
    }
)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    items=st.lists(st.tuples(st.sampled_from(REFERENCES), st.sampled_from(GOLD)), min_size=6, max_size=6),
    post_edits=st.lists(post_edit, max_size=12),
    subset=st.booleans(),
)
def test_the_counted_coverage_equals_the_plans(items, post_edits, subset):
    project = ProjectFactory()
    made = [ItemFactory(project=project, references=json(refs), gold_edits=json(gold)) for refs, gold in items]
    annotator = UserFactory(role="annotator")
    created = []
    for n, spec in enumerate(post_edits):
        created.append(
            SubmittedPostEditFactory(
                assignment=AssignmentFactory(
                    item=made[spec["item"]],
                    annotator=UserFactory(username=f"{annotator.username}-{n}"),
                    status=spec["status"],
                ),
                origin=spec["origin"],
                start_override=spec["start"],
                text=f"Edited {n}.",
            )
        )
    current = hashes(project)
    for post_edit_row, spec in zip(created, post_edits, strict=True):
        for index, variant, up_to_date in dict.fromkeys(spec["values"]):
            name = METRICS[index]
            metric = text_metrics.METRICS[name]
            MetricValue.objects.update_or_create(
                post_edit=post_edit_row,
                metric=name,
                variant=variant,
                defaults={
                    "value": 1.0,
                    "metric_version": str(metric.version) if up_to_date else "0",
                    "input_hash": current[(post_edit_row.pk, variant, "gold" in metric.needs)],
                },
            )
    metrics = METRICS[::3] if subset else None
    variants = ["with_references"] if subset else VARIANTS
    assert metric_coverage(project=project, metrics=metrics, variants=variants) == planned(project, metrics, variants)


def test_each_kind_of_cell_is_counted(annotator):
    project = ProjectFactory()
    bare = ItemFactory(project=project)
    rich = ItemFactory(project=project, references=["A reference."], gold_edits=["This is a test."])
    made = [
        SubmittedPostEditFactory(assignment__item=item, assignment__annotator=UserFactory(), origin=origin)
        for item in (bare, rich)
        for origin in (PostEdit.LIVE, PostEdit.SIMULATED)
    ]
    metric_values_compute(project=project, metrics=["levenshtein", "sari"])
    MetricValue.objects.filter(post_edit=made[0], metric="levenshtein").update(metric_version="0")
    MetricValue.objects.filter(post_edit=made[3], metric="levenshtein").delete()
    n, coverage = metric_coverage(project=project, metrics=["levenshtein", "sari"])
    cells = {key: (c.up_to_date, c.stale, c.missing, c.not_applicable) for key, c in coverage.items()}
    assert n == 4
    assert cells == {
        ("levenshtein", "plain"): (2, 1, 1, 0),
        ("levenshtein", "with_references"): (1, 0, 1, 2),
        ("sari", "plain"): (2, 0, 0, 2),
        ("sari", "with_references"): (0, 0, 0, 4),
    }
    assert (n, coverage) == planned(project, ["levenshtein", "sari"])


def test_texts_changed_since_computing_are_found_by_the_computation(annotator):
    """The page does not read the texts; the next computation compares their fingerprint and recomputes."""
    project = ProjectFactory()
    post_edit_row = SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=annotator)
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    PostEdit.objects.filter(pk=post_edit_row.pk).update(text="This is not a test.")
    _, coverage = metric_coverage(project=project, metrics=["levenshtein"], variants=["plain"])
    assert coverage[("levenshtein", "plain")].up_to_date == 1
    _, plan = planned(project, ["levenshtein"], ["plain"])
    assert plan[("levenshtein", "plain")].stale == 1
    report = metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    assert report.computed == 1
    assert MetricValue.objects.get().value == 6.0  # "are" -> "is not" (3 before the change)


def test_the_query_count_does_not_grow_with_the_post_edits_or_values():
    counts = []
    for size in (2, 20):
        project = ProjectFactory()
        for n in range(size):
            SubmittedPostEditFactory(
                assignment__item__project=project,
                assignment__item__references=["r"] if n % 2 else [],
                assignment__annotator=UserFactory(),
            )
        metric_values_compute(project=project, metrics=["levenshtein", "exact_match"])
        with CaptureQueriesContext(connection) as queries:
            metric_coverage(project=project)
        counts.append(len(queries))
    assert counts[0] == counts[1] == 2


def test_the_page_shows_the_counted_coverage(researcher_client, annotator):
    project = ProjectFactory()
    for n in range(3):
        SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=UserFactory(), text=f"{n}")
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    response = researcher_client.get(reverse("metrics-project", kwargs={"project_id": project.pk}))
    rows = {row["metric"]: row["cells"] for row in response.context["rows"]}
    assert (rows["levenshtein"][0].up_to_date, rows["levenshtein"][0].missing) == (3, 0)
    assert rows["chrf"][0].missing == 3 and response.context["post_edits"] == 3
