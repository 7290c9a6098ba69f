"""The annotator's pages: their batches, the editor, and the diff of a finished edit.

The editor is the annotator's own: only the assignee opens it (everyone else gets a
404, or for admins and researchers, who read everything and change nothing, the
read-only diff page). Every text an item carries is rendered escaped; the page's
configuration reaches the logger through json_script.
"""

import difflib
import re
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render, resolve_url

from annotations.design import direction
from annotations.editing.errors import PostEditClosed
from annotations.editing.lifecycle import post_edit_open
from annotations.editing.selectors import editor_config
from annotations.models import Assignment, PostEdit
from annotations.references import references_shown
from annotations.roles import can_read_all, is_participant
from annotations.selectors import document_context, start_shown
from annotations.selectors_editor import editor_place
from annotations.selectors_evaluations import evaluations_summary
from annotations.selectors_participants import participant_of
from annotations.selectors_progress import batch_progress
from annotations.selectors_review import editor_notice, returned_work
from annotations.services.questionnaires import post_questionnaires_due
from annotations.views.questionnaires import study_gate
from editlab.http import AuthenticatedHttpRequest, render_page, vary_on_htmx, wants_fragment
from editlab.limits import parse_id
from editlab.refusals import attempt

# Words, single punctuation marks and whitespace runs: joined back they give the text.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


# --------------------------------------------------------------------------- diff


def word_diff(original: str, edited: str) -> list[tuple[str, str]]:
    """Word-level diff as (op, text) segments, op in equal/delete/insert.

    A replaced run gives its deletion first, then its insertion. Joining the equal and
    delete segments gives `original`; joining equal and insert gives `edited`.
    """
    a = _TOKEN.findall(original)
    b = _TOKEN.findall(edited)
    segments: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _append(segments, "equal", "".join(a[i1:i2]))
            continue
        if op in ("delete", "replace"):
            _append(segments, "delete", "".join(a[i1:i2]))
        if op in ("insert", "replace"):
            _append(segments, "insert", "".join(b[j1:j2]))
    return segments


def diff_marks(segments: list[tuple[str, str]]) -> list[tuple[str, str, bool]]:
    """The segments as the diff page shows them: (op, text, apart), apart for an insertion right
    after a deletion (the page leaves a gap between the two, else they read as one word)."""
    return [
        (op, text, op == "insert" and k > 0 and segments[k - 1][0] == "delete") for k, (op, text) in enumerate(segments)
    ]


def _append(segments: list[tuple[str, str]], op: str, text: str) -> None:
    if segments and segments[-1][0] == op:
        segments[-1] = (op, segments[-1][1] + text)
    else:
        segments.append((op, text))


# --------------------------------------------------------------------------- helpers


def _own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    """The request user's own assignment, or 404: the editor is the assignee's alone."""
    return get_object_or_404(
        Assignment.objects.select_related("item__project", "item__batch"),
        pk=assignment_id,
        annotator=request.user,
    )


def _visible_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    """Own assignments for annotators; any for admins and researchers; else 404."""
    return get_object_or_404(
        Assignment.objects.visible_to(request.user).select_related("item__project", "item__batch", "annotator"),
        pk=assignment_id,
    )


def _next_open(user, *, batch_id: int | None = None, exclude: int | None = None) -> Assignment | None:
    queryset = Assignment.objects.open_for(user)
    if batch_id is not None:
        queryset = queryset.filter(item__batch_id=batch_id)
    if exclude is not None:
        queryset = queryset.exclude(pk=exclude)
    return queryset.first()


# --------------------------------------------------------------------------- annotator home


@login_required
def annotator_home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The annotator's batches with progress; `?batch=<id>` lists one batch's items."""
    batches = batch_progress(user=request.user)
    expanded = None
    batch_param = request.GET.get("batch")
    if batch_param:
        batch_id = parse_id(batch_param)
        if batch_id is None:
            raise Http404("batch: expected a batch id (a number)")
        expanded = next((b for b in batches if b.batch_id == batch_id), None)
        if expanded is None:
            raise Http404("No such batch among your assignments.")
        expanded.assignments = list(
            Assignment.objects.first_pass()
            .filter(annotator=request.user, item__batch_id=batch_id)
            .select_related("item")
        )
        if wants_fragment(request):
            return vary_on_htmx(render(request, "annotations/partials/batch_items.html", {"batch": expanded}))
    next_assignment = _next_open(request.user)
    if participant_of(user=request.user) is not None:
        # A crowd participant sees only the study: its next segment, or once done its completion page.
        if next_assignment is None:
            return redirect("participant-done")
        return redirect("editor", assignment_id=next_assignment.pk)
    context = {
        "batches": batches,
        "expanded": expanded,
        "next_assignment": next_assignment,
        "questionnaires_due": post_questionnaires_due(user=request.user),  # docs/quality.md
        "returned": returned_work(user=request.user),
        "evaluations": evaluations_summary(user=request.user),
    }
    return vary_on_htmx(render(request, "annotations/annotator_home.html", context))


# --------------------------------------------------------------------------- editor


@login_required
def editor(request: AuthenticatedHttpRequest, assignment_id: int) -> HttpResponse:
    """The post-editing page of one of the user's own open assignments."""
    try:
        assignment = _own_assignment(request, assignment_id)
    except Http404:
        # Admins and researchers read any edit, but the editor would change it: diff instead.
        if can_read_all(request.user):
            return redirect("editor_diff", assignment_id=_visible_assignment(request, assignment_id).pk)
        raise
    if not assignment.is_open:
        return redirect("editor_diff", assignment_id=assignment.pk)
    gate = study_gate(user=request.user, project=assignment.item.project)
    if gate:  # consent or the pre questionnaire first (annotations/views/questionnaires.py)
        return redirect(gate)
    opened = attempt(post_edit_open, assignment=assignment, user=request.user)
    if isinstance(opened.refusal, PostEditClosed):  # submitted or skipped meanwhile (another tab)
        return redirect("editor_diff", assignment_id=assignment.pk)
    if opened.refusal is not None:
        raise opened.refusal
    post_edit, visit = opened.value
    config = {
        **editor_config(post_edit=post_edit, visit=visit, csrf_token=get_token(request)),
        # The logger sizes its batches to what the server accepts.
        "max_batch_events": settings.EDITLAB_EVENTS_MAX_PER_BATCH,
        "max_batch_bytes": settings.EDITLAB_EVENTS_MAX_BYTES,
        # After a login elsewhere the page's token is stale: the logger reads the new one here.
        "csrf_cookie_name": settings.CSRF_COOKIE_NAME,
    }
    # The expired-session banner's link: log in in a new tab, then back to this item.
    login_again_url = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': request.get_full_path()})}"
    item = assignment.item
    project = item.project
    # Progress: a lab annotator's within the document (or batch); a participant's across the study.
    participant = is_participant(request.user)
    place = editor_place(assignment=assignment, participant=participant)
    # The last edit finished under the same condition only: one made under another shows that
    # condition's output on this page.
    previous = (
        Assignment.objects.filter(
            annotator=request.user,
            status=Assignment.SUBMITTED,
            condition=assignment.condition,
            reviews__isnull=assignment.reviews_id is None,
        )
        .exclude(finished__isnull=True)
        .order_by("-finished")
        .first()
    )
    response = render(
        request,
        "annotations/editor.html",
        {
            "assignment": assignment,
            "item": item,
            "project": project,
            "post_edit": post_edit,
            "context_segments": document_context(assignment=assignment),
            "source_lang": project.source_lang,
            "source_dir": direction(project.source_lang),
            "target_lang": project.target_lang,
            "target_dir": direction(project.target_lang),
            "highlight_labels": sorted({span["label"] for span in config["highlights"] if span["label"]}),
            "references": references_shown(item.references),
            "config": config,
            "place": place,
            "participant": participant,
            # Translating from scratch (an empty start) is not post-editing: the box says so.
            "from_scratch": post_edit.start_text == "",
            "previous": previous,
            "login_again_url": login_again_url,
            "notice": editor_notice(assignment=assignment, post_edit=post_edit),
        },
    )
    # Cross-origin isolation: nothing here is loaded from elsewhere, and it gives the
    # logger a 5 µs clock (100 µs otherwise) for timestamps and its self-measurement.
    response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
    # credentialless, not require-corp: images in the guidelines may come from any web address (they
    # are fetched without cookies) and the page stays isolated in Chromium and Firefox; Safari, which
    # does not know the value, shows the page unisolated (coarser clock), never broken.
    response.headers["Cross-Origin-Embedder-Policy"] = "credentialless"
    response.headers["Cache-Control"] = "no-store"
    return response


# --------------------------------------------------------------------------- diff page


def _effort_rows(post_edit: PostEdit) -> list[tuple[str, str]]:
    def seconds(ms: int | None) -> str:
        return "–" if ms is None else f"{ms / 1000:.1f} s"

    def count(value: int | None) -> str:
        return "–" if value is None else str(value)

    return [
        ("Time (wall)", seconds(post_edit.wall_ms)),
        ("Time (active)", seconds(post_edit.active_ms)),
        ("Keystrokes", count(post_edit.keystrokes)),
        ("All keys", count(post_edit.allkeys)),
    ]


@login_required
def diff(request: AuthenticatedHttpRequest, assignment_id: int) -> HttpResponse:
    """Original vs post-edit (or the current draft), word by word; read-only for everyone."""
    assignment = _visible_assignment(request, assignment_id)
    post_edit = PostEdit.objects.filter(assignment=assignment).first()
    # Before the editor opened it: what the condition will show, nothing it hides (selectors.start_shown).
    original = start_shown(assignment=assignment) if post_edit is None else post_edit.start_text
    submitted = assignment.status == Assignment.SUBMITTED
    if post_edit is None:
        edited = original
    else:
        edited = post_edit.text if submitted else post_edit.draft_text
    context = {
        "effort": _effort_rows(post_edit) if submitted and post_edit is not None else [],
        "assignment": assignment,
        "item": assignment.item,
        "post_edit": post_edit,
        "submitted": submitted,
        "original": original,
        "edited": edited,
        "segments": diff_marks(word_diff(original, edited)),
        "own": assignment.annotator_id == request.user.pk,
        "participant": is_participant(request.user),
        "next_assignment": _next_open(request.user) if assignment.annotator_id == request.user.pk else None,
    }
    return render_page(request, "annotations/diff.html", "annotations/partials/diff_body.html", context)
