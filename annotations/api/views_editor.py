"""The editor's four JSON endpoints: events, draft, submit, skip (annotations/editing/ does the work).

Only the post-edit's own annotator writes (anyone else's -> 404); researchers and admins read
elsewhere and get 403 here; anonymous -> 403. Session auth with CSRF; a form post (sendBeacon) carries
the JSON in its `payload` field and the token in `csrfmiddlewaretoken`.
"""

import json
import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, ParseError, PermissionDenied
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from annotations.api.serializers_editor import (
    ConflictSerializer,
    DraftInputSerializer,
    DraftOutputSerializer,
    ErrorSerializer,
    EventsInputSerializer,
    EventsOutputSerializer,
    SkipInputSerializer,
    SkipOutputSerializer,
    SubmitInputSerializer,
    SubmitOutputSerializer,
)
from annotations.editing.drafts import post_edit_save_draft
from annotations.editing.errors import EditingError
from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_skip, post_edit_submit
from annotations.models import PostEdit
from annotations.roles import can_read_all

logger = logging.getLogger(__name__)

FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Malformed request; `error` names the problem."),
    403: OpenApiResponse(ErrorSerializer, description="Not logged in, CSRF failure, or not an annotator."),
    404: OpenApiResponse(ErrorSerializer, description="No such post-edit among yours."),
    503: OpenApiResponse(ErrorSerializer, description="The database was unreachable (or locked); send it again."),
}


class BadRequest(Exception):
    """A malformed request: 400 with {"error": message}, the message naming the field."""


def editor_exception_handler(exc, context):
    """DRF's handler, with the contract's {"error": ...} body instead of {"detail": ...}; a
    malformed request or one the services refuse (EditingError) answers with its own body.

    A database that cannot be reached (connection dropped, server restarting) answers 503, not a
    500 page: the services are atomic, so nothing of the request stays half-stored, and the logger
    sends the batch again (a re-sent batch is stored once).
    """
    if isinstance(exc, BadRequest):
        return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, EditingError):
        return Response(exc.payload(), status=exc.status)
    if isinstance(exc, OperationalError | InterfaceError):
        logger.warning("editor endpoint %s: database unavailable: %s", context["request"].path, exc)
        return Response(
            {
                "error": "The database could not be reached; the request was not completed. Send it again "
                "(a batch sent twice is stored once, a submit sent twice submits once).",
                "code": "unavailable",
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        body = {"error": str(response.data["detail"])}
        code = exc.get_codes() if isinstance(exc, APIException) else None
        if isinstance(code, str):  # e.g. not_authenticated, authentication_failed, permission_denied
            body["code"] = code
        response.data = body
    return response


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def request_payload(request: Request) -> dict:
    """The JSON object of the request: the body, or a form's `payload` field (sendBeacon)."""
    if request.content_type.startswith(FORM_TYPES):
        raw = request.data.get("payload")
        if raw is None:
            raise ParseError("a form post must carry the JSON in the field 'payload'")
        try:
            data = json.loads(raw, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(f"payload is not valid JSON: {exc}") from None
    else:
        data = request.data
    if not isinstance(data, dict):
        raise ParseError("the request must be a JSON object")
    return data


def first_error(errors) -> str:
    """One readable line from a serializer's errors: 'field: message'."""
    if isinstance(errors, dict):
        name, value = next(iter(errors.items()))
        return f"{name}: {first_error(value)}"
    if isinstance(errors, list) and errors:
        return first_error(errors[0])
    return str(errors)


def own_post_edit(request: Request, pk: int) -> PostEdit:
    if can_read_all(request.user):
        raise PermissionDenied("Researchers and admins cannot write post-edits; only their annotator can.")
    # Only the ownership check: every service re-reads (and locks) the rows it needs, so loading the
    # item and project here cost ~0.7 ms of CPU per request for nothing (load benchmark).
    return get_object_or_404(PostEdit.objects.only("pk", "assignment_id"), pk=pk, assignment__annotator=request.user)


def validated(serializer_class, request: Request) -> dict:
    serializer = serializer_class(data=request_payload(request))
    if not serializer.is_valid():
        raise BadRequest(first_error(serializer.errors))
    return serializer.validated_data


class EditorAPIView(APIView):
    """Shared request handling of the four endpoints (auth, parsers, error shape: a BadRequest or
    an EditingError raised by a view or a service becomes its JSON answer)."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def get_exception_handler(self):
        return editor_exception_handler


class PostEditEventsView(EditorAPIView):
    @extend_schema(
        operation_id="post_edit_events",
        summary="Store a batch of editor events (idempotent per seq)",
        tags=["editor"],
        request=EventsInputSerializer,
        responses={
            200: EventsOutputSerializer,
            **ERRORS,
            409: OpenApiResponse(ConflictSerializer, description="Post-edit closed, or seq taken by another tab."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        post_edit = own_post_edit(request, pk)
        limit = settings.EDITLAB_EVENTS_MAX_BYTES
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        if size > limit:
            raise BadRequest(f"the batch has {size} bytes; at most {limit} (EDITLAB_EVENTS_MAX_BYTES) are accepted")
        data = validated(EventsInputSerializer, request)
        result = post_edit_ingest_events(post_edit=post_edit, page_id=data["page_id"], events=data["events"])
        return Response(EventsOutputSerializer(result).data)


class PostEditDraftView(EditorAPIView):
    @extend_schema(
        operation_id="post_edit_draft",
        summary="Autosave the draft (optimistic locking by version)",
        tags=["editor"],
        request=DraftInputSerializer,
        responses={
            200: DraftOutputSerializer,
            **ERRORS,
            409: OpenApiResponse(ConflictSerializer, description="Stale version (another tab saved), or closed."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        post_edit = own_post_edit(request, pk)
        data = validated(DraftInputSerializer, request)
        version = post_edit_save_draft(
            post_edit=post_edit, page_id=data["page_id"], text=data["text"], version=data["version"]
        )
        return Response(DraftOutputSerializer({"version": version}).data)


class PostEditSubmitView(EditorAPIView):
    @extend_schema(
        operation_id="post_edit_submit",
        summary="Submit the post-edit: derive effort, replay, clip by server time (idempotent)",
        tags=["editor"],
        request=SubmitInputSerializer,
        responses={
            200: SubmitOutputSerializer,
            **ERRORS,
            409: OpenApiResponse(ConflictSerializer, description="Stale version (another tab saved), or skipped."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        post_edit = own_post_edit(request, pk)
        data = validated(SubmitInputSerializer, request)
        navigation = post_edit_submit(
            post_edit=post_edit,
            page_id=data["page_id"],
            text=data["text"],
            version=data["version"],
            last_seq=data["last_seq"],
        )
        return Response(SubmitOutputSerializer(navigation).data)


class PostEditSkipView(EditorAPIView):
    @extend_schema(
        operation_id="post_edit_skip",
        summary="Skip the item with a reason",
        tags=["editor"],
        request=SkipInputSerializer,
        responses={
            200: SkipOutputSerializer,
            **ERRORS,
            409: OpenApiResponse(ErrorSerializer, description="Already submitted."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        post_edit = own_post_edit(request, pk)
        data = validated(SkipInputSerializer, request)
        next_url = post_edit_skip(post_edit=post_edit, page_id=data["page_id"], reason=data["reason"])
        return Response(SkipOutputSerializer({"next_url": next_url}).data)
