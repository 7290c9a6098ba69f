"""review_assign and review_decide: the review's assignment and post-edit, accept, return (the annotator's
work open again, nothing lost), and every refusal named: one's own work, unsubmitted work, a review taken
twice or decided twice, a reason missing, too long or unstorable, a decision that is not one."""

import pytest
from django.contrib.auth.models import Group
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, PostEdit
from annotations.roles import REVIEWER, is_reviewer, set_reviewer, set_role
from annotations.services.errors import ServiceError
from annotations.services.review import (
    REASON_MAX_CHARS,
    AlreadyAccepted,
    AlreadyDecided,
    BadDecision,
    BadReason,
    NotAReviewer,
    NotSubmitted,
    NotYourReview,
    OwnWork,
    ReviewError,
    ReviewNotSubmitted,
    UnderReview,
    review_assign,
    review_decide,
)
from tests.factories import AssignmentFactory, ItemFactory, PostEditFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db


def reviewer_user(name: str = "rita", role: str = "annotator"):
    user = UserFactory(username=name, role=role)
    set_reviewer(user, True)
    return user


def submitted(annotator=None, **kwargs) -> PostEdit:
    extra = {"assignment__annotator": annotator} if annotator is not None else {}
    return SubmittedPostEditFactory(**extra, **kwargs)


def finish(review: Assignment, text: str = "This is a test!") -> None:
    """The reviewer's edit submitted (as post_edit_submit leaves it, without a log)."""
    PostEdit.objects.filter(assignment=review).update(text=text, draft_text=text, wall_ms=3000, keystrokes=2)
    Assignment.objects.filter(pk=review.pk).update(status=Assignment.SUBMITTED)
    review.refresh_from_db()


def test_the_reviewer_group_exists_and_stays_beside_a_role():
    assert Group.objects.filter(name=REVIEWER).exists()
    user = reviewer_user()
    assert is_reviewer(user)
    set_role(user, "researcher")  # a new role keeps the reviewer group
    user.refresh_from_db()
    assert set(user.groups.values_list("name", flat=True)) == {"researcher", REVIEWER}
    set_reviewer(user, False)
    assert not is_reviewer(user)
    assert is_reviewer(UserFactory(username="boss", role="admin"))  # an admin can always review
    assert not is_reviewer(UserFactory(username="plain", role="annotator"))


def test_a_review_starts_from_the_submitted_text_under_the_same_condition():
    post_edit = submitted(text="The annotator's text.", assignment__condition="a")
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    assert review.reviews_id == post_edit.pk
    assert review.annotator == reviewer
    assert review.item_id == post_edit.assignment.item_id
    assert review.condition == "a"
    assert review.status == Assignment.PENDING
    pe = review.post_edit
    assert pe.start_text == "The annotator's text."
    assert pe.draft_text == "The annotator's text."
    assert pe.extra["reviewed"] == {
        "post_edit_id": post_edit.pk,
        "round": 1,
        "submitted_at": post_edit.submitted_at.isoformat(),
        "wall_ms": 12000,
        "active_ms": 10000,
        "keystrokes": 6,
        "allkeys": 9,
    }
    # Taking it again (a double click) is the same review.
    assert review_assign(post_edit=post_edit, reviewer=reviewer).pk == review.pk
    assert Assignment.objects.reviews().count() == 1


def test_accept_records_the_decision_and_leaves_the_work_submitted():
    post_edit = submitted()
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    finish(review)
    decided = review_decide(review=review, reviewer=reviewer, decision="accepted", reason="  fine  ")
    assert (decided.review_decision, decided.review_reason) == ("accepted", "fine")
    assert decided.review_decided_at is not None
    post_edit.assignment.refresh_from_db()
    assert post_edit.assignment.status == Assignment.SUBMITTED
    with pytest.raises(AlreadyDecided, match=r"^review: review \d+ is already decided \(accepted\)$"):
        review_decide(review=review, reviewer=reviewer, decision="returned", reason="changed my mind")
    with pytest.raises(AlreadyAccepted, match="^post_edit: .* was accepted by a review"):
        review_assign(post_edit=post_edit, reviewer=reviewer_user("ron"))


def test_return_opens_the_annotators_work_again_and_loses_nothing():
    post_edit = submitted(text="First try.")
    annotator_assignment = post_edit.assignment
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    finish(review, "First try, fixed.")
    review_decide(review=review, reviewer=reviewer, decision="returned", reason="Keep the register formal.")
    annotator_assignment.refresh_from_db()
    assert annotator_assignment.status == Assignment.IN_PROGRESS
    assert annotator_assignment.finished is None
    post_edit.refresh_from_db()
    assert (post_edit.text, post_edit.draft_text, post_edit.wall_ms) == ("First try.", "First try.", 12000)
    review.refresh_from_db()
    assert (review.review_decision, review.review_reason) == ("returned", "Keep the register formal.")
    assert review.post_edit.start_text == "First try."  # the submission as it was reviewed
    assert review.post_edit.text == "First try, fixed."
    # Not submitted again yet: nobody can review it; once submitted, round 2.
    with pytest.raises(NotSubmitted):
        review_assign(post_edit=post_edit, reviewer=reviewer)
    Assignment.objects.filter(pk=annotator_assignment.pk).update(status=Assignment.SUBMITTED)
    PostEdit.objects.filter(pk=post_edit.pk).update(text="Second try.")
    again = review_assign(post_edit=post_edit, reviewer=reviewer)
    assert again.pk != review.pk
    assert again.post_edit.extra["reviewed"]["round"] == 2
    assert again.post_edit.start_text == "Second try."


def test_one_cannot_review_ones_own_work_nor_an_item_one_holds():
    reviewer = reviewer_user()
    own = submitted(annotator=reviewer)
    with pytest.raises(OwnWork, match="^post_edit: .* is your own post-edit"):
        review_assign(post_edit=own, reviewer=reviewer)
    # Someone else's post-edit of an item the reviewer edits too: they would see another condition's text.
    item = ItemFactory()
    AssignmentFactory(item=item, annotator=reviewer)
    theirs = submitted(assignment__item=item)
    with pytest.raises(OwnWork, match="^post_edit: you edited item .* yourself"):
        review_assign(post_edit=theirs, reviewer=reviewer)
    assert not Assignment.objects.reviews().exists()


def test_only_reviewers_and_admins_take_reviews():
    post_edit = submitted()
    for user in (UserFactory(username="ann2", role="annotator"), UserFactory(username="res", role="researcher")):
        with pytest.raises(NotAReviewer, match=r"^reviewer: \w+ does not hold the reviewer role$"):
            review_assign(post_edit=post_edit, reviewer=user)
    admin = UserFactory(username="boss", role="admin")
    assert review_assign(post_edit=post_edit, reviewer=admin).annotator == admin


@pytest.mark.parametrize("status", [Assignment.PENDING, Assignment.IN_PROGRESS, Assignment.SKIPPED])
def test_unsubmitted_work_is_not_reviewed(status):
    post_edit = PostEditFactory(assignment__status=status)
    with pytest.raises(NotSubmitted, match="^post_edit: .* not submitted"):
        review_assign(post_edit=post_edit, reviewer=reviewer_user())


def test_a_review_is_not_reviewed_and_simulated_edits_are_not_reviewed():
    review = review_assign(post_edit=submitted(), reviewer=reviewer_user())
    finish(review)
    with pytest.raises(ReviewError, match="^post_edit: .* is itself a review"):
        review_assign(post_edit=review.post_edit, reviewer=reviewer_user("ron"))
    simulated = submitted(origin=PostEdit.SIMULATED)
    with pytest.raises(ReviewError, match="^post_edit: .* simulated edit"):
        review_assign(post_edit=simulated, reviewer=reviewer_user("ron"))


def test_a_post_edit_under_review_is_not_taken_by_another_reviewer_until_skipped():
    post_edit = submitted()
    first = review_assign(post_edit=post_edit, reviewer=reviewer_user())
    with pytest.raises(UnderReview, match="^post_edit: .* is already under review$"):
        review_assign(post_edit=post_edit, reviewer=reviewer_user("ron"))
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.SKIPPED)
    assert review_assign(post_edit=post_edit, reviewer=reviewer_user("ron")).pk != first.pk


def test_deciding_is_the_reviewers_after_submitting():
    post_edit = submitted()
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    with pytest.raises(ReviewNotSubmitted, match="^review: submit your edit"):
        review_decide(review=review, reviewer=reviewer, decision="accepted")
    finish(review)
    with pytest.raises(NotYourReview, match="^review: review .* is someone else's"):
        review_decide(review=review, reviewer=reviewer_user("ron"), decision="accepted")
    with pytest.raises(ReviewError, match="^review: assignment .* is not a review$"):
        review_decide(review=post_edit.assignment, reviewer=reviewer, decision="accepted")
    Assignment.objects.filter(pk=post_edit.assignment_id).update(status=Assignment.PENDING)  # withdrawn meanwhile
    with pytest.raises(NotSubmitted, match="^post_edit: .* not submitted; it cannot be decided$"):
        review_decide(review=review, reviewer=reviewer, decision="accepted")
    review.refresh_from_db()
    assert review.review_decision == ""


def test_a_skipped_review_is_not_decided():
    reviewer = reviewer_user()
    review = review_assign(post_edit=submitted(), reviewer=reviewer)
    Assignment.objects.filter(pk=review.pk).update(status=Assignment.SKIPPED)
    with pytest.raises(ReviewNotSubmitted, match="^review: .* was skipped"):
        review_decide(review=review, reviewer=reviewer, decision="accepted")


@pytest.mark.parametrize(
    ("decision", "reason", "refusal", "message"),
    [
        ("returned", "", BadReason, "^reason: say why the post-edit goes back to its annotator$"),
        ("returned", " \n\t ", BadReason, "^reason: say why"),
        ("returned", "x" * (REASON_MAX_CHARS + 1), BadReason, rf"^reason: at most {REASON_MAX_CHARS} characters"),
        ("returned", "bad\x00byte", BadReason, "^reason contains a NUL character"),
        ("returned", "half \ud800 pair", BadReason, "^reason contains an unpaired surrogate"),
        ("accepted", "x" * (REASON_MAX_CHARS + 1), BadReason, "^reason: at most"),
        ("maybe", "", BadDecision, "^decision: choose accepted or returned"),
        ("", "", BadDecision, "^decision: choose"),
    ],
)
def test_bad_decisions_and_reasons_are_refused_by_name_and_change_nothing(decision, reason, refusal, message):
    post_edit = submitted()
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    finish(review)
    with pytest.raises(refusal, match=message) as caught:
        review_decide(review=review, reviewer=reviewer, decision=decision, reason=reason)
    assert isinstance(caught.value, ServiceError) and caught.value.status == 400
    review.refresh_from_db()
    post_edit.assignment.refresh_from_db()
    assert (review.review_decision, review.review_reason) == ("", "")
    assert post_edit.assignment.status == Assignment.SUBMITTED


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reason=st.text(max_size=REASON_MAX_CHARS + 40))
def test_any_reason_is_stored_as_given_stripped_or_refused_by_name(reason):
    post_edit = submitted()
    reviewer = reviewer_user()
    review = review_assign(post_edit=post_edit, reviewer=reviewer)
    finish(review)
    try:
        review_decide(review=review, reviewer=reviewer, decision="returned", reason=reason)
    except BadReason as exc:
        assert str(exc).startswith("reason")
        review.refresh_from_db()
        assert review.review_decision == ""
        assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.SUBMITTED
    else:
        review.refresh_from_db()
        assert review.review_reason == reason.strip()
        assert 0 < len(review.review_reason) <= REASON_MAX_CHARS
        assert Assignment.objects.get(pk=post_edit.assignment_id).status == Assignment.IN_PROGRESS
    finally:
        Assignment.objects.all().delete()


def test_add_user_gives_and_takes_the_reviewer_group():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("add_user", "revy", "--role", "annotator", "--password", "a long password 1", "--reviewer", stdout=out)
    user = UserFactory(username="revy")
    assert is_reviewer(user) and "a reviewer" in out.getvalue()
    call_command("add_user", "revy", "--role", "researcher", stdout=StringIO())  # the group stays with a new role
    user = UserFactory(username="revy")
    assert is_reviewer(user)
    call_command("add_user", "revy", "--role", "researcher", "--no-reviewer", stdout=StringIO())
    assert not is_reviewer(UserFactory(username="revy"))


def test_erasing_a_participants_texts_erases_the_reviews_copies_of_them():
    from annotations.models import Participant
    from annotations.services.erasure import participant_log_erase

    walker = UserFactory(username="walker-0", role="annotator")
    post_edit = submitted(annotator=walker, text="PERSONAL-TEXT-91")
    project = post_edit.assignment.item.project
    participant = Participant.objects.create(
        user=walker, project=project, platform_id="walker-0", platform_key="walker-0", slot=0
    )
    review = review_assign(post_edit=post_edit, reviewer=reviewer_user())
    finish(review, "PERSONAL-TEXT-91 fixed")
    participant_log_erase(project=project, participant=participant)
    assert not PostEdit.objects.filter(text__contains="PERSONAL-TEXT-91").exists()
    assert not PostEdit.objects.filter(start_override__contains="PERSONAL-TEXT-91").exists()
    assert not Assignment.objects.reviews().exists()
