"""What every API endpoint shares: how a request body is read, who is authenticated, how input is checked.

- Bodies: `LimitedJSONParser` reads JSON through editlab.safe_json, so nesting past JSON_MAX_DEPTH,
  a body over DATA_UPLOAD_MAX_MEMORY_SIZE, NaN/Infinity/overflowing numbers and unstorable text
  are a 400 naming the limit or the field, never a RecursionError (a 500). `loads_field` does the
  same for JSON carried in a form field (the editor's sendBeacon `payload`).
- Authentication: `SessionAuthentication` checks the CSRF token against Django's request, not
  DRF's: DRF's own check reads `request.POST`, which parses the body, so a malformed or hostile
  body answered 400/500 before the permission check could answer 403. Nothing reads the body
  before the view's permissions have passed.
- Input: `validated(serializer_class, data)` is the one way a view checks its input; an invalid
  input raises DRF's ValidationError, which editlab.errors.api_exception_handler turns into the
  API's one error shape.
"""

from typing import Any

from django.conf import settings
from drf_spectacular.authentication import SessionScheme
from rest_framework import authentication, parsers
from rest_framework.exceptions import ParseError
from rest_framework.serializers import Serializer

from editlab import safe_json

# Deep enough for any real body (an events batch is 3 levels, items with nested meta a dozen);
# far below the interpreter's recursion limit, which every later walk of the value would hit.
JSON_MAX_DEPTH = 64


def _body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large_message(size: int | None, limit: int) -> str:
    found = f" ({size:,} bytes)" if size is not None else ""
    return (
        f"The request is larger than this server accepts{found}: at most {limit:,} bytes "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE) besides uploaded files. Send less at once."
    )


def loads(text: str | bytes, *, where: str = "JSON") -> Any:
    """Untrusted JSON with the API's limits; a ParseError (400) naming the limit or the place otherwise."""
    try:
        return safe_json.loads(text, max_depth=JSON_MAX_DEPTH, max_bytes=_body_limit())
    except safe_json.JSONDepthError as exc:
        raise ParseError(f"{where}: {exc} (JSON_MAX_DEPTH)", code="too_deep") from None
    except safe_json.JSONSizeError:
        raise ParseError(too_large_message(None, _body_limit()), code="too_large") from None
    except safe_json.JSONValueError as exc:  # NaN, 1e400, NUL, a lone surrogate: the message names the field
        raise ParseError(f"{where}: {exc}") from None
    except ValueError as exc:  # malformed JSON
        raise ParseError(f"{where} is not valid JSON: {exc}") from None


def loads_field(raw: Any, *, name: str) -> Any:
    """The JSON carried in a form field (a string), with the same limits as a JSON body."""
    if not isinstance(raw, str):
        raise ParseError(f"the field '{name}' must hold JSON text")
    return loads(raw, where=name)


class LimitedJSONParser(parsers.JSONParser):
    """DRF's JSON parser with limits: depth, size, finite numbers, storable text (editlab.safe_json)."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        limit = _body_limit()
        # Django's limit guards request.body, not the stream DRF reads: bound the read here.
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(too_large_message(None, limit), code="too_large")
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding}: {exc}") from None
        return loads(text, where="JSON parse error - the body")


class SessionAuthentication(authentication.SessionAuthentication):
    """Session login with CSRF checked on Django's request: a header token or a form's
    `csrfmiddlewaretoken` (Django parses forms itself), never by parsing a JSON body."""

    def enforce_csrf(self, request) -> None:
        super().enforce_csrf(request._request)


def csrf_passes(request) -> bool:
    """Whether Django's request passes the CSRF check SessionAuthentication makes (DRF's CSRFCheck)."""
    check = authentication.CSRFCheck(lambda request: None)  # type: ignore[arg-type]  # DRF's own dummy
    check.process_request(request)  # the CSRF cookie into request.META, as DRF's enforce_csrf does
    return check.process_view(request, None, (), {}) is None  # type: ignore[arg-type]  # as DRF calls it


class SessionAuthenticationScheme(SessionScheme):
    """The OpenAPI schema's description of it: the session cookie, as DRF's."""

    target_class = "editlab.api.SessionAuthentication"


def validated(serializer_class: type[Serializer], data: Any) -> Any:
    """`data` through the input serializer: its validated data, or DRF's ValidationError (a 400 in the
    API's error shape, `detail` naming the first field and `errors` every one)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
