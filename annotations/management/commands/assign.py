"""Assign a project's batches with overlap, or withdraw / reassign open assignments.

python manage.py assign --project NAME --annotators a,b,c --overlap K [--batches "batch 001,batch 002"]
python manage.py assign --project NAME --annotators a,b,c --design latin-square --conditions x,y,z [--apply]
python manage.py assign --project NAME --withdraw-from bob [--batches ...] [--force]
python manage.py assign --project NAME --reassign-from bob --to carol [--batches ...] [--force]
"""

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Assignment, Project
from annotations.services.assignment import assignment_reassign, assignment_withdraw, batch_assign
from annotations.services.errors import ServiceError
from annotations.services.studies import DesignResult, study_assign_latin_square
from annotations.services.users import annotators_by_name


def _names(value: str | None) -> list[str]:
    return [name.strip() for name in (value or "").split(",") if name.strip()]


class Command(BaseCommand):
    help = (
        "Give every batched item to K distinct annotators (load balanced, whole batches, re-runnable), "
        "or withdraw / reassign an annotator's pending assignments."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--annotators", help="comma-separated usernames to assign to")
        parser.add_argument("--overlap", type=int, help="annotators per item (default: the project's overlap)")
        parser.add_argument("--batches", help="comma-separated batch names (default: all the project's batches)")
        parser.add_argument(
            "--design",
            choices=["simple", "latin-square"],
            default="simple",
            help="simple: overlap K over batches; latin-square: every annotator edits every document, "
            "conditions counterbalanced (shows the plan; --apply makes the assignments)",
        )
        parser.add_argument("--conditions", help="with --design latin-square: comma-separated declared conditions")
        parser.add_argument("--apply", action="store_true", help="with --design latin-square: make the assignments")
        parser.add_argument("--withdraw-from", metavar="USER", help="withdraw this annotator's pending assignments")
        parser.add_argument("--reassign-from", metavar="USER", help="move this annotator's pending assignments")
        parser.add_argument("--to", metavar="USER", help="with --reassign-from: the annotator who takes them")
        parser.add_argument(
            "--force", action="store_true", help="also withdraw/reassign in-progress work (discards its draft)"
        )

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project called {options['project']!r}")
        modes = [bool(options["annotators"]), bool(options["withdraw_from"]), bool(options["reassign_from"])]
        if sum(modes) != 1:
            raise CommandError("give exactly one of --annotators, --withdraw-from, --reassign-from")
        if options["design"] == "latin-square" and not options["annotators"]:
            raise CommandError("--design latin-square needs --annotators")
        if options["design"] != "latin-square" and (options["conditions"] or options["apply"]):
            raise CommandError("--conditions and --apply go with --design latin-square")
        batches = self._batches(project, options["batches"])
        try:
            if options["design"] == "latin-square":
                if batches is not None or options["overlap"] is not None:
                    raise CommandError(
                        "--batches and --overlap do not apply to a Latin square (every annotator, every document)"
                    )
                self._design(project, options)
            elif options["annotators"]:
                self._assign(project, options, batches)
            else:
                self._move(project, options, batches)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None

    def _batches(self, project: Project, value: str | None):
        names = _names(value)
        if not names:
            return None
        found = {batch.name: batch for batch in project.batches.filter(name__in=names)}
        missing = [name for name in names if name not in found]
        if missing:
            raise CommandError(f"--batches: project {project.name!r} has no batch {', '.join(missing)}")
        return [found[name] for name in names]

    def _assign(self, project: Project, options: dict, batches) -> None:
        annotators = annotators_by_name(usernames=_names(options["annotators"]))
        overlap = options["overlap"] if options["overlap"] is not None else project.overlap
        result = batch_assign(project=project, annotators=annotators, overlap=overlap, batches=batches)
        loads = ", ".join(f"{name} +{count}" for name, count in result.per_annotator.items())
        self.stdout.write(
            self.style.SUCCESS(
                f"Created {result.created} assignments over {result.batches} batches (overlap {overlap}): {loads}. "
                f"Skipped {result.skipped_full_items} items that already had {overlap} annotators."
            )
        )
        unbatched = project.items.unbatched().count()
        if unbatched:
            self.stdout.write(f"Note: {unbatched} items are in no batch yet (make_batches first); none assigned.")

    def _design(self, project: Project, options: dict) -> None:
        if not options["conditions"]:
            raise CommandError("--conditions: name the declared conditions to counterbalance, e.g. --conditions a,b,c")
        annotators = annotators_by_name(usernames=_names(options["annotators"]))
        result = study_assign_latin_square(
            project=project, annotators=annotators, conditions=_names(options["conditions"]), apply=options["apply"]
        )
        self.stdout.write(plan_text(result))
        if result.applied:
            self.stdout.write(self.style.SUCCESS(f"Created {result.created} assignments."))
        else:
            self.stdout.write("Nothing assigned yet: run again with --apply to make these assignments.")

    def _move(self, project: Project, options: dict, batches) -> None:
        source_name = options["withdraw_from"] or options["reassign_from"]
        assignments = Assignment.objects.filter(item__project=project, annotator__username=source_name)
        if batches is not None:
            assignments = assignments.filter(item__batch__in=batches)
        if options["withdraw_from"]:
            result = assignment_withdraw(assignments=assignments, force=options["force"])
            done = f"Withdrew {result.withdrawn} assignments of {source_name}"
        else:
            if not options["to"]:
                raise CommandError("--reassign-from needs --to USER")
            (target,) = annotators_by_name(usernames=[options["to"]])
            result = assignment_reassign(assignments=assignments, to_annotator=target, force=options["force"])
            done = (
                f"Moved {result.reassigned} assignments from {source_name} to {target.username}"
                f" ({result.skipped_already_assigned} left: {target.username} already had those items)"
            )
        kept = f"kept {result.kept_submitted} submitted/skipped and {result.kept_in_progress} in progress"
        hint = " (use --force to include in-progress work)" if result.kept_in_progress else ""
        self.stdout.write(self.style.SUCCESS(f"{done}; {kept}{hint}."))


def plan_text(result: DesignResult) -> str:
    """The plan as the annotators will get it: one line per annotator, documents in queue order."""
    plan = result.plan
    lines = [
        f"Latin square: {len(plan.annotators)} annotators x {len(plan.documents)} documents "
        f"({result.segments} segments) x {len(plan.conditions)} conditions ({', '.join(plan.conditions)}); "
        f"{result.practice_items} practice item(s) first for everyone."
    ]
    for row in plan.rows():
        shares = ", ".join(f"{name} {count}" for name, count in row["conditions"].items())
        queue = " ".join(f"{cell['document']}[{cell['condition']}]" for cell in row["documents"])
        lines.append(f"  {row['annotator']}: {shares} | {queue}")
    for document, counts in plan.per_document().items():
        lines.append(f"  document {document}: " + ", ".join(f"{c} {counts.get(c, 0)}" for c in plan.conditions))
    return "\n".join(lines)
