"""The event-log export API: one row per stored edit event of a project, streamed (docs/events.md).

What annotators typed is in it: admins and researchers only, as every export.
"""

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request

from annotations.models import Project
from editlab.api import validated
from metrics.analysis_options import FlagField
from metrics.api.views_values import ERRORS, NOT_FOUND, TAGS, ValuesApi, _FormatIsOurs
from metrics.exports_events import (
    EVENT_FORMATS,
    EventExportSpec,
    event_export_filename,
    event_export_stream,
)


class EventExportInputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=sorted(EVENT_FORMATS), default="csv")
    include_practice = FlagField(
        default=False, help_text="Also export the events of practice items' post-edits (left out by default)."
    )
    with_text = FlagField(
        default=False, help_text="Add text_after: the text after each text-changing event (much larger)."
    )


class ProjectEventExportApi(ValuesApi):
    content_negotiation_class = _FormatIsOurs

    @extend_schema(
        tags=TAGS,
        summary="Download the event log: one row per stored edit event (streamed; idfx, critt-kd: zips of IDFX logs, KD tables)",
        parameters=[EventExportInputSerializer],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, EVENT_FORMATS["parquet"].content_type): OpenApiTypes.BINARY,
            (200, EVENT_FORMATS["idfx"].content_type): OpenApiTypes.BINARY,
            **ERRORS,
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, project_id: int):
        project = get_object_or_404(Project, pk=project_id)
        params = validated(EventExportInputSerializer, request.query_params)
        fmt = params["format"]
        spec = EventExportSpec(project, params["include_practice"], params["with_text"])
        response = StreamingHttpResponse(event_export_stream(spec, fmt), content_type=EVENT_FORMATS[fmt].content_type)
        response["Content-Disposition"] = f'attachment; filename="{event_export_filename(project, fmt)}"'
        return response
