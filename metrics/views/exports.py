"""The export download: a project's post-edits, effort and metric values as CSV, JSON Lines or
Parquet, streamed (metrics.exports writes them); with `events=1` its event log, one row per event
(metrics.exports_events; also `format=idfx`, and `with_text=1`). Researchers and admins only.
Practice items' edits and an LLM's synthetic edits are left out unless include_practice /
include_simulated. A refused option (an ExportError, a Refusal) is a page with its message.
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from annotations.models import Project
from metrics.exports import export_filename, export_spec, export_stream, get_format, parse_flag
from metrics.exports_events import EventExportSpec, event_export_filename, event_export_stream, get_event_format
from metrics.views.jobs import readers


@login_required
@require_GET
@readers
def export_download(request: HttpRequest, project_id: int) -> HttpResponse | StreamingHttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    fmt = request.GET.get("format", "csv")
    events = parse_flag(request.GET.get("events", ""), name="events")
    with_text = parse_flag(request.GET.get("with_text", ""), name="with_text")
    export_format = get_event_format(fmt) if events else get_format(fmt)
    include_practice = parse_flag(request.GET.get("include_practice", ""), name="include_practice")
    include_simulated = parse_flag(request.GET.get("include_simulated", ""), name="include_simulated")
    if events:
        stream = event_export_stream(EventExportSpec(project, include_practice, with_text), fmt)
        response = StreamingHttpResponse(stream, content_type=export_format.content_type)
        response["Content-Disposition"] = f'attachment; filename="{event_export_filename(project, fmt)}"'
        return response
    spec = export_spec(project=project, include_practice=include_practice, include_simulated=include_simulated)
    response = StreamingHttpResponse(export_stream(spec, fmt), content_type=export_format.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export_filename(project, fmt)}"'
    return response
