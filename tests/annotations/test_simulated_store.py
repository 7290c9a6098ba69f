"""Storing an LLM's synthetic edit: origin, scenario as condition, provenance, once per settings."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, PostEdit
from annotations.services.simulated import (
    SimulatedEditRefused,
    SimulatedTextTooLong,
    post_edit_create_simulated,
    settings_key,
)
from tests.factories import ItemFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

PROVENANCE = {"endpoint": "http://127.0.0.1:9/v1", "model": "m", "temperature": 0.0, "response_id": "r1"}


def test_stores_a_submitted_simulated_post_edit_without_effort():
    item = ItemFactory(model_output="the output")
    pe = post_edit_create_simulated(item=item, scenario="fast", text="edited", provenance=PROVENANCE)
    pe.refresh_from_db()
    assert pe.origin == PostEdit.SIMULATED
    assert pe.condition == "fast" and pe.assignment.condition == "fast"
    assert pe.assignment.status == Assignment.SUBMITTED
    assert pe.text == "edited" and pe.start_text == "the output"
    assert pe.origin_detail["model"] == "m" and pe.origin_detail["scenario"] == "fast"
    assert pe.wall_ms is None and pe.active_ms is None and pe.keystrokes is None
    assert not pe.assignment.annotator.is_active
    assert pe.visits.count() == 0


def test_same_item_scenario_settings_store_once():
    item = ItemFactory()
    first = post_edit_create_simulated(item=item, scenario="normal", text="a", provenance=PROVENANCE)
    again = post_edit_create_simulated(
        item=item, scenario="normal", text="a", provenance={**PROVENANCE, "response_id": "r2"}
    )
    assert again.pk == first.pk
    assert PostEdit.objects.simulated().count() == 1
    with pytest.raises(SimulatedEditRefused):
        post_edit_create_simulated(item=item, scenario="normal", text="b", provenance=PROVENANCE)
    other = post_edit_create_simulated(
        item=item, scenario="normal", text="b", provenance={**PROVENANCE, "temperature": 0.7}
    )
    assert other.pk != first.pk
    post_edit_create_simulated(item=item, scenario="similar", text="a", provenance=PROVENANCE)
    assert PostEdit.objects.simulated().count() == 3


def test_text_over_the_limit_is_refused(settings):
    settings.EDITLAB_TEXT_MAX_BYTES = 100
    item = ItemFactory()
    with pytest.raises(SimulatedTextTooLong, match="bytes"):
        post_edit_create_simulated(item=item, scenario="fast", text="x" * 101, provenance=PROVENANCE)
    assert PostEdit.objects.simulated().count() == 0


def test_settings_key_ignores_volatile_keys():
    assert settings_key(PROVENANCE) == settings_key({**PROVENANCE, "response_id": "other", "latency_ms": 3})
    assert settings_key(PROVENANCE) != settings_key({**PROVENANCE, "model": "n"})


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(origins=st.lists(st.sampled_from([PostEdit.LIVE, PostEdit.IMPORTED, PostEdit.SIMULATED]), max_size=8))
def test_human_leaves_out_exactly_the_simulated(origins):
    PostEdit.objects.all().delete()
    for origin in origins:
        SubmittedPostEditFactory(origin=origin)
    human = PostEdit.objects.human()
    assert sorted(human.values_list("origin", flat=True)) == sorted(o for o in origins if o != PostEdit.SIMULATED)
    assert PostEdit.objects.simulated().count() == origins.count(PostEdit.SIMULATED)
