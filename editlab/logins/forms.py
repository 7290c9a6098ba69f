from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError


class _LimitedMixin:
    """Shows the limiter's refusal (with the true wait) instead of "wrong password"."""

    request: object

    def get_invalid_login_error(self) -> ValidationError:
        refusal = getattr(self.request, "login_refusal", None)
        if refusal is not None:
            return ValidationError(refusal.message(), code="rate_limited")
        return super().get_invalid_login_error()  # type: ignore[misc]


class LimitedAuthenticationForm(_LimitedMixin, AuthenticationForm):
    pass


class LimitedAdminAuthenticationForm(_LimitedMixin, AdminAuthenticationForm):
    pass
