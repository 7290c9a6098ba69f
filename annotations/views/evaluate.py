"""The rater's pages of the error-span task: their evaluations, and the task itself.

An evaluation is its rater's alone: anyone else (researchers and admins too, who read evaluations
through the analysis and the MQM export) gets a 404. A submitted evaluation's page shows what was
stored, read-only. Every text is rendered escaped; the task's configuration reaches its module
through json_script.
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotations.design import direction
from annotations.models import Evaluation
from annotations.selectors_evaluations import evaluation_config, evaluation_context, rater_evaluations
from annotations.services.evaluation_task import evaluation_open
from editlab.http import AuthenticatedHttpRequest


@login_required
@require_GET
def evaluation_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's evaluations: open ones first, with links to the task."""
    evaluations = rater_evaluations(user=request.user)
    open_ = [e for e in evaluations if e.status != Evaluation.SUBMITTED]
    done = [e for e in evaluations if e.status == Evaluation.SUBMITTED]
    return render(request, "annotations/evaluations.html", {"open": open_, "done": done})


@login_required
@require_GET
def evaluation_task(request: AuthenticatedHttpRequest, evaluation_id: int) -> HttpResponse:
    """The task page of one of the user's own evaluations (read-only once submitted)."""
    evaluation = get_object_or_404(
        Evaluation.objects.select_related("item__project", "post_edit__assignment"),
        pk=evaluation_id,
        rater=request.user,
        origin="live",
    )
    item = evaluation.item
    project = item.project
    context = {
        "evaluation": evaluation,
        "item": item,
        "project": project,
        "context_segments": evaluation_context(evaluation=evaluation),
        "source_lang": project.source_lang,
        "source_dir": direction(project.source_lang),
        "target_lang": project.target_lang,
        "target_dir": direction(project.target_lang),
    }
    if evaluation.status == Evaluation.SUBMITTED:
        text, source = evaluation.text, item.source
        context["done"] = True
        context["spans"] = [
            (span, "" if span.start is None else (text if span.side == "target" else source)[span.start : span.end])
            for span in evaluation.spans.all()
        ]
        return render(request, "annotations/evaluation.html", context)
    evaluation, page_id, next_seq = evaluation_open(evaluation=evaluation, rater=request.user)
    context["config"] = evaluation_config(
        evaluation=evaluation, page_id=page_id, next_seq=next_seq, csrf_token=get_token(request)
    )
    response = render(request, "annotations/evaluation.html", context)
    response.headers["Cache-Control"] = "no-store"
    return response
