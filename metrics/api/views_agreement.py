"""GET /api/projects/<project_id>/agreement/: agreement across overlapping work for a selection.

Read-only, admins and researchers only (annotators 403), session or token authentication, like the analysis
API; the same options (AnalysisOptionsSerializer) and the same function as `analyze --agreement` and the
report's Agreement section (metrics.agreement_report.agreement_build).
"""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.permissions import AdminWritesResearcherReads
from editlab import limits
from editlab.api import validated
from editlab.errors import error_responses
from metrics.agreement_report import agreement_build, distances_parse
from metrics.analysis_options import AnalysisOptionsSerializer, analysis_request_build
from metrics.api.serializers_agreement import AgreementOutputSerializer, AgreementQuerySerializer
from metrics.selectors import project_get


class ProjectAgreementApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=["analysis"],
        operation_id="project_agreement",
        summary="Agreement across overlapping work: alpha and ICC on effort, distances between post-edits",
        description=(
            "For the selection's items done by two or more annotators: Krippendorff's alpha (interval) on the "
            "target's stored effort, computed in one pass, equal to the krippendorff package; the Shrout & Fleiss "
            "ICCs on the complete-case items with F-based CIs, as pingouin computes them; per output distance "
            "(compression by default; ter and chrf by name, over at most "
            f"{limits.AGREEMENT_SLOW_PAIRS_MAX:,} pairs) the mean symmetric distance between post-edits of one item and, per "
            "annotator, the mean distance to the others' with z, the modified z-score and the flag. "
            "docs/agreement.md defines each figure."
        ),
        parameters=[AnalysisOptionsSerializer, AgreementQuerySerializer],
        responses={
            200: AgreementOutputSerializer,
            **error_responses(400, 403, 404, _403="Not logged in, or not a researcher/admin.", _404="No such project."),
        },
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get(project_id=project_id)
        if project is None:
            raise NotFound("No such project.")
        params = validated(AnalysisOptionsSerializer, request.query_params)
        chosen = validated(AgreementQuerySerializer, request.query_params)
        selection, _, _ = analysis_request_build(project=project, params=params)
        agreement = agreement_build(
            selection=selection,
            distances=distances_parse(chosen["distances"]),
            max_slow_pairs=limits.AGREEMENT_SLOW_PAIRS_MAX,
        )
        return Response(AgreementOutputSerializer(agreement).data)
