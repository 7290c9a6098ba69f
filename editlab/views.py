import logging

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles.storage import staticfiles_storage
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotations.roles import can_read_all, is_annotator
from editlab.logins.backends import login_refusal
from editlab.logins.forms import LimitedAuthenticationForm
from editlab.request_id import current_request_id
from editlab.unavailable import database_unavailable, unavailable_in_flight
from metrics.jobs import jobs_fan_out
from metrics.selectors_jobs import worker_status

logger = logging.getLogger(__name__)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """A landing page whose links depend on the user's role (templates/home.html).

    Annotators have one place to go: their batches.
    """
    if is_annotator(request.user) and not can_read_all(request.user):
        return redirect("annotator_home")
    return render(request, "home.html")


def _refused(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """A login the limiter refused answers 429 with Retry-After: the page says the same wait."""
    refusal = login_refusal(request)
    if refusal is not None:
        response.status_code = 429
        response["Retry-After"] = str(refusal.retry_after_s)
    return response


class LoginView(auth_views.LoginView):
    """Django's login behind the login limiter (editlab.logins)."""

    form_class = LimitedAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        return _refused(self.request, super().form_invalid(form))


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin site's login: the same limiter, the same 429."""
    return _refused(request, admin.site.login(request))


# --------------------------------------------------------------------------- health and errors


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        logger.exception("healthz: the database is not reachable")
        return False


def _static_ok() -> bool:
    """In production the pages name static files through collectstatic's manifest: without it
    every page would fail, so its absence is a failed health check."""
    storage = staticfiles_storage
    if not hasattr(storage, "manifest_name"):
        return True  # development: files are served from the source folders
    return storage.exists(storage.manifest_name)


def _worker_status() -> str:
    """Whether metric jobs have a worker: `in-process` when the app process runs them (thread, immediate
    backends); with db_worker processes, from their heartbeats (metrics.workers): `alive` when at least one
    beat within EDITLAB_WORKER_STALE_S, `stale` when none did but one that never stopped cleanly is still
    registered (killed, hung, or cut off from the database), `none` when no worker runs. A job makes no
    progress unless it is `alive`; the app itself still serves, so this never fails the check."""
    if not jobs_fan_out():
        return "in-process"
    try:
        workers = worker_status()
    except DatabaseError:  # the database check says so already
        return "unknown"
    if any(worker.alive for worker in workers):
        return "alive"
    return "stale" if workers else "none"


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """For the process manager and the proxy: 200 when the app can serve, 503 when it cannot.
    Open to anyone and says nothing but ok/failing per part (no versions, hosts or errors)."""
    checks = {"database": "ok" if _database_ok() else "failing", "static": "ok" if _static_ok() else "failing"}
    healthy = all(value == "ok" for value in checks.values())
    body = {"status": "ok" if healthy else "failing", **checks, "worker": _worker_status()}
    return JsonResponse(body, status=200 if healthy else 503)


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 page names the request id that the log line with the traceback carries; a database
    that cannot be reached (raised in a middleware, e.g. reading the session) is a 503 instead."""
    down = unavailable_in_flight()
    if down is not None:
        return database_unavailable(request, down)
    return HttpResponseServerError(render_to_string("500.html", {"request_id": current_request_id()}))
