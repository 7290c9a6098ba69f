"""Review (MateCat's Revise): a second pass over a submitted post-edit, and its decision.

A review is an assignment of the reviewer for the same item whose post-edit starts from the
reviewed post-edit's submitted text (`Assignment.reviews` links it), so the reviewer edits in the
same editor, with the same event log and effort, and metrics compare the annotator's text (its
start) with the reviewer's (its text). The reviewer then accepts the post-edit, or returns it with
a reason: the annotator's assignment is open again (in progress) and the reason is shown to them;
the review keeps the text and effort it was given, so nothing of the first submission is lost.
"""

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotations.editing.errors import InvalidInput, ensure_text
from annotations.models import Assignment, PostEdit
from annotations.roles import is_reviewer
from annotations.services.errors import ServiceError

logger = logging.getLogger(__name__)

REASON_MAX_CHARS = 2000
DECISIONS = (Assignment.ACCEPTED, Assignment.RETURNED)
# What a review records of the post-edit it was given (its effort when it was reviewed).
SNAPSHOT_FIELDS = ("wall_ms", "active_ms", "keystrokes", "allkeys")


class ReviewError(ServiceError):
    """A review request refused; the message names the field."""

    code = "review_refused"


class NotAReviewer(ReviewError):
    status = 403
    code = "not_reviewer"


class OwnWork(ReviewError):
    code = "own_work"


class NotSubmitted(ReviewError):
    status = 409
    code = "not_submitted"


class UnderReview(ReviewError):
    status = 409
    code = "under_review"


class AlreadyAccepted(ReviewError):
    status = 409
    code = "already_accepted"


class NotYourReview(ReviewError):
    status = 403
    code = "not_your_review"


class AlreadyDecided(ReviewError):
    status = 409
    code = "already_decided"


class ReviewNotSubmitted(ReviewError):
    status = 409
    code = "review_not_submitted"


class BadReason(ReviewError):
    code = "reason"


class BadDecision(ReviewError):
    code = "decision"


def _open_review_of(post_edit_id: int) -> Assignment | None:
    return (
        Assignment.objects.filter(reviews_id=post_edit_id, review_decision="")
        .exclude(status=Assignment.SKIPPED)
        .first()
    )


@transaction.atomic
def review_assign(*, post_edit: PostEdit, reviewer, now: datetime | None = None) -> Assignment:
    """Give `reviewer` a review of the submitted `post_edit`: an assignment of the same item whose
    post-edit starts from the submitted text. Taking a review one already holds returns it."""
    now = now or timezone.now()
    if not is_reviewer(reviewer):
        raise NotAReviewer(f"reviewer: {reviewer.get_username()} does not hold the reviewer role")
    # The reviewed assignment's row is the lock: two reviewers taking the same post-edit queue here.
    reviewed = Assignment.objects.select_for_update().select_related("item").get(pk=post_edit.assignment_id)
    post_edit = PostEdit.objects.get(pk=post_edit.pk)
    if reviewed.reviews_id is not None:
        raise ReviewError(f"post_edit: {post_edit.pk} is itself a review; a review is not reviewed")
    if post_edit.origin == PostEdit.SIMULATED:
        raise ReviewError(f"post_edit: {post_edit.pk} is an LLM's simulated edit; only people's work is reviewed")
    if reviewed.annotator_id == reviewer.pk:
        raise OwnWork(f"post_edit: {post_edit.pk} is your own post-edit; someone else reviews it")
    if reviewed.status != Assignment.SUBMITTED:
        raise NotSubmitted(
            f"post_edit: {post_edit.pk} is {reviewed.get_status_display()}, not submitted; only submitted work is reviewed"
        )
    if Assignment.objects.first_pass().filter(item_id=reviewed.item_id, annotator=reviewer).exists():
        raise OwnWork(f"post_edit: you edited item {reviewed.item.external_id} yourself; another reviewer reviews it")
    current = _open_review_of(post_edit.pk)
    if current is not None:
        if current.annotator_id == reviewer.pk:
            return current
        raise UnderReview(f"post_edit: {post_edit.pk} is already under review")
    if Assignment.objects.filter(reviews_id=post_edit.pk, review_decision=Assignment.ACCEPTED).exists():
        raise AlreadyAccepted(f"post_edit: {post_edit.pk} was accepted by a review; it is not reviewed again")
    round_number = Assignment.objects.filter(reviews_id=post_edit.pk, review_decision=Assignment.RETURNED).count() + 1
    review = Assignment.objects.create(
        item=reviewed.item,
        annotator=reviewer,
        condition=reviewed.condition,
        reviews=post_edit,
        status=Assignment.PENDING,
    )
    given = {
        "post_edit_id": post_edit.pk,
        "round": round_number,
        "submitted_at": post_edit.submitted_at.isoformat() if post_edit.submitted_at else None,
        **{name: getattr(post_edit, name) for name in SNAPSHOT_FIELDS},
    }
    PostEdit.objects.create(
        assignment=review,
        draft_text=post_edit.text,
        start_override=post_edit.text,
        condition=reviewed.condition,
        extra={"reviewed": given},
    )
    logger.info(
        "review %s of post-edit %s taken by user %s (round %s)", review.pk, post_edit.pk, reviewer.pk, round_number
    )
    return review


def _checked_reason(reason: str, *, required: bool) -> str:
    if not isinstance(reason, str):
        raise BadReason("reason: expected a text")
    reason = reason.strip()
    if required and not reason:
        raise BadReason("reason: say why the post-edit goes back to its annotator")
    if len(reason) > REASON_MAX_CHARS:
        raise BadReason(f"reason: at most {REASON_MAX_CHARS} characters (got {len(reason)})")
    try:
        ensure_text(reason, field="reason")
    except InvalidInput as exc:
        raise BadReason(str(exc)) from None
    return reason


@transaction.atomic
def review_decide(
    *, review: Assignment, reviewer, decision: str, reason: str = "", now: datetime | None = None
) -> Assignment:
    """Accept the reviewed post-edit, or return it to its annotator with a reason (required).

    Returned: the annotator's assignment is in progress again, their text and log as they were; they
    continue in the editor, which shows the reason, and submit anew (effort over every visit)."""
    now = now or timezone.now()
    review = Assignment.objects.select_for_update().get(pk=review.pk)
    if review.reviews_id is None:
        raise ReviewError(f"review: assignment {review.pk} is not a review")
    if review.annotator_id != reviewer.pk:
        raise NotYourReview(f"review: review {review.pk} is someone else's; only its reviewer decides it")
    if review.review_decision:
        raise AlreadyDecided(f"review: review {review.pk} is already decided ({review.review_decision})")
    if review.status == Assignment.SKIPPED:
        raise ReviewNotSubmitted(f"review: review {review.pk} was skipped; take the post-edit again from the queue")
    if review.status != Assignment.SUBMITTED:
        raise ReviewNotSubmitted(f"review: submit your edit in review {review.pk} before deciding")
    if decision not in DECISIONS:
        raise BadDecision(f"decision: choose {' or '.join(DECISIONS)} (got {str(decision)[:40]!r})")
    reason = _checked_reason(reason, required=decision == Assignment.RETURNED)
    reviewed = Assignment.objects.select_for_update().get(post_edit__pk=review.reviews_id)
    if reviewed.status != Assignment.SUBMITTED:
        raise NotSubmitted(
            f"post_edit: {review.reviews_id} is {reviewed.get_status_display()} now, not submitted; it cannot be decided"
        )
    review.review_decision = decision
    review.review_reason = reason
    review.review_decided_at = now
    review.save(update_fields=["review_decision", "review_reason", "review_decided_at"])
    if decision == Assignment.RETURNED:
        reviewed.status = Assignment.IN_PROGRESS
        reviewed.finished = None
        reviewed.save(update_fields=["status", "finished"])
        # The annotator goes on from their submitted text (an imported post-edit may have no draft).
        post_edit = PostEdit.objects.select_for_update().get(pk=review.reviews_id)
        if post_edit.draft_text != post_edit.text:
            post_edit.draft_text = post_edit.text
            post_edit.version += 1
            post_edit.save(update_fields=["draft_text", "version", "updated"])
    logger.info("review %s of post-edit %s: %s by user %s", review.pk, review.reviews_id, decision, reviewer.pk)
    return review
