"""python manage.py export --project NAME --format csv|jsonl|parquet|mqm --output FILE [--include-practice]
[--include-simulated] [--events [--with-text]]

--format mqm writes the project's error-span evaluations as the WMT MQM TSV (metrics/exports_mqm.py).

With --events: one row per stored event instead (metrics/exports_events.py, docs/events.md), also as
--format idfx (a zip of IDFX logs) or critt-kd (a zip of CRITT TPR-DB KD tables); --with-text adds the text after each text-changing event.
"""

import functools
import os
from pathlib import Path

from django.core.management.base import CommandError

from annotations.models import Project
from editlab.commands import DataCommand
from metrics.exports import FORMATS, export_spec, export_stream
from metrics.exports_events import EVENT_FORMATS, EventExportSpec, event_export_stream

MQM = "mqm"


class Command(DataCommand):
    help = "Export one row per submitted post-edit (item fields, texts, effort, every metric value), streamed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--format", required=True, choices=sorted({*FORMATS, *EVENT_FORMATS, MQM}), dest="fmt")
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
        parser.add_argument("--events", action="store_true", help="one row per stored event (docs/events.md)")
        parser.add_argument("--with-text", action="store_true", help="with --events: the text after each change")

    def handle(self, *args, **options) -> None:
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            raise CommandError(f"no project named {options['project']!r}") from None
        if options["with_text"] and not options["events"]:
            raise CommandError("--with-text goes with --events")
        if options["include_simulated"] and options["events"]:
            raise CommandError("--include-simulated applies to the post-edit export, not to --events")
        if options["fmt"] == MQM:
            if options["events"] or options["include_simulated"] or options["include_practice"]:
                raise CommandError("--format mqm exports the evaluations: no --events or --include-* options")
            from metrics.exports_mqm import mqm_export_stream  # scipy: loaded only for this format

            if self._write(options["output"], options["fmt"], functools.partial(mqm_export_stream, project)):
                self.stdout.write(f"wrote the MQM TSV of project {project.name!r} to {options['output']}")
            return
        if options["fmt"] not in (EVENT_FORMATS if options["events"] else FORMATS):
            raise CommandError(f"--format {options['fmt']} exports events: add --events")
        events = EventExportSpec(project, options["include_practice"], options["with_text"])
        spec = export_spec(
            project=project,
            include_practice=options["include_practice"],
            include_simulated=options["include_simulated"],
        )
        if options["events"]:
            stream = functools.partial(event_export_stream, events, options["fmt"])
        else:
            stream = functools.partial(export_stream, spec, options["fmt"])
        path = self._write(options["output"], options["fmt"], stream)
        if path is None:
            return
        if options["events"]:
            self.stdout.write(f"wrote the events of {events.queryset().count()} post-edits to {path}")
            return
        rows = spec.queryset().count()
        self.stdout.write(f"wrote {rows} rows, {len(spec.columns)} columns to {path}")

    def _write(self, output: str, fmt: str, stream) -> Path | None:
        """Write the stream to `output` (None: to standard output), atomically for a file."""
        if output == "-":
            if fmt in ("parquet", "idfx", "critt-kd"):
                raise CommandError(f"{fmt} is binary: give --output FILE")
            for chunk in stream():
                self.stdout.write(chunk.decode("utf-8"), ending="")
            return None
        path = Path(output)
        if not path.parent.is_dir():
            raise CommandError(f"cannot write {output}: folder {path.parent} does not exist")
        # Write beside the target and rename at the end: a failed export never leaves a truncated file.
        partial = path.with_name(f".{path.name}.partial")
        try:
            with partial.open("wb") as handle:
                for chunk in stream():
                    handle.write(chunk)
            os.replace(partial, path)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return path
