from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from editlab.logins.backends import login_refusal


class LimitedAuthenticationForm(AuthenticationForm):
    """Shows the limiter's refusal (with the true wait) instead of "wrong password"."""

    def get_invalid_login_error(self) -> ValidationError:
        refusal = login_refusal(self.request)
        if refusal is not None:
            return ValidationError(refusal.message(), code="rate_limited")
        return super().get_invalid_login_error()


class LimitedAdminAuthenticationForm(LimitedAuthenticationForm, AdminAuthenticationForm):
    """The admin site's login form (staff only), with the same message."""
