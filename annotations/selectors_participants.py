"""Reads about crowd participants: a user's participant record, a project's participants and its
join links."""

from django.db.models import Count, Q, QuerySet

from annotations.models import Assignment, Participant, Project


def participant_of(*, user) -> Participant | None:
    """The user's Participant record (a crowd participant's account), or None."""
    if not user.is_authenticated:
        return None
    return Participant.objects.select_related("join_link", "project").filter(user=user).first()


def project_participants(*, project: Project) -> QuerySet:
    """The project's participants by slot, each with its username and counts of its work
    (`assigned`, `submitted`, `skipped`)."""
    work = "user__assignments"
    return (
        project.participants.select_related("user", "join_link")
        .annotate(
            assigned=Count(work, distinct=True),
            submitted=Count(work, filter=Q(**{f"{work}__status": Assignment.SUBMITTED}), distinct=True),
            skipped=Count(work, filter=Q(**{f"{work}__status": Assignment.SKIPPED}), distinct=True),
        )
        .order_by("slot")
    )


def project_join_links(*, project: Project) -> QuerySet:
    """The project's participation links, newest first, each with `participant_count`."""
    return project.join_links.annotate(participant_count=Count("participants")).order_by("-created", "-id")
