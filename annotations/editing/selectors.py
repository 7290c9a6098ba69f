"""What the editor reads: the page's JSON (its config, the highlights drawn over the draft) and a
stored post-edit's active time recomputed under other idle thresholds."""

from collections.abc import Sequence

from django.db.models import Max
from django.urls import reverse

from annotations.design import Condition, DesignError
from annotations.editing.clock import bounded_effort, granted_tolerance_ms
from annotations.editing.logs import stored_log
from annotations.editing.navigation import navigation_after
from annotations.highlights import highlight_edits
from annotations.models import PostEdit, Visit
from annotations.replay import replay


def shown_condition(project, name: str) -> Condition | None:
    """The declared condition called `name`, or None (no condition, or one the project no longer declares)."""
    try:
        return project.condition(name)
    except DesignError:
        return None


def next_seq_of(post_edit: PostEdit) -> int:
    top = post_edit.events.aggregate(top=Max("seq"))["top"]
    return 0 if top is None else top + 1


def shown_highlights(post_edit: PostEdit) -> list[dict]:
    """The error spans to draw over the draft (UTF-16 units, as the browser counts), moved along
    with the edits logged so far; none when the condition shows none or the log does not lead
    to the draft (the overlay would be in the wrong place)."""
    if post_edit.assignment.reviews_id is not None:
        return []  # a review starts from a person's text: the output's spans do not lie on it
    item = post_edit.assignment.item
    spans = item.spans_for(shown_condition(item.project, post_edit.condition))
    if not spans:
        return []
    events = stored_log(post_edit)
    if replay(post_edit.start_text, events).text != post_edit.draft_text:
        return []
    return [
        {"start": span["now"][0], "end": span["now"][1], "label": span["label"], "edited": span["edited"]}
        for span in highlight_edits(post_edit.start_text, spans, events)
    ]


def editor_config(*, post_edit: PostEdit, visit: Visit, csrf_token: str) -> dict:
    """The JSON the editor page embeds (json_script id "editor-config")."""
    assignment = post_edit.assignment
    return {
        "post_edit_id": post_edit.pk,
        "page_id": str(visit.page_id),
        "next_seq": next_seq_of(post_edit),
        "version": post_edit.version,
        "original": post_edit.start_text,
        "draft": post_edit.draft_text,
        "idle_threshold_ms": round(assignment.item.project.idle_threshold_ms),
        "urls": {
            "events": reverse("api-post-edit-events", args=[post_edit.pk]),
            "draft": reverse("api-post-edit-draft", args=[post_edit.pk]),
            "submit": reverse("api-post-edit-submit", args=[post_edit.pk]),
            "skip": reverse("api-post-edit-skip", args=[post_edit.pk]),
            "next": navigation_after(assignment).next_url,  # a review: on to its page
        },
        "csrf_token": csrf_token,
        "highlights": shown_highlights(post_edit),
    }


def recomputed_active_ms(post_edit: PostEdit, *, idle_thresholds_ms: Sequence[float]) -> list[float]:
    """The post-edit's active time (ms) under each idle threshold, derived from its stored log with
    the server bound its submit applied (clock.bounded_effort, with the tolerance it was granted).
    The submit also passes the replay's committed compositions; they change key counts only, not
    time."""
    events = stored_log(post_edit)
    visits = list(post_edit.visits.all())
    tolerance_ms = granted_tolerance_ms(post_edit)
    return [
        float(
            bounded_effort(events, visits=visits, tolerance_ms=tolerance_ms, idle_threshold_ms=threshold)[0].active_ms
        )
        for threshold in idle_thresholds_ms
    ]
