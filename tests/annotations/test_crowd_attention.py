"""Attention checks: the pass rule (annotations/attention.py, pure; Hypothesis over edits inside and
outside the planted span), marking items (annotations/services/participants_checks.py) and each
participant's results."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.attention import FAILED, PASSED, Check, check_result, gold_distance, span_changed
from annotations.models import Assignment, AttentionCheck
from annotations.services.errors import ServiceError
from annotations.services.participants_checks import attention_check_set, check_results_by_user
from tests.factories import AssignmentFactory, ItemFactory, SubmittedPostEditFactory, UserFactory

TEXT = "The teh cat sat on the mat."


@pytest.mark.parametrize(
    ("edited", "changed"),
    [
        (TEXT, False),
        ("The the cat sat on the mat.", True),
        ("The cat sat on the mat.", True),
        ("The teh dog sat on the mat.", False),  # an edit elsewhere
        ("Now the teh cat sat on the mat.", False),
        ("The tehx cat sat on the mat.", False),  # an insertion just after the span
        ("The txeh cat sat on the mat.", True),  # an insertion inside it
        ("", True),
    ],
)
def test_a_planted_error_passes_only_when_its_span_is_changed(edited, changed):
    assert span_changed(TEXT, edited, 4, 7) is changed
    assert check_result(Check("planted", 4, 7), original=TEXT, edited=edited) == (PASSED if changed else FAILED)


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(alphabet="ab ", max_size=12),
    span=st.text(alphabet="xyz", min_size=1, max_size=5),
    after=st.text(alphabet="ab ", max_size=12),
    prefix=st.text(alphabet="abxyz ", max_size=8),
    suffix=st.text(alphabet="abxyz ", max_size=8),
    new_before=st.text(alphabet="abc ", max_size=12),
    new_after=st.text(alphabet="abc ", max_size=12),
    new_span=st.text(alphabet="q", max_size=5),
)
def test_a_kept_span_never_passes_and_a_removed_one_always_does(
    before, span, after, prefix, suffix, new_before, new_after, new_span
):
    original = before + span + after
    start, end = len(before), len(before) + len(span)
    assert not span_changed(original, original, start, end)
    # Text added around the whole output, whatever it holds: the span is as it was.
    assert not span_changed(original, prefix + original + suffix, start, end)
    # The span's characters gone from the text (replaced by others, or deleted), whatever else changed.
    assert span_changed(original, new_before + new_span + new_after, start, end)


def test_a_gold_edit_passes_within_its_distance_counting_whitespace_runs_as_one():
    assert gold_distance("The  cat sat.\n", "The cat sat.", limit=0) == 0
    assert gold_distance("The cat sits.", "The cat sat.", limit=5) == 2
    assert gold_distance("Something else entirely.", "The cat sat.", limit=3) == 4  # over the limit: limit + 1
    check = Check("gold", gold="The cat sat.", max_distance=2)
    assert check_result(check, original=TEXT, edited="The cat sits.") == PASSED
    assert check_result(check, original=TEXT, edited="The dog sits.") == FAILED
    assert check_result(check, original=TEXT, edited=None) == FAILED  # skipped


@pytest.mark.django_db
def test_marking_items_refuses_what_cannot_be_checked_naming_the_field():
    item = ItemFactory(model_output=TEXT, gold_edits=[])

    def refused(**kwargs) -> str:
        with pytest.raises(ServiceError) as info:
            attention_check_set(item=item, **kwargs)
        return str(info.value)

    assert refused(kind="quiz").startswith("kind: 'quiz' is not one of planted, gold, none")
    assert refused(kind="planted", planted="dog").startswith("planted: the planted error does not occur")
    assert refused(kind="planted", planted="at").startswith("planted: the planted error occurs 3 times")
    assert refused(kind="planted").startswith("planted: give the planted error's text")
    assert refused(kind="planted", start=5, end=999).startswith("end: the span must lie within the model output")
    assert refused(kind="gold").startswith("gold: give the gold edit (the item has no gold edits)")
    assert refused(kind="gold", gold="x", max_distance=-1).startswith("max_distance: a whole number from 0 to 1,000")
    assert refused(kind="gold", gold="x" * 100_001).startswith("gold: at most 100,000 characters")
    assert not AttentionCheck.objects.exists()
    check = attention_check_set(item=item, kind="planted", planted="teh")
    assert (check.kind, check.start, check.end) == ("planted", 4, 7)
    item.gold_edits = ["The cat sat on the mat."]
    check = attention_check_set(item=item, kind="gold", max_distance=1)
    assert (check.kind, check.gold, check.max_distance) == ("gold", "The cat sat on the mat.", 1)
    assert AttentionCheck.objects.count() == 1  # replaced, not added
    assert attention_check_set(item=item, kind="none") is None
    assert not AttentionCheck.objects.exists()


@pytest.mark.django_db
def test_each_persons_results_passed_failed_pending_and_skipped():
    checks = [ItemFactory(model_output=TEXT) for _ in range(4)]
    for item in checks:
        attention_check_set(item=item, kind="planted", planted="teh")
    plain = ItemFactory(project=checks[0].project)
    user = UserFactory(role="annotator")
    SubmittedPostEditFactory(assignment__item=checks[0], assignment__annotator=user, text="The cat sat on the mat.")
    SubmittedPostEditFactory(assignment__item=checks[1], assignment__annotator=user, text=TEXT)
    AssignmentFactory(item=checks[2], annotator=user)  # still open
    AssignmentFactory(item=checks[3], annotator=user, status=Assignment.SKIPPED)
    SubmittedPostEditFactory(assignment__item=plain, assignment__annotator=user)  # not a check
    results = check_results_by_user(user_ids=[user.pk])[user.pk]
    assert (results.total, results.passed, results.failed, results.pending) == (4, 1, 2, 1)
