"""Seeding the study, and checking in the database that every acknowledged event is stored exactly once
and every submitted post-edit has its effort (ORM)."""

import random
import secrets
from collections import defaultdict
from dataclasses import dataclass, field

from editlab.benchmarks.load.client import Account, ClientPostEdit, Ledger
from editlab.benchmarks.load.session import item_text

# ---------------------------------------------------------------- the database check (ORM)


@dataclass
class Check:
    post_edits: int = 0
    events_acked: int = 0
    events_stored: int = 0
    lost: int = 0  # acknowledged, not stored
    unexpected: int = 0  # stored, never acknowledged (and not in an unanswered attempt)
    duplicated: int = 0  # rows beyond one per (post-edit, seq)
    with_gaps: int = 0  # stored seqs not 0..n-1, or event_gaps recorded
    submitted: int = 0
    effort_missing: int = 0
    counts_differ: int = 0
    replay_failed: int = 0
    not_submitted_in_db: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.unexpected
            or self.duplicated
            or self.with_gaps
            or self.effort_missing
            or self.counts_differ
            or self.replay_failed
            or self.not_submitted_in_db
        )

    def note(self, problem: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(problem)


def check_exactly_once(ledger: Ledger) -> Check:
    """Compare the database with what the client had acknowledged (see the module docstring)."""
    from django.db.models import Count

    from annotations.models import Assignment, EditEvent, PostEdit

    check = Check(post_edits=len(ledger.post_edits))
    ids = list(ledger.post_edits)
    stored: dict[int, list[int]] = defaultdict(list)
    for chunk in range(0, len(ids), 500):
        rows = EditEvent.objects.filter(post_edit_id__in=ids[chunk : chunk + 500]).values_list("post_edit_id", "seq")
        for post_edit_id, seq in rows.iterator(chunk_size=20000):
            stored[post_edit_id].append(seq)
    repeated = (
        EditEvent.objects.filter(post_edit_id__in=ids)
        .values("post_edit_id", "seq")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    for row in repeated:
        check.duplicated += row["n"] - 1
        check.note(f"post-edit {row['post_edit_id']}: seq {row['seq']} stored {row['n']} times")
    post_edits = {pe.pk: pe for pe in PostEdit.objects.filter(pk__in=ids).select_related("assignment")}
    for pk, record in ledger.post_edits.items():
        seqs = stored.get(pk, [])
        distinct = set(seqs)
        check.events_acked += len(record.acked)
        check.events_stored += len(seqs)
        lost = record.acked - distinct
        unexpected = distinct - record.acked - record.uncertain
        if lost:
            check.lost += len(lost)
            check.note(f"post-edit {pk}: {len(lost)} acknowledged events missing, first seq {min(lost)}")
        if unexpected:
            check.unexpected += len(unexpected)
            check.note(f"post-edit {pk}: {len(unexpected)} events stored that the client never had acknowledged")
        post_edit = post_edits.get(pk)
        if distinct and distinct != set(range(max(distinct) + 1)) or (post_edit and post_edit.event_gaps):
            check.with_gaps += 1
            check.note(f"post-edit {pk}: gaps in the stored seqs ({post_edit.event_gaps if post_edit else '?'})")
        if record.submitted:
            check.submitted += 1
            _check_submitted(check, record, post_edit, Assignment)
    return check


def _check_submitted(check: Check, record: ClientPostEdit, post_edit, assignment_model) -> None:
    pk = record.post_edit_id
    if post_edit is None or post_edit.assignment.status != assignment_model.SUBMITTED:
        check.not_submitted_in_db += 1
        check.note(f"post-edit {pk}: submitted by the client, not submitted in the database")
        return
    effort = ("wall_ms", "active_ms", "reading_ms", "keystrokes", "allkeys", "letters", "erase", "navigation")
    missing = [name for name in effort if getattr(post_edit, name) is None]
    if missing or not post_edit.definition_version:
        check.effort_missing += 1
        check.note(f"post-edit {pk}: effort not derived ({', '.join(missing) or 'definition_version'})")
        return
    expected = record.counts
    got = {
        name: getattr(post_edit, name)
        for name in ("letters", "digits", "spaces", "symbols", "erase", "navigation", "keystrokes", "allkeys")
    }
    want = {
        **{name: getattr(expected, name) for name in ("letters", "digits", "spaces", "symbols", "erase", "navigation")},
        "keystrokes": expected.keystrokes,
        "allkeys": expected.allkeys,
    }
    if got != want:
        check.counts_differ += 1
        differing = {name: (got[name], want[name]) for name in want if got[name] != want[name]}
        check.note(f"post-edit {pk}: counts (stored, typed) differ: {differing}")
    if not post_edit.replay_ok or post_edit.text != record.text:
        check.replay_failed += 1
        check.note(f"post-edit {pk}: replay_ok={post_edit.replay_ok} {post_edit.replay_divergence}")


# ---------------------------------------------------------------- seeding (ORM)


def seed(*, annotators: int, items_each: int, seed_value: int = 1, prefix: str = "load") -> list[Account]:
    """One project; `annotators` annotator accounts, each assigned one batch of `items_each` items."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group

    from annotations.models import Assignment, Item
    from annotations.roles import ANNOTATOR
    from annotations.services.assignment import batch_assign
    from annotations.services.batches import batch_make
    from annotations.services.projects import project_create

    rng = random.Random(seed_value)
    password = "load-" + secrets.token_hex(8)
    hashed = make_password(password)  # one PBKDF2 run shared by all: seeding stays fast, logins stay real
    users_model = get_user_model()
    users = users_model.objects.bulk_create(
        [users_model(username=f"{prefix}{n:04d}", password=hashed) for n in range(annotators)]
    )
    Group.objects.get(name=ANNOTATOR).user_set.add(*users)
    project = project_create(
        name=f"{prefix} benchmark {secrets.token_hex(3)}",
        idle_threshold_s=30.0,
        guidelines="Fix the errors; keep the meaning.",
    )
    Item.objects.bulk_create(
        [
            Item(project=project, external_id=f"{n}", model_output=item_text(rng), position=n)
            for n in range(annotators * items_each)
        ],
        batch_size=2000,
    )
    batch_make(project=project, size=items_each)
    batch_assign(project=project, annotators=users, overlap=1)
    first: dict[int, int] = {}
    for assignment_id, annotator_id in Assignment.objects.filter(item__project=project).values_list(
        "pk", "annotator_id"
    ):
        first.setdefault(annotator_id, assignment_id)
    return [Account(user.username, password, first[user.pk]) for user in users]
