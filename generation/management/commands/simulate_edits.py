"""python manage.py simulate_edits --project P --scenario normal|similar|fast|FILE --endpoint URL --model M [...]"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.command_options import add_common, read_template, start_and_wait
from generation.models import GenerationRun

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
SCENARIOS = ("normal", "similar", "fast")


class Command(BaseCommand):
    help = (
        "Let an LLM edit each item's output given its references under a scenario (the seed study's synthetic "
        "edits); each edit is stored as a simulated post-edit with its provenance, the scenario as its condition."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--scenario",
            required=True,
            help=f"{', '.join(SCENARIOS)} (the shipped prompts in generation/prompts/) or a template FILE.",
        )
        parser.add_argument("--name", default="", help="The scenario's name for a FILE (default: the file's stem).")
        parser.add_argument("--output", default="", help="Edit this output of the item (default: its model output).")
        add_common(parser)

    def handle(self, *args, **options) -> None:
        scenario = options["scenario"]
        if scenario in SCENARIOS:
            path, name = PROMPTS / f"{scenario}.txt", scenario
            if not path.is_file():
                raise CommandError(f"the shipped prompt of scenario {scenario!r} is missing: {path}")
        else:
            path = Path(scenario)
            name = options["name"] or path.stem
        start_and_wait(
            self,
            options,
            kind=GenerationRun.SIMULATION,
            name=name,
            source_output=options["output"],
            template_text=read_template(path),
            template_name=str(path.name if scenario in SCENARIOS else path),
        )
