"""Where the editor sends the annotator: an item's editor and diff, and the next open item."""

from dataclasses import dataclass

from django.urls import reverse

from annotations.models import Assignment, Participant


@dataclass(frozen=True)
class Navigation:
    next_url: str
    diff_url: str


def editor_url(assignment_id: int) -> str:
    return reverse("editor", args=[assignment_id])


def diff_url(assignment_id: int) -> str:
    return reverse("editor_diff", args=[assignment_id])


def next_url_for(user, *, after: Assignment | None = None) -> str:
    """The next open item's editor (in queue order), or where to go when none is left (finished_url).

    `user` is the annotator or their id (an assignment's annotator_id: loading the user for its id
    would cost a query on every submit and editor page)."""
    open_assignments = Assignment.objects.open_for(user)
    if after is not None:
        open_assignments = open_assignments.exclude(pk=after.pk)
    following = open_assignments.values_list("pk", flat=True).first()
    if following is None:
        return finished_url(user)
    return editor_url(following)


def skipped_url(assignment: Assignment) -> str:
    """Where to go once `assignment` is skipped: the next open item, or for a review the review queue."""
    if assignment.reviews_id is not None:
        return reverse("review-queue")
    return next_url_for(assignment.annotator_id, after=assignment)


def finished_url(user) -> str:
    """Where an annotator with nothing open goes: a crowd participant to its completion page
    (code or completion URL), everyone else to the annotator home."""
    if Participant.objects.filter(user=user).exists():
        return reverse("participant-done")
    return reverse("annotator_home")


def navigation_after(assignment: Assignment) -> Navigation:
    """Where to go once `assignment` is finished: its next open sibling, and its own diff; a review
    goes on to its page, where the reviewer decides."""
    if assignment.reviews_id is not None:
        review_url = reverse("review-page", args=[assignment.pk])
        return Navigation(next_url=review_url, diff_url=review_url)
    return Navigation(
        next_url=next_url_for(assignment.annotator_id, after=assignment), diff_url=diff_url(assignment.pk)
    )
