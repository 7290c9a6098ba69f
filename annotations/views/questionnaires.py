"""The study's own pages around the items (/study/<project>/<phase>/): consent before the first item,
the pre questionnaire after it, the post questionnaire after the last item, and the page of someone
who declined (annotations/services/questionnaires.py decides who is asked what, and when).

The editor sends anyone with a phase due here (study_gate); the completion page sends a participant
here for the post questionnaire before its code. A phase that is not due answers with a redirect to
where the person should be; someone the project asks nothing gets 404.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotations.editing.navigation import next_url_for
from annotations.models import Assignment, Participant, Project, Questionnaire, QuestionnaireAnswer
from annotations.services.errors import ServiceError
from annotations.services.participants import RETURN_NOTE
from annotations.services.questionnaires import (
    Question,
    asked,
    consent_give,
    phase_due,
    questionnaire_answer,
    questions_of,
)
from editlab.http import AuthenticatedHttpRequest
from editlab.refusals import attempt

TEMPLATE = "annotations/study_form.html"
PHASES = ("consent", "pre", "post", "declined")
TITLES = {
    "consent": "Before you start: consent",
    "pre": "Before you start: a few questions",
    "post": "Before you finish: a few questions",
    "declined": "You did not consent",
}


def study_gate(*, user, project: Project) -> str | None:
    """Where someone about to open an item of `project` must go first (consent, pre questionnaire,
    the declined page), or None."""
    due = phase_due(project=project, user=user, stage="start")
    return reverse("study-form", args=[project.pk, due]) if due else None


def _rows(questions: list[Question], values: dict[str, str]) -> list[dict]:
    """Each question with the value given (after a refusal) and, for choices and scales, its options."""
    rows = []
    for question in questions:
        value = values.get(question.id, "")
        options = question.choices if question.type == "choice" else [str(n) for n in question.scale_values]
        choices = [(option, option == value) for option in options] if question.type != "text" else []
        rows.append({"q": question, "value": value, "options": choices})
    return rows


def _stage(user, project: Project) -> str:
    open_work = Assignment.objects.open_for(user).filter(item__project=project).exists()
    return "start" if open_work else "end"


def _onward(request: HttpRequest, project: Project) -> HttpResponse:
    """After a phase: the next phase due, or the work (a participant's completion page at the end)."""
    due = phase_due(project=project, user=request.user, stage=_stage(request.user, project))
    if due:
        return redirect("study-form", project_id=project.pk, phase=due)
    return redirect(next_url_for(request.user))


@never_cache
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_form(request: AuthenticatedHttpRequest, project_id: int, phase: str) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    questionnaire = Questionnaire.objects.filter(project=project).first()
    mine = Assignment.objects.filter(annotator=request.user, item__project=project).exists()
    if phase not in PHASES or not mine or not asked(project=project, user=request.user, questionnaire=questionnaire):
        raise Http404("This study asks you nothing here.")
    assert questionnaire is not None
    due = phase_due(project=project, user=request.user, stage=_stage(request.user, project))
    if phase != due:
        return _onward(request, project)
    participant = Participant.objects.filter(user=request.user, project=project).exists()
    questions = questions_of(questionnaire, phase) if phase in ("pre", "post") else []
    context = {
        "project": project,
        "phase": phase,
        "title": TITLES[phase],
        "questionnaire": questionnaire,
        "rows": _rows(questions, {}),
        "error": "",
        "return_note": RETURN_NOTE if participant else "",
    }
    if phase == "declined" or request.method != "POST":
        return render(request, TEMPLATE, context)
    answered = attempt(_answer, request=request, project=project, phase=phase, questions=questions)
    if not answered:
        context["error"] = str(answered.refusal)
        context["rows"] = _rows(questions, {q.id: request.POST.get(q.id, "") for q in questions})
        return render(request, TEMPLATE, context, status=400)
    return _onward(request, project)


def _answer(*, request: HttpRequest, project: Project, phase: str, questions: list[Question]) -> None:
    """Store the consent or the questionnaire's answers the POST carries."""
    if phase == QuestionnaireAnswer.CONSENT:
        choice = request.POST.get("consent")
        if choice not in ("agree", "decline"):
            raise ServiceError("consent: choose I agree or I do not agree")
        consent_give(project=project, user=request.user, agree=choice == "agree")
    else:
        answers = {q.id: request.POST.getlist(q.id) for q in questions}
        questionnaire_answer(project=project, user=request.user, phase=phase, answers=answers)
