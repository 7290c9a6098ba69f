"""Error pages that say what went wrong: Django's bare "Bad Request (400)" names nothing.

A request body over DATA_UPLOAD_MAX_MEMORY_SIZE (or with too many fields or files) is refused
by Django before any view runs; this handler tells the client which limit it hit. API clients
(paths under /api/) get JSON with both `error` (the editor's contract) and `detail` (DRF's).
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.template.loader import render_to_string


def bad_request_message(exception: Exception | None) -> str:
    if isinstance(exception, RequestDataTooBig):
        return (
            f"The request is larger than this server accepts: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE) besides uploaded files. Send less at once."
        )
    if isinstance(exception, TooManyFieldsSent):
        return f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields (DATA_UPLOAD_MAX_NUMBER_FIELDS)."
    if isinstance(exception, TooManyFilesSent):
        return (
            f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES:,} files (DATA_UPLOAD_MAX_NUMBER_FILES)."
        )
    # Anything else (a bad Host header, a malformed multipart body): no internals in the answer.
    return "The request is malformed and was not processed."


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    message = bad_request_message(exception)
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message, "detail": message}, status=400)
    # Rendered without the request: the middleware that fills it may not have run.
    return HttpResponseBadRequest(render_to_string("400.html", {"message": message}))
