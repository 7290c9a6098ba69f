"""Error answers that say what went wrong, in one shape for the whole API.

Every API error is `{"detail": "<message for a person>", "code": "<machine code>"}` plus the keys
of its operation: `errors` (each invalid field's messages), `next_seq`, `server_text`,
`server_version`. `api_exception_handler` is DRF's one EXCEPTION_HANDLER: a `Refusal`
(editlab.refusals) answers its `body()` at its `status`, DRF's own errors in the same shape;
`bad_request` is
Django's handler400 for requests refused before any view runs (a body over
DATA_UPLOAD_MAX_MEMORY_SIZE, too many fields or files), as a page or, under /api/, as JSON;
`not_found` and `permission_denied` (handler404, handler403) show a page's refusal with the message
the code gave it and the way back.
"""

import html
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from editlab.api import too_large_message
from editlab.refusals import Refusal

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------- before any view (handler400)


def bad_request_message(exception: Exception | None) -> tuple[str, str]:
    """(message, code) for a request Django refused before the view."""
    if isinstance(exception, RequestDataTooBig):
        return too_large_message(None, settings.DATA_UPLOAD_MAX_MEMORY_SIZE), "too_large"
    if isinstance(exception, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return f"The request has more than {limit:,} fields (DATA_UPLOAD_MAX_NUMBER_FIELDS).", "too_many_fields"
    if isinstance(exception, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return f"The request has more than {limit:,} files (DATA_UPLOAD_MAX_NUMBER_FILES).", "too_many_files"
    # Anything else (a bad Host header, a malformed multipart body): no internals in the answer.
    return "The request is malformed and was not processed.", "bad_request"


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message, code = bad_request_message(exception)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "code": code}, status=400)
    # Rendered without the request: the middleware that fills it may not have run.
    return HttpResponseBadRequest(render_to_string("400.html", {"message": message}))


# --------------------------------------------------------------------------- refused pages (handler403, handler404)


_PAGES = {403: "403.html", 404: "404.html"}  # any other status: the 400 page, which shows the message


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's handler404: under /api/ (a URL no endpoint has, e.g. an id that is no number) in the API's
    shape; a page otherwise, with the message the code gave (`Http404("No such batch ...")`)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "No such URL in the API.", "code": "not_found"}, status=404)
    return error_page(request, 404, exception_message(exception))


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's handler403: the page says who may (`PermissionDenied("Only admins may import items.")`)."""
    return error_page(request, 403, exception_message(exception))


def exception_message(exception: Exception | None) -> str:
    """The message a view gave its Http404 or PermissionDenied; empty when it gave none (or, as the
    URL resolver's 404 does, something that is not a message)."""
    if exception is None or not exception.args or not isinstance(exception.args[0], str):
        return ""
    return exception.args[0]


def error_page(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """The page of a refused request: its message, the site's navigation, and the way back."""
    context = {"message": message, "back_url": _same_site_referer(request)}
    return HttpResponse(render_to_string(_PAGES.get(status, "400.html"), context, request=request), status=status)


def _same_site_referer(request: HttpRequest) -> str:
    """The page the visitor came from, when it is a page of this site (never a link off it)."""
    referer = request.headers.get("Referer", "")
    try:
        host = request.get_host()
    except DisallowedHost:
        return ""
    if referer and url_has_allowed_host_and_scheme(referer, {host}, request.is_secure()):
        return referer
    return ""


# --------------------------------------------------------------------------- a refusal raised by a page's view


class RefusalMiddleware:
    """A `Refusal` a page's view raises: a page with its message at its status (under /api/, the
    API's shape). API views answer theirs in `api_exception_handler` before it gets here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, Refusal):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse(exception.body(), status=exception.status)
        # Escaped for the element's text it is (quotes stay readable: the message quotes names).
        message = mark_safe(html.escape(str(exception), quote=False))  # noqa: S308
        return error_page(request, exception.status, message)


# --------------------------------------------------------------------------- the API's one exception handler


def first_error(errors: Any) -> str:
    """One readable line from a serializer's errors: 'field: message', nested fields as `items[1].external_id`."""
    path, message = _first(errors)
    return f"{path}: {message}" if path else message


def _first(errors: Any) -> tuple[str, str]:
    if isinstance(errors, dict) and errors:
        name, value = next(iter(errors.items()))
        path, message = _first(value)
        if name in ("non_field_errors", "detail"):
            return path, message
        return _join(f"[{name}]" if isinstance(name, int) else str(name), path), message
    if isinstance(errors, list) and errors:
        if not any(isinstance(error, dict | list) for error in errors):
            return "", str(errors[0])
        index, found = next(((n, error) for n, error in enumerate(errors) if error), (0, errors[0]))
        path, message = _first(found)
        return _join(f"[{index}]", path), message
    return "", str(errors)


def _join(outer: str, inner: str) -> str:
    if not outer or not inner:
        return outer or inner
    return outer + (inner if inner.startswith("[") else f".{inner}")


def _invalid(detail: Any) -> dict:
    """A DRF ValidationError's detail as the shape's body: `detail` one line, `errors` by field."""
    if isinstance(detail, dict) and set(detail) == {"detail"}:  # raised as {"detail": message}: not a field
        return {"detail": first_error(detail["detail"]), "code": "invalid"}
    body: dict[str, Any] = {"detail": first_error(detail), "code": "invalid"}
    body["errors"] = detail if isinstance(detail, dict) else {"non_field_errors": detail}
    return body


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, with every answer in the shape {"detail", "code", ...}.

    A database that cannot be reached (connection dropped, server restarting) answers 503, not a
    500 page: the services are atomic, so nothing of the request stays half-stored, and a client
    (the editor's logger) sends it again. The view may add why that is safe (`retry_note`).
    """
    if isinstance(exc, Refusal):
        return Response(exc.body(), status=exc.status)
    if isinstance(exc, OperationalError | InterfaceError):
        request = context.get("request")
        logger.warning("API %s: database unavailable: %s", getattr(request, "path", "?"), exc)
        note = getattr(context.get("view"), "retry_note", "")
        return Response(
            {
                "detail": f"The database could not be reached; the request was not completed. Send it again{note}.",
                "code": "unavailable",
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    if isinstance(exc, Http404):  # as DRF's own handler converts them, so that the code is DRF's too
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = _invalid(response.data)
        return response
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else None
    if not isinstance(code, str):
        code = getattr(exc, "default_code", "error")
    message = str(detail)
    if code == "permission_denied" and message.startswith("CSRF Failed"):
        code = "csrf_failed"
    response.data = {"detail": message, "code": code}
    return response


# --------------------------------------------------------------------------- the shape, for the OpenAPI schema


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, for a person; names the field or limit.")
    code = serializers.CharField(
        help_text="What went wrong, for a program: invalid, parse_error, too_large, too_deep, not_authenticated, "
        "csrf_failed, permission_denied, not_found, conflict, closed, seq_conflict, unknown_page, unavailable, ..."
    )
    # The serializer's metaclass moves declared fields into _declared_fields, so this field does not
    # hide Serializer.errors at run time; the stubs see a class attribute replacing the property.
    errors = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="Invalid input: each field's messages, by field name (as the input nests them)."
    )


class ConflictErrorSerializer(ErrorSerializer):
    server_text = serializers.CharField(required=False, help_text="code conflict: the text another tab saved.")
    server_version = serializers.IntegerField(required=False, help_text="code conflict: its version.")
    next_seq = serializers.IntegerField(required=False, help_text="code seq_conflict: renumber from here.")


_DESCRIPTIONS = {
    400: "Invalid input: `detail` says what, `errors` names each field (code `invalid`), or the body is not "
    "acceptable JSON (`parse_error`, `too_large`, `too_deep`).",
    403: "Not logged in, CSRF failure, or the role may not do this.",
    404: "No such object (or not visible to you).",
    409: "A conflict; `code` says which.",
    503: "The database could not be reached (code `unavailable`); send it again.",
}


def error_responses(*statuses: int, **descriptions: str) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for the error statuses of an operation, e.g. `**error_responses(400, 403, 404)`;
    `descriptions` override the defaults by status (`_404="No such job."`)."""
    return {
        code: OpenApiResponse(
            ConflictErrorSerializer if code == 409 else ErrorSerializer,
            description=descriptions.get(f"_{code}", _DESCRIPTIONS[code]),
        )
        for code in statuses
    }
