"""The management API: projects, items, batches, assignment, progress, users' roles.

One view per operation; explicit input/output serializers; the services do the work (a service's
refusal, ServiceError, is a 400 in the API's error shape: editlab/errors.py).
Permissions (annotations/api/permissions.py): admins everything; researchers read
everything and change nothing (403); annotators read their own assignments and the
projects they work in (anything else 404, or 403 for admin-only lists); anonymous 403.
"""

import json

from django.contrib.auth import get_user_model
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_manage as s
from annotations.api.permissions import AdminOrResearcherAsks, AdminWritesResearcherReads, HasRole, IsAdmin
from annotations.models import Assignment, Item, Project
from annotations.roles import can_read_all, role_of
from annotations.selectors import batch_rows, visible_projects
from annotations.selectors_progress import project_progress
from annotations.services.assignment import WithdrawResult, assignment_reassign, assignment_withdraw, batch_assign
from annotations.services.batches import batch_make
from annotations.services.copying import project_copy_items
from annotations.services.errors import ServiceError
from annotations.services.items import item_create_bulk
from annotations.services.projects import project_create, project_update
from annotations.services.studies import DesignResult, study_assign_latin_square
from annotations.services.users import annotators_by_name, user_add, user_set_role
from editlab.api import validated
from editlab.errors import error_responses

User = get_user_model()

TAG_PROJECTS = ["projects"]
TAG_ASSIGNMENTS = ["assignments"]
TAG_USERS = ["users"]

E400 = error_responses(400)
E403 = error_responses(403)
E404 = error_responses(404)


def _project_for(request: Request, pk: int) -> Project:
    return get_object_or_404(visible_projects(user=request.user), pk=pk)


def _reading(request: Request) -> dict:
    """The serializers' context: admins and researchers see a study's design, annotators only their work."""
    return {"reader": can_read_all(request.user), "request": request}


class ReaderContextMixin(generics.GenericAPIView):
    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), **_reading(self.request)}


# --------------------------------------------------------------------------- projects


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
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.ProjectOutputSerializer(_project_for(request, pk), context=_reading(request)).data)


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
            s.ProjectOutputSerializer(_project_for(request, project.pk), context=_reading(request)).data,
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
    def post(self, request: Request, pk: int) -> Response:
        project = _project_for(request, pk)
        data = _project_fields(request, s.ProjectUpdateInputSerializer)
        project_update(project=project, **data)
        return Response(s.ProjectOutputSerializer(_project_for(request, pk), context=_reading(request)).data)


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
    def post(self, request: Request, pk: int) -> Response:
        source = get_object_or_404(Project, pk=pk)
        data = validated(s.ProjectCopyInputSerializer, request.data)
        result = project_copy_items(source=source, target_name=data["name"], include_practice=data["include_practice"])
        output = {
            "project": _project_for(request, result.project.pk),
            "items": result.items,
            "practice_items": result.practice_items,
        }
        return Response(
            s.ProjectCopyOutputSerializer(output, context=_reading(request)).data, status=status.HTTP_201_CREATED
        )


class ProjectProgressApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Progress per annotator and per batch (admins, researchers)",
        responses={200: s.ProjectProgressOutputSerializer, **E403, **E404},
    )
    def get(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
        return Response(s.ProjectProgressOutputSerializer(project_progress(project=project)).data)


# --------------------------------------------------------------------------- items


@extend_schema(
    tags=TAG_PROJECTS,
    summary="List a project's items (admins, researchers)",
    responses={200: s.ItemOutputSerializer, **E403, **E404},
)
class ItemListApi(generics.ListAPIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]
    serializer_class = s.ItemOutputSerializer

    def get_queryset(self) -> QuerySet:
        project = get_object_or_404(Project, pk=self.kwargs["pk"])
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
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
        data = validated(s.ItemBulkCreateInputSerializer, request.data)
        result = item_create_bulk(project=project, items=data["items"])
        output = s.ItemBulkCreateOutputSerializer(result)
        return Response(output.data, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


# --------------------------------------------------------------------------- batches


class BatchListApi(APIView):
    permission_classes = [IsAuthenticated, AdminWritesResearcherReads]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="A project's batches with their annotators (admins, researchers)",
        responses={200: s.BatchOutputSerializer(many=True), **E403, **E404},
    )
    def get(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
        return Response(s.BatchOutputSerializer(batch_rows(project=project), many=True).data)


class BatchMakeApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_PROJECTS,
        summary="Cut the project's unbatched items into batches (admins)",
        request=s.BatchMakeInputSerializer,
        responses={200: s.BatchMakeOutputSerializer, 201: s.BatchMakeOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
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
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
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


# --------------------------------------------------------------------------- designs


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
    def get(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
        data = validated(s.DesignPlanQueryInputSerializer, request.query_params)
        return Response(_plan(project, data))

    @extend_schema(
        tags=TAG_ASSIGNMENTS,
        summary="The same plan for lists too long for a URL (a POST that writes nothing; admins, researchers)",
        request=s.DesignPlanInputSerializer,
        responses={200: s.DesignPlanOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
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
    def post(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(Project, pk=pk)
        data = validated(s.DesignAssignInputSerializer, request.data)
        result = study_assign_latin_square(
            project=project,
            annotators=annotators_by_name(usernames=data["annotators"]),
            conditions=data["conditions"],
            apply=True,
            expected_digest=data.get("plan_digest", ""),
        )
        return Response(_design_output(result), status=status.HTTP_201_CREATED)


# --------------------------------------------------------------------------- assignments


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
    def get(self, request: Request, pk: int) -> Response:
        assignment = get_object_or_404(_assignments_for(request.user), pk=pk)
        return Response(s.AssignmentOutputSerializer(assignment, context=_reading(request)).data)


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


# --------------------------------------------------------------------------- users


def _user_output(user) -> dict:
    return s.UserOutputSerializer(
        {
            "id": user.pk,
            "username": user.username,
            "role": role_of(user),
            "is_active": user.is_active,
            "is_staff": user.is_staff,
            "last_login": user.last_login,
        }
    ).data


class UserListApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_USERS,
        summary="Users and their roles (admins)",
        responses={200: s.UserOutputSerializer(many=True), **E403},
    )
    def get(self, request: Request) -> Response:
        users = User.objects.order_by("username").prefetch_related(Prefetch("groups"))
        return Response([_user_output(user) for user in users])


class UserAddApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_USERS,
        summary="Create a user with a role, or update an existing one (admins)",
        request=s.UserAddInputSerializer,
        responses={200: s.UserOutputSerializer, 201: s.UserOutputSerializer, **E400, **E403},
    )
    def post(self, request: Request) -> Response:
        data = validated(s.UserAddInputSerializer, request.data)
        user, created = user_add(**data)
        user = User.objects.prefetch_related("groups").get(pk=user.pk)
        return Response(_user_output(user), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class UserRoleApi(APIView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        tags=TAG_USERS,
        summary="Set a user's role (admins)",
        request=s.UserRoleInputSerializer,
        responses={200: s.UserOutputSerializer, **E400, **E403, **E404},
    )
    def post(self, request: Request, pk: int) -> Response:
        user = get_object_or_404(User, pk=pk)
        data = validated(s.UserRoleInputSerializer, request.data)
        user_set_role(user=user, role=data["role"])
        return Response(_user_output(User.objects.prefetch_related("groups").get(pk=pk)))
