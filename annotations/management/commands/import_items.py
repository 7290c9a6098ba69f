"""python manage.py import_items --project NAME --format FORMAT [--map ...] [--predictions FILE]
[--post-edit-input] [--create-project] [--annotator-prefix PREFIX] PATH"""

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from annotations.importers import FORMATS, ImportDataError, import_items
from annotations.importers.table import mapping_pairs
from editlab.commands import DataCommand


def parse_mapping(text: str) -> dict[str, str]:
    """'model_output=mt_text,output:sysA=mt_a,edited=' -> {..., 'edited': ''} ('' = not mapped)"""
    try:
        return mapping_pairs(text, where="--map")
    except ImportDataError as exc:
        raise CommandError(str(exc)) from None


class Command(DataCommand):
    help = "Import items (and, for finished studies, post-edits with their effort) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="The file to import (for --format pet: the study's folder).")
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS), dest="fmt")
        parser.add_argument(
            "--map",
            default="",
            help="table only: TARGET=COLUMN pairs, comma-separated, e.g. model_output=mt_text,source=src_text, "
            "document=doc_id,position=seg,output:google=mt_google,highlights:google=qe_spans,condition=modality. "
            "Columns already named like a target need no entry; TARGET= (no column) leaves a target unmapped.",
        )
        parser.add_argument(
            "--create-project", action="store_true", help="Create the project if it does not exist (else an error)."
        )
        parser.add_argument(
            "--predictions",
            type=Path,
            help='natinst only: the model\'s predictions, a JSONL file of {"id", "prediction"} (the benchmark\'s '
            "evaluation format); each prediction becomes the text to post-edit of the instance with that id.",
        )
        parser.add_argument(
            "--post-edit-input",
            action="store_true",
            help="natinst only, for editing tasks whose input is the text to fix: post-edit the instance input itself.",
        )
        parser.add_argument(
            "--annotator-prefix",
            default="",
            help="Prefix for the accounts of imported annotators (e.g. 'iwslt-'), so that studies do not share them.",
        )

    def handle(self, *args, path: Path, project: str, fmt: str, **options) -> None:
        mapping = parse_mapping(options["map"])
        if mapping and fmt != "table":
            raise CommandError("--map applies to --format table only")
        for option in ("predictions", "post_edit_input"):
            if options[option] and fmt != "natinst":
                raise CommandError(f"--{option.replace('_', '-')} applies to --format natinst only")
        try:
            report = import_items(
                project=project,
                fmt=fmt,
                path=path,
                mapping=mapping,
                create_project=options["create_project"],
                annotator_prefix=options["annotator_prefix"],
                predictions=options["predictions"],
                post_edit_input=options["post_edit_input"],
            )
        except ImportDataError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(report.summary())
