import pytest
from django.urls import reverse

from metrics.models import MetricJob, TaskWorker
from tests.factories import MetricValueFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def test_admins_browse_and_search_metric_values_and_jobs(admin_client):
    value = MetricValueFactory(metric="compression", value=4.0, post_edit__assignment__item__external_id="seg-42")
    MetricValueFactory(metric="bleu", value=0.3)
    job = MetricJob.objects.create(project=ProjectFactory(name="study"), status=MetricJob.FAILED, error="boom")

    listing = admin_client.get(reverse("admin:metrics_metricvalue_changelist"), {"q": "seg-42"})
    assert listing.status_code == 200
    assert list(listing.context["cl"].result_list) == [value]
    filtered = admin_client.get(reverse("admin:metrics_metricvalue_changelist"), {"metric": "bleu"})
    assert [v.metric for v in filtered.context["cl"].result_list] == ["bleu"]
    assert admin_client.get(reverse("admin:metrics_metricvalue_change", args=[value.pk])).status_code == 200

    jobs = admin_client.get(reverse("admin:metrics_metricjob_changelist"), {"status": "failed"})
    assert list(jobs.context["cl"].result_list) == [job]
    assert admin_client.get(reverse("admin:metrics_metricvalue_add")).status_code == 403


def test_admins_see_the_workers_and_their_heartbeats_and_change_nothing(admin_client):
    worker = TaskWorker.objects.create(engine_id="w-1", host="box-2", pid=321)
    listing = admin_client.get(reverse("admin:metrics_taskworker_changelist"), {"q": "box-2"})
    assert list(listing.context["cl"].result_list) == [worker]
    assert admin_client.get(reverse("admin:metrics_taskworker_add")).status_code == 403
    page = admin_client.post(reverse("admin:metrics_taskworker_change", args=[worker.pk]), {"host": "elsewhere"})
    assert page.status_code == 403
    assert TaskWorker.objects.get(pk=worker.pk).host == "box-2"


def test_researchers_have_no_admin_site(researcher_client):
    response = researcher_client.get(reverse("admin:metrics_metricvalue_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response.url
