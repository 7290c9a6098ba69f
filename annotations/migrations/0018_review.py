import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The reviewer group, held beside a role (annotations.roles.REVIEWER).
REVIEWER = "reviewer"


def create_reviewer_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=REVIEWER)


def remove_reviewer_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=REVIEWER).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0017_evaluation_task"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(create_reviewer_group, remove_reviewer_group),
        migrations.RemoveConstraint(
            model_name="assignment",
            name="assignment_unique_item_annotator",
        ),
        migrations.AddField(
            model_name="assignment",
            name="review_decided_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="assignment",
            name="review_decision",
            field=models.CharField(
                blank=True,
                choices=[("", "not decided"), ("accepted", "accepted"), ("returned", "returned")],
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="assignment",
            name="review_reason",
            field=models.TextField(blank=True, help_text="Why the review returned the post-edit."),
        ),
        migrations.AddField(
            model_name="assignment",
            name="reviews",
            field=models.ForeignKey(
                blank=True,
                help_text="The submitted post-edit this assignment reviews (null: post-editing work).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="reviews",
                to="annotations.postedit",
            ),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(("reviews__isnull", True)),
                fields=("item", "annotator"),
                name="assignment_unique_item_annotator",
            ),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("review_decision", ""),
                    ("reviews__isnull", False),
                    ("status__in", ("pending", "in_progress", "submitted")),
                ),
                fields=("reviews",),
                name="assignment_one_open_review",
            ),
        ),
    ]
