"""python manage.py add_user NAME --role admin|annotator|researcher [--password PW]"""

from django.core.management.base import BaseCommand, CommandError

from annotations.roles import ROLES
from annotations.services.errors import ServiceError
from annotations.services.users import user_add


class Command(BaseCommand):
    help = "Create a user with a role, or update an existing user's role (and password, if given)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", help="required for a new user; changes the password of an existing one")
        parser.add_argument("--email")

    def handle(self, *args, username: str, role: str, password: str | None, email: str | None, **options) -> None:
        try:
            user, created = user_add(username=username, role=role, password=password, email=email)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        verb = "Created" if created else "Updated"
        staff = " (staff: may use the admin site)" if user.is_staff else ""
        self.stdout.write(self.style.SUCCESS(f"{verb} user {user.username} with role {role}{staff}."))
