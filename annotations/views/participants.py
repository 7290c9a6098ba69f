"""Crowd participants' pages: the participation link (/join/<token>/), the completion page, and the
project's Participants page for admins (researchers read it).

The link's GET only shows a welcome page (link previews and prefetchers create nothing) or sends a
participant already logged in in this browser back to its work; the Start button (a POST with
CSRF) makes or resumes the participant. Every refusal is a page saying what happened, with its
status: 400 (the ids), 404 (no such link), 409 (full), 410 (closed), 429 (too many starts), 503
(the project cannot give work yet).
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.crowd_forms import AttentionCheckForm, QuestionnaireForm
from annotations.editing.navigation import next_url_for
from annotations.manage_forms import JoinLinkForm
from annotations.models import AttentionCheck, Item, JoinLink, Participant, Project, Questionnaire
from annotations.roles import is_admin
from annotations.selectors_crowd import export_rows, quality_summaries
from annotations.selectors_participants import participant_of, project_join_links, project_participants
from annotations.services.erasure import participant_log_erase
from annotations.services.join_links import (
    IDLE_MINUTES_DEFAULT,
    completion_redirect,
    failed_redirect,
    join_link_by_token,
    join_link_open,
    join_link_revoke,
    join_params,
    platform_ids,
    platform_key,
)
from annotations.services.participant_design import participant_design
from annotations.services.participants import (
    RETURN_NOTE,
    JoinRefused,
    completion_shortfall,
    join_refusal,
    participant_complete,
    participant_start,
    participant_status,
    released_message,
    with_last_activity,
)
from annotations.services.participants_checks import attention_check_set
from annotations.services.questionnaires import phase_due, questionnaire_initial, questionnaire_set
from annotations.views.manage import admins, readers
from editlab.client_address import client_address
from editlab.refusals import attempt
from metrics.views.downloads import csv_response

JOIN_TEMPLATE = "annotations/join.html"
PROBLEM_TEMPLATE = "annotations/join_problem.html"

TITLES = {
    400: "This study link is incomplete",
    404: "No such study link",
    409: "This study is full",
    410: "This study is closed",
    429: "Please wait a moment",
    503: "This study is not ready yet",
}


RELEASED = "Your place in this study was released"


def _problem(
    request: HttpRequest, status: int, message: str, *, retry_after_s: int = 0, title: str | None = None
) -> HttpResponse:
    context = {"title": title or TITLES[status], "message": message}
    response = render(request, PROBLEM_TEMPLATE, context, status=status)
    if retry_after_s:
        response["Retry-After"] = str(retry_after_s)
    return response


# --------------------------------------------------------------------------- the participation link


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    link = join_link_by_token(token)
    if link is None:
        return _problem(
            request,
            404,
            "This study link does not exist. Check that the whole address was copied, or open the study again "
            "from the page of the platform you came from.",
        )
    if request.method == "POST":
        return _start(request, link)
    names = join_params(link.params or None)
    mine = participant_of(user=request.user)
    given = request.GET.getlist(names["participant"])
    same_id = len(given) == 1 and mine is not None and platform_key(given[0].strip()) == mine.platform_key
    if mine is not None and mine.project_id == link.project_id and (not given or same_id):
        return redirect(next_url_for(request.user))  # back to its work, in the browser it joined from
    found = attempt(platform_ids, join_link=link, query=dict(request.GET.lists()))
    if not found:
        return _problem(request, 400, str(found.refusal))
    ids = found.value
    returning = Participant.objects.filter(
        project_id=link.project_id, platform_key=platform_key(ids.participant)
    ).first()
    if returning is not None and returning.outcome == Participant.IDLE:
        return _problem(request, 410, released_message(returning), title=RELEASED)
    if returning is None:
        refusal = join_refusal(join_link=link)
        if refusal is not None:
            return _problem(request, refusal.status, str(refusal))
    context = {
        "link": link,
        "project": link.project,
        "ids": ids,
        "returning": returning,
        # Someone else is logged in in this browser (another participant, a researcher trying the link).
        "other_account": request.user if request.user.is_authenticated else None,
    }
    return render(request, JOIN_TEMPLATE, context)


def _start(request: HttpRequest, link: JoinLink) -> HttpResponse:
    found = attempt(platform_ids, join_link=link, query=dict(request.GET.lists()))
    if not found:
        return _problem(request, 400, str(found.refusal))
    ids = found.value
    for _ in range(3):
        try:
            started = attempt(participant_start, join_link=link, ids=ids, address=client_address(request))
        except IntegrityError:
            # Two Starts at once took the same slot or id; the constraint kept one. Again: the id
            # now resumes, or the next free slot is taken.
            continue
        if isinstance(refused := started.refusal, JoinRefused):
            title = RELEASED if refused.code == "released" else None
            return _problem(request, refused.status, str(refused), retry_after_s=refused.retry_after_s, title=title)
        if refused is not None:
            raise refused
        result = started.value
        break
    else:
        return _problem(request, 503, "Many people are joining right now. Please press Start again in a moment.")
    login(request, result.participant.user, backend=settings.AUTHENTICATION_BACKENDS[0])
    return redirect(next_url_for(result.participant.user))


@never_cache
@login_required
@require_GET
def participant_done(request: HttpRequest) -> HttpResponse:
    """A participant's completion page: the completion code, or off to the completion URL; without
    the code (too many items skipped, or the slot released as idle), why, and the way back to the
    platform (return the study)."""
    participant = participant_of(user=request.user)
    if participant is None:
        raise Http404("Only a study's participants have a completion page.")
    if not participant_complete(participant=participant):
        return redirect(next_url_for(request.user))
    participant.refresh_from_db()
    if participant.outcome == Participant.DECLINED:
        return redirect("study-form", project_id=participant.project_id, phase="declined")
    if participant.outcome in (Participant.CODE, Participant.FAILED):
        due = phase_due(project=participant.project, user=request.user, stage="end")
        if due:  # the post questionnaire before the code
            return redirect("study-form", project_id=participant.project_id, phase=due)
    if participant.outcome == Participant.FAILED:
        return _failed_page(request, participant)
    if participant.outcome != Participant.CODE:
        if participant.outcome == Participant.IDLE:
            title, message = RELEASED, released_message(participant)
        else:
            title, message = "No completion code", completion_shortfall(participant) or ""
        return render(request, "annotations/participant_no_code.html", {"title": title, "message": message})
    url = completion_redirect(participant.join_link)
    if url:
        return HttpResponseRedirect(url)
    code = participant.join_link.completion_code if participant.join_link is not None else ""
    return render(request, "annotations/participant_done.html", {"participant": participant, "code": code})


FAILED_MESSAGE = (
    "Some of the study's items were attention checks, and your answers to them did not pass, so this study's "
    "completion code is not for you."
)


def _failed_page(request: HttpRequest, participant: Participant) -> HttpResponse:
    """A participant who failed the attention checks: the platform's failed code (or its URL), never the
    completion code; without either, why, and the way back to the platform."""
    url = failed_redirect(participant.join_link)
    if url:
        return HttpResponseRedirect(url)
    code = participant.join_link.failed_code if participant.join_link is not None else ""
    if code:
        context = {"participant": participant, "code": code, "failed": True, "message": FAILED_MESSAGE}
        return render(request, "annotations/participant_done.html", context)
    context = {"title": "Attention checks not passed", "message": f"{FAILED_MESSAGE} {RETURN_NOTE}"}
    return render(request, "annotations/participant_no_code.html", context)


# --------------------------------------------------------------------------- the project's Participants page


def _render_participation(
    request: HttpRequest,
    project: Project,
    *,
    form: JoinLinkForm | None = None,
    questionnaire_form: QuestionnaireForm | None = None,
    check_form: AttentionCheckForm | None = None,
    status: int = 200,
) -> HttpResponse:
    links = list(project_join_links(project=project))
    for link in links:
        link.url = request.build_absolute_uri(link.path())
    designed = attempt(participant_design, project=project)
    design, design_error = designed.value, str(designed.refusal or "")
    now = timezone.now()
    participants = with_last_activity(project_participants(project=project))
    summaries = quality_summaries(project=project, participants=participants)
    for participant in participants:
        participant.status = participant_status(participant, now=now)
        participant.quality = summaries[participant.pk]
    questionnaire = Questionnaire.objects.filter(project=project).first()
    context = {
        "project": project,
        "open_link": next((link for link in links if link.is_open), None),
        "closed_links": [link for link in links if not link.is_open],
        "participants": participants,
        "design": design,
        "design_error": design_error,
        "form": form or JoinLinkForm(),
        "can_change": is_admin(request.user),
        "questionnaire": questionnaire,
        "questionnaire_form": questionnaire_form or QuestionnaireForm(initial=questionnaire_initial(questionnaire)),
        "check_form": check_form or AttentionCheckForm(),
        "checks": AttentionCheck.objects.filter(item__project=project)
        .select_related("item")
        .order_by("item__position"),
    }
    return render(request, "annotations/manage_participation.html", context, status=status)


@login_required
@require_GET
@readers
def participation_page(request: HttpRequest, project_id: int) -> HttpResponse:
    return _render_participation(request, get_object_or_404(Project, pk=project_id))


@login_required
@require_POST
@admins
def participation_open(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    form = JoinLinkForm(request.POST)
    if not form.is_valid():
        return _render_participation(request, project, form=form, status=400)
    data = form.cleaned_data
    form.submit(
        join_link_open,
        project=project,
        completion_code=data["completion_code"],
        completion_url=data["completion_url"],
        max_participants=data["max_participants"],
        max_skips=data["max_skips"] if data["max_skips"] is not None else 0,
        idle_minutes=data["idle_minutes"] if data["idle_minutes"] is not None else IDLE_MINUTES_DEFAULT,
        failed_code=data["failed_code"],
        failed_url=data["failed_url"],
        max_failed_checks=data["max_failed_checks"] or 0,
        params={
            "participant": data["participant_param"],
            "study": data["study_param"],
            "session": data["session_param"],
        },
    )
    if form.refusal is not None:
        return _render_participation(request, project, form=form, status=400)
    messages.success(request, "Opened a participation link: paste its address into the platform's study page.")
    return redirect("manage-participation", project_id=project.pk)


@login_required
@require_POST
@admins
def participation_revoke(request: HttpRequest, project_id: int, link_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    link = get_object_or_404(JoinLink, pk=link_id, project=project)
    join_link_revoke(join_link=link)
    messages.success(request, "Revoked the participation link: nobody new can join through it.")
    return redirect("manage-participation", project_id=project.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@admins
def participant_erase(request: HttpRequest, project_id: int, participant_id: int) -> HttpResponse:
    """GET: what erasing deletes, and the button; POST: erase (annotations/services/erasure.py)."""
    project = get_object_or_404(Project, pk=project_id)
    participant = get_object_or_404(Participant.objects.select_related("user"), pk=participant_id, project=project)
    if request.method != "POST":
        return render(request, "annotations/participant_erase.html", {"project": project, "participant": participant})
    erased = participant_log_erase(project=project, participant=participant)
    messages.success(
        request,
        f"Erased the log and texts of participant {participant.platform_id}: {erased.post_edits} post-edits, "
        f"{erased.events} events, {erased.visits} page loads; {erased.assignments_closed} assignments closed.",
    )
    return redirect("manage-participation", project_id=project.pk)


# --------------------------------------------------------------------------- crowd quality control


@login_required
@require_POST
@admins
def participation_questionnaire(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's consent text and questionnaires (annotations/services/questionnaires.py)."""
    project = get_object_or_404(Project, pk=project_id)
    form = QuestionnaireForm(request.POST)
    if not form.is_valid():
        return _render_participation(request, project, questionnaire_form=form, status=400)
    data = form.cleaned_data
    form.submit(
        questionnaire_set,
        project=project,
        consent=data["consent"],
        pre=data["pre"],
        post=data["post"],
        for_lab=data["for_lab"],
    )
    if form.refusal is not None:
        return _render_participation(request, project, questionnaire_form=form, status=400)
    messages.success(request, "Saved the consent text and questionnaires.")
    return redirect("manage-participation", project_id=project.pk)


@login_required
@require_POST
@admins
def participation_attention(request: HttpRequest, project_id: int) -> HttpResponse:
    """Marks an item of the project as an attention check, or unmarks it."""
    project = get_object_or_404(Project, pk=project_id)
    form = AttentionCheckForm(request.POST)
    if not form.is_valid():
        return _render_participation(request, project, check_form=form, status=400)
    data = form.cleaned_data
    item = Item.objects.filter(project=project, external_id=data["external_id"]).first()
    if item is None:
        form.add_error("external_id", "no item of this project has this id")
        return _render_participation(request, project, check_form=form, status=400)
    form.submit(
        attention_check_set,
        item=item,
        kind=data["kind"],
        planted=data["planted"],
        gold=data["gold"],
        max_distance=data["max_distance"] or 0,
    )
    if form.refusal is not None:
        return _render_participation(request, project, check_form=form, status=400)
    done = "no longer an attention check" if data["kind"] == "none" else "an attention check"
    messages.success(request, f"Item {item.external_id} is {done}.")
    return redirect("manage-participation", project_id=project.pk)


@login_required
@require_GET
@readers
def participation_export(request: HttpRequest, project_id: int) -> HttpResponse:
    """The participants as CSV: ids, outcome, counts, quality summary and questionnaire answers."""
    project = get_object_or_404(Project, pk=project_id)
    columns, rows = export_rows(project=project, participants=project_participants(project=project))
    return csv_response(rows, f"participants-{project.pk}", columns=columns)
