from collections import Counter, defaultdict

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.models import Assignment, Item, PostEdit
from annotations.roles import set_role
from annotations.services.assignment import assignment_reassign, assignment_withdraw, batch_assign
from annotations.services.batches import batch_make
from annotations.services.errors import ServiceError
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, SubmittedPostEditFactory

User = get_user_model()


def _annotators(n, prefix="ann"):
    # No password: hashing one per example would dominate the property test's time.
    users = []
    for k in range(n):
        user = User.objects.create(username=f"{prefix}{k}")
        set_role(user, "annotator")
        users.append(user)
    return users


def _project_with_batches(n_items, size, project=None):
    project = project or ProjectFactory()
    Item.objects.bulk_create(
        Item(project=project, external_id=f"x{k}", model_output=f"text {k}", position=k) for k in range(n_items)
    )
    batches = batch_make(project=project, size=size)
    return project, batches


def _check_overlap_invariants(project, batches, annotators, k):
    rows = list(
        Assignment.objects.filter(item__project=project).values_list("item_id", "annotator_id", "item__batch_id")
    )
    per_item = defaultdict(list)
    for item_id, user_id, _ in rows:
        per_item[item_id].append(user_id)
    item_ids = set(Item.objects.filter(project=project).values_list("id", flat=True))
    assert set(per_item) == item_ids
    for users in per_item.values():
        assert len(users) == k
        assert len(set(users)) == k
    # Whole batches: an annotator holds all of a batch or none of it.
    sizes = {b.pk: b.items.count() for b in batches}
    held = Counter((batch_id, user_id) for _, user_id, batch_id in rows)
    assert all(count == sizes[batch_id] for (batch_id, _), count in held.items())
    loads = Counter(user_id for _, user_id, _ in rows)
    counts = [loads.get(a.pk, 0) for a in annotators]
    assert max(counts) - min(counts) <= max(sizes.values())
    assert sum(counts) == k * len(item_ids)


def test_overlap_invariants_hold_for_random_shapes(db):
    pool = _annotators(7)

    @given(
        n_items=st.integers(min_value=1, max_value=40),
        n_annotators=st.integers(min_value=1, max_value=7),
        size=st.integers(min_value=1, max_value=12),
        data=st.data(),
    )
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(n_items, n_annotators, size, data):
        k = data.draw(st.integers(min_value=1, max_value=n_annotators), label="k")
        with transaction.atomic():
            project, batches = _project_with_batches(n_items, size)
            annotators = pool[:n_annotators]
            result = batch_assign(project=project, annotators=annotators, overlap=k)
            assert result.created == k * n_items
            _check_overlap_invariants(project, batches, annotators, k)
            again = batch_assign(project=project, annotators=annotators, overlap=k)
            assert (again.created, again.skipped_full_items) == (0, n_items)
            assert Assignment.objects.filter(item__project=project).count() == k * n_items
            transaction.set_rollback(True)

    check()


def test_withdrawn_items_are_refilled_without_giving_anyone_an_item_twice(db):
    @given(
        n_items=st.integers(min_value=2, max_value=20),
        n_annotators=st.integers(min_value=2, max_value=5),
        size=st.integers(min_value=1, max_value=6),
        withdraw=st.sets(st.integers(min_value=0, max_value=200), max_size=30),
    )
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(n_items, n_annotators, size, withdraw):
        with transaction.atomic():
            annotators = _annotators(n_annotators, prefix="w")
            project, _ = _project_with_batches(n_items, size)
            k = n_annotators - 1
            batch_assign(project=project, annotators=annotators, overlap=k)
            ids = list(Assignment.objects.filter(item__project=project).order_by("id").values_list("id", flat=True))
            chosen = [ids[i % len(ids)] for i in withdraw]
            assignment_withdraw(assignments=Assignment.objects.filter(pk__in=chosen))
            batch_assign(project=project, annotators=annotators, overlap=k)
            per_item = Counter(Assignment.objects.filter(item__project=project).values_list("item_id", flat=True))
            assert set(per_item.values()) == {k}
            transaction.set_rollback(True)

    check()


def test_overlap_above_the_number_of_annotators_is_a_clear_error(db):
    project, _ = _project_with_batches(4, 2)
    with pytest.raises(ServiceError, match="needs 3 distinct annotators but only 2 were given"):
        batch_assign(project=project, annotators=_annotators(2), overlap=3)
    assert not Assignment.objects.exists()


def test_balanced_whole_batches_with_overlap_two(db):
    a, b, c = _annotators(3)
    project, batches = _project_with_batches(12, 4)
    result = batch_assign(project=project, annotators=[a, b, c], overlap=2)
    assert result.per_annotator == {"ann0": 8, "ann1": 8, "ann2": 8}
    holders = {
        batch.name: sorted(
            set(Assignment.objects.filter(item__batch=batch).values_list("annotator__username", flat=True))
        )
        for batch in batches
    }
    assert holders == {
        "batch 001": ["ann0", "ann1"],
        "batch 002": ["ann0", "ann2"],
        "batch 003": ["ann1", "ann2"],
    }
    assert not PostEdit.objects.exists()  # the editor creates post-edits lazily


def test_new_batches_go_to_the_least_loaded_annotators(db):
    a, b = _annotators(2)
    project, _ = _project_with_batches(4, 2)
    batch_assign(project=project, annotators=[a], overlap=1)
    Item.objects.bulk_create(
        Item(project=project, external_id=f"late{k}", model_output="t", position=100 + k) for k in range(4)
    )
    batch_make(project=project, size=2)
    result = batch_assign(project=project, annotators=[a, b], overlap=1)
    assert result.per_annotator == {"ann0": 0, "ann1": 4}


def test_withdraw_never_touches_submitted_and_in_progress_needs_force(db, annotator):
    project = ProjectFactory()
    pending = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator)
    started = AssignmentFactory(item=ItemFactory(project=project), annotator=annotator, status=Assignment.IN_PROGRESS)
    done = SubmittedPostEditFactory(
        assignment__item=ItemFactory(project=project), assignment__annotator=annotator
    ).assignment
    result = assignment_withdraw(assignments=Assignment.objects.filter(annotator=annotator))
    assert (result.withdrawn, result.kept_in_progress, result.kept_submitted) == (1, 1, 1)
    assert set(Assignment.objects.values_list("pk", flat=True)) == {started.pk, done.pk}
    forced = assignment_withdraw(assignments=Assignment.objects.filter(annotator=annotator), force=True)
    assert (forced.withdrawn, forced.kept_submitted) == (1, 1)
    assert list(Assignment.objects.values_list("pk", flat=True)) == [done.pk]
    assert PostEdit.objects.get().assignment_id == done.pk
    assert not Assignment.objects.filter(pk=pending.pk).exists()


def test_reassign_moves_pending_work_but_not_items_the_target_already_has(db, annotator, other_annotator):
    project = ProjectFactory()
    shared_item = ItemFactory(project=project)
    own_item = ItemFactory(project=project)
    AssignmentFactory(item=shared_item, annotator=annotator)
    AssignmentFactory(item=own_item, annotator=annotator)
    AssignmentFactory(item=shared_item, annotator=other_annotator)
    done = SubmittedPostEditFactory(assignment__item=ItemFactory(project=project), assignment__annotator=annotator)
    result = assignment_reassign(
        assignments=Assignment.objects.filter(annotator=annotator), to_annotator=other_annotator
    )
    assert (result.reassigned, result.skipped_already_assigned, result.kept_submitted) == (1, 1, 1)
    assert sorted(Assignment.objects.filter(annotator=other_annotator).values_list("item_id", flat=True)) == sorted(
        [shared_item.pk, own_item.pk]
    )
    assert Assignment.objects.filter(annotator=annotator, item=shared_item).exists()
    assert Assignment.objects.get(pk=done.assignment_id).annotator == annotator


def test_reassign_refuses_a_non_annotator(db, annotator, researcher):
    assignment = AssignmentFactory(annotator=annotator)
    with pytest.raises(ServiceError, match="rita is not an active annotator"):
        assignment_reassign(assignments=[assignment], to_annotator=researcher)
    assert Assignment.objects.get().annotator == annotator
