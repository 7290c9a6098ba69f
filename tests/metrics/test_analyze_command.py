"""python manage.py analyze: the three formats, the selection options, clear errors."""

import csv
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.models import MetricValue
from tests.metrics.report_data import build_study


@pytest.fixture
def study(annotator, other_annotator):
    project, post_edits = build_study(annotators=[annotator, other_annotator])
    return project, post_edits


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", *args, stdout=out)
    return out.getvalue()


def _columns(post_edits, metric: str, target: str, variant: str = MetricValue.PLAIN):
    """Metric and target values straight from the models, in post-edit id order."""
    ordered = sorted(post_edits, key=lambda pe: pe.pk)
    x = np.array([pe.metric_values.get(metric=metric, variant=variant).value for pe in ordered])
    y = np.array([getattr(pe, target) for pe in ordered], dtype=float)
    names = [pe.assignment.annotator.username for pe in ordered]
    return x, y, names


def test_json_has_the_documented_schema_and_independent_values(study):
    project, post_edits = study
    data = json.loads(run("--project", project.name, "--target", "keystrokes", "--format", "json"))
    x, y, names = _columns(post_edits, "levenshtein", "keystrokes")
    levenshtein = data["metrics"]["levenshtein"]
    assert levenshtein["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert levenshtein["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
    anna = np.array(names) == "anna"
    assert levenshtein["pearson_per_annotator"] == {
        "anna": pytest.approx(stats.pearsonr(x[anna], y[anna]).statistic),
        "bob": pytest.approx(stats.pearsonr(x[~anna], y[~anna]).statistic),
    }
    train, test = train_test_split(np.arange(len(y)), test_size=0.2, random_state=42)
    knn = KNeighborsRegressor(5).fit(x[train, None], y[train])
    assert levenshtein["knn_r2"] == pytest.approx(r2_score(y[test], knn.predict(x[test, None])))
    assert set(levenshtein["knn_r2_cv"]) == {"mean", "sd", "repeats"} and len(levenshtein["knn_r2_cv"]["repeats"]) == 10
    assert len(levenshtein["pearson_ci"]) == 2 and levenshtein["pearson_p"] < 1e-3
    assert levenshtein["williams_vs_best"]["best"] == data["best_metric"] == "compression"
    assert data["metrics"]["compression"]["williams_vs_best"] is None
    assert data["matrix"]["metrics"] == ["compression", "levenshtein", "bleu"]
    assert data["effort_model"]["r2_cv"]["mean"] > 0.5
    assert set(data["effort_model"]["contributions"]) == {
        "compression",
        "levenshtein",
        "bleu",
        "original_length",
        "edited_length",
        "annotator",
    }
    assert data["selection"] == {
        "project": "study",
        "project_id": project.pk,
        "target": "keystrokes",
        "target_column": "keystrokes",
        "variant": "plain",
        "annotators": [],
        "task_type": None,
        "origin": None,
        "exclude_flagged": False,
        "idle_threshold_s": None,
        "include_practice": False,
        "pause_thresholds_ms": [200.0, 500.0, 1000.0, 2000.0],
    }
    assert data["flagged"] == {"in_selection": 0, "excluded": False}
    assert data["idle_sensitivity"] is None  # for the active_time target only
    assert data["settings"] == {
        "k": 5,
        "test_size": 0.2,
        "seed": 42,
        "cv_folds": 5,
        "cv_repeats": 10,
        "confidence": 0.95,
        "alpha": 0.05,
        "min_edits": 10,
        "cv_gap_flag": 0.05,
        "bootstrap_resamples": 1000,
        "mixed_models": True,
        "log_target": False,
        "mixed_engine": "reml",
    }


def test_table_lists_every_metric_and_the_effort_model(study):
    project, _ = study
    text = run("--project", project.name, "--target", "wall_time")
    assert "target wall_time (wall_ms)" in text
    metric_table, effort = text.split("Effort model (OLS")
    lines = {line.split()[0]: line for line in metric_table.splitlines() if line.strip()}
    assert {"compression", "levenshtein", "bleu"} <= set(lines)
    assert "best" in lines["compression"] and "r[anna]" in lines["metric"]
    assert {"original_length", "edited_length", "annotator"} <= {
        line.split()[0] for line in effort.splitlines()[1:] if line.strip()
    }


def test_csv_has_one_row_per_metric(study):
    project, _ = study
    rows = list(csv.DictReader(io.StringIO(run("--project", project.name, "--target", "allkeys", "--format", "csv"))))
    assert [row["metric"] for row in rows] == ["compression", "levenshtein", "bleu"]
    assert rows[0]["best"] == "True" and rows[2]["direction"] == "similarity"
    assert float(rows[2]["pearson"]) < 0 < float(rows[2]["pearson_oriented"])


def test_selection_options_narrow_the_rows(study):
    project, post_edits = study
    one = json.loads(
        run("--project", project.name, "--target", "keystrokes", "--annotators", "anna", "--format", "json")
    )
    assert one["n_rows"] == 15 and one["annotators"] == ["anna"]
    assert any("only one annotator (anna)" in m for m in one["messages"])
    assert "annotator" not in one["effort_model"]["inputs"]
    mt = json.loads(run("--project", project.name, "--target", "keystrokes", "--task-type", "mt", "--format", "json"))
    assert mt["n_rows"] == sum(pe.assignment.item.task_type == "mt" for pe in post_edits) == 20
    imported = json.loads(
        run("--project", project.name, "--target", "keystrokes", "--origin", "imported", "--format", "json")
    )
    assert imported["n_rows"] == 0 and any("only 0 edits" in m for m in imported["messages"])


def test_the_variant_option_reads_the_other_values(study):
    project, post_edits = study
    data = json.loads(
        run("--project", project.name, "--target", "keystrokes", "--variant", "with_references", "--format", "json")
    )
    x, y, _ = _columns(post_edits, "compression", "keystrokes", MetricValue.WITH_REFERENCES)
    assert list(data["metrics"]) == ["compression"]
    assert data["metrics"]["compression"]["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)


def test_protocol_options_are_passed_through(study):
    project, post_edits = study
    data = json.loads(
        run(
            "--project",
            project.name,
            "--target",
            "keystrokes",
            "--seed",
            "7",
            "--test-size",
            "0.3",
            "--k",
            "3",
            "--cv-repeats",
            "2",
            "--format",
            "json",
        )
    )
    x, y, _ = _columns(post_edits, "bleu", "keystrokes")
    train, test = train_test_split(np.arange(len(y)), test_size=0.3, random_state=7)
    knn = KNeighborsRegressor(3).fit(x[train, None], y[train])
    assert data["metrics"]["bleu"]["knn_r2"] == pytest.approx(r2_score(y[test], knn.predict(x[test, None])))
    assert len(data["metrics"]["bleu"]["knn_r2_cv"]["repeats"]) == 2


def test_errors_name_the_problem(study):
    project, _ = study
    with pytest.raises(CommandError, match="no project named 'nope' \\(projects: study\\)"):
        run("--project", "nope", "--target", "keystrokes")
    with pytest.raises(CommandError, match="annotator 'zed' has no submitted post-edit in project 'study'"):
        run("--project", project.name, "--target", "keystrokes", "--annotators", "anna,zed")
    with pytest.raises(
        CommandError,
        match="target 'minutes' is not one of: wall_time, active_time, keystrokes, allkeys, or a process measure",
    ):
        run("--project", project.name, "--target", "minutes")
    with pytest.raises(CommandError, match="test_size must be between 0 and 1"):
        run("--project", project.name, "--target", "keystrokes", "--test-size", "2")


def _flag(post_edits, *flags_per_edit):
    for post_edit, flags in zip(post_edits, flags_per_edit, strict=False):
        post_edit.flags = flags
        post_edit.save(update_fields=["flags"])


def test_flagged_edits_are_counted_by_default_and_left_out_on_request(study):
    project, post_edits = study
    _flag(post_edits, ["keys_uncorroborated"], ["wall_clipped", "replay_mismatch"], [], ["event_gap"])
    included = json.loads(run("--project", project.name, "--target", "keystrokes", "--format", "json"))
    assert included["n_rows"] == 30 and included["flagged"] == {"in_selection": 3, "excluded": False}
    assert any("3 of 30 post-edits in this selection are flagged" in m for m in included["messages"])
    excluded = json.loads(
        run("--project", project.name, "--target", "keystrokes", "--exclude-flagged", "--format", "json")
    )
    assert excluded["n_rows"] == 27 and excluded["flagged"] == {"in_selection": 3, "excluded": True}
    assert excluded["selection"]["exclude_flagged"] is True
    assert any("3 flagged post-edits left out" in m for m in excluded["messages"])
    kept = [pe for pe in sorted(post_edits, key=lambda pe: pe.pk) if pe.pk not in {p.pk for p in post_edits[:4]}]
    x = np.array([pe.metric_values.get(metric="compression", variant="plain").value for pe in kept])
    y = np.array([pe.keystrokes for pe in kept], dtype=float)
    third = post_edits[2]  # its flags are empty: it stays
    x = np.append(x, third.metric_values.get(metric="compression", variant="plain").value)
    y = np.append(y, third.keystrokes)
    assert excluded["metrics"]["compression"]["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)


def test_log_time_models_log_time_and_only_for_time_targets(study):
    project, _ = study
    data = json.loads(run("--project", project.name, "--target", "wall_time", "--log-time", "--format", "json"))
    assert data["settings"]["log_target"] is True
    assert data["metrics"]["compression"]["mixed"]["formula"].startswith("z(log(wall_ms)) ~ z(compression)")
    with pytest.raises(CommandError, match="log time applies to the time targets \\(wall_time, active_time\\)"):
        run("--project", project.name, "--target", "keystrokes", "--log-time")


def test_mixed_models_can_be_skipped(study):
    project, _ = study
    data = json.loads(run("--project", project.name, "--target", "keystrokes", "--no-mixed", "--format", "json"))
    assert data["settings"]["mixed_models"] is False and data["metrics"]["levenshtein"]["mixed"] is None
    assert "Mixed-effects models: off" in run("--project", project.name, "--target", "keystrokes", "--no-mixed")


def test_table_shows_the_new_figures(study):
    project, _ = study
    text = run("--project", project.name, "--target", "keystrokes")
    assert "knn_r2_ties" in text and "cv_item" in text and "kendall" in text and "bootstrap Δr [95%]" in text
    assert "Mixed-effects models (z(keystrokes) ~ z(metric) + (1 | annotator), REML" in text
    assert "scikit-learn keeps whichever tied neighbours its tree" in text.replace("\n", " ")
