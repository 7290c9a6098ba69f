"""The rules behind blinding, one by one and with generated inputs: what a condition starts from, the
document around a segment, reassignment, the plan's digest, previews without locks, the Design page and
plan API for hundreds of annotators, the project as a participant sees it."""

import json

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.design import DESIGN_MAX_ANNOTATORS, DESIGN_MAX_CONDITIONS, Condition
from annotations.editing.lifecycle import post_edit_open
from annotations.manage_forms import LatinSquareForm
from annotations.models import Assignment, Item, Project
from annotations.selectors import document_context, start_shown
from annotations.services.assignment import assignment_reassign
from annotations.services.errors import ServiceError
from annotations.services.studies import study_assign_latin_square
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysB", "highlights": True},
    {"name": "ht", "output": None, "highlights": False},
]
ABC = ["a", "b", "ht"]


def study(documents: int = 3, segments: int = 2, practice: int = 1, **fields) -> Project:
    project = ProjectFactory(conditions=CONDITIONS, context=Project.CONTEXT_DOCUMENT, **fields)
    for p in range(practice):
        ItemFactory(project=project, external_id=f"practice-{p}", practice=True)
    for d in range(documents):
        for s in range(segments):
            ItemFactory(
                project=project,
                external_id=f"d{d}-s{s}",
                document=f"doc{d}",
                document_position=s,
                model_output=f"MODEL d{d}-s{s}",
                outputs={"sysA": f"SYSA d{d}-s{s}", "sysB": f"SYSB d{d}-s{s}"},
            )
    return project


def people(n: int, prefix: str = "ann") -> list:
    return [UserFactory(username=f"{prefix}{k}", role="annotator") for k in range(n)]


# --------------------------------------------------------------------------- what a condition starts from

texts = st.text(alphabet="abcXYZ -", min_size=0, max_size=6)
system_names = st.sampled_from(["sysA", "sysB", "sysC"])


@given(
    model_output=texts,
    outputs=st.dictionaries(system_names, texts, max_size=3),
    shown=st.one_of(st.none(), system_names),
    declared=st.booleans(),
    name=st.sampled_from(["", "c"]),
)
def test_a_condition_starts_from_its_own_output_or_nothing_never_another_text(
    model_output, outputs, shown, declared, name
):
    item = Item(model_output=model_output, outputs=outputs)
    condition = Condition(name="c", output=shown) if declared else None
    text, flag = item.blind_start(name, condition)
    if not name:
        assert (text, flag) == (model_output, "")
    elif condition is None:
        assert (text, flag) == ("", "condition_unknown")
    elif shown is None:
        assert (text, flag) == ("", "")
    elif shown in outputs:
        assert (text, flag) == (outputs[shown], "")
    else:
        assert (text, flag) == ("", "condition_output_missing")


def test_the_diff_page_before_opening_shows_what_the_condition_will_show(client):
    project = study()
    for condition, shown in (("a", "SYSA d0-s0"), ("b", "SYSB d0-s0"), ("ht", "")):
        user = UserFactory(username=f"diff-{condition}", role="annotator")
        assignment = AssignmentFactory(item=project.items.get(external_id="d0-s0"), annotator=user, condition=condition)
        client.force_login(user)
        html = client.get(reverse("editor_diff", args=[assignment.pk])).content.decode()
        assert "MODEL d0-s0" not in html and all(
            f"{other} d0-s0" not in html for other in ("SYSA", "SYSB") if not shown.startswith(other)
        )
        assert f'id="original">{shown}</pre>' in html
        assert start_shown(assignment=assignment) == shown


def test_the_api_gives_a_participant_their_start_not_the_model_output(client):
    project = study()
    user = UserFactory(username="p-ht", role="annotator")
    assignment = AssignmentFactory(item=project.items.get(external_id="d1-s0"), annotator=user, condition="ht")
    client.force_login(user)
    body = client.get(reverse("api-assignment", args=[assignment.pk])).json()
    assert body["item"]["model_output"] == body["start_text"] == ""
    assert body["condition"] is None and "SYS" not in json.dumps(body) and "MODEL" not in json.dumps(body)
    researcher = UserFactory(username="rita", role="researcher")
    client.force_login(researcher)
    body = client.get(reverse("api-assignment", args=[assignment.pk])).json()
    assert (body["item"]["model_output"], body["start_text"], body["condition"]) == ("MODEL d1-s0", "", "ht")


def test_the_project_api_tells_participants_only_what_their_work_needs(client):
    project = study()
    study_assign_latin_square(project=project, annotators=people(3, "lab"), conditions=ABC, apply=True)
    participant = UserFactory(username="crowd-1", role="annotator")
    AssignmentFactory(item=project.items.first(), annotator=participant)
    client.force_login(participant)
    body = client.get(reverse("api-project", args=[project.pk])).json()
    assert {key: body[key] for key in ("meta", "conditions", "design", "overlap", "instruction_seed")} == dict.fromkeys(
        ("meta", "conditions", "design", "overlap", "instruction_seed")
    )
    assert "lab0" not in json.dumps(body) and body["name"] == project.name and body["guidelines"]
    listed = client.get(reverse("api-projects")).json()["results"][0]
    assert listed["meta"] is None
    client.force_login(UserFactory(username="rita", role="researcher"))
    body = client.get(reverse("api-project", args=[project.pk])).json()
    assert body["meta"]["designs"][0]["annotators"] == ["lab0", "lab1", "lab2"] and body["design"] == "latin-square"


def test_the_editor_offers_the_previous_edit_only_under_the_same_condition(client):
    from django.utils import timezone

    project = study(documents=3, segments=1, practice=0)
    user = UserFactory(username="prev", role="annotator")
    items = list(project.items.order_by("document"))
    done = {}
    for item, condition in zip(items[:2], ("b", "a"), strict=True):
        done[condition] = AssignmentFactory(item=item, annotator=user, condition=condition)
        post_edit, _ = post_edit_open(assignment=done[condition], user=user)
        post_edit.text = f"{post_edit.draft_text} (edited under {condition})"
        post_edit.save()
        Assignment.objects.filter(pk=done[condition].pk).update(status=Assignment.SUBMITTED, finished=timezone.now())
    current = AssignmentFactory(item=items[2], annotator=user, condition="b")
    client.force_login(user)
    html = client.get(reverse("editor", args=[current.pk])).content.decode()
    assert f'href="/edit/{done["b"].pk}/diff/"' in html and f"/edit/{done['a'].pk}/diff/" not in html
    assert "SYSA" not in html


# --------------------------------------------------------------------------- the document around a segment


def test_after_a_reassignment_an_empty_editor_shows_no_sibling_output():
    project = study(documents=3, segments=3, practice=0)
    lab = people(3)
    study_assign_latin_square(project=project, annotators=lab, conditions=ABC, apply=True)
    ht = Assignment.objects.filter(annotator=lab[0], condition="ht").order_by("queue_position")
    document = ht[0].item.document
    sibling = Assignment.objects.get(annotator=lab[0], item__document=document, item__document_position=2)
    newcomer = UserFactory(username="newcomer", role="annotator")
    assignment_reassign(assignments=[sibling], to_annotator=newcomer)  # the sibling leaves lab0's queue
    current = Assignment.objects.get(annotator=lab[0], item__document=document, item__document_position=0)
    segments = document_context(assignment=current)
    assert [(s.state, s.text) for s in segments] == [("current", ""), ("todo", ""), ("todo", "")]
    a_current = Assignment.objects.filter(annotator=lab[1], item__document=document).first()
    assert a_current.condition in ("a", "b")
    shown = {s.text for s in document_context(assignment=a_current) if s.state == "todo"}
    prefix = "SYSA" if a_current.condition == "a" else "SYSB"
    assert shown and all(text.startswith(prefix) for text in shown)


def test_a_segment_held_under_another_condition_shows_only_its_source(annotator):
    project = study(documents=1, segments=2, practice=0)
    first, second = project.items.order_by("document_position")
    current = AssignmentFactory(item=first, annotator=annotator, condition="a")
    AssignmentFactory(item=second, annotator=annotator, condition="b")
    assert [(s.state, s.text) for s in document_context(assignment=current)] == [("current", ""), ("todo", "")]


def test_context_never_shows_what_a_condition_hides_for_random_holdings(db):
    pool = people(2, prefix="ctx")

    @given(
        held=st.lists(st.sampled_from(["", "a", "b", "ht", None]), min_size=4, max_size=4),
        opened=st.lists(st.booleans(), min_size=4, max_size=4),
        current=st.integers(min_value=0, max_value=3),
    )
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(held, opened, current):
        held[current] = held[current] or "a"
        with transaction.atomic():
            project = study(documents=1, segments=4, practice=0)
            items = list(project.items.order_by("document_position"))
            user, other = pool
            mine = {}
            for k, condition in enumerate(held):
                AssignmentFactory(item=items[k], annotator=other, condition="b")
                if condition is None:
                    continue  # someone else's only
                mine[k] = AssignmentFactory(item=items[k], annotator=user, condition=condition)
                if opened[k]:
                    post_edit_open(assignment=mine[k], user=user)
            name = held[current]
            allowed = {"": "MODEL", "a": "SYSA", "b": "SYSB", "ht": None}[name]
            for k, segment in enumerate(document_context(assignment=mine[current])):
                if segment.text:
                    assert allowed is not None and segment.text.startswith(allowed), (name, k, segment)
                    assert held[k] in (None, name)
            transaction.set_rollback(True)

    check()


# --------------------------------------------------------------------------- reassignment


def _queue(user) -> list[tuple[int, str, int | None]]:
    return list(
        Assignment.objects.filter(annotator=user)
        .order_by("item_id")
        .values_list("item_id", "condition", "queue_position")
    )


def test_reassigning_latin_square_work_keeps_condition_and_queue_position():
    project = study(documents=3, segments=2, practice=1)
    lab = people(3)
    study_assign_latin_square(project=project, annotators=lab, conditions=ABC, apply=True)
    before = _queue(lab[2])
    newcomer = UserFactory(username="newcomer", role="annotator")
    result = assignment_reassign(assignments=Assignment.objects.filter(annotator=lab[2]), to_annotator=newcomer)
    assert result.reassigned == len(before) == 7
    assert _queue(newcomer) == before and _queue(lab[2]) == []
    first = Assignment.objects.filter(annotator=newcomer).first()
    assert first.item.practice and first.condition == "" and first.queue_position == 0
    ht = Assignment.objects.filter(annotator=newcomer, condition="ht").first()
    post_edit, _ = post_edit_open(assignment=ht, user=newcomer)
    assert post_edit.draft_text == "" and post_edit.condition == "ht"


def test_a_move_that_would_mix_conditions_in_one_document_is_refused():
    project = study(documents=3, segments=2, practice=0)
    lab = people(3)
    study_assign_latin_square(project=project, annotators=lab, conditions=ABC, apply=True)
    newcomer = UserFactory(username="newcomer", role="annotator")
    first = Assignment.objects.get(annotator=lab[0], item__external_id="d0-s0")
    assignment_reassign(assignments=[first], to_annotator=newcomer)  # doc0 under lab0's condition
    before = sorted(Assignment.objects.values_list("pk", "annotator_id", "condition"))
    theirs = Assignment.objects.filter(annotator=lab[1], item__document="doc0")  # doc0 under another condition
    assert {a.condition for a in theirs} != {first.condition}
    with pytest.raises(ServiceError, match="newcomer would see document 'doc0' under more than one condition"):
        assignment_reassign(assignments=theirs, to_annotator=newcomer)
    assert sorted(Assignment.objects.values_list("pk", "annotator_id", "condition")) == before


def test_reassignment_keeps_the_design_for_random_moves(db):
    @given(
        moves=st.lists(
            st.tuples(st.integers(min_value=0, max_value=2), st.sets(st.integers(0, 20), max_size=6)), max_size=4
        )
    )
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(moves):
        with transaction.atomic():
            project = study(documents=3, segments=2, practice=1)
            lab = people(3, prefix="mv")
            study_assign_latin_square(project=project, annotators=lab, conditions=ABC, apply=True)
            made = {
                item_id: (condition, position)
                for item_id, condition, position, _ in Assignment.objects.filter(annotator__in=lab).values_list(
                    "item_id", "condition", "queue_position", "annotator_id"
                )
            }
            design = {
                (a, i): (c, q)
                for a, i, c, q in Assignment.objects.values_list(
                    "annotator_id", "item_id", "condition", "queue_position"
                )
            }
            targets = people(2, prefix="new")
            for source, picks in moves:
                ids = list(Assignment.objects.filter(annotator=lab[source]).order_by("pk").values_list("pk", flat=True))
                chosen = [ids[p % len(ids)] for p in picks] if ids else []
                origin = {
                    a.pk: (a.item_id, a.condition, a.queue_position) for a in Assignment.objects.filter(pk__in=chosen)
                }
                try:
                    assignment_reassign(assignments=Assignment.objects.filter(pk__in=chosen), to_annotator=targets[0])
                except ServiceError as exc:
                    assert "under more than one condition" in str(exc)
                    continue
                for pk, (item_id, condition, position) in origin.items():
                    if Assignment.objects.filter(pk=pk).exists():
                        continue  # the target had the item already: left where it was
                    held = Assignment.objects.get(item_id=item_id, annotator=targets[0])
                    assert (held.condition, held.queue_position) == (condition, position)
            # Whoever holds it now, every assignment keeps the condition and place the design gave it,
            # and nobody holds one document under two conditions.
            for a in Assignment.objects.select_related("item"):
                assert any(
                    (c, q) == (a.condition, a.queue_position)
                    for (user, item), (c, q) in design.items()
                    if item == a.item_id
                )
                siblings = Assignment.objects.filter(annotator=a.annotator, item__document=a.item.document)
                assert len(set(siblings.values_list("condition", flat=True))) == 1
            assert made
            transaction.set_rollback(True)

    check()


# --------------------------------------------------------------------------- the plan's digest


REDEFINITIONS = {
    "output": lambda c: {**c, "output": "sysB" if c["output"] != "sysB" else "sysA"},
    "empty editor": lambda c: {**c, "output": None if c["output"] else "sysA"},
    "highlights": lambda c: {**c, "highlights": not c["highlights"]},
}


@pytest.mark.parametrize("change", list(REDEFINITIONS))
@pytest.mark.parametrize("index", [0, 1, 2])
def test_conditions_redefined_between_preview_and_confirm_are_refused(change, index):
    project = study()
    lab = people(3)
    shown = study_assign_latin_square(project=project, annotators=lab, conditions=ABC)
    redefined = [dict(c) for c in CONDITIONS]
    redefined[index] = REDEFINITIONS[change](redefined[index])
    Project.objects.filter(pk=project.pk).update(conditions=redefined)
    with pytest.raises(ServiceError) as refusal:
        study_assign_latin_square(
            project=project, annotators=lab, conditions=ABC, apply=True, expected_digest=shown.digest
        )
    message = str(refusal.value)
    assert "the plan changed since it was shown (the chosen conditions, their order, or what one shows" in message
    assert "items" not in message.split("(", 1)[1].split(")")[0]  # only what changed is named
    assert not Assignment.objects.exists()


def test_the_digest_names_each_part_that_changed_and_only_those():
    project = study()
    lab = people(4)
    shown = study_assign_latin_square(project=project, annotators=lab[:3], conditions=ABC)
    assert study_assign_latin_square(project=project, annotators=lab[:3], conditions=ABC).digest == shown.digest
    with pytest.raises(ServiceError, match=r"changed since it was shown \(the chosen annotators or their order\)"):
        study_assign_latin_square(
            project=project,
            annotators=[lab[1], lab[0], lab[2]],
            conditions=ABC,
            apply=True,
            expected_digest=shown.digest,
        )
    with pytest.raises(ServiceError, match=r"\(the chosen conditions, their order"):
        study_assign_latin_square(
            project=project, annotators=lab[:3], conditions=["b", "a", "ht"], apply=True, expected_digest=shown.digest
        )
    ItemFactory(project=project, external_id="late", document="doc9", document_position=0)
    with pytest.raises(ServiceError, match=r"\(the project's items, documents or practice items\)"):
        study_assign_latin_square(
            project=project, annotators=lab[:3], conditions=ABC, apply=True, expected_digest=shown.digest
        )
    assert not Assignment.objects.exists()


def test_the_page_refuses_a_redefinition_with_a_message(admin_client):
    project = study()
    lab = people(3)
    body = {"annotators": [a.pk for a in lab], "conditions": ABC}
    html = admin_client.post(reverse("manage-design", args=[project.pk]), body).content.decode()
    digest = html.split('name="plan_digest" value="', 1)[1].split('"', 1)[0]
    Project.objects.filter(pk=project.pk).update(
        conditions=[{**CONDITIONS[0], "output": None}, CONDITIONS[1], {**CONDITIONS[2], "highlights": True}]
    )
    response = admin_client.post(reverse("manage-design-apply", args=[project.pk]), {**body, "plan_digest": digest})
    assert response.status_code == 400
    page = " ".join(response.content.decode().split())
    assert "the plan changed since it was shown (the chosen conditions, their order, or what one shows" in page
    assert not Assignment.objects.exists()


# --------------------------------------------------------------------------- previews take no locks


def test_a_preview_takes_no_lock_and_applying_does(monkeypatch):
    project = study()
    lab = people(3)
    locked: list[str] = []
    original = QuerySet.select_for_update

    def recording(self, *args, **kwargs):
        locked.append(self.model.__name__)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "select_for_update", recording)
    with CaptureQueriesContext(connection) as preview:
        study_assign_latin_square(project=project, annotators=lab, conditions=ABC)
    assert locked == [] and not [q for q in preview.captured_queries if "FOR UPDATE" in q["sql"].upper()]
    with CaptureQueriesContext(connection) as applying:
        study_assign_latin_square(project=project, annotators=lab, conditions=ABC, apply=True)
    assert locked == ["Project"]
    if connection.features.has_select_for_update:  # PostgreSQL: the statement itself
        assert [q for q in applying.captured_queries if "FOR UPDATE" in q["sql"].upper()]


def test_the_plan_page_and_api_take_no_lock(admin_client):
    project = study()
    lab = people(3)
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.post(
            reverse("manage-design", args=[project.pk]), {"annotators": [a.pk for a in lab], "conditions": ABC}
        )
        api = admin_client.post(
            reverse("api-design-plan", args=[project.pk]),
            data=json.dumps({"annotators": [a.username for a in lab], "conditions": ABC}),
            content_type="application/json",
        )
    assert page.status_code == api.status_code == 200
    assert not [q for q in queries.captured_queries if "FOR UPDATE" in q["sql"].upper()]


# --------------------------------------------------------------------------- hundreds of annotators


def test_the_design_page_posts_300_annotators_and_refuses_beyond_the_documented_maximum(admin_client):
    project = study(documents=3, segments=1, practice=0)
    crowd = people(300, prefix="many")
    body = {"annotators": [a.pk for a in crowd], "conditions": ABC}
    response = admin_client.post(reverse("manage-design", args=[project.pk]), body)
    page = " ".join(response.content.decode().split())
    assert response.status_code == 200 and "300 annotators × 3 documents" in page and "Confirm: make these 900" in page
    digest = page.split('name="plan_digest" value="', 1)[1].split('"', 1)[0]
    applied = admin_client.post(reverse("manage-design-apply", args=[project.pk]), {**body, "plan_digest": digest})
    assert applied.status_code == 302 and Assignment.objects.filter(item__project=project).count() == 900
    # The documented maximum fits in one form post, with the conditions, the digest and the CSRF token.
    assert django_settings.DATA_UPLOAD_MAX_NUMBER_FIELDS > DESIGN_MAX_ANNOTATORS + DESIGN_MAX_CONDITIONS + 2

    form = LatinSquareForm({"annotators": [a.pk for a in crowd], "conditions": ABC}, project=project)
    form.fields["annotators"].clean = lambda value: list(range(1001))  # as if 1,001 were ticked
    assert not form.is_valid() and "At most 1,000 annotators in one plan, 1,001 are ticked" in str(form.errors)


def test_the_plan_api_takes_500_names_by_post_and_says_how_when_a_query_is_too_long(admin_client):
    project = study(documents=3, segments=1, practice=0)
    crowd = people(500, prefix="name-of-a-participant-")
    names = [a.username for a in crowd]
    url = reverse("api-design-plan", args=[project.pk])
    answer = admin_client.post(
        url, data=json.dumps({"annotators": names, "conditions": ABC}), content_type="application/json"
    )
    assert answer.status_code == 200 and len(answer.json()["per_annotator"]) == 500
    assert not Assignment.objects.exists()
    query = admin_client.get(url, {"annotators": ",".join(names), "conditions": ",".join(ABC)})
    assert query.status_code == 400
    assert (
        "too long for a URL (at most 3,000 here" in query.json()["detail"] and "POST the plan" in query.json()["detail"]
    )
    too_many = admin_client.post(
        url,
        data=json.dumps({"annotators": [f"u{k}" for k in range(1001)], "conditions": ABC}),
        content_type="application/json",
    )
    assert too_many.status_code == 400 and "no more than 1000" in too_many.json()["detail"]
