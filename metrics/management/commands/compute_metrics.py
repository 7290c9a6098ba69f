"""python manage.py compute_metrics --project NAME [--metrics a,b] [--variant plain|with_references]"""

import sys

from django.core.management.base import CommandError
from tqdm import tqdm

from annotations.models import Project
from editlab.commands import DataCommand
from metrics.selectors import VARIANTS
from metrics.services import ComputeError, metric_values_compute


class Command(DataCommand):
    help = "Compute the missing and stale metric values of a project's submitted post-edits (incremental)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument(
            "--metrics", default="", help="Comma-separated metric names (default: every available metric)."
        )
        parser.add_argument("--variant", choices=VARIANTS, help="Only this variant (default: both).")
        parser.add_argument(
            "--processes",
            "--workers",
            dest="processes",
            type=int,
            default=None,
            help="Scoring processes (default: EDITLAB_METRIC_PROCESSES); --workers is its older name.",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar even on a terminal.")

    def handle(self, *args, **options) -> None:
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            raise CommandError(f"no project named {options['project']!r}") from None
        metrics = [m.strip() for m in options["metrics"].split(",") if m.strip()] or None
        variants = [options["variant"]] if options["variant"] else list(VARIANTS)
        show_bar = not options["no_progress"] and sys.stderr.isatty()
        bar = tqdm(total=0, unit="value", disable=not show_bar, file=sys.stderr)

        def progress(done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
                bar.refresh()
            bar.update(done - bar.n)

        try:
            report = metric_values_compute(
                project=project, metrics=metrics, variants=variants, progress=progress, processes=options["processes"]
            )
        except ComputeError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(
            f"{project.name}: {report.post_edits} post-edits, metrics {', '.join(report.metrics)}; "
            f"variants {', '.join(report.variants)}\n"
            f"computed: {report.computed}\nup to date: {report.up_to_date}\n"
            f"skipped (not applicable): {report.skipped}\nremoved (no longer applicable): {report.removed}"
        )
