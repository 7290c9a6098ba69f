"""The editor's four JSON endpoints: events, draft, submit, skip (annotations/editing/ does the work).

Only the post-edit's own annotator writes (anyone else's -> 404); researchers and admins read
elsewhere and get 403 here; anonymous -> 403. Session auth with CSRF; a form post (sendBeacon) carries
the JSON in its `payload` field and the token in `csrfmiddlewaretoken`.
"""

from collections.abc import Mapping

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ParseError
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
)
from annotations.editing.drafts import post_edit_save_draft
from annotations.editing.event_store import owned_post_edit
from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_skip, post_edit_submit
from annotations.models import PostEdit
from editlab.api import LimitedJSONParser, SessionAuthentication, loads_field, validated
from editlab.errors import error_responses

FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
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
        raise Http404("No such post-edit among yours.")
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
