from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotations.roles import can_read_all, is_annotator
from editlab.logins.forms import LimitedAuthenticationForm


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
    refusal = getattr(request, "login_refusal", None)
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
