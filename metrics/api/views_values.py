"""The metric-values API: stored values, compute jobs, exports.

Admins and researchers only (annotators 403, anonymous 401/403); session or token
authentication. Starting a job is allowed to researchers: metric values are derived data,
recomputable at any time, and computing them is the researcher's part of the workflow.
"""

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.permissions import AdminOrResearcher
from annotations.models import Project
from editlab.api import validated
from editlab.errors import error_responses
from metrics.api import serializers_values as s
from metrics.exports import FORMATS, export_filename, export_spec, export_stream, get_format
from metrics.jobs import metric_job_create, metric_job_retry
from metrics.models import MetricJob, MetricValue
from metrics.selectors_jobs import job_activity

TAGS = ["metric values"]
ERRORS = error_responses(400, 403, _403="Not logged in, or not a researcher or admin.")
NOT_FOUND = error_responses(404, _404="No such project or job.")


class ValuesApi(APIView):
    permission_classes = [IsAuthenticated, AdminOrResearcher]


class ValuesPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


def _values(filters: dict) -> QuerySet:
    qs = MetricValue.objects.all()
    if "project" in filters:
        qs = qs.filter(post_edit__assignment__item__project_id=filters["project"])
    if "metric" in filters:
        qs = qs.filter(metric=filters["metric"])
    if "variant" in filters:
        qs = qs.filter(variant=filters["variant"])
    if "annotator" in filters:
        qs = qs.filter(post_edit__assignment__annotator__username=filters["annotator"])
    return qs.order_by("post_edit_id", "metric", "variant").values(
        "id",
        "post_edit_id",
        "post_edit__assignment__item__project_id",
        "post_edit__assignment__item__external_id",
        "post_edit__assignment__annotator__username",
        "metric",
        "variant",
        "value",
        "metric_version",
        "computed_at",
    )


def _job_data(job: MetricJob) -> dict:
    return s.MetricJobOutputSerializer(job, context={"activity": job_activity(job)}).data


class MetricValueListApi(ValuesApi):
    @extend_schema(
        tags=TAGS,
        summary="List stored metric values (paginated), filtered by project, metric, variant, annotator",
        parameters=[s.MetricValueFilterSerializer, OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: s.MetricValuePageOutputSerializer, **ERRORS, **NOT_FOUND},  # 404: a page beyond the last
    )
    def get(self, request: Request) -> Response:
        filters = validated(s.MetricValueFilterSerializer, request.query_params)
        paginator = ValuesPagination()
        page = paginator.paginate_queryset(_values(filters), request, view=self)
        return paginator.get_paginated_response(s.MetricValueOutputSerializer(page, many=True).data)


class MetricJobCreateApi(ValuesApi):
    @extend_schema(
        tags=TAGS,
        summary="Start a job computing the project's missing and stale metric values",
        description="Runs in the background (in-process with the default backend: the job is finished in the "
        "answer). Poll the job's URL for progress.",
        request=s.MetricJobInputSerializer,
        responses={202: s.MetricJobOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.MetricJobInputSerializer, request.data)
        job = metric_job_create(
            project=project,
            user=request.user,
            metrics=data["metrics"] or None,
            variants=data["variants"],
        )
        return Response(_job_data(job), status=status.HTTP_202_ACCEPTED)


class MetricJobDetailApi(ValuesApi):
    @extend_schema(
        tags=TAGS,
        summary="A metric job's status and progress",
        responses={200: s.MetricJobOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(MetricJob.objects.select_related("created_by"), pk=job_id)
        return Response(_job_data(job))


class MetricJobRetryApi(ValuesApi):
    @extend_schema(
        tags=TAGS,
        summary="Retry a failed metric job (computes only what is still missing)",
        request=None,
        responses={202: s.MetricJobOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def post(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(MetricJob, pk=job_id)
        job = metric_job_retry(job=job)
        return Response(_job_data(job), status=status.HTTP_202_ACCEPTED)


class _FormatIsOurs(DefaultContentNegotiation):
    """`?format=` names the export's file format here, not a DRF renderer."""

    class settings:  # noqa: N801 - mirrors api_settings' attribute
        URL_FORMAT_OVERRIDE = None


class ProjectExportApi(ValuesApi):
    content_negotiation_class = _FormatIsOurs

    @extend_schema(
        tags=TAGS,
        summary="Download one row per submitted post-edit with effort figures and every metric value (streamed)",
        parameters=[s.ExportInputSerializer],
        responses={
            (200, FORMATS["csv"].content_type.split(";")[0]): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, FORMATS["parquet"].content_type): OpenApiTypes.BINARY,
            **ERRORS,
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, project_id: int):
        project = get_object_or_404(Project, pk=project_id)
        params = validated(s.ExportInputSerializer, request.query_params)
        fmt = params["format"]
        spec = export_spec(project=project, include_practice=params["include_practice"])
        response = StreamingHttpResponse(export_stream(spec, fmt), content_type=get_format(fmt).content_type)
        response["Content-Disposition"] = f'attachment; filename="{export_filename(project, fmt)}"'
        return response
