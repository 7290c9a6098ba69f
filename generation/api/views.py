"""The generation API: a project's runs (list, start, one run, stop), who may run synthetic edits, and
an item's provenance. Admins and researchers read; admins start and stop any run, researchers
simulations where the project allows it (generation.control); annotators and anonymous callers 403."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api.manage_common import E400, E403, E404
from annotations.api.permissions import AdminOrResearcher, AdminWritesResearcherReads
from annotations.models import Item, Project
from annotations.roles import is_admin
from editlab.api import validated
from editlab.errors import error_responses
from generation.api import serializers as s
from generation.control import (
    generation_policy_set,
    generation_run_stop,
    generation_start_requested,
    researchers_simulate,
)
from generation.models import GenerationRun
from generation.selectors import RUNS_SHOWN, item_provenance, run_with_progress, runs_with_progress

TAG = ["generation"]
E409 = error_responses(409)


class RunListApi(generics.ListAPIView):
    permission_classes = [IsAuthenticated, AdminOrResearcher]
    serializer_class = s.RunOutputSerializer
    pagination_class = None

    @extend_schema(
        tags=TAG,
        summary="A project's generation runs with their progress (admins, researchers)",
        responses={200: s.RunOutputSerializer(many=True), **E403, **E404},
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        project = get_object_or_404(Project, pk=self.kwargs["project_id"])
        return runs_with_progress(project)[:RUNS_SHOWN]


class MayStartRuns(AdminOrResearcher):
    """Before the body is read: admins, and researchers of a project that lets them run simulations."""

    message = "This project does not let researchers run synthetic edits; only admins start runs here."

    def has_permission(self, request, view) -> bool:
        if is_admin(request.user):
            return True
        if not super().has_permission(request, view):
            return False
        project = Project.objects.filter(pk=view.kwargs.get("project_id")).first()
        return project is None or researchers_simulate(project)  # no project: its 404


class RunStartApi(APIView):
    permission_classes = [IsAuthenticated, MayStartRuns]

    @extend_schema(
        tags=TAG,
        summary="Start (or resume) a run: outputs of a system (admins) or synthetic edits (admins; researchers "
        "where the project allows it)",
        request=s.RunStartInputSerializer,
        responses={202: s.RunOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.RunStartInputSerializer, request.data)
        data["items"] = data["items"] or None
        if data["kind"] != GenerationRun.SIMULATION:
            data.pop("source_output")
        run = generation_start_requested(project=project, user=request.user, **data)
        return Response(s.RunOutputSerializer(run_with_progress(run.pk)).data, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(APIView):
    permission_classes = [IsAuthenticated, AdminOrResearcher]

    @extend_schema(
        tags=TAG,
        summary="One generation run and its progress (admins, researchers)",
        responses={200: s.RunOutputSerializer, **E403, **E404},
    )
    def get(self, request: Request, run_id: int) -> Response:
        get_object_or_404(GenerationRun, pk=run_id)
        return Response(s.RunOutputSerializer(run_with_progress(run_id)).data)


class RunStopApi(APIView):
    permission_classes = [IsAuthenticated, AdminOrResearcher]

    @extend_schema(
        tags=TAG,
        summary="Stop a queued or running run; what it stored stays (whoever may start it)",
        request=None,
        responses={200: s.RunOutputSerializer, **E403, **E404, **E409},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(GenerationRun.objects.select_related("project"), pk=run_id)
        generation_run_stop(run=run, user=request.user)
        return Response(s.RunOutputSerializer(run_with_progress(run_id)).data)


class PolicyApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAG,
        summary="Whether researchers may run synthetic edits on the project (admins, researchers)",
        responses={200: s.PolicySerializer, **E403, **E404},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        return Response({"researchers_simulate": researchers_simulate(project)})

    @extend_schema(
        tags=TAG,
        summary="Let researchers run synthetic edits, or not (admins)",
        request=s.PolicySerializer,
        responses={200: s.PolicySerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.PolicySerializer, request.data)
        policy = generation_policy_set(
            project=project, researchers_simulate=data["researchers_simulate"], user=request.user
        )
        return Response({"researchers_simulate": policy.researchers_simulate})


class ItemProvenanceApi(APIView):
    permission_classes = [IsAuthenticated, AdminOrResearcher]

    @extend_schema(
        tags=TAG,
        summary="How an item's generated outputs and synthetic edits were made (admins, researchers); no API key",
        responses={200: s.ItemProvenanceOutputSerializer, **E403, **E404},
    )
    def get(self, request: Request, project_id: int, item_id: int) -> Response:
        item = get_object_or_404(Item, pk=item_id, project_id=project_id)
        body = {
            "item": item.pk,
            "external_id": item.external_id,
            "outputs": item.outputs if isinstance(item.outputs, dict) else {},
            "records": item_provenance(item),
        }
        return Response(s.ItemProvenanceOutputSerializer(body).data)
