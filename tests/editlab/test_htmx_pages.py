"""Every URL htmx fetches a part of answers the whole page unless htmx swaps (editlab.http.render_page):
loaded directly, or restored from history (HX-History-Restore-Request), it is the whole page; and
every such answer says `Vary: HX-Request`, so that the browser's cache never serves one for the other."""

import pytest
from django.urls import reverse

from annotations.models import Assignment
from metrics.models import MetricJob
from tests.factories import AssignmentFactory, BatchFactory, ItemFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

SWAP = {"HTTP_HX_REQUEST": "true"}
RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
WHOLE = '<header class="topbar">'


def _urls(annotator) -> dict[str, tuple[str, str]]:
    """(role's client, URL) of every page htmx fetches a part of."""
    project = ProjectFactory(conditions=[{"name": "c1", "output": None}])
    batch = BatchFactory(project=project)
    ItemFactory(project=project, batch=batch, batch_position=0)
    AssignmentFactory(item=batch.items.first(), annotator=annotator)
    done = SubmittedPostEditFactory(
        assignment__item__project=project, assignment__annotator=annotator, assignment__status=Assignment.SUBMITTED
    )
    job = MetricJob.objects.create(project=project, metrics=["levenshtein"], variants=["plain"])
    return {
        "progress poll": ("admin", reverse("manage-progress", args=[project.pk])),
        "design plan": ("admin", reverse("manage-design", args=[project.pk]) + "?conditions=c1"),
        "report selection": ("researcher", reverse("metrics-report", args=[project.pk]) + "?target=wall_time"),
        "job poll": ("researcher", reverse("metrics-job", args=[project.pk, job.pk])),
        "batch items": ("anna", reverse("annotator_home") + f"?batch={batch.pk}"),
        "diff": ("anna", reverse("editor_diff", args=[done.assignment.pk])),
        "users filters": ("admin", reverse("manage-users") + "?role=annotator&page=1"),
    }


@pytest.mark.parametrize(
    "page", ["progress poll", "design plan", "report selection", "job poll", "batch items", "diff", "users filters"]
)
def test_a_page_htmx_fetches_in_part_is_whole_unless_htmx_swaps(client_as, annotator, page):
    role, url = _urls(annotator)[page]
    client = client_as(role)
    answers = {"direct": client.get(url), "swap": client.get(url, **SWAP), "restore": client.get(url, **RESTORE)}
    for how, response in answers.items():
        assert response.status_code == 200, how
        assert "HX-Request" in response["Vary"], how
    assert WHOLE in answers["direct"].content.decode()
    assert WHOLE in answers["restore"].content.decode()  # Back with htmx's cache missing: the whole page
    assert WHOLE not in answers["swap"].content.decode()
    assert "<html" not in answers["swap"].content.decode()
