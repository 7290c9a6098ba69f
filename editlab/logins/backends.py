from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from editlab.client_address import client_address
from editlab.logins.services import login_attempt_begin, login_attempt_succeeded


class LimitedModelBackend(ModelBackend):
    """Django's username/password check behind the login limiter.

    Every password login made for an HTTP request goes through `authenticate(request, ...)` —
    the app's login page, the admin site's, DRF's token view — so limiting here limits them all.
    A refused attempt leaves its reason on the request (`request.login_refusal`) for the page
    to show, and raises PermissionDenied so that no other backend is asked.
    """

    def authenticate(self, request: HttpRequest | None, username=None, password=None, **kwargs):
        if request is None:  # not an HTTP request (the test client's login(), scripts)
            return super().authenticate(request, username=username, password=password, **kwargs)
        if username is None:
            username = kwargs.get(self._username_field())
        attempt = login_attempt_begin(username=username, address=client_address(request))
        if attempt.refused:
            request.login_refusal = attempt
            raise PermissionDenied(attempt.message())
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            login_attempt_succeeded(attempt=attempt)
        return user

    def _username_field(self) -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD
