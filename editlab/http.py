"""The request types views are annotated with: Django's HttpRequest plus what editlab's middleware
and decorators guarantee (mypy cannot see either on a plain HttpRequest); and the one rule of pages
that htmx also fetches in part.

A URL that htmx requests (hx-get, hx-post, hx-push-url, a poll) answers a fragment only to htmx's
own swap; loaded directly, reloaded, or restored from history (Back, `HX-History-Restore-Request`)
it answers the whole page. `Vary: HX-Request` keeps the browser's cache from serving the fragment
for the page (Back would show a bare fragment otherwise).
"""

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """Every request: django-htmx's HtmxMiddleware (settings.MIDDLEWARE) sets `htmx`."""

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """A request that reached a @login_required view: `user` is a stored account, never anonymous."""

    user: User


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """Whether htmx asked for a part of the page to swap in: an htmx request that is not restoring history."""
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.history_restore_request


def vary_on_htmx(response: HttpResponse) -> HttpResponse:
    """Mark an answer that depends on whether htmx asked (the fragment or the page)."""
    patch_vary_headers(response, ("HX-Request",))
    return response


def render_page(
    request: HtmxHttpRequest,
    template: str,
    fragment: str,
    context: dict[str, Any],
    *,
    status: int = 200,
) -> HttpResponse:
    """The whole page `template`, or only `fragment` when htmx swaps it in (wants_fragment)."""
    chosen = fragment if wants_fragment(request) else template
    return vary_on_htmx(render(request, chosen, context, status=status))
