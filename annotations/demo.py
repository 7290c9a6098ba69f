"""The demo project of the quick start: a few MT outputs to post-edit."""

from annotations.models import Assignment, Batch, Item, PostEdit, Project

DEMO_PROJECT = "Demo: post-edit machine translations"
DEMO_ITEMS = [
    ("d1", "Der Hund schläft im Garten.", "The dog sleep in the garden."),
    ("d2", "Wir haben gestern einen langen Spaziergang gemacht.", "We have made yesterday a long walk."),
    ("d3", "Das Ergebnis war besser als erwartet.", "The result was more good than expected."),
    ("d4", "Bitte schließen Sie das Fenster.", "Please close you the window."),
    ("d5", "Sie arbeitet seit drei Jahren hier.", "She works since three years here."),
]


def demo_project(*, annotator) -> Project | None:
    """Create the demo project once; returns None when it already exists."""
    if Project.objects.filter(name=DEMO_PROJECT).exists():
        return None
    project = Project.objects.create(
        name=DEMO_PROJECT,
        guidelines="Correct the translation so that it is **fluent** and **accurate**. Change no more than needed.",
        task_type="mt",
        instructions=["Post-edit the translation"],
    )
    batch = Batch.objects.create(project=project, name="demo batch 1")
    for position, (external_id, source, output) in enumerate(DEMO_ITEMS):
        item = Item.objects.create(
            project=project,
            external_id=external_id,
            source=source,
            model_output=output,
            position=position,
            batch=batch,
            batch_position=position,
        )
        assignment = Assignment.objects.create(item=item, annotator=annotator)
        PostEdit.objects.create(assignment=assignment, draft_text=output)
    return project
