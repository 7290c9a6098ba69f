"""Simulated edits get metric values but stay out of the human selection that feeds analyses."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import PostEdit
from annotations.services.simulated import post_edit_create_simulated
from metrics.models import MetricValue
from metrics.selectors import post_edit_queryset
from metrics.services import metric_values_compute
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


def test_simulated_edits_get_metric_values_and_stay_out_of_human_selection():
    project = ProjectFactory()
    item = ItemFactory(project=project, model_output="the cat sat", references=["cats sit"])
    human = SubmittedPostEditFactory(assignment__item=item, text="the cat sits")
    sim = post_edit_create_simulated(item=item, scenario="fast", text="a cat sat", provenance={"model": "m"})
    metric_values_compute(project=project, metrics=["chrf"])
    assert MetricValue.objects.filter(post_edit=sim).exists()
    assert MetricValue.objects.filter(post_edit=human).exists()
    assert list(post_edit_queryset(project=project)) == [human]
    assert set(post_edit_queryset(project=project, include_simulated=True)) == {human, sim}


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(origins=st.lists(st.sampled_from([PostEdit.LIVE, PostEdit.IMPORTED, PostEdit.SIMULATED]), max_size=8))
def test_selection_leaves_out_only_simulated(origins):
    PostEdit.objects.all().delete()
    project = ProjectFactory()
    for origin in origins:
        SubmittedPostEditFactory(assignment__item__project=project, origin=origin)
    got = sorted(post_edit_queryset(project=project).values_list("origin", flat=True))
    assert got == sorted(o for o in origins if o != PostEdit.SIMULATED)
    assert post_edit_queryset(project=project, include_simulated=True).count() == len(origins)
