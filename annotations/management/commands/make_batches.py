"""python manage.py make_batches --project NAME --size N [--shuffle SEED]"""

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Project
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError


class Command(BaseCommand):
    help = "Cut a project's unbatched items into batches of N, in import order or a seeded random order."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--size", required=True, type=int, help="items per batch (the last may be smaller)")
        parser.add_argument("--shuffle", type=int, metavar="SEED", help="shuffle the items with this seed first")

    def handle(self, *args, project: str, size: int, shuffle: int | None, **options) -> None:
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"--project: no project called {project!r}")
        try:
            batches = batch_make(project=found, size=size, shuffle_seed=shuffle)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        if not batches:
            self.stdout.write(f"Project {found.name!r} has no unbatched items; no batch made.")
            return
        items = sum(batch.items.count() for batch in batches)
        order = f"shuffled with seed {shuffle}" if shuffle is not None else "in import order"
        self.stdout.write(
            self.style.SUCCESS(
                f"Made {len(batches)} batches ({batches[0].name} … {batches[-1].name}) of {items} items, {order}."
            )
        )
