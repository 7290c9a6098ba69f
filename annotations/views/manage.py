"""Admin pages: projects, batches and assignment, progress.

Admins see and change everything; researchers see the same pages read-only (any POST
answers 403); annotators get 403; anonymous users go to the login page.
"""

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.manage_forms import (
    CONDITIONS_PREFIX,
    AssignForm,
    LatinSquareForm,
    MakeBatchesForm,
    MoveForm,
    ProjectForm,
    condition_formset,
    conditions_from_formset,
)
from annotations.models import Assignment, Project
from annotations.roles import ADMIN, RESEARCHER, is_admin, role_required
from annotations.selectors import batch_rows
from annotations.selectors_conditions import study_settings
from annotations.selectors_progress import project_progress
from annotations.services import projects
from annotations.services.assignment import assignment_reassign, assignment_withdraw, batch_assign
from annotations.services.batches import batch_make
from annotations.services.studies import DesignResult, study_assign_latin_square
from editlab.http import HtmxHttpRequest, render_page, wants_fragment
from editlab.refusals import Refusal, attempt

# Every project is visible to admins and researchers, and to nobody else here.
readers = role_required(ADMIN, RESEARCHER, message="Only admins and researchers may see this page.")
admins = role_required(ADMIN, message="Only admins may change projects, batches and assignments.")


@login_required
@require_GET
@readers
def project_list(request: HttpRequest) -> HttpResponse:
    projects = Project.objects.annotate(
        item_count=Count("items", distinct=True),
        batch_count=Count("batches", distinct=True),
    ).order_by("name")
    submitted = dict(
        Assignment.objects.values_list("item__project_id")
        .annotate(n=Count("id", filter=Q(status=Assignment.SUBMITTED)))
        .values_list("item__project_id", "n")
    )
    assigned = dict(
        Assignment.objects.values_list("item__project_id").annotate(n=Count("id")).values_list("item__project_id", "n")
    )
    rows = [(project, assigned.get(project.pk, 0), submitted.get(project.pk, 0)) for project in projects]
    return render(request, "annotations/manage_projects.html", {"rows": rows, "can_change": is_admin(request.user)})


ADD_ROW = "add_condition"  # the conditions table's "Add a condition" button: nothing is saved
CONDITION_FIELD = re.compile(r"^conditions\[(\d+)\]\.(name|output|highlights): (.+)$", re.S)


def _save_project(form: ProjectForm, project: Project | None, conditions: list[dict] | None) -> Project:
    data = form.cleaned_data
    upload = data.get("instructions_file")
    fields = {
        "name": data["name"],
        "guidelines": data["guidelines"],
        "task_type": data["task_type"],
        "idle_threshold_s": data["idle_threshold_s"],
        "overlap": data["overlap"],
    }
    # A study field the POST does not carry is kept (a form posted by a script, or before the field existed).
    for name in ProjectForm.STUDY_FIELDS:
        if name in form.data and data.get(name) not in (None, ""):
            fields[name] = data[name]
        elif name in ("source_lang", "target_lang") and name in form.data:
            fields[name] = ""  # emptied on purpose: the language is unknown
    if conditions is not None:
        fields["conditions"] = conditions
    if upload is not None:
        fields["instructions_file"] = upload.read()
        fields["instructions_filename"] = upload.name
    else:
        fields["instructions"] = data["instructions"].splitlines()
    if project is None:
        return projects.project_create(**fields)
    return projects.project_update(project=project, **fields)


def _show_refusal(exc: Refusal, form: ProjectForm, formset, rows: list[int]) -> str:
    """Put the refusal beside the field it names; returns a message about the conditions as a whole, if any."""
    message = str(exc)
    match = CONDITION_FIELD.match(message)
    if match and int(match.group(1)) < len(rows):
        formset.forms[rows[int(match.group(1))]].add_error(match.group(2), match.group(3))
        return ""
    field, _, rest = message.partition(": ")
    if field.startswith("conditions"):
        return message
    if field in form.fields:
        form.add_error(field, rest)
    elif form.cleaned_data.get("instructions_file"):  # the message names the uploaded file
        form.add_error("instructions_file", message)
    else:
        form.add_error(None, message)
    return ""


def _project_form_page(request: HttpRequest, project: Project | None) -> HttpResponse:
    conditions_error = ""
    if request.method == "POST":
        form = ProjectForm(request.POST, request.FILES)
        # Without the rows' management data the POST says nothing about conditions: they are kept.
        posted_conditions = f"{CONDITIONS_PREFIX}-TOTAL_FORMS" in request.POST
        formset = condition_formset(request.POST) if posted_conditions else condition_formset(project=project)
        formset_ok = formset.is_valid() if posted_conditions else True
        if ADD_ROW in request.POST and posted_conditions:  # "Add a condition": the form again, one row more
            formset = condition_formset(request.POST, more_rows=1)
        elif form.is_valid() and formset_ok:
            conditions, rows = conditions_from_formset(formset) if posted_conditions else (None, [])
            outcome = attempt(_save_project, form=form, project=project, conditions=conditions)
            if outcome.refusal is not None:
                conditions_error = _show_refusal(outcome.refusal, form, formset, rows)
            else:
                saved = outcome.value
                verb = "Created" if project is None else "Saved"
                warnings = study_settings(project=saved).warnings if conditions else []
                if warnings:  # saved, yet not ready: never a plain green "Saved"
                    messages.warning(request, f"{verb} project {saved.name!r}, but: " + " ".join(warnings))
                else:
                    messages.success(request, f"{verb} project {saved.name!r}.")
                return redirect("manage-project-edit", project_id=saved.pk)
    else:
        form = ProjectForm(initial=ProjectForm.initial_for(project) if project else None)
        formset = condition_formset(project=project)
    context = {
        "form": form,
        "conditions_formset": formset,
        "conditions_error": conditions_error,
        "project": project,
        "study": study_settings(project=project) if project else None,
        "can_change": is_admin(request.user),
    }
    return render(request, "annotations/manage_project_form.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@admins
def project_create(request: HttpRequest) -> HttpResponse:
    return _project_form_page(request, None)


@login_required
@require_http_methods(["GET", "POST"])
@readers
def project_edit(request: HttpRequest, project_id: int) -> HttpResponse:
    """A project's Settings: admins change them, researchers read them (their POST answers 403)."""
    if request.method == "POST":
        return _project_edit_save(request, project_id)
    return _project_form_page(request, get_object_or_404(Project, pk=project_id))


@admins
def _project_edit_save(request: HttpRequest, project_id: int) -> HttpResponse:
    return _project_form_page(request, get_object_or_404(Project, pk=project_id))


@login_required
@require_GET
@readers
def batches_page(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    return _render_batches(request, project)


def _render_batches(
    request: HttpRequest,
    project: Project,
    *,
    make_form: MakeBatchesForm | None = None,
    assign_form: AssignForm | None = None,
    move_form: MoveForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "project": project,
        "batch_rows": batch_rows(project=project),
        "unbatched": project.items.unbatched().count(),
        "can_change": is_admin(request.user),
        "make_form": make_form or MakeBatchesForm(),
        "assign_form": assign_form or AssignForm(project=project),
        "move_form": move_form or MoveForm(project=project),
    }
    return render(request, "annotations/manage_batches.html", context, status=status)


@login_required
@require_POST
@admins
def batches_make(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    form = MakeBatchesForm(request.POST)
    if not form.is_valid():
        return _render_batches(request, project, make_form=form, status=400)
    made = form.submit(
        batch_make, project=project, size=form.cleaned_data["size"], shuffle_seed=form.cleaned_data["shuffle_seed"]
    )
    if not made:
        return _render_batches(request, project, make_form=form, status=400)
    batches = made.value
    if batches:
        messages.success(request, f"Made {len(batches)} batches ({batches[0].name} … {batches[-1].name}).")
    else:
        messages.info(request, "No unbatched items: no batch made.")
    return redirect("manage-batches", project_id=project.pk)


@login_required
@require_POST
@admins
def batches_assign(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    form = AssignForm(request.POST, project=project)
    if not form.is_valid():
        return _render_batches(request, project, assign_form=form, status=400)
    assigned = form.submit(
        batch_assign,
        project=project,
        annotators=list(form.cleaned_data["annotators"]),
        overlap=form.cleaned_data["overlap"],
        batches=list(form.cleaned_data["batches"]) or None,
    )
    if not assigned:
        return _render_batches(request, project, assign_form=form, status=400)
    result = assigned.value
    loads = ", ".join(f"{name} +{count}" for name, count in result.per_annotator.items())
    messages.success(
        request,
        f"Created {result.created} assignments ({loads}); skipped {result.skipped_full_items} items "
        f"that already had {form.cleaned_data['overlap']} annotators.",
    )
    return redirect("manage-batches", project_id=project.pk)


@login_required
@require_POST
@admins
def assignments_move(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    form = MoveForm(request.POST, project=project)
    if not form.is_valid():
        return _render_batches(request, project, move_form=form, status=400)
    data = form.cleaned_data
    assignments = Assignment.objects.filter(item__project=project, annotator=data["from_annotator"])
    if data["batches"]:
        assignments = assignments.filter(item__batch__in=data["batches"])
    if data["action"] == MoveForm.WITHDRAW:
        moved = form.submit(assignment_withdraw, assignments=assignments, force=data["force"])
    else:
        moved = form.submit(
            assignment_reassign, assignments=assignments, to_annotator=data["to_annotator"], force=data["force"]
        )
    if not moved:
        return _render_batches(request, project, move_form=form, status=400)
    result = moved.value
    if data["action"] == MoveForm.WITHDRAW:
        done = f"Withdrew {result.withdrawn} assignments of {data['from_annotator'].username}"
    else:
        done = (
            f"Moved {result.reassigned} assignments to {data['to_annotator'].username} "
            f"({result.skipped_already_assigned} left where they were: the target already had those items)"
        )
    messages.success(
        request,
        f"{done}; kept {result.kept_submitted} submitted/skipped and {result.kept_in_progress} in progress.",
    )
    return redirect("manage-batches", project_id=project.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@readers
def design_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Assign with a Latin square: choose annotators and conditions, see the plan (nothing is
    written), then confirm it (design_apply). htmx swaps in only the plan.

    The form posts its choices (a ticked annotator is a field: hundreds of them do not fit in a URL);
    a POST here writes nothing, so researchers may send it too. A short GET query (a link) works as well."""
    project = get_object_or_404(Project, pk=project_id)
    data = request.POST if request.method == "POST" else request.GET
    form = LatinSquareForm(data or None, project=project)
    return _render_design(request, project, form)


@login_required
@require_POST
@admins
def design_apply(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Make the assignments of the plan the page showed (its digest), or show why not and the plan as it is now."""
    project = get_object_or_404(Project, pk=project_id)
    form = LatinSquareForm(request.POST, project=project)
    if not form.is_valid():
        return _render_design(request, project, form, status=400)
    digest = form.cleaned_data["plan_digest"]
    if not digest:
        return _render_design(request, project, form, error="Look at the plan first, then confirm it.", status=400)
    applied = attempt(
        study_assign_latin_square,
        project=project,
        annotators=list(form.cleaned_data["annotators"]),
        conditions=form.cleaned_data["conditions"],
        apply=True,
        expected_digest=digest,
    )
    if not applied:
        return _render_design(request, project, form, error=str(applied.refusal), status=400)
    result = applied.value
    plan = result.plan
    messages.success(
        request,
        f"Created {result.created} assignments: {len(plan.annotators)} annotators x {len(plan.documents)} documents "
        f"x {len(plan.conditions)} conditions ({', '.join(plan.conditions)}), {result.practice_items} practice "
        "item(s) first.",
    )
    return redirect("manage-progress", project_id=project.pk)


def _render_design(
    request: HtmxHttpRequest, project: Project, form: LatinSquareForm, *, error: str = "", status: int = 200
) -> HttpResponse:
    result: DesignResult | None = None
    if form.is_bound and form.is_valid():
        planned = attempt(
            study_assign_latin_square,
            project=project,
            annotators=list(form.cleaned_data["annotators"]),
            conditions=form.cleaned_data["conditions"],
            apply=False,
        )
        result, error = planned.value, error or (str(planned.refusal) if planned.refusal else "")
    context = {
        "project": project,
        "form": form,
        "result": result,
        "error": error,
        "can_change": is_admin(request.user),
        "designs": project.meta.get("designs", []) if isinstance(project.meta, dict) else [],
        "partial": wants_fragment(request),
    }
    return render_page(
        request, "annotations/manage_design.html", "annotations/manage_design_plan.html", context, status=status
    )


@login_required
@require_GET
@readers
def progress_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """The full page, or only the tables when htmx polls (hx-trigger="every 5s")."""
    project = get_object_or_404(Project, pk=project_id)
    context = {"progress": project_progress(project=project), "project": project}
    return render_page(request, "annotations/manage_progress.html", "annotations/manage_progress_tables.html", context)
