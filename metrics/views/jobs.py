"""Researcher pages: metric coverage and computing values as a background job (exports: exports.py).

Admins and researchers use these pages; anonymous users go to the login page and
annotators get 403. Researchers change nothing in the annotation data, but computing
metric values (derived, recomputable data) is their job, so they may start and retry
jobs here.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from editlab.http import HtmxHttpRequest, render_page
from editlab.refusals import attempt
from metrics import text as text_metrics
from metrics.jobs import jobs_fan_out, metric_job_create, metric_job_retry
from metrics.models import MetricJob
from metrics.selectors import VARIANTS, projects_with_submitted
from metrics.selectors_coverage import metric_coverage
from metrics.selectors_jobs import job_activity

RECENT_JOBS = 10


readers = role_required(
    ADMIN, RESEARCHER, message="Only researchers and admins may see metric values and compute them."
)


def _job(project_id: int, job_id: int) -> MetricJob:
    project = get_object_or_404(Project, pk=project_id)
    return get_object_or_404(MetricJob.objects.select_related("project", "created_by"), pk=job_id, project=project)


def _metric_choices() -> list[dict]:
    return [
        {
            "name": metric.name,
            "family": metric.family,
            "direction": metric.direction,
            "available": metric.available(),
            "reason": metric.unavailable_reason() or "",
            "in_suite": metric.name in text_metrics.EFFORT_SUITE,
        }
        for metric in text_metrics.METRICS.values()
    ]


@login_required
@require_GET
@readers
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "metrics/projects.html", {"projects": projects_with_submitted()})


@login_required
@require_GET
@readers
def project_metrics(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    post_edits, coverage = metric_coverage(project=project)
    rows = [
        {"metric": name, "cells": [coverage[(name, variant)] for variant in VARIANTS]}
        for name in dict.fromkeys(name for name, _ in coverage)
    ]
    return render(
        request,
        "metrics/project_metrics.html",
        {
            "project": project,
            "post_edits": post_edits,
            "variants": VARIANTS,
            "rows": rows,
            "metrics": _metric_choices(),
            "jobs": project.metric_jobs.select_related("created_by")[:RECENT_JOBS],
            "formats": ["csv", "jsonl", "parquet"],
            "event_formats": ["csv", "jsonl", "parquet", "idfx", "critt-kd"],
        },
    )


@login_required
@require_POST
@readers
def compute(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    metrics = request.POST.getlist("metrics")
    variants = request.POST.getlist("variants") or list(VARIANTS)
    created = attempt(metric_job_create, project=project, user=request.user, metrics=metrics or None, variants=variants)
    if not created:
        messages.error(request, str(created.refusal))
        return redirect("metrics-project", project_id=project.pk)
    job = created.value
    # With the in-process backend the job has already finished here; the job page shows either state.
    return redirect("metrics-job", project_id=project.pk, job_id=job.pk)


def duration(seconds: float) -> str:
    """45 s, 3 min 5 s, 2 h 7 min: how long a job has been waiting."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def job_progress(done: int, in_flight: int, total: int) -> dict[str, int]:
    """What the progress bar shows: the stored values and those scored in running chunks (written while a
    chunk runs, so a job of one chunk moves too), and that share in whole percent (never 100 before done)."""
    value = min(done + in_flight, total)
    percent = 100 * value // total if total else 0
    return {"value": value, "percent": percent}


@login_required
@require_GET
@readers
def job_page(request: HtmxHttpRequest, project_id: int, job_id: int) -> HttpResponse:
    job = _job(project_id, job_id)
    activity = job_activity(job)
    context = {
        "project": job.project,
        "job": job,
        "activity": activity,
        "progress": job_progress(job.done, activity.in_flight, job.total),
        "waited": duration(activity.waiting_s) if activity.waiting_s is not None else "",
        "uses_workers": jobs_fan_out(),
        "chunk_size": settings.EDITLAB_METRIC_CHUNK_SIZE,
        "stale_s": settings.EDITLAB_WORKER_STALE_S,
    }
    return render_page(request, "metrics/job.html", "metrics/partials/job_progress.html", context)


@login_required
@require_POST
@readers
def job_retry(request: HttpRequest, project_id: int, job_id: int) -> HttpResponse:
    job = _job(project_id, job_id)
    retried = attempt(metric_job_retry, job=job)
    if not retried:
        messages.error(request, str(retried.refusal))
    return redirect("metrics-job", project_id=job.project_id, job_id=job.pk)
