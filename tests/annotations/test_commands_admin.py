from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotations.models import Assignment, Item
from annotations.roles import is_admin
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

User = get_user_model()


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_add_user_creates_then_updates(db):
    assert "Created user eva with role admin (staff" in _run(
        "add_user", "eva", "--role", "admin", "--password", "long-enough-pw"
    )
    assert is_admin(User.objects.get(username="eva"))
    assert "Updated user eva with role annotator." in _run("add_user", "eva", "--role", "annotator")
    eva = User.objects.get(username="eva")
    assert not eva.is_staff and eva.check_password("long-enough-pw")


def test_add_user_errors_are_command_errors(db):
    with pytest.raises(CommandError, match="password: a new user"):
        _run("add_user", "eva", "--role", "annotator")
    with pytest.raises(CommandError, match="invalid choice: 'chief'"):
        _run("add_user", "eva", "--role", "chief", "--password", "long-enough-pw")
    assert not User.objects.filter(username="eva").exists()


def test_make_batches_and_assign(db):
    project = ProjectFactory(name="Study")
    for k in range(10):
        ItemFactory(project=project, external_id=f"s{k}", position=k)
    for name in ("a", "b", "c"):
        UserFactory(username=name, role="annotator")
    out = _run("make_batches", "--project", "Study", "--size", "4", "--shuffle", "11")
    assert "Made 3 batches (batch 001 … batch 003) of 10 items, shuffled with seed 11." in out
    out = _run("assign", "--project", "Study", "--annotators", "a,b,c", "--overlap", "2")
    assert "Created 20 assignments over 3 batches (overlap 2)" in out
    assert "Skipped 0 items" in out
    again = _run("assign", "--project", "Study", "--annotators", "a,b,c", "--overlap", "2")
    assert "Created 0 assignments" in again and "Skipped 10 items" in again
    assert Assignment.objects.count() == 20


def test_assign_errors(db):
    project = ProjectFactory(name="Study")
    ItemFactory(project=project)
    UserFactory(username="a", role="annotator")
    UserFactory(username="r", role="researcher")
    with pytest.raises(CommandError, match="no project called 'Nope'"):
        _run("assign", "--project", "Nope", "--annotators", "a", "--overlap", "1")
    with pytest.raises(CommandError, match="needs 2 distinct annotators but only 1"):
        _run("assign", "--project", "Study", "--annotators", "a", "--overlap", "2")
    with pytest.raises(CommandError, match="not in the annotator role: r"):
        _run("assign", "--project", "Study", "--annotators", "a,r", "--overlap", "1")
    with pytest.raises(CommandError, match="no batch batch 009"):
        _run("assign", "--project", "Study", "--annotators", "a", "--batches", "batch 009")
    with pytest.raises(CommandError, match="size: must be at least 1"):
        _run("make_batches", "--project", "Study", "--size", "0")
    assert not Assignment.objects.exists()


def test_assign_notes_unbatched_items(db):
    project = ProjectFactory(name="Study")
    ItemFactory(project=project)
    UserFactory(username="a", role="annotator")
    out = _run("assign", "--project", "Study", "--annotators", "a")
    assert "Created 0 assignments" in out and "1 items are in no batch yet" in out


def test_withdraw_and_reassign_from_the_command_line(db):
    project = ProjectFactory(name="Study")
    for k in range(4):
        ItemFactory(project=project, external_id=f"w{k}", position=k)
    a = UserFactory(username="a", role="annotator")
    UserFactory(username="b", role="annotator")
    _run("make_batches", "--project", "Study", "--size", "2")
    _run("assign", "--project", "Study", "--annotators", "a")
    done = Assignment.objects.filter(annotator=a).first()
    SubmittedPostEditFactory(assignment=done)
    Assignment.objects.filter(pk=done.pk).update(status=Assignment.SUBMITTED)

    out = _run("assign", "--project", "Study", "--reassign-from", "a", "--to", "b", "--batches", "batch 001")
    assert "Moved 1 assignments from a to b" in out and "kept 1 submitted/skipped" in out
    out = _run("assign", "--project", "Study", "--withdraw-from", "a")
    assert "Withdrew 2 assignments of a" in out
    assert sorted(Assignment.objects.values_list("annotator__username", "item__external_id")) == [
        ("a", done.item.external_id),
        ("b", "w1"),
    ]
    with pytest.raises(CommandError, match="--reassign-from needs --to"):
        _run("assign", "--project", "Study", "--reassign-from", "a")
    with pytest.raises(CommandError, match="exactly one of"):
        _run("assign", "--project", "Study")
    assert Item.objects.count() == 4


def test_demo_command_uses_the_services(db):
    out = _run("demo")
    assert "Demo project" in out
    annotator = User.objects.get(username="annotator")
    assert Assignment.objects.filter(annotator=annotator).count() == 5
    assert set(Item.objects.values_list("batch__name", flat=True)) == {"batch 001"}
    assert "Demo project" not in _run("demo")
