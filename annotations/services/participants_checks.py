"""Attention checks: items marked as checks, and how each participant did on them (the rule is
annotations/attention.py's, documented in docs/quality.md "Attention checks").

- An attention check is an item of the project with a planted error (a span of its model output,
  given as the erroneous text, which must occur exactly once there, or as offsets) or a known gold
  edit (the item's first gold edit unless one is given) with the largest distance that still passes.
- A participant's checks are the attention items in its queue: passed, failed (a skipped check
  fails) or pending (still open). Who fails more than the link's max_failed_checks gets the failed
  code, not the completion code (annotations/services/participants.py).
"""

from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction

from annotations.attention import FAILED, GOLD, PENDING, PLANTED, Check, check_result
from annotations.models import Assignment, AttentionCheck, Item, Participant
from annotations.services.errors import ServiceError

KINDS = (PLANTED, GOLD, "none")
MAX_DISTANCE = 1000
MAX_GOLD = 100_000


@transaction.atomic
def attention_check_set(
    *,
    item: Item,
    kind: str,
    planted: str = "",
    start: int | None = None,
    end: int | None = None,
    gold: object = "",
    max_distance: object = 0,
) -> AttentionCheck | None:
    """Marks the item as an attention check of `kind` (replacing its check), or unmarks it
    (kind "none"); ServiceError naming the field."""
    if kind not in KINDS:
        raise ServiceError(f"kind: {str(kind)[:40]!r} is not one of {', '.join(KINDS)}")
    AttentionCheck.objects.filter(item=item).delete()
    if kind == "none":
        return None
    text = item.model_output
    if kind == PLANTED:
        if planted:
            found = text.count(planted)
            if found != 1:
                where = "does not occur" if found == 0 else f"occurs {found} times"
                raise ServiceError(f"planted: the planted error {where} in the item's model output; it must occur once")
            start = text.index(planted)
            end = start + len(planted)
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
            raise ServiceError("planted: give the planted error's text (as it stands in the model output)")
        if not 0 <= start < end <= len(text):
            raise ServiceError(f"end: the span must lie within the model output (0 to {len(text):,}), start < end")
        return AttentionCheck.objects.create(item=item, kind=kind, start=start, end=end)
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or not 0 <= max_distance <= MAX_DISTANCE:
        raise ServiceError(f"max_distance: a whole number from 0 to {MAX_DISTANCE:,}")
    gold = gold.strip() if isinstance(gold, str) else ""
    if not gold:
        edits = item.gold_edits if isinstance(item.gold_edits, list) else []
        gold = next((g for g in edits if isinstance(g, str) and g.strip()), "")
    if not gold:
        raise ServiceError("gold: give the gold edit (the item has no gold edits)")
    if len(gold) > MAX_GOLD:
        raise ServiceError(f"gold: at most {MAX_GOLD:,} characters (got {len(gold):,})")
    return AttentionCheck.objects.create(item=item, kind=kind, gold=gold, max_distance=max_distance)


def as_check(check: AttentionCheck) -> Check:
    return Check(check.kind, check.start, check.end, check.gold, check.max_distance)


@dataclass
class CheckResults:
    """How one person did on the attention checks of its queue."""

    results: dict[int, str] = field(default_factory=dict)  # assignment id -> passed, failed, pending

    @property
    def counts(self) -> Counter:
        return Counter(self.results.values())

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def failed(self) -> int:
        return self.counts[FAILED]

    @property
    def pending(self) -> int:
        return self.counts[PENDING]

    @property
    def passed(self) -> int:
        return self.total - self.failed - self.pending


def check_results_by_user(*, user_ids: list[int]) -> dict[int, CheckResults]:
    """Each user's attention-check results, read in one query."""
    found: dict[int, CheckResults] = {user_id: CheckResults() for user_id in user_ids}
    rows = (
        Assignment.objects.filter(annotator_id__in=user_ids, item__attention_check__isnull=False)
        .select_related("item__attention_check", "post_edit")
        .order_by("pk")
    )
    for assignment in rows:
        check = assignment.item.attention_check
        if assignment.is_open:
            result = PENDING
        else:
            post_edit = getattr(assignment, "post_edit", None)
            edited = None
            if assignment.status == Assignment.SUBMITTED and post_edit is not None:
                edited = post_edit.text
            result = check_result(as_check(check), original=assignment.item.model_output, edited=edited)
        found[assignment.annotator_id].results[assignment.pk] = result
    return found


def check_results(participant: Participant) -> CheckResults:
    return check_results_by_user(user_ids=[participant.user_id])[participant.user_id]


def failed_checks(participant: Participant) -> bool:
    """Whether the participant failed more attention checks than its link allows."""
    allowed = participant.join_link.max_failed_checks if participant.join_link is not None else 0
    return check_results(participant).failed > allowed
