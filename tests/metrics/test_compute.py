import dataclasses
import io

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Assignment
from metrics import text as engine
from metrics.jobs import metric_job_create, metric_job_retry
from metrics.models import MetricJob, MetricValue
from metrics.services import ComputeError, metric_values_compute
from tests.factories import PostEditFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

METRICS = ["compression", "levenshtein"]


class CountingScorer:
    """Wraps the real score_pairs, counting calls and scored pairs; can fail on a chosen call."""

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.real = engine.score_pairs
        self.calls = 0
        self.pairs = 0
        self.fail_on_call = fail_on_call

    def __call__(self, pairs, metrics, **kwargs):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("scorer crashed")
        self.pairs += len(pairs)
        return self.real(pairs, metrics, **kwargs)


@pytest.fixture
def scorer(monkeypatch):
    counting = CountingScorer()
    monkeypatch.setattr(engine, "score_pairs", counting)
    return counting


@pytest.fixture
def project():
    project = ProjectFactory(name="study")
    for n, text in enumerate(["This is a test.", "This is the test.", "It is a test."]):
        SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=f"s{n}",
            assignment__item__references=["A reference: this is a test."] if n == 0 else [],
            text=text,
        )
    # A draft (not submitted) is never scored.
    PostEditFactory(assignment__item__project=project, assignment__status=Assignment.IN_PROGRESS, text="draft")
    return project


def stored(project, variant="plain"):
    return {
        (v.post_edit.assignment.item.external_id, v.metric): v.value
        for v in MetricValue.objects.filter(post_edit__assignment__item__project=project, variant=variant)
    }


def test_first_run_computes_every_applicable_value(project, scorer):
    report = metric_values_compute(project=project, metrics=METRICS)
    # 3 post-edits x 2 metrics plain; with_references only for the item that has references.
    assert (report.computed, report.up_to_date, report.skipped, report.post_edits) == (8, 0, 4, 3)
    plain = stored(project)
    assert plain[("s0", "levenshtein")] == 3.0  # "are" -> "is"
    assert plain[("s0", "compression")] == engine.METRICS["compression"]("This are a test.", "This is a test.")
    assert plain[("s2", "levenshtein")] == engine.METRICS["levenshtein"]("This are a test.", "It is a test.")
    with_refs = stored(project, "with_references")
    assert set(with_refs) == {("s0", "compression"), ("s0", "levenshtein")}
    assert with_refs[("s0", "levenshtein")] == engine.METRICS["levenshtein"](
        engine.variant_original("This are a test.", ["A reference: this is a test."]), "This is a test."
    )
    assert MetricValue.objects.filter(metric_version="1").count() == 8


def test_second_run_on_an_unchanged_project_does_no_metric_work(project, scorer):
    metric_values_compute(project=project, metrics=METRICS)
    calls_after_first = scorer.calls
    before = list(MetricValue.objects.order_by("pk").values_list("pk", "value", "computed_at"))

    report = metric_values_compute(project=project, metrics=METRICS)

    assert scorer.calls == calls_after_first
    assert (report.computed, report.up_to_date, report.skipped) == (0, 8, 4)
    assert list(MetricValue.objects.order_by("pk").values_list("pk", "value", "computed_at")) == before


def test_an_edited_post_edit_is_recomputed_alone(project, scorer):
    metric_values_compute(project=project, metrics=METRICS)
    post_edit = project.items.get(external_id="s1").assignments.get().post_edit
    post_edit.text = "This are a test."
    post_edit.save()
    scorer.pairs = 0

    report = metric_values_compute(project=project, metrics=METRICS)

    assert (report.computed, report.up_to_date) == (2, 6)
    assert scorer.pairs == 1
    assert stored(project)[("s1", "levenshtein")] == 0.0


def test_a_changed_reference_recomputes_only_the_with_references_variant(project, scorer):
    metric_values_compute(project=project, metrics=METRICS)
    item = project.items.get(external_id="s0")
    item.references = ["Something else entirely."]
    item.save()

    report = metric_values_compute(project=project, metrics=METRICS)

    assert (report.computed, report.up_to_date) == (2, 6)
    assert stored(project, "with_references")[("s0", "levenshtein")] == engine.METRICS["levenshtein"](
        "This are a test.\n\nSomething else entirely.", "This is a test."
    )


def test_removed_references_remove_the_stale_with_references_values(project, scorer):
    metric_values_compute(project=project, metrics=METRICS)
    project.items.filter(external_id="s0").update(references=[])

    report = metric_values_compute(project=project, metrics=METRICS)

    assert (report.computed, report.removed, report.skipped) == (0, 2, 6)
    assert not MetricValue.objects.filter(variant="with_references").exists()


def test_a_metric_version_bump_recomputes_that_metric_only(project, scorer, monkeypatch):
    metric_values_compute(project=project, metrics=METRICS)
    bumped = dataclasses.replace(engine.METRICS["levenshtein"], version="2")
    monkeypatch.setitem(engine.METRICS, "levenshtein", bumped)
    scorer.calls = 0

    report = metric_values_compute(project=project, metrics=METRICS)

    assert (report.computed, report.up_to_date) == (4, 4)
    assert set(MetricValue.objects.filter(metric="levenshtein").values_list("metric_version", flat=True)) == {"2"}
    assert set(MetricValue.objects.filter(metric="compression").values_list("metric_version", flat=True)) == {"1"}


def test_an_interrupted_run_keeps_whole_chunks_and_the_next_run_resumes(project, monkeypatch):
    failing = CountingScorer(fail_on_call=2)
    monkeypatch.setattr(engine, "score_pairs", failing)
    with pytest.raises(RuntimeError, match="scorer crashed"):
        metric_values_compute(project=project, metrics=METRICS, variants=["plain"], chunk_size=2)
    # The first chunk (2 post-edits x 2 metrics) is stored completely, the failed one not at all.
    assert MetricValue.objects.count() == 4
    assert MetricValue.objects.filter(post_edit__assignment__item__external_id="s2").count() == 0

    resumed = CountingScorer()
    monkeypatch.setattr(engine, "score_pairs", resumed)
    report = metric_values_compute(project=project, metrics=METRICS, variants=["plain"], chunk_size=2)
    assert (report.computed, report.up_to_date) == (2, 4)
    assert resumed.pairs == 1


def test_only_the_chosen_post_edits_are_computed(project, scorer):
    one = project.items.get(external_id="s2").assignments.get().post_edit
    report = metric_values_compute(
        project=project, metrics=["levenshtein"], post_edits=type(one).objects.filter(pk=one.pk)
    )
    assert report.computed == 1
    assert list(MetricValue.objects.values_list("post_edit_id", flat=True)) == [one.pk]


def test_unknown_metrics_and_variants_are_refused_with_a_message(project):
    with pytest.raises(ComputeError, match="unknown metric\\(s\\): nope"):
        metric_values_compute(project=project, metrics=["nope"])
    with pytest.raises(ComputeError, match="unknown variant\\(s\\): both"):
        metric_values_compute(project=project, metrics=METRICS, variants=["both"])
    assert not MetricValue.objects.exists()


def test_a_failed_job_records_its_error_and_a_retry_finishes_the_work(project, researcher, monkeypatch, settings):
    failing = CountingScorer(fail_on_call=2)
    monkeypatch.setattr(engine, "score_pairs", failing)
    settings.EDITLAB_METRIC_CHUNK_SIZE = 2

    job = metric_job_create(project=project, user=researcher, metrics=METRICS, variants=["plain"])

    assert job.status == MetricJob.FAILED
    assert job.error == "RuntimeError: scorer crashed"
    assert (job.total, job.done) == (6, 4)
    assert MetricValue.objects.count() == 4  # the completed chunk, nothing half-written
    assert job.created_by == researcher and job.task_id

    monkeypatch.setattr(engine, "score_pairs", CountingScorer())
    job = metric_job_retry(job=job)

    assert job.status == MetricJob.DONE and job.error == ""
    assert (job.total, job.done) == (2, 2)  # only what was missing
    assert MetricValue.objects.count() == 6
    assert job.started is not None and job.finished is not None


def test_only_a_failed_job_can_be_retried(project, researcher):
    job = metric_job_create(project=project, user=researcher, metrics=["levenshtein"])
    assert job.status == MetricJob.DONE
    with pytest.raises(ComputeError, match=f"job #{job.pk} is done"):
        metric_job_retry(job=job)


def test_the_command_prints_counts_and_is_incremental(project):
    out = io.StringIO()
    call_command("compute_metrics", "--project", "study", "--metrics", "compression,levenshtein", stdout=out)
    assert "computed: 8\nup to date: 0\nskipped (not applicable): 4" in out.getvalue()

    out = io.StringIO()
    call_command("compute_metrics", "--project", "study", "--metrics", "levenshtein", "--variant", "plain", stdout=out)
    assert "computed: 0\nup to date: 3\nskipped (not applicable): 0" in out.getvalue()


def test_the_command_spreads_a_run_over_worker_processes_in_one_process_without_any_task_worker():
    project = ProjectFactory(name="pooled")
    texts = [f"This is test {n}, {'indeed ' * (n % 4)}fixed." for n in range(80)]  # enough for the pool
    for n, text in enumerate(texts):
        SubmittedPostEditFactory(assignment__item__project=project, assignment__item__external_id=f"p{n}", text=text)
    out = io.StringIO()
    call_command(
        "compute_metrics",
        "--project",
        "pooled",
        "--metrics",
        "levenshtein",
        "--variant",
        "plain",
        "--workers",
        "2",
        stdout=out,
    )
    assert "computed: 80\nup to date: 0" in out.getvalue()
    assert stored(project) == {
        (f"p{n}", "levenshtein"): engine.METRICS["levenshtein"]("This are a test.", text)
        for n, text in enumerate(texts)
    }
    assert not MetricJob.objects.exists()


def test_the_command_names_what_is_wrong(project):
    with pytest.raises(CommandError, match="no project named 'missing'"):
        call_command("compute_metrics", "--project", "missing")
    with pytest.raises(CommandError, match="unknown metric\\(s\\): bogus"):
        call_command("compute_metrics", "--project", "study", "--metrics", "bogus")


DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


# The worker closes database connections between tasks, as a long-running process should: a transactional
# test, so that its closing does not end the test's own transaction (PostgreSQL); serialized_rollback
# restores the role groups (a data migration) that the flush after it removes.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_with_the_database_backend_a_worker_runs_the_queued_job(project, researcher, settings):
    settings.TASKS = DATABASE_TASKS
    job = metric_job_create(project=project, user=researcher, metrics=["levenshtein"], variants=["plain"])
    assert (job.status, job.done) == (MetricJob.QUEUED, 0)
    assert not MetricValue.objects.exists()

    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", verbosity=0)

    job.refresh_from_db()
    assert (job.status, job.total, job.done) == (MetricJob.DONE, 3, 3)
    assert MetricValue.objects.filter(metric="levenshtein").count() == 3


def test_gold_based_metrics_only_for_items_with_gold_edits_and_only_plain(project, scorer):
    project.items.filter(external_id__in=["s0", "s1"]).update(gold_edits=["This is a test."])

    report = metric_values_compute(project=project, metrics=["exact_match"])

    # s0 and s1 have gold (plain only); s2 has none; with_references never applies to gold-based metrics.
    assert (report.computed, report.skipped) == (2, 4)
    assert stored(project) == {("s0", "exact_match"): 1.0, ("s1", "exact_match"): 0.0}
    assert not MetricValue.objects.filter(variant="with_references").exists()

    project.items.filter(external_id="s1").update(gold_edits=["This is the test."])
    again = metric_values_compute(project=project, metrics=["exact_match"])
    assert (again.computed, again.up_to_date) == (1, 1)
    assert stored(project)[("s1", "exact_match")] == 1.0


def test_a_running_job_whose_worker_died_can_be_retried_once_stalled(project, researcher, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.EDITLAB_JOB_STALE_S = 60
    job = MetricJob.objects.create(
        project=project,
        metrics=["levenshtein"],
        variants=["plain"],
        status=MetricJob.RUNNING,
        started=timezone.now() - timedelta(seconds=30),
        heartbeat=timezone.now() - timedelta(seconds=30),
    )
    with pytest.raises(ComputeError, match="only a failed job, or a running one"):
        metric_job_retry(job=job)

    MetricJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(seconds=61))
    job.refresh_from_db()
    assert job.is_stalled
    job = metric_job_retry(job=job)

    assert (job.status, job.total, job.done) == (MetricJob.DONE, 3, 3)
    assert MetricValue.objects.filter(metric="levenshtein", variant="plain").count() == 3


def test_a_metric_failing_on_one_post_edit_names_that_post_edit(project, monkeypatch):
    from annotations.models import PostEdit

    culprit = PostEdit.objects.get(assignment__item__project=project, text="It is a test.")
    real = engine.score_pairs

    def failing(pairs, metrics, **kwargs):
        for index, pair in enumerate(pairs):
            if pair.edited == "It is a test.":
                raise engine.MetricFailed("levenshtein", index, "ValueError: boom")
        return real(pairs, metrics, **kwargs)

    monkeypatch.setattr(engine, "score_pairs", failing)
    with pytest.raises(
        ComputeError, match=rf"levenshtein \(plain\) failed on post-edit #{culprit.pk}: ValueError: boom"
    ):
        metric_values_compute(project=project, metrics=["levenshtein"], variants=["plain"])
    assert not MetricValue.objects.exists()
