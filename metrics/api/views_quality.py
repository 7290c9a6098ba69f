"""GET /api/projects/<project_id>/mqm/: the MQM and ESA scores of a project's evaluations.

Read-only, admins and researchers only (annotators 403), session or token authentication, like the analysis
API; the same function as `analyze --mqm --format json` (metrics.quality_report.mqm_summary).
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.permissions import AdminWritesResearcherReads
from editlab.errors import error_responses
from metrics.quality_report import mqm_summary
from metrics.selectors import project_get


class ProjectMqmApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=["analysis"],
        operation_id="project_mqm",
        summary="MQM and ESA scores of the project's evaluations: per system, per rater, and rater agreement",
        description=(
            "MQM with the project's weights (WMT's by default: major 5, minor 1, minor Fluency/Punctuation 0.1, "
            "Non-translation 25): per system the mean of its segment scores (each the mean over raters) with a "
            "95% CI, per rater the mean of their ratings; ESA means per system with 95% CIs; for outputs rated "
            "twice or more, Krippendorff's alpha on ESA and MQM scores and character-level F1 and alpha on the "
            "spans. docs/quality.md defines each figure."
        ),
        responses={
            200: OpenApiTypes.OBJECT,
            **error_responses(
                400,
                403,
                404,
                _400="The project's typology is malformed.",
                _403="Not logged in, or not a researcher/admin.",
                _404="No such project.",
            ),
        },
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get(project_id=project_id)
        if project is None:
            raise NotFound("No such project.")
        return Response(mqm_summary(project))
