"""Erasing a participant's event log and texts on request (docs/crowd.md, "Erasing a participant's data").

What a participant typed is personal data: the event log (every key, every inserted and deleted
text), the drafts and the submitted texts, and what was derived from those texts (metric values,
the replay's divergence context). `participant_log_erase` deletes all of it for one participant of
one project, in one transaction:

- the participant's post-edits in the project are deleted, and with them (by cascade) their events,
  their visits (page loads) and their metric values;
- the participant's assignments stay, closed as skipped with the reason and the date, so that
  progress, the participant's counts and the design's bookkeeping still add up and nothing is
  offered to them again;
- the participant's slot is released (if it was not already), so that a newcomer takes the place
  and the study's design stays complete; the outcome (code earned or not) is kept, as the platform
  may still need it.

The participant row itself (platform id, slot, times) stays: it records that the person took part,
which the platform's payment needs; deleting the account is a separate, ordinary admin action.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from annotations.models import Assignment, EditEvent, Participant, PostEdit, Project, Visit
from annotations.services.errors import ServiceError


@dataclass(frozen=True)
class Erasure:
    """What one erasure deleted."""

    post_edits: int
    events: int
    visits: int
    assignments_closed: int


def erasure_reason(now: datetime) -> str:
    return f"erased on the participant's request on {now:%Y-%m-%d %H:%M} UTC"


@transaction.atomic
def participant_log_erase(*, project: Project, participant: Participant, now: datetime | None = None) -> Erasure:
    """Delete the participant's event log, texts and what was derived from them (see the module)."""
    now = now or timezone.now()
    locked = Participant.objects.select_for_update().filter(pk=participant.pk, project=project).first()
    if locked is None:
        raise ServiceError(f"participant: {participant.platform_id!r} is not a participant of {project.name!r}")
    assignments = Assignment.objects.filter(item__project=project, annotator_id=locked.user_id)
    post_edits = PostEdit.objects.filter(assignment__in=assignments)
    events = EditEvent.objects.filter(post_edit__in=post_edits).count()
    visits = Visit.objects.filter(post_edit__in=post_edits).count()
    deleted = post_edits.count()
    post_edits.delete()
    closed = assignments.update(status=Assignment.SKIPPED, skip_reason=erasure_reason(now), finished=now)
    if locked.released_at is None:
        locked.released_at = now
        locked.save(update_fields=["released_at"])
    return Erasure(post_edits=deleted, events=events, visits=visits, assignments_closed=closed)
