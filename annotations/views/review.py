"""The reviewer's pages: the review queue, taking a review (then the same editor as post-editing),
and a review's page (the annotator's text against the reviewer's, the decision: accept, or return
with a reason).

Reviewers (the reviewer group) and admins use them; researchers read a review's page (they decide
nothing); everyone else gets 403, anonymous visitors the login page.
"""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.models import Assignment, PostEdit
from annotations.roles import can_read_all, is_reviewer
from annotations.selectors_review import review_of, review_queue
from annotations.services.review import REASON_MAX_CHARS, review_assign, review_decide
from annotations.views.editor import diff_marks, word_diff
from editlab.http import AuthenticatedHttpRequest, render_page
from editlab.refusals import attempt


def reviewers_only(view: Callable) -> Callable:
    @wraps(view)
    def gated(request: HttpRequest, *args, **kwargs):
        if not is_reviewer(request.user):
            raise PermissionDenied("Only reviewers and admins may review post-edits.")
        return view(request, *args, **kwargs)

    return gated


@login_required
@require_GET
@reviewers_only
def queue_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The reviews the user has under way, then the submitted post-edits waiting for a review."""
    context = {"queue": review_queue(user=request.user), "names": can_read_all(request.user)}
    return render_page(request, "annotations/review_queue.html", "annotations/partials/review_queue_body.html", context)


@login_required
@require_POST
@reviewers_only
def take(request: AuthenticatedHttpRequest, post_edit_id: int) -> HttpResponse:
    """Take a review of the post-edit (or the one already held): to the editor."""
    post_edit = get_object_or_404(PostEdit, pk=post_edit_id)
    review = review_assign(post_edit=post_edit, reviewer=request.user)
    return redirect("editor", assignment_id=review.pk)


def _effort_rows(post_edit: PostEdit | None) -> list[tuple[str, str]]:
    if post_edit is None or post_edit.wall_ms is None:
        return []
    return [
        ("Review time (wall)", f"{post_edit.wall_ms / 1000:.1f} s"),
        ("Review time (active)", "–" if post_edit.active_ms is None else f"{post_edit.active_ms / 1000:.1f} s"),
        ("Keystrokes", "–" if post_edit.keystrokes is None else str(post_edit.keystrokes)),
    ]


@login_required
@require_http_methods(["GET", "POST"])
def review_page(request: AuthenticatedHttpRequest, assignment_id: int) -> HttpResponse:
    """One review: the annotator's text against the reviewer's, and its decision. The reviewer
    POSTs the decision (decision=accepted|returned, reason)."""
    if not (is_reviewer(request.user) or can_read_all(request.user)):
        raise PermissionDenied("Only reviewers, admins and researchers may see reviews.")
    review = review_of(assignment_id=assignment_id, user=request.user)
    if review is None:
        raise Http404("No such review among yours.")
    own = review.annotator_id == request.user.pk
    problem, status = "", 200
    decision = request.POST.get("decision", "") if request.method == "POST" else ""
    reason = request.POST.get("reason", "") if request.method == "POST" else ""
    if request.method == "POST":
        if not own:
            raise PermissionDenied("Only the review's reviewer decides it.")
        decided = attempt(review_decide, review=review, reviewer=request.user, decision=decision, reason=reason)
        if decided.refusal is None:
            return redirect("review-page", assignment_id=review.pk)
        problem, status = str(decided.refusal), decided.refusal.status  # the page again, the reason as typed
        review = review_of(assignment_id=assignment_id, user=request.user)
        assert review is not None
    post_edit = getattr(review, "post_edit", None)
    original = post_edit.start_text if post_edit is not None else ""
    submitted = review.status == Assignment.SUBMITTED
    edited = "" if post_edit is None else (post_edit.text if submitted else post_edit.draft_text)
    reviewed = review.reviews
    assert reviewed is not None  # review_of reads reviews only
    context = {
        "review": review,
        "item": review.item,
        "own": own,
        "original": original,
        "edited": edited,
        "submitted": submitted,
        "segments": diff_marks(word_diff(original, edited)),
        "effort": _effort_rows(post_edit) if submitted else [],
        "annotator": reviewed.assignment.annotator.get_username() if can_read_all(request.user) else "",
        "round": (post_edit.extra.get("reviewed", {}).get("round", 1) if post_edit is not None else 1),
        "can_decide": own and submitted and not review.review_decision,
        "problem": problem,
        "decision": decision,
        "reason": reason,
        "reason_max": REASON_MAX_CHARS,
    }
    return render_page(
        request, "annotations/review_page.html", "annotations/partials/diff_body.html", context, status=status
    )
