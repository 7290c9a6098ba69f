"""A request id on every log line and on every response (X-Request-ID).

The id is taken from the trusted proxy's X-Request-ID when it looks like one (so the proxy's
log and ours can be joined), and made here otherwise. Log records get it as `request_id`
("-" outside a request: commands, the task worker's own lines).
"""

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

from editlab.client_address import from_trusted_proxy

_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_WELL_FORMED = re.compile(r"[A-Za-z0-9._-]{8,64}")


def current_request_id() -> str:
    return _current.get()


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get()
        return True


def _incoming(request: HttpRequest) -> str | None:
    if not from_trusted_proxy(request):
        return None  # only a trusted proxy may name the request
    value = request.META.get("HTTP_X_REQUEST_ID", "")
    return value if _WELL_FORMED.fullmatch(value) else None


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = _incoming(request) or uuid.uuid4().hex[:16]
        # Kept until the response is closed (request_finished): Django logs 4xx/5xx answers only
        # after the middleware has returned.
        _current.set(request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


def _forget(**kwargs: object) -> None:
    _current.set("-")


request_finished.connect(_forget, dispatch_uid="editlab_request_id_forget")
