"""GET /api/projects/<project_id>/gold/: the gold-metric table of a selection of the project's post-edits.

Read-only, admins and researchers only (annotators 403), session or token authentication, like the analysis
API. The same function (metrics.gold_figures.gold_table_build) fills the report page's table.
"""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.permissions import AdminWritesResearcherReads
from editlab.api import validated
from editlab.errors import error_responses
from metrics.analysis_options import selection_build
from metrics.api import serializers_gold as s
from metrics.gold_figures import ORDER, gold_table_build
from metrics.selectors import project_get


class ProjectGoldApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=["analysis"],
        operation_id="project_gold_metrics",
        summary="Gold-based metrics (EditEval) of a selection: editlab's per-example means and EditEval's figures",
        description=(
            "For the selection's submitted post-edits whose item has gold edits: per gold-based metric, the mean of "
            "editlab's stored per-example values and `editeval`, the figure over all of them as EditEval's code "
            "computes it (the one to compare with published EditEval results), or why EditEval's code has none."
        ),
        parameters=[s.GoldQuerySerializer],
        responses={
            200: s.GoldOutputSerializer,
            **error_responses(400, 403, 404, _403="Not logged in, or not a researcher/admin.", _404="No such project."),
        },
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get(project_id=project_id)
        if project is None:
            raise NotFound("No such project.")
        params = validated(s.GoldQuerySerializer, request.query_params)
        selection = selection_build(
            project=project,
            target="keystrokes",  # the gold table does not depend on the effort target
            annotators=params["annotators"],
            task_type=params["task_type"],
            origin=params["origin"],
        )
        table = gold_table_build(selection=selection)
        described = selection.describe()
        data = {
            "selection": {k: described[k] for k in ("project", "project_id", "annotators", "task_type", "origin")},
            **(table.to_dict() if table else {"n": 0, "order": ORDER, "metrics": [], "messages": []}),
        }
        if table is None:
            data["messages"] = ["no submitted post-edit in this selection has gold edits"]
        return Response(s.GoldOutputSerializer(data).data)
