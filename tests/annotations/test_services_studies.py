"""Designed studies: whole documents per batch, the Latin-square assignment, imported work apart."""

from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Assignment, PostEdit, Project
from annotations.selectors import project_documents
from annotations.services.assignment import batch_assign
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError
from annotations.services.studies import study_assign_latin_square
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysB", "highlights": True},
    {"name": "scratch", "output": None, "highlights": False},
]


def study(documents: int = 6, segments: int = 3, practice: int = 0) -> Project:
    project = ProjectFactory(conditions=CONDITIONS)
    for p in range(practice):
        ItemFactory(project=project, external_id=f"practice-{p}", practice=True)
    for d in range(documents):
        # Imported out of order: the document position decides the segment order.
        for s in reversed(range(segments)):
            ItemFactory(project=project, external_id=f"d{d}-s{s}", document=f"doc{d}", document_position=s)
    return project


def annotators(n: int) -> list:
    return [UserFactory(username=f"ann{k}", role="annotator") for k in range(n)]


def test_documents_keep_their_segments_in_document_order():
    project = study(documents=2, segments=3)
    documents = project_documents(project=project)
    assert [d.key for d in documents] == ["doc0", "doc1"]
    ids = {item.pk: item.external_id for item in project.items.all()}
    assert [ids[i] for i in documents[0].item_ids] == ["d0-s0", "d0-s1", "d0-s2"]


def test_batches_never_split_a_document():
    project = study(documents=5, segments=3, practice=2)
    batches = batch_make(project=project, size=4)
    contents = [list(batch.items.order_by("batch_position").values_list("external_id", flat=True)) for batch in batches]
    assert contents[0] == ["practice-0", "practice-1"]
    for batch in contents[1:]:
        assert len({name.split("-")[0] for name in batch}) == 1, batch  # 3 + 3 > 4: one document each
        assert batch == sorted(batch)


def test_a_document_longer_than_the_batch_size_is_a_batch_of_its_own():
    project = study(documents=2, segments=5)
    assert [batch.items.count() for batch in batch_make(project=project, size=2)] == [5, 5]
    project = study(documents=4, segments=2)
    assert [batch.items.count() for batch in batch_make(project=project, size=5)] == [4, 4]


def test_items_without_documents_are_cut_by_size_as_before():
    project = ProjectFactory()
    ItemFactory.create_batch(7, project=project)
    assert [batch.items.count() for batch in batch_make(project=project, size=3)] == [3, 3, 1]


def test_a_shuffled_cut_moves_whole_documents_and_is_reproducible():
    cuts = []
    for _ in range(2):
        project = study(documents=6, segments=2)
        batches = batch_make(project=project, size=2, shuffle_seed=7)
        cuts.append([[i.split("-")[0] for i in b.items.values_list("external_id", flat=True)] for b in batches])
    assert cuts[0] == cuts[1]
    assert all(len(set(batch)) == 1 for batch in cuts[0])
    assert [batch[0] for batch in cuts[0]] != [f"d{k}" for k in range(6)]


def test_the_plan_is_shown_before_anything_is_assigned():
    project = study()
    people = annotators(6)
    result = study_assign_latin_square(project=project, annotators=people, conditions=["a", "b", "scratch"])
    assert not result.applied and result.created == 0
    assert Assignment.objects.count() == 0
    assert result.plan.per_annotator()["ann0"] == Counter({"a": 2, "b": 2, "scratch": 2})
    assert result.segments == 18


def test_a_latin_square_gives_everyone_every_document_under_balanced_conditions():
    project = study(documents=6, segments=3, practice=1)
    people = annotators(6)
    result = study_assign_latin_square(project=project, annotators=people, conditions=["a", "b", "scratch"], apply=True)
    assert result.created == 6 * (18 + 1)
    project.refresh_from_db()
    assert project.design == Project.DESIGN_LATIN_SQUARE
    assert project.meta["designs"][0]["conditions"] == ["a", "b", "scratch"]
    for person in people:
        queue = list(Assignment.objects.filter(annotator=person).select_related("item"))  # default ordering
        assert [a.queue_position for a in queue] == list(range(19))
        assert queue[0].item.practice and queue[0].condition == ""
        segments = queue[1:]
        # Documents come whole, segments in order, one condition per document.
        documents = [a.item.document for a in segments]
        assert [documents[k] for k in range(0, 18, 3)] == list(dict.fromkeys(documents))
        for k in range(0, 18, 3):
            block = segments[k : k + 3]
            assert [a.item.document_position for a in block] == [0, 1, 2]
            assert len({a.condition for a in block}) == 1
        assert Counter(a.condition for a in segments) == {"a": 6, "b": 6, "scratch": 6}
    per_document = Counter(
        (a.item.document, a.condition) for a in Assignment.objects.filter(item__practice=False).select_related("item")
    )
    assert set(per_document.values()) == {6}  # 2 annotators x 3 segments per (document, condition)


def test_the_queue_order_is_what_next_follows():
    project = study(documents=3, segments=2)
    people = annotators(3)
    study_assign_latin_square(project=project, annotators=people, conditions=["a", "b", "scratch"], apply=True)
    second = Assignment.objects.filter(annotator=people[1]).select_related("item")
    assert [a.item.external_id for a in second] == ["d1-s0", "d1-s1", "d2-s0", "d2-s1", "d0-s0", "d0-s1"]


@pytest.mark.parametrize(
    ("people", "documents", "conditions", "message"),
    [
        (2, 6, ["a", "b", "scratch"], "at least 3 annotators are needed"),
        (6, 2, ["a", "b", "scratch"], "at least 3 documents are needed"),
        (3, 3, ["a", "zzz"], "unknown 'zzz'; the project declares a, b, scratch"),
        (3, 3, [], "name at least one condition"),
        (3, 3, ["a", "a"], "named twice"),
    ],
)
def test_impossible_designs_are_refused_with_what_would_work(people, documents, conditions, message):
    project = study(documents=documents)
    with pytest.raises(ServiceError, match=message):
        study_assign_latin_square(project=project, annotators=annotators(people), conditions=conditions, apply=True)
    assert Assignment.objects.count() == 0


def test_annotators_who_already_hold_work_are_refused():
    project = study(documents=3)
    people = annotators(3)
    AssignmentFactory(item=project.items.first(), annotator=people[2])
    with pytest.raises(ServiceError, match="ann2 already hold work in this project"):
        study_assign_latin_square(project=project, annotators=people, conditions=["a", "b", "scratch"], apply=True)
    assert Assignment.objects.count() == 1


def test_a_project_with_broken_declared_conditions_says_so():
    project = study(documents=3)
    Project.objects.filter(pk=project.pk).update(conditions={"a": 1})
    with pytest.raises(ServiceError, match="conditions: must be a list"):
        study_assign_latin_square(project=project, annotators=annotators(3), conditions=["a"])


def test_imported_post_edits_do_not_fill_the_overlap():
    project = ProjectFactory()
    [batch] = batch_make(project=project, size=10) if ItemFactory.create_batch(2, project=project) else []
    original = UserFactory(username="study-ann0", role="annotator")
    for item in project.items.all():
        SubmittedPostEditFactory(
            assignment__item=item, assignment__annotator=original, origin=PostEdit.IMPORTED, definition_version="pet"
        )
    live = annotators(1)
    result = batch_assign(project=project, annotators=live, overlap=1)
    assert result.created == 2 and result.skipped_full_items == 0
    assert Assignment.objects.filter(annotator=live[0]).count() == 2
    assert Assignment.objects.filter(annotator=original).count() == 2  # kept for comparison


def test_the_command_shows_the_plan_then_applies_it():
    project = study(documents=3, segments=1)
    annotators(3)
    out = StringIO()
    call_command(
        "assign", "--project", project.name, "--annotators", "ann0,ann1,ann2", "--design", "latin-square",
        "--conditions", "a,b,scratch", stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "3 annotators x 3 documents (3 segments) x 3 conditions" in text
    assert "ann1: a 1, b 1, scratch 1 | doc1[scratch] doc2[a] doc0[b]" in text
    assert "--apply" in text and Assignment.objects.count() == 0
    call_command(
        "assign", "--project", project.name, "--annotators", "ann0,ann1,ann2", "--design", "latin-square",
        "--conditions", "a,b,scratch", "--apply", stdout=StringIO(),
    )  # fmt: skip
    assert Assignment.objects.count() == 9


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--conditions", "a,b"], "go with --design latin-square"),
        (["--design", "latin-square"], "--conditions: name the declared conditions"),
        (["--design", "latin-square", "--conditions", "a,\u202eb"], "unknown"),
        (["--design", "latin-square", "--conditions", "a,b", "--overlap", "2"], "do not apply to a Latin square"),
    ],
)
def test_the_command_refuses_bad_design_options(extra, message):
    project = study(documents=3, segments=1)
    annotators(3)
    with pytest.raises(CommandError, match=message):
        call_command("assign", "--project", project.name, "--annotators", "ann0,ann1,ann2", *extra, stdout=StringIO())
    assert Assignment.objects.count() == 0
