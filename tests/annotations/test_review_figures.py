"""Reviews are no first-pass post-edits: with reviews present (decided, undecided, returned, with metric values
and effort of their own) every existing figure is what it was without them — the analysis, agreement,
progress, the annotator's batches, overlap when assigning, the export's columns — and the review summary
and the export's review columns count them, with the distance between the annotator's and the reviewer's text."""

import csv
import io
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import Assignment, PostEdit
from annotations.roles import set_reviewer
from annotations.selectors_progress import batch_progress, project_progress
from annotations.services.assignment import batch_assign
from annotations.services.review import review_assign, review_decide
from metrics import selection_data
from metrics.exports import export_spec, stream_csv
from metrics.reviews import REVIEW_COLUMNS, review_distances, review_summary
from metrics.selectors import post_edit_frame, projects_with_submitted
from metrics.text.compression import compression_distance
from metrics.text.edit import ter
from tests.factories import (
    BatchFactory,
    ItemFactory,
    MetricValueFactory,
    ProjectFactory,
    SubmittedPostEditFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

TEXTS = ["The cat sat on the mat.", "A dog barks at night.", "Rain fell all day long.", "She reads every book."]
# Keystrokes per item and editor: not additive (a perfectly additive table leaves ICC no residual).
KEYS = [(1, 2), (5, 3), (7, 9), (10, 16)]


def study():
    project = ProjectFactory(name="Figures")
    batch = BatchFactory(project=project, name="b1")
    annotators = [UserFactory(username=f"ed{k}", role="annotator") for k in range(2)]
    post_edits = []
    for n, text in enumerate(TEXTS):
        item = ItemFactory(project=project, batch=batch, batch_position=n, external_id=f"i{n}", model_output=text)
        for k, annotator in enumerate(annotators):
            post_edits.append(
                SubmittedPostEditFactory(
                    assignment__item=item,
                    assignment__annotator=annotator,
                    text=text.replace(".", "!" * (k + 1)),
                    wall_ms=1000 * (n + 1) + 300 * k,
                    active_ms=800 * (n + 1) + 200 * k,
                    keystrokes=KEYS[n][k],
                    allkeys=KEYS[n][k] + n + 1,
                )
            )
    for n, post_edit in enumerate(post_edits):
        MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=float(n % 5))
        MetricValueFactory(post_edit=post_edit, metric="compression", value=float((3 * n) % 7))
    ItemFactory(project=project, batch=batch, batch_position=len(TEXTS), external_id="open", model_output="Open.")
    return project, annotators, post_edits


def add_reviews(post_edits):
    """Three reviews: accepted, returned then re-submitted and reviewed again (undecided), and one under way;
    each with effort and metric values of its own."""
    reviewer = UserFactory(username="rev", role="annotator")
    set_reviewer(reviewer, True)
    reviews = []
    for post_edit in post_edits[:3]:
        review = review_assign(post_edit=post_edit, reviewer=reviewer)
        PostEdit.objects.filter(assignment=review).update(
            text=post_edit.text + " Fixed.", draft_text=post_edit.text + " Fixed.", wall_ms=99_000, keystrokes=70
        )
        Assignment.objects.filter(pk=review.pk).update(status=Assignment.SUBMITTED)
        MetricValueFactory(post_edit=review.post_edit, metric="levenshtein", value=50.0)
        reviews.append(review)
    review_decide(review=reviews[0], reviewer=reviewer, decision="accepted")
    review_decide(review=reviews[1], reviewer=reviewer, decision="returned", reason="Again, please.")
    Assignment.objects.filter(pk=post_edits[1].assignment_id).update(status=Assignment.SUBMITTED)  # re-submitted
    review_assign(post_edit=post_edits[3], reviewer=reviewer)  # taken, not edited yet
    return reviewer, reviews


def without_activity(value):
    """The figures without the moment of the last activity: a return and a new submission are activity."""
    if isinstance(value, str):
        return re.sub(r"last_activity=datetime\.datetime\([^)]*\)", "", value)
    if isinstance(value, dict):
        return {k: without_activity(v) for k, v in value.items() if k != "last_activity"}
    if isinstance(value, list):
        return [without_activity(v) for v in value]
    return value


def figures(project, annotators, admin_client) -> dict:
    selection_data.clear_cache()
    frame = post_edit_frame(project=project)
    out = {
        "frame": frame.to_json(orient="split"),  # NaN as null: comparable
        "progress": without_activity(repr(project_progress(project=project))),
        "batches": [repr(batch_progress(user=a)) for a in annotators],
        "projects": [(p.name, p.submitted) for p in projects_with_submitted()],
    }
    for name, query in (
        ("api-project-analysis", "?target=keystrokes"),
        ("api-project-agreement", "?target=keystrokes"),
        ("api-project-progress", ""),
    ):
        response = admin_client.get(reverse(name, args=[project.pk]) + query)
        assert response.status_code == 200, (name, response.content[:300])
        text = response.content.decode()
        out[name] = json.dumps(without_activity(json.loads(text))) if name == "api-project-progress" else text
    report = admin_client.get(reverse("metrics-report", args=[project.pk]) + "?target=keystrokes")
    assert report.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(stream_csv(export_spec(project=project))).decode())))
    out["export"] = [{k: v for k, v in row.items() if k not in REVIEW_COLUMNS} for row in rows]
    return out


def test_existing_figures_are_unchanged_with_reviews_present(admin_client):
    project, annotators, post_edits = study()
    before = figures(project, annotators, admin_client)
    assert len(post_edit_frame(project=project)) == 8
    assert '"pearson"' in before["api-project-analysis"] or "pearson" in before["api-project-analysis"]
    add_reviews(post_edits)
    Assignment.objects.filter(pk=post_edits[1].assignment_id).update(status=Assignment.SUBMITTED)
    after = figures(project, annotators, admin_client)
    for key in before:
        assert after[key] == before[key], key


def test_assigning_with_overlap_does_not_count_reviews():
    project, annotators, post_edits = study()
    add_reviews(post_edits)  # the reviewer holds four of the items too, but as reviews
    newcomer = UserFactory(username="newcomer", role="annotator")
    batch = project.batches.get()
    # overlap 3: every item held twice gets one more editor, reviews or not.
    batch_assign(project=project, batches=[batch], annotators=[*annotators, newcomer], overlap=3)
    assert Assignment.objects.first_pass().filter(annotator=newcomer).count() == len(TEXTS) + 1


def test_the_review_summary_and_the_export_count_reviews_with_their_distances(admin_client):
    project, _, post_edits = study()
    _, reviews = add_reviews(post_edits)
    summary = review_summary(project=project)
    assert (summary.reviews, summary.accepted, summary.returned, summary.undecided) == (3, 1, 1, 1)
    assert summary.waiting == len(post_edits) - 4
    assert summary.mean_wall_ms == 99_000 and summary.mean_keystrokes == 70
    first = summary.rows[0]
    annotator_text, reviewer_text = post_edits[0].text, post_edits[0].text + " Fixed."
    assert first.compression == compression_distance(annotator_text, reviewer_text)
    assert first.ter == pytest.approx(ter(annotator_text, reviewer_text))
    assert first.ter == pytest.approx(100 / 6)  # one inserted word over the annotator's six
    assert (first.annotator, first.reviewer, first.decision) == ("ed0", "rev", "accepted")
    assert review_distances("same text", "same text") == (1.0, 0.0)  # one phrase copies the whole text

    page = admin_client.get(reverse("metrics-reviews", args=[project.pk])).content.decode()
    assert 'id="review-rows"' in page and "Again, please." in page

    rows = list(csv.DictReader(io.StringIO(b"".join(stream_csv(export_spec(project=project))).decode())))
    assert list(rows[0])[-len(REVIEW_COLUMNS) :] == list(REVIEW_COLUMNS)
    by_text = {row["edited"]: row for row in rows}
    accepted = by_text[post_edits[0].text]
    assert (accepted["review_decision"], accepted["review_round"], accepted["review_wall_ms"]) == (
        "accepted",
        "1",
        "99000",
    )
    assert float(accepted["review_compression"]) == first.compression
    returned = by_text[post_edits[1].text]
    assert (returned["review_decision"], returned["review_reason"]) == ("returned", "Again, please.")
    untouched = by_text[post_edits[5].text]
    assert all(untouched[column] == "" for column in REVIEW_COLUMNS)


def test_a_project_without_reviews_exports_no_review_columns(admin_client):
    project, _, _ = study()
    header = b"".join(stream_csv(export_spec(project=project))).decode().splitlines()[0]
    assert "review_" not in header
    assert Client().get(reverse("metrics-reviews", args=[project.pk])).status_code == 302
