"""Input and output serializers of the users API (views_users.py): accounts and their roles."""

from rest_framework import serializers

from annotations.roles import ROLES


class UserOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)
    is_active = serializers.BooleanField()
    is_staff = serializers.BooleanField()
    last_login = serializers.DateTimeField(allow_null=True)


class UserAddInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=ROLES)
    password = serializers.CharField(
        required=False,
        write_only=True,
        style={"input_type": "password"},
        help_text="Required for a new user; changes an existing user's password.",
    )
    email = serializers.EmailField(required=False)


class UserRoleInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES)
