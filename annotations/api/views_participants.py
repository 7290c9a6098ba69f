"""The participation API: a project's participation links (list, open, revoke) and its participants.

One view per operation; the services do the work (annotations/services/participants.py). Admins
open and revoke links; researchers read links and participants; annotators (participants among
them) and anonymous callers get 403.
"""

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_participants as s
from annotations.api.permissions import AdminWritesResearcherReads, IsAdmin
from annotations.models import JoinLink, Project
from annotations.selectors_crowd import answers_by_user, quality_summaries
from annotations.selectors_participants import project_join_links, project_participants
from annotations.services.join_links import join_link_open, join_link_revoke
from editlab.api import validated
from editlab.errors import error_responses

TAGS = ["participants"]


def _project(project_id: int) -> Project:
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        raise NotFound("No such project.")
    return project


def _link_output(request: Request, project: Project, pk: int) -> dict:
    link = project_join_links(project=project).get(pk=pk)
    return s.JoinLinkOutputSerializer(link, context={"request": request}).data


class JoinLinkListApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAGS,
        summary="A project's participation links, newest first (admins, researchers)",
        responses={200: s.JoinLinkOutputSerializer(many=True), **error_responses(403, 404)},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = _project(project_id)
        links = project_join_links(project=project)
        return Response(s.JoinLinkOutputSerializer(links, many=True, context={"request": request}).data)


class JoinLinkOpenApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAGS,
        summary="Open a participation link (admins); refused while another is open or the design cannot take participants",
        request=s.JoinLinkOpenInputSerializer,
        responses={201: s.JoinLinkOutputSerializer, **error_responses(400, 403, 404)},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = _project(project_id)
        data = validated(s.JoinLinkOpenInputSerializer, request.data)
        link = join_link_open(project=project, **data)
        return Response(_link_output(request, project, link.pk), status=status.HTTP_201_CREATED)


class JoinLinkRevokeApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAGS,
        summary="Revoke a participation link (admins): nobody new joins; who joined keeps working. Idempotent",
        request=None,
        responses={200: s.JoinLinkOutputSerializer, **error_responses(403, 404)},
    )
    def post(self, request: Request, project_id: int, link_id: int) -> Response:
        project = _project(project_id)
        link = JoinLink.objects.filter(pk=link_id, project=project).first()
        if link is None:
            raise NotFound("No such participation link in this project.")
        link = join_link_revoke(join_link=link)
        return Response(_link_output(request, project, link.pk))


@extend_schema(
    tags=TAGS,
    summary="A project's participants by slot, with their platform ids and progress (admins, researchers)",
    responses={200: s.ParticipantOutputSerializer, **error_responses(403, 404)},
)
class ParticipantListApi(generics.ListAPIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]
    serializer_class = s.ParticipantOutputSerializer

    def get_queryset(self) -> QuerySet:
        return project_participants(project=_project(self.kwargs["project_id"]))

    def list(self, request: Request, *args, **kwargs) -> Response:
        project = _project(self.kwargs["project_id"])
        page = self.paginate_queryset(self.get_queryset())
        people = list(page) if page is not None else list(self.get_queryset())
        context = {
            **self.get_serializer_context(),
            "quality": quality_summaries(project=project, participants=people),
            "answers": answers_by_user(project=project, user_ids=[p.user_id for p in people]),
        }
        data = s.ParticipantOutputSerializer(people, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)
