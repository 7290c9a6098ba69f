"""A database that cannot be reached answers 503 with Retry-After on every page, as the API does.

The API's one exception handler (editlab.errors.api_exception_handler) turns OperationalError and
InterfaceError into a 503 JSON answer. Pages get the same through `DatabaseUnavailableMiddleware`
(an error raised by a view or while its template renders) and through the 500 handler
(editlab.views.server_error: an error raised by a middleware, e.g. while the session is read).
The page is rendered without the request: its context processors would query the database.
"""

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 2
UNAVAILABLE = (OperationalError, InterfaceError)


def database_unavailable(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """The 503 answer for a request the database could not serve: JSON under /api/, else a page."""
    logger.warning("%s %s: database unavailable: %s", request.method, request.path, exc)
    message = "The database could not be reached; the request was not completed. Try again in a moment."
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message, "code": "unavailable"}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html", {"message": message}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def unavailable_in_flight() -> BaseException | None:
    """The database error being handled now (inside Django's 500 handling), or None."""
    exc = sys.exc_info()[1]
    return exc if isinstance(exc, UNAVAILABLE) else None


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, UNAVAILABLE):
            return database_unavailable(request, exception)
        return None
