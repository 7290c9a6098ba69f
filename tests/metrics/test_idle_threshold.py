"""Active time recomputed from the stored event logs at any idle threshold, and the sensitivity table.

The logs are made by hand and stored and submitted through the editor's own services, so the
stored effort is what the effort module derived; the expected active times are worked out below.
"""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from scipy import stats

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_open, post_edit_submit
from annotations.models import PostEdit
from metrics.analysis_options import selection_build
from metrics.reports import report_build
from metrics.selection_data import clear_cache
from metrics.selectors import active_times
from tests.annotations.editing_helpers import wire
from tests.factories import AssignmentFactory, MetricValueFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

ORIGINAL = "abc"
THRESHOLDS = (5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# Idle gaps between one typed character and the next key, in ms.
GAPS_MS = (3000, 8000, 20000, 45000, 100000, 200000)


def typing_log(gaps_ms) -> list[dict]:
    """load, then a character typed, each next one after the given gap, then Ctrl+Enter and submit."""
    events = [{"t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)}]
    t = 1000
    for n in range(len(gaps_ms) + 1):
        caret = len(ORIGINAL) + n
        events += [
            {"t": t, "k": "keydown", "key": "x", "code": "KeyX"},
            {"t": t + 1, "k": "beforeinput", "it": "insertText", "s": caret, "e": caret},
            {"t": t + 2, "k": "input", "it": "insertText", "s": caret + 1, "len": caret + 1, "data": "x"},
        ]
        t += 2 + (gaps_ms[n] if n < len(gaps_ms) else 1000)
    events += [{"t": t, "k": "keydown", "key": "Enter", "code": "Enter", "mods": 1}, {"t": t + 1, "k": "submit"}]
    return [dict(event, seq=seq) for seq, event in enumerate(events)]


def expected_active_ms(gaps_ms, threshold_s: float) -> int:
    """A gap longer than the threshold is idle as a whole; every other gap is active. The short gaps:
    load -> first key 1000, keydown -> beforeinput -> input 1 + 1 per character (one more character
    than gaps), last input -> Ctrl+Enter 1000, Ctrl+Enter -> submit 1."""
    short = 1000 + 2 * (len(gaps_ms) + 1) + 1000 + 1
    return short + sum(gap for gap in gaps_ms if gap <= threshold_s * 1000)


def live_post_edit(project, annotator, gaps_ms, *, metric_value: float) -> PostEdit:
    start = timezone.now() - timedelta(hours=1)
    assignment = AssignmentFactory(annotator=annotator, item__project=project, item__model_output=ORIGINAL)
    post_edit, visit = post_edit_open(assignment=assignment, user=annotator, now=start)
    log = typing_log(gaps_ms)
    span = timedelta(milliseconds=log[-1]["t"] + 1000)
    post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(log), now=start + span)
    text = ORIGINAL + "x" * (len(gaps_ms) + 1)
    post_edit_submit(
        post_edit=post_edit, page_id=visit.page_id, text=text, version=0, last_seq=len(log) - 1, now=start + span
    )
    post_edit.refresh_from_db()
    MetricValueFactory(post_edit=post_edit, metric="compression", value=metric_value)
    MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=len(gaps_ms))
    return post_edit


# Each live post-edit's idle gaps: a different share of long pauses, so r changes with the threshold.
STUDY = (
    (GAPS_MS, 12.0),
    ((3000, 3000, 3000), 3.0),
    ((8000, 9000, 40000, 250000), 20.0),
    ((4000, 25000, 110000), 9.0),
    ((2000, 7000), 2.0),
    ((50000, 55000, 58000, 100000), 14.0),
)


@pytest.fixture
def study(annotator):
    clear_cache()
    project = ProjectFactory(name="live study")
    live = [live_post_edit(project, annotator, gaps, metric_value=value) for gaps, value in STUDY]
    imported = SubmittedPostEditFactory(
        assignment__item__project=project, assignment__annotator=annotator, origin=PostEdit.IMPORTED, active_ms=5000
    )
    MetricValueFactory(post_edit=imported, metric="compression", value=4.0)
    MetricValueFactory(post_edit=imported, metric="levenshtein", value=1.0)
    return project, live, imported


def test_active_time_is_recomputed_for_every_threshold_from_a_hand_made_log(study):
    project, live, imported = study
    first = live[0]
    assert first.flags == [] and first.replay_ok
    assert first.active_ms == expected_active_ms(GAPS_MS, 30.0) == 33015  # stored at the project's 30 s
    times = active_times(post_edit_ids=[first.id, imported.id], thresholds_s=THRESHOLDS)
    assert list(times.index) == [first.id]  # the imported post-edit has no log: not recomputed, not invented
    assert times.loc[first.id].tolist() == [5015, 13015, 33015, 78015, 178015, 378015]
    assert times.loc[first.id].tolist() == [expected_active_ms(GAPS_MS, s) for s in THRESHOLDS]
    first.refresh_from_db()
    assert first.active_ms == 33015  # stored values are not changed


def test_recomputed_at_the_projects_threshold_equals_what_submit_stored(study):
    project, live, _ = study
    times = active_times(post_edit_ids=[pe.id for pe in live], thresholds_s=[project.idle_threshold_s])
    assert times[project.idle_threshold_s].tolist() == [pe.active_ms for pe in live]
    for post_edit, (gaps, _) in zip(live, STUDY, strict=True):
        assert post_edit.active_ms == expected_active_ms(gaps, project.idle_threshold_s)


def test_the_sensitivity_table_correlates_each_metric_with_each_recomputed_time(study):
    project, live, _ = study
    report = report_build(selection=selection_build(project=project, target="active_time"), use_cache=False)
    sensitivity = report.idle_sensitivity
    assert sensitivity.thresholds_s == list(THRESHOLDS)
    assert (sensitivity.n, sensitivity.without_log) == (6, 1)
    assert (sensitivity.stored_checked, sensitivity.stored_equal) == (6, 6)
    metric = [value for _, value in STUDY]
    for i, threshold in enumerate(THRESHOLDS):
        times = [expected_active_ms(gaps, threshold) for gaps, _ in STUDY]
        assert sensitivity.metrics["compression"][i] == pytest.approx(stats.pearsonr(metric, times).statistic)
        assert sensitivity.mean_active_ms[i] == pytest.approx(sum(times) / len(times))
    assert len(set(sensitivity.metrics["compression"])) > 1  # the threshold matters here
    data = report.to_dict()["idle_sensitivity"]
    assert data["metrics"]["levenshtein"] == pytest.approx(sensitivity.metrics["levenshtein"])
    json.dumps(data, allow_nan=False)


def test_analyze_with_an_idle_threshold_explains_the_recomputed_time(study):
    project, live, imported = study
    out = io.StringIO()
    call_command(
        "analyze", "--project", project.name, "--target", "active_time", "--idle-threshold", "60", "--format", "json",
        stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["selection"]["idle_threshold_s"] == 60.0
    assert (data["n_rows"], data["n_used"], data["dropped_target"]) == (7, 6, 1)
    assert any("1 of 7 post-edits have no event log" in m for m in data["messages"])
    assert any("recomputed from the event logs with an idle threshold of 60 s" in m for m in data["messages"])
    live[0].refresh_from_db()
    imported.refresh_from_db()
    assert (live[0].active_ms, imported.active_ms) == (33015, 5000)  # nothing stored changed


def test_the_command_prints_the_sensitivity_table_for_active_time(study):
    project, _, _ = study
    out = io.StringIO()
    call_command("analyze", "--project", project.name, "--target", "active_time", stdout=out)
    text = out.getvalue()
    assert "Idle threshold sensitivity" in text and "r@5s" in text and "r@300s" in text
    assert "6 post-edits with a log; 1 without one left out" in text and "6 of 6 recomputed values" in text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "more than 0 and at most 86400"),
        ("inf", "more than 0 and at most 86400"),
        ("-5", "more than 0 and at most 86400"),
        ("0", "more than 0 and at most 86400"),
        ("1e308", "more than 0 and at most 86400"),
        ("abc", "'abc' is not a number of seconds"),
        ("²", "is not a number of seconds"),
    ],
)
def test_a_bad_idle_threshold_is_refused_with_a_message(study, value, message):
    project, _, _ = study
    with pytest.raises(CommandError, match=message):
        call_command("analyze", "--project", project.name, "--target", "active_time", "--idle-threshold", value)


def test_an_idle_threshold_needs_the_active_time_target(study):
    project, _, _ = study
    with pytest.raises(CommandError, match="applies to the active_time target only"):
        call_command("analyze", "--project", project.name, "--target", "wall_time", "--idle-threshold", "30")


def test_the_report_page_and_api_take_the_idle_threshold(study, researcher_client):
    project, _, _ = study
    page = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(page + "?target=active_time&idle_threshold=10")
    assert response.status_code == 200
    assert response.context["selection"].idle_threshold_s == 10.0
    html = response.content.decode()
    assert "Idle threshold sensitivity" in html and "plots/idle.svg?" in html and "idle_threshold=10" in html
    assert researcher_client.get(page + "?target=active_time&idle_threshold=nan").status_code == 400
    plot = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "idle", "fmt": "json"})
    data = researcher_client.get(plot + "?target=active_time").json()
    assert data["thresholds_s"] == list(THRESHOLDS) and data["n"] == 6
    assert researcher_client.get(plot.replace(".json", ".svg") + "?target=active_time").status_code == 200
    assert researcher_client.get(plot + "?target=keystrokes").status_code == 400
    api = reverse("api-project-analysis", kwargs={"project_id": project.pk})
    body = researcher_client.get(api + "?target=active_time&idle_threshold=120").json()
    assert body["selection"]["idle_threshold_s"] == 120.0 and body["n_used"] == 6
    assert body["idle_sensitivity"]["stored_equal"] == 6
    refused = researcher_client.get(api + "?target=keystrokes&idle_threshold=120")
    assert refused.status_code == 400 and "active_time target only" in json.dumps(refused.json())
    assert researcher_client.get(api + "?target=active_time&idle_threshold=1e400").status_code == 400


def test_the_idle_plot_is_for_researchers_and_admins_only(study, client, annotator_client, admin_client):
    project, _, _ = study
    plot = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "idle", "fmt": "csv"})
    url = plot + "?target=active_time"
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous.url.startswith(reverse("login"))
    assert annotator_client.get(url).status_code == 403
    rows = admin_client.get(url).content.decode().splitlines()
    assert rows[0] == "metric,r_at_5s,r_at_10s,r_at_30s,r_at_60s,r_at_120s,r_at_300s"
    assert [row.split(",")[0] for row in rows[1:]] == ["compression", "levenshtein"]
