from django.db import migrations, models


class Migration(migrations.Migration):
    """PostEdit.original_text is named start_override in the code (its column keeps its name), and
    EditEvent.deleted, a column always written empty and never read, goes."""

    dependencies = [("annotations", "0013_simulated_origin")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField("postedit", "original_text", "start_override"),
                migrations.AlterField(
                    model_name="postedit",
                    name="start_override",
                    field=models.TextField(
                        blank=True,
                        db_column="original_text",
                        help_text=(
                            "The start text when it is not the item's model output (a condition's output, "
                            'or ""); null: the model output.'
                        ),
                        null=True,
                    ),
                ),
            ],
        ),
        migrations.RemoveField(model_name="editevent", name="deleted"),
    ]
