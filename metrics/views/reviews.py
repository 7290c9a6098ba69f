"""The review summary of a project: each submitted review's effort and the distance between the
annotator's text and the reviewer's (metrics.reviews), with totals. Admins and researchers read it;
annotators get 403, anonymous users the login page."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from metrics.reviews import review_summary

readers = role_required(ADMIN, RESEARCHER, message="Only researchers and admins may see a project's reviews.")


@login_required
@require_GET
@readers
def review_summary_page(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    return render(request, "metrics/reviews.html", {"project": project, "summary": review_summary(project=project)})
