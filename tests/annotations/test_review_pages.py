"""The review flow through Django's test client: an annotator submits through the editor's API, a reviewer
takes the post-edit from the queue, edits it in the same editor (its events, its effort), submits, and
returns it with a reason; the annotator sees the reason in the editor and on their home page, revises
and submits again; a second review accepts it. Then the pages' refusals and what a reviewer is shown
(blinding): no annotator's name, nothing their condition hides, no item the reviewer holds."""

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import Assignment, EditEvent, PostEdit
from annotations.roles import set_reviewer
from tests.annotations.editing_helpers import EDITED, ORIGINAL, edit_log, post_json, url
from tests.factories import AssignmentFactory, ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def reviewer_user(name: str = "rev"):
    user = UserFactory(username=name, role="annotator")
    set_reviewer(user, True)
    return user


def page_of(client: Client, assignment_id: int) -> tuple[PostEdit, str]:
    """Open the editor of the assignment (as the browser does): its post-edit and page id."""
    response = client.get(reverse("editor", args=[assignment_id]))
    assert response.status_code == 200, response.content[:400]
    post_edit = PostEdit.objects.get(assignment_id=assignment_id)
    page_id = str(post_edit.visits.order_by("-started_at", "-id").first().page_id)
    return post_edit, page_id


def append_log(text: str, addition: str, *, start_seq: int, t0: float) -> list[dict]:
    """Events that type `addition` at the end of `text` (one key each), then submit."""
    events: list[dict] = [{"t": 0, "k": "load", "data": text, "len": len(text)}]
    at = len(text)
    for n, char in enumerate(addition):
        t = 300 + 400 * n
        events += [
            {"t": t, "k": "keydown", "key": char, "code": "KeyX"},
            {"t": t + 1, "k": "beforeinput", "it": "insertText", "s": at, "e": at},
            {"t": t + 2, "k": "input", "it": "insertText", "s": at + 1, "len": at + 1, "data": char},
        ]
        at += 1
    events.append({"t": 300 + 400 * len(addition) + 500, "k": "submit"})
    return [dict(event, seq=start_seq + n, t=t0 + event["t"]) for n, event in enumerate(events)]


def edit_and_submit(client: Client, post_edit: PostEdit, page_id: str, events: list[dict], text: str) -> dict:
    response = post_json(client, url("events", post_edit), {"page_id": page_id, "events": events})
    assert response.status_code == 200, response.content
    post_edit.refresh_from_db()
    payload = {"page_id": page_id, "text": text, "version": post_edit.version, "last_seq": events[-1]["seq"]}
    response = post_json(client, url("submit", post_edit), payload)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_whole_review_flow_through_the_pages():
    annotator = UserFactory(username="anna", role="annotator")
    reviewer = reviewer_user()
    project = ProjectFactory(name="Reviewed study")
    assignment = AssignmentFactory(item=ItemFactory(project=project, model_output=ORIGINAL), annotator=annotator)
    anna, rev = logged_in(annotator), logged_in(reviewer)

    # 1. The annotator post-edits and submits.
    post_edit, page_id = page_of(anna, assignment.pk)
    edit_and_submit(anna, post_edit, page_id, edit_log(), EDITED)
    post_edit.refresh_from_db()
    assert post_edit.text == EDITED and post_edit.keystrokes == 2 and post_edit.replay_ok

    # 2. The reviewer finds it in the queue (no annotator name), takes it: the same editor, the annotator's text.
    queue = rev.get(reverse("review-queue")).content.decode()
    take_url = reverse("review-take", args=[post_edit.pk])
    assert take_url in queue and "anna" not in queue
    response = rev.post(take_url)
    review = Assignment.objects.reviews().get()
    assert response.status_code == 302 and response["Location"] == reverse("editor", args=[review.pk])
    editor_response = rev.get(response["Location"])
    assert editor_response.context["config"]["urls"]["next"] == reverse("review-page", args=[review.pk])
    editor_page = editor_response.content.decode()
    assert 'id="review-note"' in editor_page and EDITED in editor_page
    assert "anna" not in editor_page
    # The review's own queue row leads to the editor until it is submitted.
    assert reverse("editor", args=[review.pk]) in rev.get(reverse("review-queue")).content.decode()

    # 3. The reviewer edits (events, effort) and submits: on to the review's page.
    review_pe, review_page_id = PostEdit.objects.get(assignment=review), None
    review_page_id = str(review_pe.visits.get().page_id)
    answer = edit_and_submit(
        rev, review_pe, review_page_id, append_log(EDITED, "!!", start_seq=0, t0=50.0), EDITED + "!!"
    )
    assert answer["next_url"] == reverse("review-page", args=[review.pk])
    review_pe.refresh_from_db()
    assert (review_pe.start_text, review_pe.text) == (EDITED, EDITED + "!!")
    assert review_pe.keystrokes == 2 and review_pe.replay_ok and review_pe.wall_ms > 0
    assert EditEvent.objects.filter(post_edit=review_pe).count() == 8

    # 4. Returning without a reason: refused, named, the page again; with one: back to the annotator.
    review_url = reverse("review-page", args=[review.pk])
    response = rev.post(review_url, {"decision": "returned", "reason": "  "})
    assert response.status_code == 400
    assert "reason: say why the post-edit goes back to its annotator" in response.content.decode()
    response = rev.post(review_url, {"decision": "returned", "reason": "Keep the question mark?"})
    assert response.status_code == 302 and response["Location"] == review_url
    page = rev.get(review_url).content.decode()
    assert 'id="review-decision"' in page and "Keep the question mark?" in page and 'id="review-decide"' not in page
    assert rev.post(review_url, {"decision": "accepted"}).status_code == 409  # decided once only

    # 5. The annotator sees the reason on their home page and in the editor, revises and submits again.
    assignment.refresh_from_db()
    assert assignment.status == Assignment.IN_PROGRESS
    home = anna.get(reverse("annotator_home")).content.decode()
    assert 'id="returned-work"' in home and "Keep the question mark?" in home
    post_edit, page_id = page_of(anna, assignment.pk)
    assert (
        'id="returned-reason">Keep the question mark?<'
        in anna.get(reverse("editor", args=[assignment.pk])).content.decode()
    )
    post_edit, page_id = page_of(anna, assignment.pk)
    answer = edit_and_submit(anna, post_edit, page_id, append_log(EDITED, "?", start_seq=11, t0=10_000.0), EDITED + "?")
    post_edit.refresh_from_db()
    assert post_edit.text == EDITED + "?" and post_edit.keystrokes == 3  # effort over both rounds
    assert post_edit.replay_ok
    assert 'id="returned-work"' not in anna.get(reverse("annotator_home")).content.decode()

    # 6. A second round: accepted.
    rev.post(take_url)
    second = Assignment.objects.reviews().exclude(pk=review.pk).get()
    second_pe, second_page = page_of(rev, second.pk)
    assert second_pe.start_text == EDITED + "?"
    edit_and_submit(
        rev,
        second_pe,
        second_page,
        [{"seq": 0, "t": 5.0, "k": "load", "data": EDITED + "?", "len": 16}, {"seq": 1, "t": 900.0, "k": "submit"}],
        EDITED + "?",
    )
    assert rev.post(reverse("review-page", args=[second.pk]), {"decision": "accepted"}).status_code == 302
    second.refresh_from_db()
    assert second.review_decision == "accepted"
    assert take_url not in rev.get(reverse("review-queue")).content.decode()


def test_the_pages_refuse_who_may_not_review():
    annotator = UserFactory(username="anna", role="annotator")
    researcher = UserFactory(username="res", role="researcher")
    assignment = AssignmentFactory(annotator=annotator, status=Assignment.SUBMITTED)
    post_edit = PostEdit.objects.create(assignment=assignment, text="Done.", draft_text="Done.")
    for user in (annotator, researcher):
        client = logged_in(user)
        assert client.get(reverse("review-queue")).status_code == 403
        assert client.post(reverse("review-take", args=[post_edit.pk])).status_code == 403
    assert not Assignment.objects.reviews().exists()
    assert Client().get(reverse("review-queue"))["Location"].startswith(reverse("login"))
    # One's own work: refused with its name, on a page.
    set_reviewer(annotator, True)
    response = logged_in(annotator).post(reverse("review-take", args=[post_edit.pk]))
    assert response.status_code == 400 and "is your own post-edit" in response.content.decode()
    assert logged_in(annotator).post(reverse("review-take", args=[999_999])).status_code == 404


def test_another_reviewer_neither_sees_nor_decides_someone_elses_review():
    assignment = AssignmentFactory(status=Assignment.SUBMITTED)
    post_edit = PostEdit.objects.create(assignment=assignment, text="Done.", draft_text="Done.")
    first, second = reviewer_user("rev1"), reviewer_user("rev2")
    logged_in(first).post(reverse("review-take", args=[post_edit.pk]))
    review = Assignment.objects.reviews().get()
    other = logged_in(second)
    assert other.get(reverse("review-page", args=[review.pk])).status_code == 404
    assert other.post(reverse("review-page", args=[review.pk]), {"decision": "accepted"}).status_code == 404
    assert other.get(reverse("editor", args=[review.pk])).status_code == 404
    response = other.post(reverse("review-take", args=[post_edit.pk]))
    assert response.status_code == 409 and "already under review" in response.content.decode()
    assert reverse("review-take", args=[post_edit.pk]) not in other.get(reverse("review-queue")).content.decode()


SYS_A, SYS_B, MODEL = "SYSAOUTMARK", "SYSBOUTMARK", "MODELOUTMARK"


def test_a_reviewer_sees_what_the_review_needs_only():
    """The annotator worked under condition "a" (system A's output); the reviewer sees the annotator's text,
    the source and the document as condition "a" shows it; never system B's output, the model output, the
    annotator's name; and no post-edit of an item the reviewer holds themselves."""
    project = ProjectFactory(
        name="Blind review",
        conditions=[{"name": "a", "output": "sysA"}, {"name": "b", "output": "sysB"}],
        context="document",
    )
    items = [
        ItemFactory(
            project=project,
            external_id=f"seg-{k}",
            document="d1",
            document_position=k,
            source=f"Quelle {k}.",
            model_output=f"{MODEL}-{k}",
            outputs={"sysA": f"{SYS_A}-{k}", "sysB": f"{SYS_B}-{k}"},
        )
        for k in range(3)
    ]
    annotator = UserFactory(username="hidden-name-q8", role="annotator")
    other = UserFactory(username="other-name-z3", role="annotator")
    reviewer = reviewer_user("rev-x")
    mine = AssignmentFactory(item=items[0], annotator=annotator, condition="a", status=Assignment.SUBMITTED)
    PostEdit.objects.create(
        assignment=mine, text="ANNOTATORTEXT", draft_text="ANNOTATORTEXT", condition="a", start_override=f"{SYS_A}-0"
    )
    # The reviewer holds segment 2 themselves, which someone else submitted under "b": not theirs to review.
    AssignmentFactory(item=items[2], annotator=reviewer, condition="a")
    held = AssignmentFactory(item=items[2], annotator=other, condition="b", status=Assignment.SUBMITTED)
    held_pe = PostEdit.objects.create(assignment=held, text="OTHERTEXT", draft_text="OTHERTEXT", condition="b")
    client = logged_in(reviewer)
    queue = client.get(reverse("review-queue")).content.decode()
    assert reverse("review-take", args=[held_pe.pk]) not in queue
    response = client.post(reverse("review-take", args=[mine.post_edit.pk]))
    assert response.status_code == 302
    review = Assignment.objects.reviews().get()
    assert review.condition == "a"
    review_pe, page_id = page_of(client, review.pk)
    pages = [
        queue,
        client.get(reverse("review-queue")).content.decode(),
        client.get(reverse("editor", args=[review.pk])).content.decode(),
        client.get(reverse("editor_diff", args=[review.pk])).content.decode(),
        client.get(reverse("review-page", args=[review.pk])).content.decode(),
        client.get(reverse("api-assignment", args=[review.pk])).content.decode(),
        client.get(reverse("api-assignments")).content.decode(),
        client.get(reverse("annotator_home")).content.decode(),
    ]
    everything = "\n".join(pages)
    for forbidden in (SYS_B, MODEL, "hidden-name-q8", "other-name-z3", "OTHERTEXT"):
        assert forbidden not in everything, forbidden
    assert "ANNOTATORTEXT" in pages[2] and f"{SYS_A}-1" in pages[2]  # the text, and the document as "a" shows it
    # The review is no part of the reviewer's own batches.
    assert reverse("editor", args=[review.pk]) not in pages[-1]


@pytest.mark.parametrize("huge", [2**63, 10**30])
def test_ids_beyond_any_column_are_a_404_not_a_500(huge):
    client = logged_in(reviewer_user())
    assert client.post(reverse("review-take", args=[huge])).status_code == 404
    assert client.get(reverse("review-page", args=[huge])).status_code == 404
    admin = logged_in(UserFactory(username="boss", role="admin"))
    assert admin.get(reverse("metrics-reviews", args=[huge])).status_code == 404


def test_a_skipped_review_goes_back_to_the_queue_and_the_post_edit_waits_again():
    assignment = AssignmentFactory(status=Assignment.SUBMITTED)
    post_edit = PostEdit.objects.create(assignment=assignment, text="Done.", draft_text="Done.")
    client = logged_in(reviewer_user())
    client.post(reverse("review-take", args=[post_edit.pk]))
    review = Assignment.objects.reviews().get()
    review_pe, page_id = page_of(client, review.pk)
    response = post_json(client, url("skip", review_pe), {"page_id": page_id, "reason": "Not my language pair."})
    assert response.status_code == 200, response.content
    assert response.json()["next_url"] == reverse("review-queue")
    review.refresh_from_db()
    assert (review.status, review.skip_reason) == (Assignment.SKIPPED, "Not my language pair.")
    assert (
        reverse("review-take", args=[post_edit.pk])
        in logged_in(reviewer_user("rev2")).get(reverse("review-queue")).content.decode()
    )
