"""The projects API: list, one project, create, update, copy, progress (serializers_projects.py)."""

import json

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_projects as s
from annotations.api.manage_common import (
    E400,
    E403,
    E404,
    TAG_PROJECTS,
    ReaderContextMixin,
    reading,
)
from annotations.api.permissions import AdminWritesResearcherReads, HasRole, IsAdmin
from annotations.models import Project
from annotations.selectors import visible_projects
from annotations.selectors_progress import project_progress
from annotations.services.copying import project_copy_items
from annotations.services.projects import project_create, project_update
from editlab.api import validated


def _project_for(request: Request, project_id: int) -> Project:
    return get_object_or_404(visible_projects(user=request.user), pk=project_id)


@extend_schema(
    tags=TAG_PROJECTS,
    summary="List projects (annotators: the projects they have work in)",
    responses={200: s.ProjectOutputSerializer, **E403, **E404},  # 404: a page beyond the last
)
class ProjectListApi(ReaderContextMixin, generics.ListAPIView):
    permission_classes = [IsAuthenticated, HasRole]
    serializer_class = s.ProjectOutputSerializer

    def get_queryset(self) -> QuerySet:
        return visible_projects(user=self.request.user).order_by("name")


class ProjectDetailApi(APIView):
    permission_classes = [IsAuthenticated, HasRole]

    @extend_schema(tags=TAG_PROJECTS, summary="One project", responses={200: s.ProjectOutputSerializer, **E403, **E404})
    def get(self, request: Request, project_id: int) -> Response:
        return Response(s.ProjectOutputSerializer(_project_for(request, project_id), context=reading(request)).data)


class ProjectCreateApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Create a project (admins)",
        request=s.ProjectCreateInputSerializer,
        responses={201: s.ProjectOutputSerializer, **E400, **E403},
    )
    def post(self, request: Request) -> Response:
        data = _project_fields(request, s.ProjectCreateInputSerializer)
        project = project_create(**data)
        return Response(
            s.ProjectOutputSerializer(_project_for(request, project.pk), context=reading(request)).data,
            status=status.HTTP_201_CREATED,
        )


class ProjectUpdateApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Change a project's settings (admins); absent fields are kept",
        request=s.ProjectUpdateInputSerializer,
        responses={200: s.ProjectOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = _project_for(request, project_id)
        data = _project_fields(request, s.ProjectUpdateInputSerializer)
        project_update(project=project, **data)
        return Response(s.ProjectOutputSerializer(_project_for(request, project_id), context=reading(request)).data)


def _project_fields(request: Request, serializer_class) -> dict:
    data = dict(validated(serializer_class, request.data))
    if "instructions_file" in data:
        data["instructions_file"] = json.dumps(data["instructions_file"])
        data["instructions_filename"] = "instructions_file"
    return data


class ProjectCopyApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Copy a project's items into a new project (admins); no post-edits, e.g. to re-run a study live",
        request=s.ProjectCopyInputSerializer,
        responses={201: s.ProjectCopyOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        source = get_object_or_404(Project, pk=project_id)
        data = validated(s.ProjectCopyInputSerializer, request.data)
        result = project_copy_items(source=source, target_name=data["name"], include_practice=data["include_practice"])
        output = {
            "project": _project_for(request, result.project.pk),
            "items": result.items,
            "practice_items": result.practice_items,
        }
        return Response(
            s.ProjectCopyOutputSerializer(output, context=reading(request)).data, status=status.HTTP_201_CREATED
        )


class ProjectProgressApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Progress per annotator and per batch (admins, researchers)",
        responses={200: s.ProjectProgressOutputSerializer, **E403, **E404},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        return Response(s.ProjectProgressOutputSerializer(project_progress(project=project)).data)
