"""The analysis API: the analyze command's JSON for a selection of a project's post-edits.

Read-only (GET), admins and researchers only (annotators 403); session or token
authentication. The same service (metrics.reports) serves the report page and the
command, so the three agree.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.permissions import AdminWritesResearcherReads
from editlab.api import validated
from editlab.errors import error_responses
from metrics.analysis_options import AnalysisOptionsSerializer, analysis_request_build
from metrics.api.serializers_scenarios import AnalysisWithScenariosOutputSerializer
from metrics.reports import report_build
from metrics.scenario_report import REFERENCE_PARAM, scenario_reference_from_query
from metrics.selectors import project_get


class ProjectAnalysisApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=["analysis"],
        operation_id="project_analysis",
        summary="Which metric predicts the measured effort, for a selection of the project's post-edits",
        description=(
            "Per metric: Pearson r (p, 95% CI, per annotator), Spearman rho, Kendall tau, K-NN R² (the published "
            "80/20 split as scikit-learn computes it, the tie-averaged split, and repeated 5-fold CV with random "
            "folds, folds grouped by item and by annotator), Williams's test and a paired bootstrap over items "
            "against the best metric, a mixed-effects model (annotator and item random intercepts; R² marginal "
            "and conditional); the metric x metric matrix; the effort model (OLS on metrics, text lengths and "
            "annotator) with drop-column contributions and grouped CV; for active_time, the idle-threshold "
            "sensitivity; when the edits were made under conditions, effort per condition (n, mean, median, "
            "item-bootstrap 95% CI, words per hour) and each condition's effect against the baseline in a mixed "
            "model (and on log time with log_time). Practice items' post-edits are left out unless include_practice. "
            "When the project has synthetic edits (an LLM's, by scenario): their distance distributions per scenario "
            "and each scenario against the reference scenario (`reference`, default normal: OLS line, paired "
            "difference with a bootstrap CI, one-sided Wilcoxon test), and each one's correlation with human effort. "
            "Edge cases (too few edits, constant or missing values, one annotator, post-edits "
            "without an event log) come back as messages."
        ),
        parameters=[
            AnalysisOptionsSerializer,
            OpenApiParameter(
                REFERENCE_PARAM,
                str,
                description="The scenario the synthetic edits' other scenarios are compared with (default normal).",
            ),
        ],
        responses={
            200: AnalysisWithScenariosOutputSerializer,
            **error_responses(
                400,
                403,
                404,
                _403="Not logged in, or not a researcher/admin.",
                _404="No such project.",
            ),
        },
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get(project_id=project_id)
        if project is None:
            raise NotFound("No such project.")
        params = validated(AnalysisOptionsSerializer, request.query_params)
        selection, settings, baseline = analysis_request_build(project=project, params=params)
        reference = scenario_reference_from_query(project=project, query=request.query_params)
        report = report_build(selection=selection, settings=settings, baseline=baseline, scenario_reference=reference)
        return Response(AnalysisWithScenariosOutputSerializer(report.to_dict()).data)
