"""The users API: accounts and their roles, for admins (serializers_users.py)."""

from django.contrib.auth import get_user_model
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.api import serializers_users as s
from annotations.api.manage_common import (
    E400,
    E403,
    E404,
    TAG_USERS,
)
from annotations.api.permissions import IsAdmin
from annotations.roles import role_of
from annotations.services.users import user_add, user_set_role
from editlab.api import validated

User = get_user_model()


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
    def post(self, request: Request, user_id: int) -> Response:
        user = get_object_or_404(User, pk=user_id)
        data = validated(s.UserRoleInputSerializer, request.data)
        user_set_role(user=user, role=data["role"])
        return Response(_user_output(User.objects.prefetch_related("groups").get(pk=user_id)))
