"""Reads about reviews: a reviewer's queue, the notice the editor and the annotator's home show
(a review under way, or work returned with its reason), one review with what its page shows.

Blind by construction: a reviewer who is not an admin or researcher is shown no annotator's name,
and no post-edit of an item they hold themselves (they would see another condition's text)."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Q

from annotations.models import Assignment, PostEdit
from annotations.roles import can_read_all

QUEUE_LIMIT = 200
_UNDECIDED = Q(review_decision="") & ~Q(status=Assignment.SKIPPED)


@dataclass(frozen=True)
class QueueRow:
    post_edit_id: int
    project: str
    external_id: str
    submitted_at: datetime | None
    round: int  # 1 for a first review; 2 after one return, ...
    annotator: str  # "" when the viewer may not see names


@dataclass(frozen=True)
class MyReview:
    assignment_id: int
    project: str
    external_id: str
    status: str  # the review's assignment: pending, in_progress, submitted
    round: int

    @property
    def to_decide(self) -> bool:
        return self.status == Assignment.SUBMITTED


@dataclass(frozen=True)
class ReviewQueue:
    mine: list[MyReview]
    available: list[QueueRow]
    more: bool  # more post-edits wait than the page lists


def reviewable(*, user):
    """The submitted post-edits `user` may take a review of: people's first-pass work, not their own
    nor of an item they hold, not accepted, not under review; practice items left out."""
    under_review = Assignment.objects.filter(_UNDECIDED, reviews=OuterRef("pk"))
    accepted = Assignment.objects.filter(reviews=OuterRef("pk"), review_decision=Assignment.ACCEPTED)
    held = Assignment.objects.first_pass().filter(annotator=user).values("item_id")
    return (
        PostEdit.objects.completed()
        .first_pass()
        .human()
        .filter(assignment__item__practice=False)
        .exclude(assignment__annotator=user)
        .exclude(assignment__item_id__in=held)
        .exclude(Exists(under_review))
        .exclude(Exists(accepted))
    )


def review_queue(*, user, limit: int = QUEUE_LIMIT) -> ReviewQueue:
    """The reviewer's reviews to finish or decide, then the post-edits waiting for a review (oldest
    submission first), `limit` at most."""
    mine_rows = (
        Assignment.objects.reviews()
        .filter(_UNDECIDED, annotator=user)
        .select_related("item__project")
        .annotate(returned=Count("reviews__reviews", filter=Q(reviews__reviews__review_decision=Assignment.RETURNED)))
        .order_by("created", "id")
    )
    mine = [MyReview(a.pk, a.item.project.name, a.item.external_id, a.status, a.returned + 1) for a in mine_rows]
    names = can_read_all(user)
    rows = list(
        reviewable(user=user)
        .annotate(returned=Count("reviews", filter=Q(reviews__review_decision=Assignment.RETURNED)))
        .order_by("submitted_at", "id")
        .values_list(
            "id",
            "assignment__item__project__name",
            "assignment__item__external_id",
            "submitted_at",
            "returned",
            "assignment__annotator__username",
        )[: limit + 1]
    )
    available = [
        QueueRow(pk, project, external_id, submitted, returned + 1, annotator if names else "")
        for pk, project, external_id, submitted, returned, annotator in rows[:limit]
    ]
    return ReviewQueue(mine=mine, available=available, more=len(rows) > limit)


@dataclass(frozen=True)
class Notice:
    kind: str  # "review": the page edits a review; "returned": the work came back with `reason`
    reason: str = ""
    decided_at: datetime | None = None
    round: int = 1


def returned_review(*, post_edit_id: int) -> Assignment | None:
    """The latest decided review of the post-edit when it returned it (else None)."""
    latest = (
        Assignment.objects.filter(reviews_id=post_edit_id)
        .exclude(review_decision="")
        .order_by("-review_decided_at", "-id")
        .first()
    )
    return latest if latest is not None and latest.review_decision == Assignment.RETURNED else None


def editor_notice(*, assignment: Assignment, post_edit: PostEdit) -> Notice | None:
    """What the editor says above the text: that it edits a review, or why the work came back."""
    if assignment.reviews_id is not None:
        given = post_edit.extra.get("reviewed", {}) if isinstance(post_edit.extra, dict) else {}
        return Notice(kind="review", round=int(given.get("round", 1)))
    if not assignment.is_open:
        return None
    returned = returned_review(post_edit_id=post_edit.pk)
    if returned is None:
        return None
    return Notice(kind="returned", reason=returned.review_reason, decided_at=returned.review_decided_at)


@dataclass(frozen=True)
class ReturnedRow:
    assignment_id: int
    project: str
    external_id: str
    reason: str
    decided_at: datetime | None


def returned_work(*, user) -> list[ReturnedRow]:
    """The user's open assignments that a review returned, with the latest return's reason."""
    latest_return = Assignment.objects.filter(reviews__assignment=OuterRef("pk"), review_decision=Assignment.RETURNED)
    assignments = (
        Assignment.objects.open_for(user).filter(Exists(latest_return)).select_related("item__project", "post_edit")
    )
    rows = []
    for assignment in assignments:
        returned = returned_review(post_edit_id=assignment.post_edit.pk)
        if returned is not None:
            rows.append(
                ReturnedRow(
                    assignment.pk,
                    assignment.item.project.name,
                    assignment.item.external_id,
                    returned.review_reason,
                    returned.review_decided_at,
                )
            )
    return rows


def review_of(*, assignment_id: int, user) -> Assignment | None:
    """The review with `assignment_id` as its page shows it: the reviewer's own, or any for admins and
    researchers (who read it, and decide nothing); else None."""
    reviews = Assignment.objects.reviews().select_related(
        "item__project", "post_edit", "reviews__assignment__annotator"
    )
    if not can_read_all(user):
        reviews = reviews.filter(annotator=user)
    return reviews.filter(pk=assignment_id).first()
