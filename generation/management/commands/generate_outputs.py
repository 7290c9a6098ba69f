"""python manage.py generate_outputs --project P --system NAME --endpoint URL --model M --prompt FILE [...]"""

from django.core.management.base import BaseCommand

from generation.command_options import add_common, read_template, start_and_wait
from generation.models import GenerationRun


class Command(BaseCommand):
    help = (
        "Generate each item's output of system NAME with an LLM behind an OpenAI-compatible endpoint, with its "
        "provenance; the same settings again resume the run, changed settings make a new run."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--system", required=True, help="The output's name (Item.outputs key).")
        parser.add_argument("--prompt", required=True, help="The prompt template file ({source}, {references}, ...).")
        add_common(parser)

    def handle(self, *args, **options) -> None:
        start_and_wait(
            self,
            options,
            kind=GenerationRun.OUTPUT,
            name=options["system"],
            template_text=read_template(options["prompt"]),
            template_name=options["prompt"],
        )
