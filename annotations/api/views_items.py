"""The items API: a project's items, listed and added in bulk (serializers_items.py)."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_items as s
from annotations.api.manage_common import (
    E400,
    E403,
    E404,
    TAG_PROJECTS,
)
from annotations.api.permissions import AdminWritesResearcherReads, IsAdmin
from annotations.models import Item, Project
from annotations.services.items import item_create_bulk
from editlab.api import validated


@extend_schema(
    tags=TAG_PROJECTS,
    summary="List a project's items (admins, researchers)",
    responses={200: s.ItemOutputSerializer, **E403, **E404},
)
class ItemListApi(generics.ListAPIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]
    serializer_class = s.ItemOutputSerializer

    def get_queryset(self) -> QuerySet:
        project = get_object_or_404(Project, pk=self.kwargs["project_id"])
        return Item.objects.filter(project=project).select_related("batch", "project").order_by("position", "id")


class ItemBulkCreateApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Add items in bulk (admins); atomic, identical re-posts are skipped",
        request=s.ItemBulkCreateInputSerializer,
        responses={
            200: s.ItemBulkCreateOutputSerializer,
            201: s.ItemBulkCreateOutputSerializer,
            **E400,
            **E403,
            **E404,
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.ItemBulkCreateInputSerializer, request.data)
        result = item_create_bulk(project=project, items=data["items"])
        output = s.ItemBulkCreateOutputSerializer(result)
        return Response(output.data, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)
