import csv
import io
import re
from datetime import timedelta

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from metrics import text as engine
from metrics.models import MetricChunk, MetricJob, MetricValue, TaskWorker
from tests.factories import ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(annotator):
    project = ProjectFactory(name="study")
    for n, text in enumerate(["This is a test.", "This is the test."]):
        SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=f"s{n}",
            assignment__annotator=annotator,
            text=text,
        )
    return project


@pytest.fixture
def failed_job(project, researcher):
    return MetricJob.objects.create(
        project=project,
        metrics=["levenshtein"],
        variants=["plain"],
        status=MetricJob.FAILED,
        total=2,
        done=0,
        error="RuntimeError: scorer crashed",
        created_by=researcher,
    )


def pages(project, job) -> list[str]:
    return [
        reverse("metrics-projects"),
        reverse("metrics-project", kwargs={"project_id": project.pk}),
        reverse("metrics-job", kwargs={"project_id": project.pk, "job_id": job.pk}),
        reverse("metrics-export", kwargs={"project_id": project.pk}) + "?format=csv",
    ]


def test_anonymous_users_are_sent_to_the_login_page(client, project, failed_job):
    for url in pages(project, failed_job):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/login/"), url
    response = client.post(reverse("metrics-compute", kwargs={"project_id": project.pk}))
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_annotators_are_refused_every_page_and_action(annotator_client, other_annotator_client, project, failed_job):
    for client in (annotator_client, other_annotator_client):
        for url in pages(project, failed_job):
            assert client.get(url).status_code == 403, url
        assert client.post(reverse("metrics-compute", kwargs={"project_id": project.pk})).status_code == 403
        retry = reverse("metrics-job-retry", kwargs={"project_id": project.pk, "job_id": failed_job.pk})
        assert client.post(retry).status_code == 403
    assert MetricJob.objects.count() == 1 and not MetricValue.objects.exists()


@pytest.mark.parametrize("who", ["researcher_client", "admin_client"])
def test_researchers_and_admins_see_every_page(request, who, project, failed_job):
    client = request.getfixturevalue(who)
    for url in pages(project, failed_job):
        assert client.get(url).status_code == 200, url


def test_the_project_page_shows_coverage_per_metric_and_variant(researcher_client, project):
    post_edit = project.items.get(external_id="s0").assignments.get().post_edit
    MetricValue.objects.create(
        post_edit=post_edit, metric="levenshtein", variant="plain", value=3.0, metric_version="0", input_hash="old"
    )
    response = researcher_client.get(reverse("metrics-project", kwargs={"project_id": project.pk}))
    rows = {row["metric"]: row["cells"] for row in response.context["rows"]}
    plain, with_refs = rows["levenshtein"]
    assert (plain.up_to_date, plain.stale, plain.missing, plain.not_applicable) == (0, 1, 1, 0)
    assert (with_refs.up_to_date, with_refs.missing, with_refs.not_applicable) == (0, 0, 2)
    assert response.context["post_edits"] == 2
    assert set(engine.EFFORT_SUITE) <= set(rows)
    assert b"Compute</button>" in response.content


@pytest.mark.parametrize("who", ["researcher_client", "admin_client"])
def test_computing_redirects_to_the_finished_job(request, who, project):
    client = request.getfixturevalue(who)
    response = client.post(
        reverse("metrics-compute", kwargs={"project_id": project.pk}),
        {"metrics": ["levenshtein", "compression"], "variants": ["plain"]},
    )
    job = MetricJob.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("metrics-job", kwargs={"project_id": project.pk, "job_id": job.pk})
    assert (job.status, job.total, job.done, job.metrics, job.variants) == (
        MetricJob.DONE,
        4,
        4,
        ["levenshtein", "compression"],
        ["plain"],
    )
    assert sorted(MetricValue.objects.filter(metric="levenshtein").values_list("value", flat=True)) == [
        3.0,
        6.0,
    ]  # "are"->"is"; and "a"->"the"
    page = client.get(response.url)
    assert b"<strong>done</strong>" in page.content and b"4 of 4 values computed" in page.content
    assert b'hx-trigger="every 1s"' not in page.content


def test_an_unknown_metric_is_refused_with_a_message(researcher_client, project):
    url = reverse("metrics-compute", kwargs={"project_id": project.pk})
    response = researcher_client.post(url, {"metrics": ["nope"]}, follow=True)
    assert b"unknown metric(s): nope" in response.content
    assert not MetricJob.objects.exists()


def test_a_running_job_polls_its_progress_partial(researcher_client, project, researcher):
    job = MetricJob.objects.create(project=project, status=MetricJob.RUNNING, total=10, done=4, variants=["plain"])
    url = reverse("metrics-job", kwargs={"project_id": project.pk, "job_id": job.pk})
    partial = researcher_client.get(url, headers={"HX-Request": "true"})
    content = partial.content.decode()
    assert content.lstrip().startswith('<section id="job-progress"')
    assert "<html" not in content
    assert f'hx-get="{url}" hx-trigger="every 1s"' in content
    assert f'href="{url}"' in content
    assert '<progress id="job-progress-bar" value="4" max="10">40%</progress>' in content
    assert "4 of 10 values computed: 40%" in content


def test_the_bar_moves_within_a_running_chunk(researcher_client, project):
    # One chunk of 6 values of a 10-value job: 4 stored by a finished chunk, 3 scored so far in the running one.
    job = MetricJob.objects.create(project=project, status=MetricJob.RUNNING, total=10, done=4, variants=["plain"])
    for seq, (status, done) in enumerate([(MetricChunk.DONE, 4), (MetricChunk.RUNNING, 3)]):
        MetricChunk.objects.create(
            job=job,
            seq=seq,
            variant="plain",
            metrics=["levenshtein"],
            post_edit_ids=[seq],
            size=1,
            total=[4, 6][seq],
            done=done,
            status=status,
        )
    content = _page(researcher_client, job)
    assert '<progress id="job-progress-bar" value="7" max="10">70%</progress>' in content
    assert "4 of 10 values computed (and 3 being computed): 70%" in content
    assert "read the report" not in content


def test_the_bar_never_passes_the_total_nor_divides_by_zero():
    from metrics.views.jobs import job_progress

    assert job_progress(9, 5, 10) == {"value": 10, "percent": 100}
    assert job_progress(0, 0, 0) == {"value": 0, "percent": 0}
    assert job_progress(1, 0, 3) == {"value": 1, "percent": 33}


def test_a_finished_job_links_to_the_report_and_to_the_metric_values(researcher_client, project):
    job = MetricJob.objects.create(project=project, status=MetricJob.DONE, total=4, done=4, variants=["plain"])
    content = _page(researcher_client, job)
    report = reverse("metrics-report", kwargs={"project_id": project.pk})
    values = reverse("metrics-project", kwargs={"project_id": project.pk})
    assert f'<a href="{report}" data-loading="Computing the report of study…">read the report of study</a>' in content
    assert f'<a href="{values}">see its metric values</a>' in content
    assert '<progress id="job-progress-bar" value="4" max="4">100%</progress>' in content


def test_a_failed_job_shows_its_error_and_a_retry_finishes_it(researcher_client, project, failed_job):
    url = reverse("metrics-job", kwargs={"project_id": project.pk, "job_id": failed_job.pk})
    page = researcher_client.get(url).content.decode()
    assert "The job failed: <code>RuntimeError: scorer crashed</code>" in page
    retry = reverse("metrics-job-retry", kwargs={"project_id": project.pk, "job_id": failed_job.pk})
    assert f'action="{retry}"' in page

    response = researcher_client.post(retry)

    assert response.status_code == 302 and response.url == url
    failed_job.refresh_from_db()
    assert (failed_job.status, failed_job.error, failed_job.done) == (MetricJob.DONE, "", 2)
    assert MetricValue.objects.filter(metric="levenshtein", variant="plain").count() == 2


def test_a_job_of_another_project_is_not_found(researcher_client, failed_job):
    other = ProjectFactory()
    url = reverse("metrics-job", kwargs={"project_id": other.pk, "job_id": failed_job.pk})
    assert researcher_client.get(url).status_code == 404


def test_the_export_streams_a_download(researcher_client, project):
    url = reverse("metrics-export", kwargs={"project_id": project.pk})
    response = researcher_client.get(url + "?format=csv")
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Disposition"] == 'attachment; filename="study-post-edits.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["external_id"], r["annotator"], r["edited"]) for r in rows] == [
        ("s0", "anna", "This is a test."),
        ("s1", "anna", "This is the test."),
    ]
    bad = researcher_client.get(url + "?format=xls")
    assert bad.status_code == 400
    assert "unknown export format 'xls': choose one of csv, jsonl, parquet" in bad.content.decode()  # as a page


DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def _page(client, job) -> str:
    url = reverse("metrics-job", kwargs={"project_id": job.project_id, "job_id": job.pk})
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


def test_a_job_no_worker_has_claimed_says_so_and_how_long_it_has_waited(researcher_client, project, settings):
    settings.TASKS = DATABASE_TASKS
    settings.EDITLAB_WORKER_STALE_S = 60
    job = MetricJob.objects.create(project=project, metrics=["levenshtein"], variants=["plain"])
    MetricJob.objects.filter(pk=job.pk).update(created=timezone.now() - timedelta(seconds=125))

    page = _page(researcher_client, job)

    assert re.search(
        r"Queued — no worker has claimed it yet; is <code>db_worker</code> running\? Waiting for 2 min \d+ s; "
        r"no worker has sent a heartbeat in the last 60 s\.",
        page,
    )
    assert "0 of 0" in page  # the count stays, with the reason beside it
    TaskWorker.objects.create(engine_id="busy", host="h1", pid=7)
    assert "(1 worker alive, busy with other work)" in _page(researcher_client, job)


def test_in_the_app_process_a_queued_job_says_it_has_not_started(researcher_client, project, settings):
    settings.TASKS = {"default": {"BACKEND": "editlab.task_backends.ThreadBackend"}}
    job = MetricJob.objects.create(project=project, metrics=["levenshtein"], variants=["plain"])
    page = _page(researcher_client, job)
    assert "Queued — not started yet (waiting for 0 s); the app process runs it in a background thread." in page
    assert "db_worker" not in page


def test_a_job_whose_chunks_wait_for_a_worker_says_so_and_shows_each_workers_share(
    researcher_client, project, settings
):
    settings.TASKS = DATABASE_TASKS
    settings.EDITLAB_METRIC_CHUNK_SIZE = 1
    settings.EDITLAB_WORKER_STALE_S = 60
    post_edits = sorted(project.items.values_list("assignments__post_edit", flat=True))
    now = timezone.now()
    job = MetricJob.objects.create(
        project=project,
        metrics=["levenshtein"],
        variants=["plain"],
        status=MetricJob.RUNNING,
        total=3,
        done=1,
        planned=now - timedelta(seconds=50),
        heartbeat=now - timedelta(seconds=40),
    )
    stopped = TaskWorker.objects.create(engine_id="w-stopped", host="h1", pid=11, stopped=now)
    for seq, status in enumerate([MetricChunk.DONE, MetricChunk.QUEUED, MetricChunk.QUEUED]):
        MetricChunk.objects.create(
            job=job,
            seq=seq,
            variant="plain",
            metrics=["levenshtein"],
            post_edit_ids=[post_edits[seq % 2]],
            size=1,
            total=1,
            status=status,
            worker=stopped if status == MetricChunk.DONE else None,
        )

    page = _page(researcher_client, job)

    assert re.search(
        r"2 chunks of 3 wait for a worker; none has worked on this job for 4\d s; is <code>db_worker</code> running\?"
        r" No worker has sent a heartbeat in the last 60 s\. The job resumes when a worker takes its chunks\.",
        page,
    )
    assert "Chunks of up to 1 post-edits: 1 done, 0 running, 2 queued (of 3)." in page
    assert re.search(r"<td>h1 pid 11 <small>\(w-stopped\)</small></td>\s*<td>1</td>\s*<td>1</td>\s*<td>1</td>", page)
    assert "<td>stopped</td>" in page

    # A live worker takes a chunk: no longer waiting; its row says it computes.
    live = TaskWorker.objects.create(engine_id="w-live", host="h2", pid=12)
    MetricChunk.objects.filter(job=job, seq=1).update(status=MetricChunk.RUNNING, worker=live, done=0)
    page = _page(researcher_client, job)
    assert "wait for a worker" not in page
    assert re.search(r"<td>h2 pid 12 <small>\(w-live\)</small></td>\s*<td>0</td>\s*<td>0</td>\s*<td>0</td>", page)
    assert "<td>computing a chunk</td>" in page


def test_a_dead_workers_row_says_it_was_taken_for_dead(researcher_client, project, settings):
    settings.EDITLAB_WORKER_STALE_S = 60
    job = MetricJob.objects.create(
        project=project, metrics=["levenshtein"], variants=["plain"], status=MetricJob.RUNNING, total=1
    )
    dead = TaskWorker.objects.create(engine_id="w-dead", host="h3", pid=13)
    TaskWorker.objects.filter(pk=dead.pk).update(heartbeat=timezone.now() - timedelta(seconds=90))
    MetricChunk.objects.create(
        job=job,
        seq=0,
        variant="plain",
        metrics=["levenshtein"],
        post_edit_ids=[1],
        size=1,
        total=1,
        status=MetricChunk.RUNNING,
        worker=dead,
    )
    page = _page(researcher_client, job)
    assert re.search(r"silent for (9\d|1\d\d) s: taken for dead, its chunk goes back to the queue", page)
