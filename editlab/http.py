"""The request types views are annotated with: Django's HttpRequest plus what editlab's middleware
and decorators guarantee (mypy cannot see either on a plain HttpRequest)."""

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """Every request: django-htmx's HtmxMiddleware (settings.MIDDLEWARE) sets `htmx`."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """A request that reached a @login_required view: `user` is a stored account, never anonymous."""

    user: User
