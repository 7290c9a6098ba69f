import math

import pandas.testing as pandas_testing
import pytest

from annotations.models import Assignment, PostEdit
from metrics.models import MetricValue
from metrics.selectors import TARGETS, metric_column, post_edit_frame, post_edit_queryset, practice_count
from tests.factories import (
    MetricValueFactory,
    PostEditFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def selection():
    project = ProjectFactory(name="study")
    anna = UserFactory(username="anna", role="annotator")
    bob = UserFactory(username="bob", role="annotator")
    first = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="s1",
        assignment__item__task_type="mt",
        assignment__annotator=anna,
        text="This is a test.",
        wall_ms=1000,
        keystrokes=4,
    )
    second = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__external_id="s2",
        assignment__item__task_type="qa",
        assignment__annotator=bob,
        origin=PostEdit.IMPORTED,
        text="Another one.",
        wall_ms=2000,
        keystrokes=None,
    )
    # Not submitted, and another project: never in the selection.
    PostEditFactory(
        assignment__item__project=project, assignment__annotator=anna, assignment__status=Assignment.PENDING
    )
    SubmittedPostEditFactory()
    MetricValueFactory(post_edit=first, metric="compression", variant="plain", value=3.0)
    MetricValueFactory(post_edit=first, metric="compression", variant="with_references", value=5.0)
    MetricValueFactory(post_edit=second, metric="compression", variant="plain", value=None)
    MetricValueFactory(post_edit=second, metric="levenshtein", variant="plain", value=7.0)
    return project, first, second


def test_metric_column_names_the_variant():
    assert metric_column("compression", "plain") == "compression"
    assert metric_column("compression", "with_references") == "compression__with_references"
    with pytest.raises(ValueError, match="unknown variant 'both'"):
        metric_column("compression", "both")


def test_targets_name_effort_fields():
    assert TARGETS == {
        "wall_time": "wall_ms",
        "active_time": "active_ms",
        "keystrokes": "keystrokes",
        "allkeys": "allkeys",
    }


def test_queryset_keeps_only_submitted_post_edits_of_the_selection(selection):
    project, first, second = selection
    assert list(post_edit_queryset(project=project)) == [first, second]
    assert list(post_edit_queryset(project=project, annotators=["bob"])) == [second]
    assert list(post_edit_queryset(project=project, task_type="mt")) == [first]
    assert list(post_edit_queryset(project=project, origin=PostEdit.IMPORTED)) == [second]


def test_frame_has_one_row_per_post_edit_with_metric_columns(selection, django_assert_max_num_queries):
    project, first, second = selection
    with django_assert_max_num_queries(4):
        frame = post_edit_frame(project=project)
    assert list(frame["post_edit_id"]) == [first.id, second.id]
    assert list(frame["external_id"]) == ["s1", "s2"]
    assert list(frame["annotator"]) == ["anna", "bob"]
    assert list(frame["task_type"]) == ["mt", "qa"]
    assert list(frame["origin"]) == ["live", "imported"]
    assert list(frame["original"]) == ["This are a test.", "This are a test."]
    assert list(frame["edited"]) == ["This is a test.", "Another one."]
    assert list(frame["wall_ms"]) == [1000.0, 2000.0]
    assert frame["keystrokes"].iloc[0] == 4.0 and math.isnan(frame["keystrokes"].iloc[1])
    assert list(frame.columns[-4:]) == [
        "compression",
        "compression__with_references",
        "levenshtein",
        "levenshtein__with_references",
    ]
    assert frame["compression"].iloc[0] == 3.0 and math.isnan(frame["compression"].iloc[1])
    assert frame["compression__with_references"].iloc[0] == 5.0
    assert math.isnan(frame["levenshtein"].iloc[0]) and frame["levenshtein"].iloc[1] == 7.0
    assert frame["levenshtein__with_references"].isna().all()


def test_frame_honours_requested_metrics_and_variants(selection):
    project, first, _ = selection
    frame = post_edit_frame(project=project, annotators=["anna"], metrics=["compression", "ter"], variants=["plain"])
    assert list(frame.columns[-2:]) == ["compression", "ter"]
    assert frame["compression"].tolist() == [3.0]
    assert frame["ter"].isna().all()


def test_frame_of_an_empty_selection_has_the_columns(selection):
    project, _, _ = selection
    frame = post_edit_frame(project=project, annotators=["nobody"], metrics=["compression"])
    assert frame.empty
    assert "compression__with_references" in frame.columns and "wall_ms" in frame.columns
    assert MetricValue.objects.count() == 4


def test_the_frame_carries_condition_and_practice_and_practice_can_be_left_out():
    project = ProjectFactory()
    real = SubmittedPostEditFactory(assignment__item__project=project, condition="sysA")
    practice = SubmittedPostEditFactory(assignment__item__project=project, assignment__item__practice=True)
    frame = post_edit_frame(project=project)
    assert frame[["post_edit_id", "condition", "practice"]].values.tolist() == [
        [real.pk, "sysA", False],
        [practice.pk, "", True],
    ]
    assert post_edit_frame(project=project, include_practice=False)["post_edit_id"].tolist() == [real.pk]
    assert list(post_edit_queryset(project=project, include_practice=False)) == [real]
    assert practice_count(post_edit_queryset(project=project)) == 1


def test_the_frame_is_the_same_whatever_chunk_the_values_are_read_in(selection, monkeypatch):
    import metrics.selectors as selectors

    project, _, _ = selection
    whole = post_edit_frame(project=project)
    monkeypatch.setattr(selectors, "VALUE_CHUNK", 1)  # every value in a chunk of its own
    pandas_testing.assert_frame_equal(post_edit_frame(project=project), whole)
    assert whole.dtypes[list(whole.columns[-4:])].tolist() == [float] * 4


def _reference_frame(project, *, metrics, variants):
    """post_edit_frame as it was built before it read columns: from_records of the rows, numbers converted,
    then the values placed one by one (the frame the analysis was validated on)."""
    import numpy as np
    import pandas as pd
    from django.db.models import F

    from annotations.models import EFFORT_FIELDS
    from metrics.selectors import _BASE_VALUES, BASE_COLUMNS

    qs = post_edit_queryset(project=project)
    aliases = {"origin": "origin_value", "condition": "condition_value", "definition_version": "version_value"}
    aliases.update({field: f"e_{field}" for field in EFFORT_FIELDS})
    rows = qs.values(
        **_BASE_VALUES,
        origin_value=F("origin"),
        condition_value=F("condition"),
        version_value=F("definition_version"),
        **{f"e_{f}": F(f) for f in EFFORT_FIELDS},
    ).values_list(*(aliases.get(column, column) for column in BASE_COLUMNS))
    frame = pd.DataFrame.from_records(rows.iterator(chunk_size=10_000), columns=list(BASE_COLUMNS))
    for field in EFFORT_FIELDS:
        frame[field] = pd.to_numeric(frame[field], errors="coerce").astype(float)
    frame["post_edit_id"] = frame["post_edit_id"].astype("int64")
    for metric in metrics:
        for variant in variants:
            stored = dict(
                MetricValue.objects.filter(post_edit__in=qs.values("id"), metric=metric, variant=variant).values_list(
                    "post_edit_id", "value"
                )
            )
            frame[metric_column(metric, variant)] = [
                np.nan if stored.get(i) is None else stored[i] for i in frame["post_edit_id"]
            ]
    return frame


@pytest.mark.parametrize("dense_share", [4, 10**9])  # one pass over the values, or through the post-edit index
@pytest.mark.parametrize("chunk", [1, 10_000])
def test_the_frame_read_by_columns_is_the_frame_from_records(selection, monkeypatch, dense_share, chunk):
    import metrics.selectors as selectors
    from tests.factories import ItemFactory

    project, first, second = selection
    # Rows of every kind: practice, a condition, a document, an empty text and one in another script.
    third = SubmittedPostEditFactory(
        assignment__item=ItemFactory(project=project, practice=True, document="doc-1", external_id="s3"),
        condition="sysB",
        text="",
        allkeys=None,
    )
    SubmittedPostEditFactory(assignment__item__project=project, text="Ünïcödé  words\tand\nlines ", wall_ms=None)
    MetricValueFactory(post_edit=third, metric="levenshtein", variant="with_references", value=0.5)
    monkeypatch.setattr(selectors, "FRAME_CHUNK", chunk)
    monkeypatch.setattr(selectors, "VALUE_CHUNK", chunk)
    monkeypatch.setattr(selectors, "DENSE_SHARE", dense_share)
    names, variants = ["compression", "levenshtein"], ["plain", "with_references"]
    expected = _reference_frame(project, metrics=names, variants=variants)
    got = post_edit_frame(project=project, metrics=names, variants=variants)
    pandas_testing.assert_frame_equal(got, expected)
    lengths = post_edit_frame(project=project, metrics=names, variants=variants, texts=False)
    from metrics.analysis import EDITED_LENGTH, ORIGINAL_LENGTH, word_counts
    from metrics.analysis.conditions import WORDS

    expected[ORIGINAL_LENGTH] = expected["original"].fillna("").str.len()
    expected[EDITED_LENGTH] = expected["edited"].fillna("").str.len()
    expected[WORDS] = word_counts(expected["edited"])
    assert "original" not in lengths and "edited" not in lengths
    pandas_testing.assert_frame_equal(lengths, expected[list(lengths.columns)])
    assert lengths[WORDS].tolist()[-2:] == [0, 4]


def test_an_empty_frame_read_by_columns_has_the_columns_of_from_records(selection):
    project, _, _ = selection
    for texts in (True, False):
        frame = post_edit_frame(project=project, annotators=["nobody"], metrics=["compression"], texts=texts)
        assert frame.empty
        assert frame["post_edit_id"].dtype == "int64" and frame["wall_ms"].dtype == float
        assert frame["annotator"].dtype == object


def test_annotator_names_are_those_with_a_post_edit_of_the_selection(selection):
    from metrics.selectors import annotator_names

    project, first, _ = selection
    # Not in the list: a pending post-edit's annotator, another project's, a synthetic edit's.
    PostEditFactory(
        assignment__item__project=project,
        assignment__annotator=UserFactory(username="carl"),
        assignment__status=Assignment.PENDING,
    )
    SubmittedPostEditFactory(assignment__annotator=UserFactory(username="dora"))
    SubmittedPostEditFactory(
        assignment__item__project=project, assignment__annotator=UserFactory(username="llm"), origin=PostEdit.SIMULATED
    )
    SubmittedPostEditFactory(assignment__item__project=project, assignment__annotator=first.assignment.annotator)
    names = annotator_names(project=project)
    assert names == ["anna", "bob"]
    assert names == sorted(
        set(post_edit_queryset(project=project).values_list("assignment__annotator__username", flat=True))
    )
