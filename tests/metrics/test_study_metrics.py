"""Metrics, exports and the analysis frame compare the post-edit with the text it started from:
the condition's output, or nothing when the annotator translated from scratch."""

import json

import pytest

from metrics.exports import export_spec, stream_jsonl
from metrics.models import MetricValue
from metrics.selectors import post_edit_frame
from metrics.services import metric_values_compute
from tests.factories import ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def edits():
    project = ProjectFactory()
    scratch = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__model_output="unrelated model output",
        start_override="",
        condition="scratch",
        text="abc",
    )
    system = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__model_output="unrelated model output",
        start_override="abd",
        condition="sysA",
        text="abc",
    )
    plain = SubmittedPostEditFactory(
        assignment__item__project=project, assignment__item__model_output="abx", text="abc"
    )
    return project, scratch, system, plain


def test_metrics_measure_from_the_starting_text(edits):
    project, scratch, system, plain = edits
    metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    values = dict(MetricValue.objects.filter(metric="levenshtein").values_list("post_edit_id", "value"))
    assert values == {scratch.pk: 3.0, system.pk: 1.0, plain.pk: 1.0}


def test_exports_and_the_analysis_frame_carry_the_starting_text(edits):
    project, scratch, system, plain = edits
    rows = [json.loads(line) for chunk in stream_jsonl(export_spec(project=project)) for line in chunk.splitlines()]
    assert sorted(row["original"] for row in rows) == ["", "abd", "abx"]
    frame = post_edit_frame(project=project)
    assert sorted(frame["original"]) == ["", "abd", "abx"]
