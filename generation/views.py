"""The Generation page of a project: start a run (outputs of a system, or a scenario's synthetic edits),
see the runs with their progress, stop one; admins set whether researchers may run synthetic edits.

Admins and researchers read the page (annotators 403, anonymous visitors to the login page). Admins
start and stop any run; researchers start and stop simulations when the project allows it
(generation.control). The runs' table is the fragment htmx polls while a run is going (the page's own
URL, `request.htmx`); loaded directly the URL renders the whole page.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods, require_POST

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, is_admin, is_researcher, role_required
from editlab.http import AuthenticatedHttpRequest, render_page
from generation import jobs
from generation.control import (
    generation_permission_check,
    generation_policy_set,
    generation_run_stop,
    generation_start_requested,
    may_run,
    researchers_simulate,
    shipped_templates,
)
from generation.forms import PolicyForm, RunStartForm
from generation.models import GenerationRun
from generation.selectors import RUNS_SHOWN, runs_with_progress

readers = role_required(ADMIN, RESEARCHER, message="Only admins and researchers may see a project's generation runs.")
admins = role_required(ADMIN, message="Only admins may change who runs synthetic edits.")


def _context(request: AuthenticatedHttpRequest, project: Project, form: RunStartForm | None = None) -> dict:
    runs = list(runs_with_progress(project)[:RUNS_SHOWN])
    simulate = researchers_simulate(project)
    can_start = is_admin(request.user) or (is_researcher(request.user) and simulate)
    return {
        "project": project,
        "runs": runs,
        "going": any(run.status in GenerationRun.GOING for run in runs),
        "form": form or RunStartForm(),
        "can_start": can_start,
        "can_generate": is_admin(request.user),
        "stoppable": {
            run.pk for run in runs if run.status in GenerationRun.GOING and may_run(request.user, project, run.kind)
        },
        "policy_form": PolicyForm(initial={"researchers_simulate": simulate}),
        "researchers_simulate": simulate,
        "shipped": list(shipped_templates()),
        "uses_workers": jobs.fans_out(),
    }


def _page(request: AuthenticatedHttpRequest, project: Project, form: RunStartForm | None = None, status: int = 200):
    return render_page(
        request,
        "generation/generation.html",
        "generation/partials/runs.html",
        _context(request, project, form),
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
@readers
def generation_page(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    if request.method == "GET":
        return _page(request, project)
    kind = request.POST.get("kind", GenerationRun.SIMULATION)
    generation_permission_check(
        user=request.user, project=project, kind=kind if kind == GenerationRun.SIMULATION else GenerationRun.OUTPUT
    )
    form = RunStartForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, project, form, status=400)
    started = form.submit(generation_start_requested, project=project, user=request.user, **form.start_settings())
    if form.refusal is not None:
        return _page(request, project, form, status=form.refusal.status)
    run = started.value
    messages.success(request, f"Run #{run.pk} ({run.get_kind_display()} {run.name!r}): {run.status}.")
    return redirect("generation-page", project_id=project.pk)


@login_required
@require_POST
@readers
def run_stop(request: AuthenticatedHttpRequest, project_id: int, run_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    run = get_object_or_404(GenerationRun, pk=run_id, project=project)
    run = generation_run_stop(run=run, user=request.user)
    messages.success(request, f"Run #{run.pk} stopped after {run.done} of {run.total} items; start it again to resume.")
    return redirect("generation-page", project_id=project.pk)


@login_required
@require_POST
@admins
def policy_set(request: AuthenticatedHttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    form = PolicyForm(request.POST)
    form.is_valid()  # a checkbox: absent is off
    policy = generation_policy_set(
        project=project, researchers_simulate=form.cleaned_data.get("researchers_simulate", False), user=request.user
    )
    state = "may" if policy.researchers_simulate else "may not"
    messages.success(request, f"Researchers {state} run synthetic edits on {project.name}.")
    return redirect("generation-page", project_id=project.pk)
