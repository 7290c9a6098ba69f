"""The admin page that copies a project's items into a new project (annotations.services.copying),
e.g. to re-run an imported finished study with live annotators. Admins only: researchers and
annotators get 403, anonymous users the login page."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotations.models import Assignment, PostEdit, Project
from annotations.roles import ADMIN, role_required
from annotations.services.copying import NAME_MAX, project_copy_items
from editlab.forms import RefusalForm


class CopyProjectForm(RefusalForm):
    name = forms.CharField(max_length=NAME_MAX, label="New project's name")
    include_practice = forms.BooleanField(
        required=False, initial=True, label="Copy the practice items too", help_text="They come first for everyone."
    )


@login_required
@require_http_methods(["GET", "POST"])
@role_required(ADMIN, message="Only admins may copy projects.")
def project_copy(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    status = 200
    if request.method == "POST":
        form = CopyProjectForm(request.POST)
        if form.is_valid():
            copied = form.submit(
                project_copy_items,
                source=project,
                target_name=form.cleaned_data["name"],
                include_practice=form.cleaned_data["include_practice"],
            )
            if copied:
                result = copied.value
                messages.success(
                    request,
                    f"Copied {result.items} items from {project.name!r} into {result.project.name!r} "
                    "(no post-edits): cut them into batches and assign them.",
                )
                return redirect("manage-batches", project_id=result.project.pk)
        status = 400
    else:
        form = CopyProjectForm(initial={"name": f"{project.name} (live)"[:NAME_MAX], "include_practice": True})
    imported = PostEdit.objects.filter(assignment__item__project=project, origin=PostEdit.IMPORTED).count()
    context = {
        "project": project,
        "form": form,
        "items": project.items.count(),
        "practice_items": project.items.filter(practice=True).count(),
        "documents": project.items.exclude(document="").values("document").distinct().count(),
        "imported_post_edits": imported,
        "live_assignments": Assignment.objects.live().filter(item__project=project).count(),
    }
    return render(request, "annotations/manage_project_copy.html", context, status=status)
