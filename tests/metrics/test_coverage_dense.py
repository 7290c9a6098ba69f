"""The metrics page's stored values are counted by one of two reads when every post-edit is of one kind: a
scan of the values in the coverage index's order kept by the project's submitted post-edits (a project
dense among all post-edits), or a join through each value's post-edit. Both give the same coverage, never
another project's values nor those of work no longer submitted, and equal to the compute plan's."""

import pytest

from annotations.models import Assignment
from metrics import selectors_coverage
from metrics.models import MetricValue
from metrics.selectors_coverage import metric_coverage
from metrics.services import metric_values_compute
from tests.factories import ProjectFactory, SubmittedPostEditFactory, UserFactory
from tests.metrics.test_coverage_counts import planned

pytestmark = pytest.mark.django_db


def _project(size: int):
    project = ProjectFactory()
    for n in range(size):
        SubmittedPostEditFactory(
            assignment__item__project=project, assignment__annotator=UserFactory(), text=f"text {n}"
        )
    return project


@pytest.mark.parametrize("dense", [0, 10**9])  # never dense, always dense
def test_both_reads_count_the_projects_values_alone(monkeypatch, dense):
    monkeypatch.setattr(selectors_coverage, "_DENSE", dense)
    project, other = _project(4), _project(6)
    metric_values_compute(project=project, metrics=["levenshtein", "chrf"])
    metric_values_compute(project=other, metrics=["levenshtein", "exact_match"])
    # One value of an older version (stale); one post-edit reopened: its values no longer count.
    chrf_values = MetricValue.objects.filter(post_edit__assignment__item__project=project, metric="chrf")
    chrf_values.filter(pk=chrf_values.order_by("-pk")[0].pk).update(metric_version="0-old")
    reopened = project.items.order_by("pk").first().assignments.get()
    Assignment.objects.filter(pk=reopened.pk).update(status=Assignment.IN_PROGRESS)
    post_edits, coverage = metric_coverage(project=project)
    assert post_edits == 3
    assert (coverage[("levenshtein", "plain")].up_to_date, coverage[("levenshtein", "plain")].missing) == (3, 0)
    chrf = coverage[("chrf", "plain")]
    assert (chrf.up_to_date, chrf.stale, chrf.missing) == (2, 1, 0)
    assert coverage[("exact_match", "plain")].up_to_date == 0  # the other project's values
    _, plan = planned(project)
    for key, cell in coverage.items():
        assert (cell.up_to_date, cell.missing, cell.not_applicable) == (
            plan[key].up_to_date,
            plan[key].missing,
            plan[key].not_applicable,
        ), key


def test_the_choice_follows_the_projects_share_of_all_post_edits(monkeypatch):
    """A project alone is dense; one among many bigger ones is not (the join then): the same figures."""
    project = _project(3)
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    alone = metric_coverage(project=project, metrics=["levenshtein"], variants=["plain"])
    _project(20)
    among = metric_coverage(project=project, metrics=["levenshtein"], variants=["plain"])
    assert alone == among
    assert alone[1][("levenshtein", "plain")].up_to_date == 3
