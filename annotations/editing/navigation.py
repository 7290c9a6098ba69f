"""Where the editor sends the annotator: an item's editor and diff, and the next open item."""

from dataclasses import dataclass

from django.urls import reverse

from annotations.models import Assignment


@dataclass(frozen=True)
class Navigation:
    next_url: str
    diff_url: str


def editor_url(assignment_id: int) -> str:
    return reverse("editor", args=[assignment_id])


def diff_url(assignment_id: int) -> str:
    return reverse("editor_diff", args=[assignment_id])


def next_url_for(user, *, after: Assignment | None = None) -> str:
    """The next open item's editor (in batch order), or the annotator home when none is left."""
    open_assignments = Assignment.objects.open_for(user)
    if after is not None:
        open_assignments = open_assignments.exclude(pk=after.pk)
    following = open_assignments.values_list("pk", flat=True).first()
    if following is None:
        return reverse("annotator_home")
    return editor_url(following)


def navigation_after(assignment: Assignment) -> Navigation:
    """Where to go once `assignment` is finished: its next open sibling, and its own diff."""
    return Navigation(next_url=next_url_for(assignment.annotator, after=assignment), diff_url=diff_url(assignment.pk))
