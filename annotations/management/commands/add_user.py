"""python manage.py add_user NAME --role admin|annotator|researcher [--password PW] [--reviewer|--no-reviewer]"""

from argparse import BooleanOptionalAction

from django.core.management.base import BaseCommand, CommandError

from annotations.roles import ROLES, set_reviewer
from annotations.services.errors import ServiceError
from annotations.services.users import user_add


class Command(BaseCommand):
    help = "Create a user with a role, or update an existing user's role (and password, if given)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", help="required for a new user; changes the password of an existing one")
        parser.add_argument("--email")
        parser.add_argument(
            "--reviewer",
            action=BooleanOptionalAction,
            default=None,
            help="give the user the reviewer group (beside the role), or take it away; unchanged when not given",
        )

    def handle(
        self,
        *args,
        username: str,
        role: str,
        password: str | None,
        email: str | None,
        reviewer: bool | None = None,
        **options,
    ) -> None:
        try:
            user, created = user_add(username=username, role=role, password=password, email=email)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        if reviewer is not None:
            set_reviewer(user, reviewer)
        verb = "Created" if created else "Updated"
        staff = " (staff: may use the admin site)" if user.is_staff else ""
        reviews = {True: ", a reviewer", False: ", not a reviewer", None: ""}[reviewer]
        self.stdout.write(self.style.SUCCESS(f"{verb} user {user.username} with role {role}{reviews}{staff}."))
