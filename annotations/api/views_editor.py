"""The editor's four JSON endpoints: events, draft, submit, skip (annotations/editing/ does the work).

Only the post-edit's own annotator writes (anyone else's -> 404); researchers and admins read
elsewhere and get 403 here; anonymous -> 403. Session auth with CSRF; a form post (sendBeacon) carries
the JSON in its `payload` field and the token in `csrfmiddlewaretoken`.
"""

import json
import uuid
from collections.abc import Mapping

from django.conf import settings
from django.http import Http404, HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from annotations.api.permissions import AnnotatorsWriteOwnWork
from annotations.api.serializers_editor import (
    DraftInputSerializer,
    DraftOutputSerializer,
    EventsInputSerializer,
    EventsOutputSerializer,
    SkipInputSerializer,
    SkipOutputSerializer,
    SubmitInputSerializer,
    SubmitOutputSerializer,
    validate_events,
)
from annotations.editing.drafts import post_edit_save_draft
from annotations.editing.event_store import owned_post_edit
from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_skip, post_edit_submit
from annotations.models import PostEdit
from annotations.roles import can_read_all
from editlab.api import LimitedJSONParser, SessionAuthentication, csrf_passes, loads, loads_field, validated
from editlab.errors import error_responses

FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
NOT_YOURS = "No such post-edit among yours."
# The Accept headers DRF's negotiation answers with JSON (its first renderer): what browsers' fetch sends.
PLAIN_ACCEPT = frozenset({"*/*", "application/json"})
ERRORS = error_responses(
    400,
    403,
    404,
    503,
    _403="Not logged in, CSRF failure, or not an annotator.",
    _404="No such post-edit among yours.",
)


def editor_schema(
    *, operation_id: str, summary: str, request: type[Serializer], response: type[Serializer], conflict: str
):
    """What the OpenAPI description of every editor endpoint holds: its input and output, the errors
    they all answer, and what its own 409 means."""
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        tags=["editor"],
        request=request,
        responses={200: response, **ERRORS, **error_responses(409, _409=conflict)},
    )


def request_payload(request: Request) -> dict:
    """The JSON object of the request: the body, or a form's `payload` field (sendBeacon)."""
    if request.content_type.startswith(FORM_TYPES):
        form = request.data  # a QueryDict for a form post
        raw = form.get("payload") if isinstance(form, Mapping) else None
        if raw is None:
            raise ParseError("a form post must carry the JSON in the field 'payload'")
        data = loads_field(raw, name="payload")
    else:
        data = request.data
    if not isinstance(data, dict):
        raise ParseError("the request must be a JSON object")
    return data


def own_post_edit(request: Request, post_edit_id: int) -> PostEdit:
    # Only the ownership check: every service re-reads (and locks) the rows it needs, so the item and
    # project are not loaded here.
    annotator_id = request.user.pk  # None when anonymous: nothing is theirs
    post_edit = (
        owned_post_edit(post_edit_id=post_edit_id, annotator_id=annotator_id) if annotator_id is not None else None
    )
    if post_edit is None:
        raise Http404(NOT_YOURS)
    return post_edit


class EditorApi(APIView):
    """What the four endpoints share: session auth with CSRF, the JSON body or a beacon's form, and
    the permission (admins and researchers 403) checked before anything reads the body."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAuthenticated, AnnotatorsWriteOwnWork]
    parser_classes = [LimitedJSONParser, MultiPartParser, FormParser]
    # Said with a 503 (editlab.errors): why sending the request again is safe.
    retry_note = " (a batch sent twice is stored once, a submit sent twice submits once)"


class PostEditEventsApi(EditorApi):
    """Most requests of a study are event batches, so a well-formed batch of a logged-in annotator is
    answered without DRF's dispatch (`_answer_plainly`): the same checks in the same order, then the
    service. Anything else (another content type or Accept, a form post, a failed check, a bad body) is
    answered by DRF's dispatch from the start, so every refusal keeps its one shape and message; the
    plain checks only read, so nothing is done twice. tests/annotations/test_events_plain_path.py
    compares the two answers and the stored rows on generated requests."""

    plain = True  # the plain answer is used (tests turn it off to compare)

    def dispatch(self, request, *args, **kwargs):
        if self.plain:
            answer = self._answer_plainly(request, *args, **kwargs)
            if answer is not None:
                return answer
        return super().dispatch(request, *args, **kwargs)

    def _answer_plainly(self, request, *args, **kwargs) -> HttpResponse | None:
        """The answer to a plain JSON batch that passes every check DRF's path makes before the service,
        or None (DRF's path answers). Another annotator's post-edit (the 404 that comes next on DRF's path)
        and the service's own refusals are turned into answers as DRF's path turns them."""
        if request.method != "POST" or request.content_type != "application/json":
            return None
        if request.content_params and request.content_params != {"charset": "utf-8"}:
            return None
        if request.META.get("HTTP_ACCEPT", "*/*") not in PLAIN_ACCEPT:
            return None
        user = request.user  # as SessionAuthentication: the session's user, active, with CSRF
        if not user.is_authenticated or not user.is_active or can_read_all(user) or not csrf_passes(request):
            return None
        post_edit = owned_post_edit(post_edit_id=kwargs["post_edit_id"], annotator_id=user.pk)
        if post_edit is None:  # DRF's path would answer own_post_edit's 404 next: not read twice
            return self._refused(request, Http404(NOT_YOURS), *args, **kwargs)
        try:
            size = int(request.META.get("CONTENT_LENGTH") or "")
        except ValueError:
            return None
        if not 0 < size <= min(settings.EDITLAB_EVENTS_MAX_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE):
            return None
        try:
            data = loads(request.body.decode("utf-8"), where="JSON parse error - the body")
            if not isinstance(data, dict) or not isinstance(data.get("page_id"), str):
                return None  # DRF's serializer answers (it also takes a page_id given as a number)
            page_id = uuid.UUID(hex=data["page_id"])
            events = validate_events(data["events"])
        except (ParseError, ValidationError, ValueError, KeyError):  # a bad UTF-8 byte is a ValueError too
            return None
        try:
            result = post_edit_ingest_events(post_edit=post_edit, page_id=page_id, events=events)
        except Exception as exc:  # noqa: BLE001  # answered (or re-raised) as DRF's dispatch does
            return self._refused(request, exc, *args, **kwargs)
        body = json.dumps(EventsOutputSerializer(result).data, separators=(",", ":")).encode()
        response = HttpResponse(body, content_type="application/json")
        for header, value in self.default_response_headers.items():
            if header == "Vary":
                patch_vary_headers(response, [value])
            else:
                response[header] = value
        return response

    def _refused(self, request, exc: Exception, *args, **kwargs) -> HttpResponse:
        self.args, self.kwargs = args, kwargs
        self.request = self.initialize_request(request, *args, **kwargs)
        self.headers = self.default_response_headers
        self.initial(self.request, *args, **kwargs)  # as dispatch: format, negotiation, the checks passed before
        response = self.handle_exception(exc)  # re-raises what DRF's dispatch would
        return self.finalize_response(self.request, response, *args, **kwargs)

    @editor_schema(
        operation_id="post_edit_events",
        summary="Store a batch of editor events (idempotent per seq)",
        request=EventsInputSerializer,
        response=EventsOutputSerializer,
        conflict="Post-edit closed (code `closed`), or seq taken by another tab (`seq_conflict`).",
    )
    def post(self, request: Request, post_edit_id: int) -> Response:
        post_edit = own_post_edit(request, post_edit_id)
        limit = settings.EDITLAB_EVENTS_MAX_BYTES
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        if size > limit:
            raise ParseError(
                f"the batch has {size} bytes; at most {limit} (EDITLAB_EVENTS_MAX_BYTES) are accepted", code="too_large"
            )
        data = validated(EventsInputSerializer, request_payload(request))
        result = post_edit_ingest_events(post_edit=post_edit, page_id=data["page_id"], events=data["events"])
        return Response(EventsOutputSerializer(result).data)


class PostEditDraftApi(EditorApi):
    @editor_schema(
        operation_id="post_edit_draft",
        summary="Autosave the draft (optimistic locking by version)",
        request=DraftInputSerializer,
        response=DraftOutputSerializer,
        conflict="Stale version (code `conflict`: another tab saved), or `closed`.",
    )
    def post(self, request: Request, post_edit_id: int) -> Response:
        post_edit = own_post_edit(request, post_edit_id)
        data = validated(DraftInputSerializer, request_payload(request))
        version = post_edit_save_draft(
            post_edit=post_edit, page_id=data["page_id"], text=data["text"], version=data["version"]
        )
        return Response(DraftOutputSerializer({"version": version}).data)


class PostEditSubmitApi(EditorApi):
    @editor_schema(
        operation_id="post_edit_submit",
        summary="Submit the post-edit: derive effort, replay, clip by server time (idempotent)",
        request=SubmitInputSerializer,
        response=SubmitOutputSerializer,
        conflict="Stale version (code `conflict`: another tab saved), or skipped (`closed`).",
    )
    def post(self, request: Request, post_edit_id: int) -> Response:
        post_edit = own_post_edit(request, post_edit_id)
        data = validated(SubmitInputSerializer, request_payload(request))
        navigation = post_edit_submit(
            post_edit=post_edit,
            page_id=data["page_id"],
            text=data["text"],
            version=data["version"],
            last_seq=data["last_seq"],
        )
        return Response(SubmitOutputSerializer(navigation).data)


class PostEditSkipApi(EditorApi):
    @editor_schema(
        operation_id="post_edit_skip",
        summary="Skip the item with a reason",
        request=SkipInputSerializer,
        response=SkipOutputSerializer,
        conflict="Already submitted (code `closed`).",
    )
    def post(self, request: Request, post_edit_id: int) -> Response:
        post_edit = own_post_edit(request, post_edit_id)
        data = validated(SkipInputSerializer, request_payload(request))
        next_url = post_edit_skip(post_edit=post_edit, page_id=data["page_id"], reason=data["reason"])
        return Response(SkipOutputSerializer({"next_url": next_url}).data)
