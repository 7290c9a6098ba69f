"""The error-span task's two JSON endpoints: events (the page's log) and submit
(annotations/services/evaluation_task.py does the work).

Only the evaluation's own rater writes (anyone else's -> 404); researchers and admins get 403, as on
the editor's endpoints; anonymous -> 403. Session auth with CSRF, the JSON body (or a beacon's form
`payload`, as the editor's). Every refusal is a `ServiceError` naming its field (400), or a 409 with
`code` closed, seq_conflict or events_missing (those two with `next_seq`).
"""

from django.http import Http404
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.api.views_editor import EditorApi, request_payload
from annotations.models import Evaluation
from annotations.services.errors import ServiceError
from annotations.services.evaluation_task import evaluation_finish, evaluation_ingest_events
from editlab.errors import error_responses

ERRORS = error_responses(
    400,
    403,
    404,
    409,
    _403="Not logged in, CSRF failure, or not an annotator.",
    _404="No such evaluation among yours.",
    _409="Submitted already (`closed`), seq taken by another page load (`seq_conflict`) or events not all "
    "stored (`events_missing`).",
)


def own_evaluation(request: Request, evaluation_id: int) -> Evaluation:
    evaluation = Evaluation.objects.filter(pk=evaluation_id, rater_id=request.user.pk, origin="live").first()
    if evaluation is None:
        raise Http404("No such evaluation among yours.")
    return evaluation


class EvaluationEventsApi(EditorApi):
    retry_note = " (a batch sent twice is stored once)"

    @extend_schema(
        operation_id="evaluation_events",
        summary="Store a batch of the evaluation task's events (idempotent per seq)",
        tags=["evaluation"],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = own_evaluation(request, evaluation_id)
        data = request_payload(request)
        result = evaluation_ingest_events(
            evaluation=evaluation, rater=request.user, page_id=data.get("page_id"), events=data.get("events")
        )
        return Response(result)


class EvaluationSubmitApi(EditorApi):
    retry_note = " (a submit sent twice is refused as closed the second time)"

    @extend_schema(
        operation_id="evaluation_submit",
        summary="Submit the evaluation: its spans and ESA score; time from the stored log",
        tags=["evaluation"],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request: Request, evaluation_id: int) -> Response:
        evaluation = own_evaluation(request, evaluation_id)
        data = request_payload(request)
        unknown = sorted(set(data) - {"page_id", "last_seq", "spans", "esa_score"})
        if unknown:
            raise ServiceError(f"{unknown[0]}: is not a field of a submit (page_id, last_seq, spans, esa_score)")
        done = evaluation_finish(
            evaluation=evaluation,
            rater=request.user,
            page_id=data.get("page_id"),
            last_seq=data.get("last_seq"),
            spans=data.get("spans"),
            esa_score=data.get("esa_score"),
        )
        return Response(
            {"id": done.pk, "wall_ms": done.wall_ms, "active_ms": done.active_ms, "spans": done.spans.count()}
        )
