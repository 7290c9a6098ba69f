"""The demo project of the quick start: a few MT outputs to post-edit."""

from django.db import transaction

from annotations.models import Item, Project
from annotations.services.assignment import batch_assign
from annotations.services.batches import batch_make
from annotations.services.projects import project_create

DEMO_PROJECT = "Demo: post-edit machine translations"
DEMO_ITEMS = [
    ("d1", "Der Hund schläft im Garten.", "The dog sleep in the garden."),
    ("d2", "Wir haben gestern einen langen Spaziergang gemacht.", "We have made yesterday a long walk."),
    ("d3", "Das Ergebnis war besser als erwartet.", "The result was more good than expected."),
    ("d4", "Bitte schließen Sie das Fenster.", "Please close you the window."),
    ("d5", "Sie arbeitet seit drei Jahren hier.", "She works since three years here."),
]


@transaction.atomic
def demo_project(*, annotator) -> Project | None:
    """Create the demo project once; returns None when it already exists.

    Goes through the same services as an admin would: one batch, assigned to the
    demo annotator (the editor creates each post-edit when it is first opened).
    """
    if Project.objects.filter(name=DEMO_PROJECT).exists():
        return None
    project = project_create(
        name=DEMO_PROJECT,
        guidelines="Correct the translation so that it is **fluent** and **accurate**. Change no more than needed.",
        task_type="mt",
        instructions=["Post-edit the translation"],
    )
    Item.objects.bulk_create(
        Item(project=project, external_id=external_id, source=source, model_output=output, position=position)
        for position, (external_id, source, output) in enumerate(DEMO_ITEMS)
    )
    batch_make(project=project, size=len(DEMO_ITEMS))
    batch_assign(project=project, annotators=[annotator], overlap=1)
    return project
