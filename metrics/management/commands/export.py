"""python manage.py export --project NAME --format csv|jsonl|parquet --output FILE [--include-practice]
[--include-simulated]"""

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Project
from metrics.exports import FORMATS, export_spec, export_stream


class Command(BaseCommand):
    help = "Export one row per submitted post-edit (item fields, texts, effort, every metric value), streamed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS), dest="fmt")
        parser.add_argument("--output", required=True, help="File to write ('-' for standard output, csv/jsonl).")
        parser.add_argument(
            "--include-practice",
            action="store_true",
            help="also export practice items' post-edits (left out by default)",
        )
        parser.add_argument(
            "--include-simulated",
            action="store_true",
            help="also export an LLM's synthetic edits (origin simulated; left out by default)",
        )

    def handle(self, *args, **options) -> None:
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            raise CommandError(f"no project named {options['project']!r}") from None
        spec = export_spec(
            project=project,
            include_practice=options["include_practice"],
            include_simulated=options["include_simulated"],
        )
        output = options["output"]
        if output == "-":
            if options["fmt"] == "parquet":
                raise CommandError("parquet is binary: give --output FILE")
            for chunk in export_stream(spec, options["fmt"]):
                self.stdout.write(chunk.decode("utf-8"), ending="")
            return
        path = Path(output)
        if not path.parent.is_dir():
            raise CommandError(f"cannot write {output}: folder {path.parent} does not exist")
        # Write beside the target and rename at the end: a failed export never leaves a truncated file.
        partial = path.with_name(f".{path.name}.partial")
        try:
            with partial.open("wb") as handle:
                for chunk in export_stream(spec, options["fmt"]):
                    handle.write(chunk)
            os.replace(partial, path)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        rows = spec.queryset().count()
        self.stdout.write(f"wrote {rows} rows, {len(spec.columns)} columns to {path}")
