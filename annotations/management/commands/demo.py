"""Creates the demo accounts (and, once, a demo project) for the quick start."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotations.roles import set_role

DEMO_ACCOUNTS = (
    ("admin", "admin", "editlab-admin"),
    ("annotator", "annotator", "editlab-annotator"),
    ("researcher", "researcher", "editlab-researcher"),
)


class Command(BaseCommand):
    help = "Create demo accounts (admin, annotator, researcher) and a demo project; prints the passwords."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        User = get_user_model()
        for username, role, password in DEMO_ACCOUNTS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.save()
            set_role(user, role)
        from annotations.demo import demo_project

        project = demo_project(annotator=User.objects.get(username="annotator"))
        self.stdout.write("Demo accounts (username / password):")
        for username, role, password in DEMO_ACCOUNTS:
            self.stdout.write(f"  {role:<11} {username} / {password}")
        if project is not None:
            self.stdout.write(f"Demo project: {project.name!r}")
