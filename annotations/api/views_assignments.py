"""The batches and assignments API: batches listed, cut and assigned; assignments listed, one, withdrawn,
moved (serializers_assignments.py)."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_assignments as s
from annotations.api.manage_common import (
    E400,
    E403,
    E404,
    TAG_ASSIGNMENTS,
    TAG_PROJECTS,
    ReaderContextMixin,
    reading,
)
from annotations.api.permissions import AdminWritesResearcherReads, HasRole, IsAdmin
from annotations.models import Assignment, Project
from annotations.selectors import batch_rows
from annotations.services.assignment import WithdrawResult, assignment_reassign, assignment_withdraw, batch_assign
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError
from annotations.services.users import annotators_by_name
from editlab.api import validated


class BatchListApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="A project's batches with their annotators (admins, researchers)",
        responses={200: s.BatchOutputSerializer(many=True), **E403, **E404},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        return Response(s.BatchOutputSerializer(batch_rows(project=project), many=True).data)


class BatchMakeApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Cut the project's unbatched items into batches (admins)",
        request=s.BatchMakeInputSerializer,
        responses={200: s.BatchMakeOutputSerializer, 201: s.BatchMakeOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.BatchMakeInputSerializer, request.data)
        batches = batch_make(project=project, **data)
        output = s.BatchMakeOutputSerializer(
            {"batches": batch_rows(project=project, batches=batches) if batches else []}
        )
        return Response(output.data, status=status.HTTP_201_CREATED if batches else status.HTTP_200_OK)


class BatchAssignApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Assign batches with overlap k (admins); re-running creates no duplicates",
        request=s.BatchAssignInputSerializer,
        responses={200: s.BatchAssignOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = validated(s.BatchAssignInputSerializer, request.data)
        annotators = annotators_by_name(usernames=data["annotators"])
        batches = None
        if data.get("batches"):
            found = {b.name: b for b in project.batches.filter(name__in=data["batches"])}
            missing = [name for name in data["batches"] if name not in found]
            if missing:
                raise ServiceError(f"batches: project has no batch {', '.join(missing)}")
            batches = [found[name] for name in data["batches"]]
        result = batch_assign(
            project=project,
            annotators=annotators,
            overlap=data.get("overlap", project.overlap),
            batches=batches,
        )
        return Response(s.BatchAssignOutputSerializer(result).data)


def _assignments_for(user) -> QuerySet:
    return (
        Assignment.objects.visible_to(user)
        .select_related("item__project", "item__batch", "annotator", "post_edit")
        .order_by("item__project_id", "item__batch_id", "item__batch_position", "item__position", "id")
    )


@extend_schema(
    tags=TAG_ASSIGNMENTS,
    summary="Assignments: an annotator's own queue; admins and researchers see all",
    parameters=[s.AssignmentFilterInputSerializer],
    responses={200: s.AssignmentOutputSerializer, **E400, **E403, **E404},  # 404: a page beyond the last
)
class AssignmentListApi(ReaderContextMixin, generics.ListAPIView):
    permission_classes = [IsAuthenticated, HasRole]
    serializer_class = s.AssignmentOutputSerializer

    def get_queryset(self) -> QuerySet:
        queryset = _assignments_for(self.request.user)
        filters = validated(s.AssignmentFilterInputSerializer, self.request.query_params)
        if filters.get("project"):
            queryset = queryset.filter(item__project_id=filters["project"])
        if filters.get("status"):
            queryset = queryset.filter(status=filters["status"])
        if filters.get("annotator"):
            queryset = queryset.filter(annotator__username=filters["annotator"])
        return queryset


class AssignmentDetailApi(APIView):
    permission_classes = [IsAuthenticated, HasRole]

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="One assignment (annotators: only their own, others 404)",
        responses={200: s.AssignmentOutputSerializer, **E403, **E404},
    )
    def get(self, request: Request, assignment_id: int) -> Response:
        assignment = get_object_or_404(_assignments_for(request.user), pk=assignment_id)
        return Response(s.AssignmentOutputSerializer(assignment, context=reading(request)).data)


def _move_output(result: WithdrawResult, not_found: list[int]) -> dict:
    return s.AssignmentMoveOutputSerializer(
        {
            "withdrawn": result.withdrawn,
            "reassigned": result.reassigned,
            "kept_submitted": result.kept_submitted,
            "kept_in_progress": result.kept_in_progress,
            "skipped_already_assigned": result.skipped_already_assigned,
            "not_found": not_found,
        }
    ).data


def _existing(ids: list[int]) -> tuple[QuerySet, list[int]]:
    queryset = Assignment.objects.filter(pk__in=ids)
    found = set(queryset.values_list("pk", flat=True))
    return queryset, sorted(set(ids) - found)


class AssignmentWithdrawApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="Withdraw pending assignments (admins); submitted work is never touched",
        request=s.AssignmentMoveInputSerializer,
        responses={200: s.AssignmentMoveOutputSerializer, **E400, **E403},
    )
    def post(self, request: Request) -> Response:
        data = validated(s.AssignmentMoveInputSerializer, request.data)
        queryset, not_found = _existing(data["ids"])
        result = assignment_withdraw(assignments=queryset, force=data["force"])
        return Response(_move_output(result, not_found))


class AssignmentReassignApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="Move pending assignments to another annotator (admins)",
        request=s.AssignmentReassignInputSerializer,
        responses={200: s.AssignmentMoveOutputSerializer, **E400, **E403},
    )
    def post(self, request: Request) -> Response:
        data = validated(s.AssignmentReassignInputSerializer, request.data)
        queryset, not_found = _existing(data["ids"])
        (target,) = annotators_by_name(usernames=[data["to"]])
        result = assignment_reassign(assignments=queryset, to_annotator=target, force=data["force"])
        return Response(_move_output(result, not_found))
