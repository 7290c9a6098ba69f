"""python manage.py copy_project --from NAME --to NAME [--no-practice]"""

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Project
from annotations.services.copying import project_copy_items
from annotations.services.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Copy a project's items (documents, outputs, highlights, practice flags, instructions, references; "
        "no post-edits) into a new project, e.g. to re-run an imported study with live annotators."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--from", dest="source", required=True, help="the project to copy")
        parser.add_argument("--to", dest="target", required=True, help="the new project's name")
        parser.add_argument("--no-practice", action="store_true", help="leave the practice items out")

    def handle(self, *args, source: str, target: str, no_practice: bool, **options) -> None:
        found = Project.objects.filter(name=source).first()
        if found is None:
            raise CommandError(f"--from: no project called {source!r}")
        try:
            result = project_copy_items(source=found, target_name=target, include_practice=not no_practice)
        except ServiceError as exc:
            raise CommandError(f"--to: {str(exc).removeprefix('name: ')}") from None
        practice = f", {result.practice_items} of them practice" if result.practice_items else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"Copied {result.items} items{practice} from {found.name!r} into the new project "
                f"{result.project.name!r} (no post-edits). Next: make_batches and assign, or assign --design latin-square."
            )
        )
