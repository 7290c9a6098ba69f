"""factory_boy factories for every model; tests build what they need from these."""

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotations.models import Assignment, Batch, EditEvent, Item, PostEdit, Project, Visit
from annotations.roles import set_role
from metrics.models import MetricValue

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def role(user, create, extracted, **kwargs):
        user.save()
        if extracted:
            set_role(user, extracted)


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"project {n}")
    guidelines = "Fix the errors; keep the meaning."
    instructions = factory.LazyFunction(lambda: ["Fix grammar errors"])


class BatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Batch

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"batch {n}")


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    project = factory.SubFactory(ProjectFactory)
    external_id = factory.Sequence(lambda n: f"item-{n}")
    position = factory.Sequence(lambda n: n)
    source = "Das ist ein Test."
    model_output = "This are a test."
    references = factory.LazyFunction(list)
    gold_edits = factory.LazyFunction(list)


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    item = factory.SubFactory(ItemFactory)
    annotator = factory.SubFactory(UserFactory, role="annotator")


class PostEditFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PostEdit

    assignment = factory.SubFactory(AssignmentFactory)
    draft_text = factory.LazyAttribute(lambda pe: pe.assignment.item.model_output)


class SubmittedPostEditFactory(PostEditFactory):
    """A finished edit with effort figures, as an imported study would have."""

    assignment = factory.SubFactory(AssignmentFactory, status=Assignment.SUBMITTED)
    text = "This is a test."
    submitted_at = factory.LazyFunction(timezone.now)
    wall_ms = 12000
    active_ms = 10000
    keystrokes = 6
    allkeys = 9


class VisitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Visit

    post_edit = factory.SubFactory(PostEditFactory)


class EditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EditEvent

    post_edit = factory.SubFactory(PostEditFactory)
    seq = factory.Sequence(lambda n: n)
    t_ms = factory.Sequence(lambda n: 100.0 * n)
    kind = "keydown"
    key = "a"


class MetricValueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MetricValue

    post_edit = factory.SubFactory(SubmittedPostEditFactory)
    metric = "levenshtein"
    variant = MetricValue.PLAIN
    value = 2.0
