from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotations.roles import can_read_all, is_annotator

LOGIN_WINDOW_S = 60


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """A landing page whose links depend on the user's role (templates/home.html).

    Annotators have one place to go: their batches.
    """
    if is_annotator(request.user) and not can_read_all(request.user):
        return redirect("annotator_home")
    return render(request, "home.html")


def _attempt_keys(request: HttpRequest) -> list[str]:
    username = request.POST.get("username", "").strip().lower()[:150]
    address = request.META.get("REMOTE_ADDR", "")
    return [f"login-user:{username}", f"login-addr:{address}"]


def _too_many_attempts(keys: list[str]) -> bool:
    limit = settings.EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE
    return any((cache.get(key) or 0) >= limit for key in keys)


def _count_failure(keys: list[str]) -> None:
    for key in keys:
        if cache.add(key, 1, LOGIN_WINDOW_S):
            continue
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, LOGIN_WINDOW_S)


class LoginView(auth_views.LoginView):
    """Django's login, with failed attempts limited per username and per client address."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        keys = _attempt_keys(request)
        if _too_many_attempts(keys):
            form = self.get_form()
            form.errors.clear()
            response = self.render_to_response(
                self.get_context_data(
                    form=form,
                    rate_limited=f"Too many failed login attempts. Wait {LOGIN_WINDOW_S} seconds and try again.",
                )
            )
            response.status_code = 429
            return response
        response = super().post(request, *args, **kwargs)
        if not request.user.is_authenticated:
            _count_failure(keys)
        return response
