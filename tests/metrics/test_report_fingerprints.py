"""A report reads its selection's fingerprint once (its key and its data's key share it), and a project
without synthetic edits has the fingerprint the values' count would give, without counting them."""

import json

import pytest

import metrics.selection_data as selection_data_module
from annotations.models import PostEdit
from metrics.analysis_options import selection_build
from metrics.reports import report_build
from metrics.selectors_scenarios import simulated_fingerprint
from tests.factories import MetricValueFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db


def _project():
    project = ProjectFactory(name="fingerprinted")
    for n in range(12):
        edit = SubmittedPostEditFactory(assignment__item__project=project, wall_ms=1000 + 100 * n, text="x" * n)
        MetricValueFactory(post_edit=edit, metric="compression", variant="plain", value=float(n % 5))
    return project


def test_a_report_reads_its_selections_fingerprint_once(monkeypatch):
    project = _project()
    calls = []
    real = selection_data_module.fingerprint

    def counted(selection):
        calls.append(selection.project.pk)
        return real(selection)

    monkeypatch.setattr(selection_data_module, "fingerprint", counted)
    monkeypatch.setattr("metrics.reports.fingerprint", counted)
    selection_data_module.clear_cache()
    report = report_build(selection=selection_build(project=project, target="wall_time"))
    assert calls == [project.pk]
    assert report.analysis.n_used == 12
    # The same data again: both keys found, the fingerprint read once more (the report's key).
    assert report_build(selection=selection_build(project=project, target="wall_time")) is report
    assert calls == [project.pk, project.pk]
    selection_data_module.clear_cache()


def test_without_synthetic_edits_the_fingerprint_is_the_counted_one():
    project = _project()
    assert json.loads(simulated_fingerprint(project=project)) == [0, "None", 0, "None"]
    edit = SubmittedPostEditFactory(assignment__item__project=project, origin=PostEdit.SIMULATED, condition="normal")
    stamp = json.loads(simulated_fingerprint(project=project))
    assert stamp[0] == 1 and stamp[2] == 0 and stamp[3] == "None"
    MetricValueFactory(post_edit=edit, metric="compression", variant="plain", value=0.25)
    assert json.loads(simulated_fingerprint(project=project))[2] == 1
