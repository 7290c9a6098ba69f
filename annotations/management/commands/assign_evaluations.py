"""Make pending error-span evaluations for raters (annotations.services.evaluation_task.evaluation_assign).

python manage.py assign_evaluations --project NAME --raters a,b --systems sysA,sysB [--protocol esa] [--prefill]
python manage.py assign_evaluations --project NAME --raters a,b --post-edits [--protocol mqm]
"""

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Project
from annotations.services.errors import ServiceError
from annotations.services.evaluation_task import evaluation_assign
from annotations.services.users import annotators_by_name


def _names(value: str | None) -> list[str]:
    return [name.strip() for name in (value or "").split(",") if name.strip()]


class Command(BaseCommand):
    help = (
        "Give every rater an evaluation of each item's output of the named systems, or of every submitted "
        "post-edit they did not write (re-runnable: evaluations a rater has are kept)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--raters", required=True, help="comma-separated annotator usernames")
        parser.add_argument("--systems", help="comma-separated output names (keys of the items' outputs)")
        parser.add_argument("--post-edits", action="store_true", help="evaluate the submitted post-edits instead")
        parser.add_argument(
            "--protocol", choices=["mqm", "esa"], default="mqm", help="esa: a 0-100 score after the spans"
        )
        parser.add_argument("--condition", default="", help="the condition's name, stored with each evaluation")
        parser.add_argument(
            "--prefill", action="store_true", help="ESA^AI: prefill each output's highlights as spans to check"
        )

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project called {options['project']!r}")
        try:
            raters = annotators_by_name(usernames=_names(options["raters"]))
            made = evaluation_assign(
                project=project,
                raters=raters,
                systems=_names(options["systems"]),
                post_edits=options["post_edits"],
                protocol=options["protocol"],
                condition=options["condition"],
                prefill=options["prefill"],
            )
        except ServiceError as exc:
            raise CommandError(f"--{exc}") from None
        self.stdout.write(f"{made} evaluation{'s' if made != 1 else ''} made for {len(raters)} rater(s).")
