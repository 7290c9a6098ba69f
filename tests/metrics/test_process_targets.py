"""Process measures as analysis targets: computed from the stored logs (metrics/selectors_process.py),
analysed per condition, their options refused by name on the command, the API and the page.

The logs are made by hand and stored and submitted through the editor's own services."""

import io
import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.editing.ingestion import post_edit_ingest_events
from annotations.editing.lifecycle import post_edit_open, post_edit_submit
from annotations.editing.logs import stored_log, stored_logs
from annotations.models import PostEdit
from annotations.process import process_measures
from metrics import selectors_process
from metrics.analysis_options import selection_build
from metrics.reports import report_build
from metrics.selection_data import clear_cache
from metrics.selectors_process import by_threshold, process_frame
from tests.annotations.editing_helpers import wire
from tests.factories import AssignmentFactory, MetricValueFactory, ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

ORIGINAL = "ab"


def typing_log(gaps_ms) -> list[dict]:
    """load, a character typed first and then after each gap (the intervals are the gaps), submit."""
    events = [{"t": 0, "k": "load", "data": ORIGINAL, "len": len(ORIGINAL)}]
    t = 500.0
    for n in range(len(gaps_ms) + 1):
        caret = len(ORIGINAL) + n
        events += [
            {"t": t, "k": "keydown", "key": "x", "code": "KeyX"},
            {"t": t + 1, "k": "beforeinput", "it": "insertText", "s": caret, "e": caret},
            {"t": t + 2, "k": "input", "it": "insertText", "s": caret + 1, "len": caret + 1, "data": "x"},
        ]
        t += gaps_ms[n] if n < len(gaps_ms) else 500
    events.append({"t": t, "k": "submit"})
    return [dict(event, seq=seq) for seq, event in enumerate(events)]


def live_post_edit(project, annotator, gaps_ms, *, condition: str, metric: float, batches=(None,)) -> PostEdit:
    """A live post-edit whose log arrives in batches cut at the given seqs (None: one batch)."""
    start = timezone.now() - timedelta(hours=1)
    assignment = AssignmentFactory(annotator=annotator, item__project=project, item__model_output=ORIGINAL)
    post_edit, visit = post_edit_open(assignment=assignment, user=annotator, now=start)
    log = typing_log(gaps_ms)
    end = start + timedelta(milliseconds=log[-1]["t"] + 1000)
    cuts = [0, *sorted({cut for cut in batches if cut is not None and 0 < cut < len(log)}), len(log)]
    for low, high in zip(cuts, cuts[1:], strict=False):
        post_edit_ingest_events(post_edit=post_edit, page_id=visit.page_id, events=wire(log[low:high]), now=end)
    text = ORIGINAL + "x" * (len(gaps_ms) + 1)
    post_edit_submit(post_edit=post_edit, page_id=visit.page_id, text=text, version=0, last_seq=len(log) - 1, now=end)
    PostEdit.objects.filter(pk=post_edit.pk).update(condition=condition)
    post_edit.refresh_from_db()
    MetricValueFactory(post_edit=post_edit, metric="compression", value=metric)
    MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=len(gaps_ms))
    return post_edit


# (gaps between keys in ms, condition, metric value): pause counts at 1000 ms are 1, 0, 2, 3, 1, 4.
STUDY = (
    ((300, 1200, 400), "A", 3.0),
    ((200, 300, 900), "A", 1.0),
    ((1500, 600, 2500), "B", 5.0),
    ((1000, 1000, 1000, 100), "B", 7.0),
    ((100, 250, 4000, 100), "A", 2.0),
    ((1100, 2100, 3100, 4100), "B", 9.0),
)


@pytest.fixture
def study(annotator):
    clear_cache()
    project = ProjectFactory(name="process study")
    live = [
        live_post_edit(project, annotator, gaps, condition=condition, metric=value) for gaps, condition, value in STUDY
    ]
    imported = SubmittedPostEditFactory(
        assignment__item__project=project, assignment__annotator=annotator, origin=PostEdit.IMPORTED
    )
    MetricValueFactory(post_edit=imported, metric="compression", value=4.0)
    MetricValueFactory(post_edit=imported, metric="levenshtein", value=1.0)
    return project, live, imported


def pauses_at(gaps, threshold: float) -> int:
    return sum(gap >= threshold for gap in gaps)


def test_the_selector_computes_the_measures_of_every_logged_post_edit(study):
    project, live, imported = study
    frame = process_frame(
        post_edit_ids=[pe.id for pe in live] + [imported.id],
        names=["pause_count@1000", "pause_ms@1000", "iki_median", "produced_chars"],
        thresholds_ms=[1000.0],
    )
    assert list(frame.index) == [pe.id for pe in live]  # the imported post-edit has no log: none invented
    assert frame["pause_count@1000"].tolist() == [pauses_at(gaps, 1000) for gaps, _, _ in STUDY] == [1, 0, 2, 3, 1, 4]
    assert frame["pause_ms@1000"].tolist() == [sum(g for g in gaps if g >= 1000) for gaps, _, _ in STUDY]
    assert frame["produced_chars"].tolist() == [len(gaps) + 1 for gaps, _, _ in STUDY]
    assert frame.loc[live[0].id, "iki_median"] == 400.0


def test_analyze_explains_a_pause_count_and_leaves_out_post_edits_without_a_log(study):
    project, live, imported = study
    out = io.StringIO()
    call_command(
        "analyze", "--project", project.name, "--target", "pause_count@1000", "--format", "json", stdout=out
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["selection"]["target"] == data["selection"]["target_column"] == "pause_count@1000"
    assert (data["n_rows"], data["n_used"], data["dropped_target"]) == (7, 6, 1)
    assert any("1 of 7 post-edits have no event log" in message for message in data["messages"])
    conditions = data["conditions"]
    assert conditions["target"] == "pause_count@1000" and conditions["conditions"] == ["A", "B"]
    assert [summary["n"] for summary in conditions["summaries"]] == [3, 3]


def test_the_report_holds_the_target_at_every_threshold_per_condition(study):
    project, _, _ = study
    selection = selection_build(project=project, target="p_bursts@1000", pause_thresholds_ms=(500.0, 2000.0))
    report = report_build(selection=selection, use_cache=False)
    rows = by_threshold(report.frame, target="p_bursts@1000", thresholds_ms=selection.pause_thresholds_ms)
    # A pause >= T ends a burst: bursts = pauses + 1 (every key produces a character).
    expected = {
        condition: [
            sum(pauses_at(gaps, t) + 1 for gaps, c, _ in STUDY if c == condition or not condition) / n
            for t in (500.0, 1000.0, 2000.0)
        ]
        for condition, n in (("", 6), ("A", 3), ("B", 3))
    }
    assert [row["condition"] for row in rows] == ["", "A", "B"]
    for row in rows:
        assert row["n"] == (6 if not row["condition"] else 3)
        got = [row["p_bursts@500"], row["p_bursts@1000"], row["p_bursts@2000"]]
        assert got == pytest.approx(expected[row["condition"]])


def test_the_command_prints_the_threshold_table(study):
    project, _, _ = study
    out = io.StringIO()
    call_command(
        "analyze", "--project", project.name, "--target", "pause_count@1000", "--pause-thresholds", "500,2000",
        stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "pause_count at each pause threshold" in text
    assert "pause_count@500" in text and "pause_count@2000" in text
    assert "(all)" in text and "\nA " in text and "\nB " in text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "pause_thresholds: pause threshold 'nan' must be a number of milliseconds more than 0"),
        ("inf", "pause threshold 'inf' must be a number"),
        ("-200", "pause threshold '-200' must be a number"),
        ("1e400", "pause threshold '1e400' must be a number"),
        ("99999999", "at most 3600000"),
        ("500,500", "pause threshold 500 is given twice"),
        ("500,,1000", "a pause threshold is empty"),
        (" ", "--pause-thresholds is empty"),
        ("abc", "pause threshold 'abc' is not a number of milliseconds"),
    ],
)
def test_bad_pause_thresholds_are_refused_naming_the_option(study, value, message):
    project, _, _ = study
    with pytest.raises(CommandError, match=message):
        call_command(
            "analyze", "--project", project.name, "--target", "pause_count@1000", "--pause-thresholds", value
        )  # fmt: skip


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("pause_count@nan", "target 'pause_count@nan': the pause threshold of pause_count"),
        ("pause_count@-1", "must be a number of milliseconds more than 0"),
        ("pause_count", "pause_count needs a pause threshold in ms"),
        ("revisions@100", "revisions takes no pause threshold"),
        ("typing", "target 'typing' is not one of: wall_time, active_time, keystrokes, allkeys, or a process measure"),
    ],
)
def test_bad_process_targets_are_refused_on_the_command(study, target, message):
    project, _, _ = study
    with pytest.raises(CommandError, match=message):
        call_command("analyze", "--project", project.name, "--target", target)


def test_the_api_and_the_page_take_process_targets_and_refuse_bad_thresholds(study, researcher_client):
    project, live, _ = study
    api = reverse("api-project-analysis", kwargs={"project_id": project.pk})
    body = researcher_client.get(api + "?target=pause_count@1000&pause_thresholds=2000,500").json()
    assert body["selection"]["pause_thresholds_ms"] == [500.0, 2000.0] and body["n_used"] == 6
    for query, message in (
        ("target=pause_count@1000&pause_thresholds=nan", "pause threshold 'nan' must be a number"),
        ("target=pause_count@1000&pause_thresholds=1,1", "given twice"),
        ("target=pause_count@inf", "the pause threshold of pause_count"),
    ):
        refused = researcher_client.get(api + "?" + query)
        assert refused.status_code == 400 and message in json.dumps(refused.json()), query
    page = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(page + "?target=r_bursts@1000")
    assert response.status_code == 200
    assert response.context["selection"].target_column == "r_bursts@1000"
    refused = researcher_client.get(page + "?target=pause_count@1000&pause_thresholds=-5")
    assert refused.status_code == 400
    assert "pause_thresholds: pause threshold &#x27;-5&#x27; must be" in refused.content.decode()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    # A key's three events span 2 ms: a shorter gap runs the client's clock backwards, which no browser
    # does and the server refuses across batches (it checks the time order of what it stores).
    gaps=st.lists(st.integers(2, 3000), min_size=1, max_size=12),
    cuts=st.lists(st.integers(1, 40), max_size=5),
)
def test_measures_do_not_depend_on_how_the_log_was_cut_into_batches(annotator, gaps, cuts):
    project = ProjectFactory()
    whole = live_post_edit(project, annotator, gaps, condition="", metric=1.0)
    batched = live_post_edit(project, annotator, gaps, condition="", metric=1.0, batches=cuts)
    assert [replace(e, visit="") for e in stored_log(whole)] == [replace(e, visit="") for e in stored_log(batched)]
    expected = process_measures(ORIGINAL, stored_log(whole))
    assert process_measures(batched.start_text, stored_log(batched)) == expected
    assert expected.at(1000).count == pauses_at(gaps, 1000)


def test_logs_read_in_chunks_equal_the_logs_read_one_by_one(study, monkeypatch):
    project, _, unlogged = study
    post_edits = list(PostEdit.objects.filter(assignment__item__project=project).order_by("id"))
    logs = stored_logs(post_edit.id for post_edit in post_edits)
    assert unlogged.id not in logs and len(logs) == len(STUDY)
    assert all(logs[post_edit.id] == stored_log(post_edit) for post_edit in post_edits if post_edit.id in logs)
    ids = [post_edit.id for post_edit in post_edits]
    whole = dict(selectors_process.process_measures_stream(post_edit_ids=ids))
    monkeypatch.setattr(selectors_process, "CHUNK", 4)  # chunks of 4 and 3 (one unlogged)
    assert dict(selectors_process.process_measures_stream(post_edit_ids=reversed(ids))) == whole
    assert list(whole) == [post_edit.id for post_edit in post_edits if post_edit.id in logs]
    assert all(
        whole[post_edit.id] == process_measures(post_edit.start_text, stored_log(post_edit))
        for post_edit in post_edits
        if post_edit.id in logs
    )


def test_the_report_page_offers_the_process_targets_at_its_thresholds(study, researcher_client):
    project, _, _ = study
    page = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(page)
    groups = {group["label"]: group["targets"] for group in response.context["target_groups"]}
    assert list(groups) == [
        "effort",
        "process (docs/process.md)",
        "process, pause threshold 200 ms",
        "process, pause threshold 500 ms",
        "process, pause threshold 1000 ms",
        "process, pause threshold 2000 ms",
    ]
    assert groups["effort"] == ["wall_time", "active_time", "keystrokes", "allkeys"]
    assert "revisions" in groups["process (docs/process.md)"] and "iki_median" in groups["process (docs/process.md)"]
    at_1000 = groups["process, pause threshold 1000 ms"]
    assert at_1000[:2] == ["pause_count@1000", "pause_ms@1000"] and "r_bursts@1000" in at_1000
    html = response.content.decode()
    assert '<optgroup label="process, pause threshold 1000 ms">' in html
    assert '<option value="keystrokes" selected>' in html
    # The page's own thresholds, and the chosen target's threshold, give the groups; the choice shows chosen.
    response = researcher_client.get(page + "?target=p_bursts@750&pause_thresholds=300,3000")
    assert response.status_code == 200
    labels = [group["label"] for group in response.context["target_groups"]][2:]
    assert labels == [f"process, pause threshold {t} ms" for t in (300, 750, 3000)]
    html = response.content.decode()
    assert '<option value="p_bursts@750" selected>' in html
    assert '<input type="hidden" name="pause_thresholds" value="300,3000">' in html
    # Refused thresholds: the analysis says why; the choices fall back to the defaults.
    refused = researcher_client.get(page + "?target=pause_count@1000&pause_thresholds=nan")
    assert refused.status_code == 400
    assert [group["label"] for group in refused.context["target_groups"]][2:] == [
        f"process, pause threshold {t} ms" for t in (200, 500, 1000, 2000)
    ]
