"""The designed-studies API: the Latin-square plan, asked for or assigned (serializers_studies.py)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_studies as s
from annotations.api.manage_common import (
    E400,
    E403,
    E404,
    TAG_ASSIGNMENTS,
)
from annotations.api.permissions import AdminOrResearcherAsks, IsAdmin
from annotations.models import Project
from annotations.services.studies import DesignResult, study_assign_latin_square
from annotations.services.users import annotators_by_name
from editlab.api import validated


def _design_output(result: DesignResult) -> dict:
    plan = result.plan
    return s.DesignPlanOutputSerializer(
        {
            "design": Project.DESIGN_LATIN_SQUARE,
            "applied": result.applied,
            "created": result.created,
            "assignments": result.assignments,
            "annotators": list(plan.annotators),
            "conditions": list(plan.conditions),
            "documents": len(plan.documents),
            "segments": result.segments,
            "practice_items": result.practice_items,
            "plan_digest": result.digest,
            "per_annotator": result.per_annotator(),
            "per_document": result.per_document(),
        }
    ).data


class DesignPlanApi(APIView):
    permission_classes = [IsAuthenticated, AdminOrResearcherAsks]

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="The Latin-square plan for these annotators and conditions; nothing is assigned (admins, researchers)",
        parameters=[s.DesignPlanQueryInputSerializer],
        responses={200: s.DesignPlanOutputSerializer, **E400, **E403, **E404},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.DesignPlanQueryInputSerializer, request.query_params)
        return Response(_plan(project, data))

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="The same plan for lists too long for a URL (a POST that writes nothing; admins, researchers)",
        request=s.DesignPlanInputSerializer,
        responses={200: s.DesignPlanOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.DesignPlanInputSerializer, request.data)
        return Response(_plan(project, data))


def _plan(project: Project, data: dict) -> dict:
    result = study_assign_latin_square(
        project=project,
        annotators=annotators_by_name(usernames=data["annotators"]),
        conditions=data["conditions"],
        apply=False,
    )
    return _design_output(result)


class DesignAssignApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="Assign the Latin-square plan (admins); with plan_digest only if the plan is still the one shown",
        request=s.DesignAssignInputSerializer,
        responses={201: s.DesignPlanOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.DesignAssignInputSerializer, request.data)
        result = study_assign_latin_square(
            project=project,
            annotators=annotators_by_name(usernames=data["annotators"]),
            conditions=data["conditions"],
            apply=True,
            expected_digest=data.get("plan_digest", ""),
        )
        return Response(_design_output(result), status=status.HTTP_201_CREATED)
