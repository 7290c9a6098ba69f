"""The replay page: any post-edit's event log, applied step by step (slider and play button), with its
process graph (an SVG, also to download, and as PNG from its own URL), a few process measures and its
S-notation (docs/process.md).

Admins and researchers may watch it (it changes nothing); annotators get a 404, even for their own
edits (the log is the study's instrument, not their view); anonymous users go to the login page.
"""

import base64

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotations.editing.logs import stored_log
from annotations.log_event import LogEvent
from annotations.models import PostEdit
from annotations.process import measures_of_trace, s_notation_of_trace, trace_log
from annotations.process.graph import process_graph_svg
from annotations.process.graph_png import process_graph_png
from annotations.replay import iter_replay, replay
from annotations.roles import ADMIN, RESEARCHER, role_required

S_NOTATION_MAX_CHANGES = 2000  # beyond, the S-notation (quadratic in the log's length) is not drawn on the page
PROCESS_FACTS = ("iki_median", "iki_iqr", "pause_count@1000", "p_bursts@1000", "r_bursts@1000", "revisions")


def replay_steps(original: str, events: list[LogEvent]) -> tuple[list[dict], int | None]:
    """The page's steps (UTF-16 operations the browser applies) and the slider position of the divergence."""
    by_seq = {event.seq: event for event in events}
    steps: list[dict] = []
    divergence_step = None
    for step in iter_replay(original, events, with_text=False):
        event = by_seq[step.seq]
        if step.divergence is not None and divergence_step is None:
            divergence_step = len(steps) + 1  # slider position 0 is the model output
        steps.append(
            {
                "seq": step.seq,
                "t": round(event.t_ms),
                "page": event.visit[:8],
                "kind": step.kind,
                "start": step.start,
                "end": step.end,
                "insert": step.insert,
                "diverged": step.divergence is not None,
            }
        )
    return steps, divergence_step


@login_required
@require_GET
@role_required(ADMIN, RESEARCHER, hidden=True)  # annotators: not even their own log
def post_edit_replay(request: HttpRequest, post_edit_id: int) -> HttpResponse:
    post_edit = get_object_or_404(
        PostEdit.objects.select_related("assignment__item__project", "assignment__annotator"), pk=post_edit_id
    )
    events = stored_log(post_edit)
    steps, divergence_step = replay_steps(post_edit.start_text, events)
    final_text = post_edit.text if post_edit.submitted_at else None
    result = replay(post_edit.start_text, events, final_text=final_text)
    trace = trace_log(post_edit.start_text, events)
    graph = process_graph_svg(trace)
    measures = measures_of_trace(trace, thresholds_ms=(1000.0,)).flat()
    return render(
        request,
        "annotations/replay.html",
        {
            "post_edit": post_edit,
            "item": post_edit.assignment.item,
            "step_count": len(steps),
            "event_count": len(events),
            "replay_data": {
                "original": post_edit.start_text,
                "steps": steps,
                "divergence_step": divergence_step,
            },
            "divergence": post_edit.replay_divergence or result.divergence,
            "replayed_text": result.text,
            "final_matches": None if final_text is None else result.text == final_text,
            "process_svg": graph,
            "process_svg_base64": base64.b64encode(graph.encode()).decode(),
            "process_facts": [(name, measures[name]) for name in PROCESS_FACTS],
            "product_process_ratio": measures["product_process_ratio"],
            "s_notation": s_notation_of_trace(trace) if len(trace.changes) <= S_NOTATION_MAX_CHANGES else None,
        },
    )


@login_required
@require_GET
@role_required(ADMIN, RESEARCHER, hidden=True)  # as the replay page
def post_edit_process_graph_png(request: HttpRequest, post_edit_id: int) -> HttpResponse:
    """The replay page's process graph as a PNG download."""
    post_edit = get_object_or_404(PostEdit.objects.select_related("assignment__item"), pk=post_edit_id)
    png = process_graph_png(trace_log(post_edit.start_text, stored_log(post_edit)))
    response = HttpResponse(png, content_type="image/png")
    response["Content-Disposition"] = f'attachment; filename="process-graph-{post_edit.pk}.png"'
    return response
