"""evaluation_submit: a finished evaluation stored with exact spans, or refused by field with nothing stored."""

import pytest

from annotations.models import ErrorSpan, Evaluation
from annotations.services.errors import ServiceError
from annotations.services.evaluations import evaluation_submit
from tests.factories import ItemFactory, SubmittedPostEditFactory, UserFactory

OUTPUT = "Die Katze saß."


@pytest.fixture
def item(db):
    return ItemFactory(source="The cat sat.", outputs={"sysA": OUTPUT})


def test_an_evaluation_of_an_output_with_overlapping_spans(item):
    rater = UserFactory()
    spans = [
        {"start": 4, "end": 9, "category": "Accuracy/Mistranslation", "severity": "major", "comment": "animal"},
        {"start": 0, "end": 9, "category": "Style/Awkward", "severity": "minor"},
        {"start": 4, "end": 7, "side": "source", "category": "Accuracy/Omission", "severity": "minor"},
    ]
    evaluation = evaluation_submit(item=item, rater=rater, system="sysA", spans=spans, esa_score=62.5, wall_ms=9000)
    assert (evaluation.text, evaluation.esa_score, evaluation.status, evaluation.wall_ms) == (
        OUTPUT,
        62.5,
        Evaluation.SUBMITTED,
        9000,
    )
    stored = list(evaluation.spans.values_list("position", "side", "start", "end", "category", "severity"))
    assert stored == [
        (0, "target", 4, 9, "Accuracy/Mistranslation", "major"),
        (1, "target", 0, 9, "Style/Awkward", "minor"),
        (2, "source", 4, 7, "Accuracy/Omission", "minor"),
    ]


def test_an_evaluation_of_a_post_edit(db):
    post_edit = SubmittedPostEditFactory(text="Die Katze sitzt.")
    evaluation = evaluation_submit(
        item=post_edit.assignment.item, rater=UserFactory(), post_edit=post_edit, spans=[], esa_score=100
    )
    assert (evaluation.text, evaluation.system, evaluation.spans.count()) == ("Die Katze sitzt.", "", 0)


@pytest.mark.parametrize(
    ("spans", "score", "field"),
    [
        ([{"start": 3, "end": 2, "category": "Other", "severity": "minor"}], None, "spans[0]"),
        ([{"start": 0, "end": 15, "category": "Other", "severity": "minor"}], None, "spans[0]"),
        ([{"start": 0, "end": 1, "category": "Made/Up", "severity": "minor"}], None, "spans[0].category"),
        ([{"start": 0, "end": 1, "category": "Other", "severity": "grave"}], None, "spans[0].severity"),
        ([{"start": 0, "end": 1, "category": "Other", "severity": "minor", "x": 1}], None, "spans[0].x"),
        ([{"start": 0, "end": 13, "side": "source", "category": "Other", "severity": "minor"}], None, "spans[0]"),
        ("spans", None, "spans"),
        ([], 100.5, "esa_score"),
        ([], -1, "esa_score"),
        ([], "high", "esa_score"),
    ],
)
def test_refusals_name_the_field_and_store_nothing(item, spans, score, field):
    with pytest.raises(ServiceError) as caught:
        evaluation_submit(item=item, rater=UserFactory(), system="sysA", spans=spans, esa_score=score)
    assert caught.value.data()["errors"].keys() == {field}
    assert (Evaluation.objects.count(), ErrorSpan.objects.count()) == (0, 0)


def test_an_unknown_output_and_a_second_evaluation_are_refused(item):
    rater = UserFactory()
    with pytest.raises(ServiceError, match="no output"):
        evaluation_submit(item=item, rater=rater, system="sysZ", spans=[])
    evaluation_submit(item=item, rater=rater, system="sysA", spans=[])
    with pytest.raises(ServiceError, match="already evaluated"):
        evaluation_submit(item=item, rater=rater, system="sysA", spans=[])
    assert Evaluation.objects.count() == 1


def test_the_admin_form_refuses_a_malformed_typology(db):
    from django.core.exceptions import ValidationError

    from tests.factories import ProjectFactory

    project = ProjectFactory(quality={"weights": {"major": -1}})
    with pytest.raises(ValidationError) as caught:
        project.full_clean()
    assert caught.value.message_dict == {"quality": ["weights.major: must be a finite number >= 0, got -1"]}
