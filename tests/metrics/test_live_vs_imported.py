"""Live against imported effort on the same items: the pure comparison on a hand-made frame, and the same
numbers for a project holding both origins and for a copy (copy_project) against its source, through the
report, the analyze command, the analysis API and the report page."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from annotations.models import PostEdit
from annotations.services.copying import project_copy_items
from metrics.analysis import Settings
from metrics.analysis.origins import bootstrap_mean_ci, compare_origins, origin_rows
from metrics.analysis_options import selection_build
from metrics.reports import report_build
from metrics.selection_data import clear_cache
from tests.factories import ItemFactory, MetricValueFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

COLUMNS = ["external_id", "origin", "practice", "wall_ms", "active_ms", "keystrokes", "allkeys", "compression"]
# (item, origin, practice, keystrokes, compression); time = 1000 x keystrokes, allkeys = keystrokes + 1
EDITS = [
    ("i1", "imported", False, 10, 1.0),
    ("i2", "imported", False, 20, 2.5),
    ("i3", "imported", False, 30, 2.0),
    ("i5", "imported", False, 40, 4.0),
    ("i1", "live", False, 14, 1.0),
    ("i1", "live", False, 18, 2.0),
    ("i2", "live", False, 21, 3.0),
    ("i3", "live", False, 36, 4.0),
    ("i4", "live", False, 5, 0.5),
    ("p", "imported", True, 100, 9.0),
    ("p", "live", True, 1, 9.0),
]
# Shared items i1, i2, i3: live item means 16, 21, 36; imported 10, 20, 30; differences 6, 1, 6.
LIVE_MEAN, IMPORTED_MEAN, DIFFERENCE = (16 + 21 + 36) / 3, 20.0, (6 + 1 + 6) / 3


def frame(edits=EDITS) -> pd.DataFrame:
    return pd.DataFrame.from_records(
        [(i, o, p, 1000.0 * k, 1000.0 * k, k, k + 1, c) for i, o, p, k, c in edits], columns=COLUMNS
    )


def expected_ci(differences: list[float]) -> tuple[float, float]:
    """The percentile bootstrap the module documents, written out."""
    settings = Settings()
    values = np.array(differences)
    rng = np.random.default_rng(settings.seed)
    means = values[rng.integers(0, len(values), size=(settings.bootstrap_resamples, len(values)))].mean(axis=1)
    return tuple(np.percentile(means, [2.5, 97.5]))


def test_the_comparison_on_shared_items_by_hand():
    result = compare_origins(frame(), target="keystrokes", metrics=["compression"])
    assert (result.shared_items, result.live_items, result.imported_items) == (3, 4, 4)
    assert (result.live_post_edits, result.imported_post_edits, result.practice_left_out) == (4, 3, 2)
    keys = result.efforts["keystrokes"]
    assert (keys.n_items, keys.live_mean, keys.imported_mean, keys.difference) == pytest.approx(
        (3, LIVE_MEAN, IMPORTED_MEAN, DIFFERENCE)
    )
    assert keys.ci == pytest.approx(expected_ci([6, 1, 6]))
    assert 1 <= keys.ci[0] <= DIFFERENCE <= keys.ci[1] <= 6
    wall = result.efforts["wall_ms"]
    assert (wall.live_mean, wall.difference) == pytest.approx((1000 * LIVE_MEAN, 1000 * DIFFERENCE))
    assert result.efforts["allkeys"].difference == pytest.approx(DIFFERENCE)


def test_pearson_r_is_computed_separately_per_origin_on_the_shared_items():
    result = compare_origins(frame(), target="keystrokes", metrics=["compression"])
    live, imported = result.correlations["compression"]["live"], result.correlations["compression"]["imported"]
    assert live.n == 4 and imported.n == 3
    assert live.pearson == pytest.approx(stats.pearsonr([1.0, 2.0, 3.0, 4.0], [14, 18, 21, 36]).statistic)
    assert imported.pearson == pytest.approx(stats.pearsonr([1.0, 2.5, 2.0], [10, 20, 30]).statistic)
    assert live.pearson_p == pytest.approx(stats.pearsonr([1.0, 2.0, 3.0, 4.0], [14, 18, 21, 36]).pvalue)
    assert result.messages == [
        "2 post-edits of practice items left out",
        "one origin has only 3 post-edits on the shared items: its Pearson r is unreliable",
    ]


def test_practice_items_count_when_asked():
    result = compare_origins(frame(), target="keystrokes", include_practice=True)
    assert result.shared_items == 4
    # p's difference (1 - 100) joins 6, 1, 6.
    assert result.efforts["keystrokes"].difference == pytest.approx((6 + 1 + 6 - 99) / 4)


def test_items_without_a_value_under_both_origins_are_not_paired():
    edits = [*EDITS[:8], ("i2", "live", False, float("nan"), 1.0)]
    data = frame(edits)
    data.loc[data["external_id"] == "i3", "wall_ms"] = np.nan
    result = compare_origins(data, target="keystrokes")
    assert result.efforts["wall_ms"].n_items == 2  # i3 has no time under either origin
    assert result.efforts["wall_ms"].difference == pytest.approx(1000 * (6 + 1) / 2)
    assert result.efforts["keystrokes"].n_items == 3


def test_nothing_shared_says_so():
    result = compare_origins(frame([EDITS[0], EDITS[8]]), target="keystrokes", metrics=["compression"])
    assert result.shared_items == 0 and result.efforts == {} and result.correlations == {}
    assert result.messages == ["no item has both a live and an imported post-edit: nothing to compare"]


def test_one_shared_item_has_a_difference_but_no_interval():
    result = compare_origins(frame([EDITS[0], EDITS[4]]), target="keystrokes")
    assert (result.efforts["keystrokes"].difference, result.efforts["keystrokes"].ci) == (4.0, None)
    assert bootstrap_mean_ci(np.array([2.0])) is None


def test_a_missing_column_is_named():
    with pytest.raises(ValueError, match="no column 'bleu'"):
        compare_origins(frame(), target="keystrokes", metrics=["bleu"])


def test_flat_rows_for_tables():
    rows = origin_rows(compare_origins(frame(), target="keystrokes"))
    assert [r["effort"] for r in rows] == ["wall_ms", "active_ms", "keystrokes", "allkeys"]
    assert rows[2]["ci_low"] == pytest.approx(expected_ci([6, 1, 6])[0])


# --- through the ORM side ---------------------------------------------------------------------------------------------


def _store(project, edits, *, only: str | None = None) -> None:
    """The EDITS as post-edits of `project` (only one origin's when `only`), with compression values."""
    items: dict[str, object] = {}
    people = {
        "imported": UserFactory(username="pe1", role="annotator"),
        "live": [UserFactory(username="anna", role="annotator"), UserFactory(username="bob", role="annotator")],
    }
    taken: dict[str, int] = {}
    for external_id, origin, practice, keys, compression in edits:
        if only and origin != only:
            continue
        item = items.get(external_id) or project.items.filter(external_id=external_id).first()
        if item is None:
            item = ItemFactory(project=project, external_id=external_id, practice=practice)
        items[external_id] = item
        if origin == "live":
            who = people["live"][taken.get(external_id, 0)]
            taken[external_id] = taken.get(external_id, 0) + 1
        else:
            who = people["imported"]
        post_edit = SubmittedPostEditFactory(
            assignment__item=item,
            assignment__annotator=who,
            origin=origin,
            keystrokes=keys,
            allkeys=keys + 1,
            wall_ms=1000 * keys,
            active_ms=1000 * keys,
        )
        MetricValueFactory(post_edit=post_edit, metric="compression", variant="plain", value=compression)


@pytest.fixture
def both(db):
    project = ProjectFactory(name="rerun")
    _store(project, EDITS)
    clear_cache()
    return project


@pytest.mark.django_db
def test_a_project_with_both_origins_compares_them(both):
    report = report_build(selection=selection_build(project=both, target="keystrokes"), use_cache=False)
    result = report.live_vs_imported
    assert (result.shared_items, result.source_project) == (3, None)
    assert result.efforts["keystrokes"].difference == pytest.approx(DIFFERENCE)
    assert result.efforts["keystrokes"].ci == pytest.approx(expected_ci([6, 1, 6]))
    assert result.correlations["compression"]["live"].pearson == pytest.approx(
        stats.pearsonr([1.0, 2.0, 3.0, 4.0], [14, 18, 21, 36]).statistic
    )
    data = report.to_dict()["live_vs_imported"]
    assert data["efforts"]["keystrokes"]["live_mean"] == pytest.approx(LIVE_MEAN)
    assert data["practice_left_out"] == 2


@pytest.mark.django_db
def test_one_origin_only_has_no_comparison(both):
    selection = selection_build(project=both, target="keystrokes", origin="live")
    assert report_build(selection=selection, use_cache=False).live_vs_imported is None
    flat = ProjectFactory(name="flat")
    SubmittedPostEditFactory(assignment__item__project=flat)
    report = report_build(selection=selection_build(project=flat, target="keystrokes"), use_cache=False)
    assert report.live_vs_imported is None and report.to_dict()["live_vs_imported"] is None


@pytest.fixture
def copied(db):
    source = ProjectFactory(name="published")
    _store(source, EDITS, only="imported")
    copy = project_copy_items(source=source, target_name="published live").project
    _store(copy, EDITS, only="live")
    clear_cache()
    return copy


@pytest.mark.django_db
def test_a_copy_is_compared_with_its_sources_imported_edits(copied):
    report = report_build(selection=selection_build(project=copied, target="keystrokes"), use_cache=False)
    result = report.live_vs_imported
    assert (result.shared_items, result.live_items, result.imported_items) == (3, 4, 4)
    assert result.source_project == "published"
    assert (result.efforts["keystrokes"].live_mean, result.efforts["keystrokes"].imported_mean) == pytest.approx(
        (LIVE_MEAN, IMPORTED_MEAN)
    )
    assert result.efforts["keystrokes"].ci == pytest.approx(expected_ci([6, 1, 6]))
    assert result.correlations["compression"]["imported"].pearson == pytest.approx(
        stats.pearsonr([1.0, 2.5, 2.0], [10, 20, 30]).statistic
    )
    assert result.messages[0] == (
        "live post-edits of this copy against the imported post-edits of 'published', by external id"
    )


@pytest.mark.django_db
def test_a_new_value_in_the_source_is_not_served_stale(copied):
    selection = selection_build(project=copied, target="keystrokes")
    before = report_build(selection=selection).live_vs_imported.efforts["keystrokes"].imported_mean
    imported = PostEdit.objects.get(assignment__item__project__name="published", assignment__item__external_id="i1")
    imported.keystrokes = 40
    imported.save()
    after = report_build(selection=selection).live_vs_imported.efforts["keystrokes"].imported_mean
    assert (before, after) == pytest.approx((IMPORTED_MEAN, (40 + 20 + 30) / 3))


@pytest.mark.django_db
def test_a_copy_whose_source_is_gone_or_odd_has_no_comparison(copied):
    copied.meta = {**copied.meta, "copied_from": {"project_id": "1; DROP TABLE"}}
    copied.save()
    assert report_build(selection=selection_build(project=copied, target="keystrokes")).live_vs_imported is None
    for odd in (2**80, -1, True, None, [1], {"a": 1}, copied.pk):
        copied.meta = {"copied_from": {"project_id": odd}}
        copied.save()
        clear_cache()
        assert report_build(selection=selection_build(project=copied, target="keystrokes")).live_vs_imported is None


@pytest.mark.django_db
def test_analyze_prints_the_comparison(copied):
    out = io.StringIO()
    call_command("analyze", "--project", "published live", "--target", "keystrokes", "--no-mixed", stdout=out)
    text = out.getvalue()
    assert "Live and imported on 3 shared items (imported from published): 4 live, 3 imported post-edits" in text
    row = next(line for line in text.splitlines() if line.startswith("keystrokes "))
    low, high = expected_ci([6, 1, 6])
    assert row.split() == [
        "keystrokes",
        "3",
        f"{LIVE_MEAN:.1f}",
        "20.0",
        f"{DIFFERENCE:.1f}",
        f"[{low:.1f},",
        f"{high:.1f}]",
    ]
    out = io.StringIO()
    call_command(
        "analyze", "--project", "published live", "--target", "keystrokes", "--no-mixed", "--format", "json", stdout=out
    )
    data = json.loads(out.getvalue())["live_vs_imported"]
    assert data["efforts"]["keystrokes"]["difference"] == pytest.approx(DIFFERENCE)
    assert data["correlations"]["compression"]["live"]["n"] == 4


@pytest.mark.django_db
def test_the_api_has_the_live_vs_imported_field(both, researcher_client):
    url = reverse("api-project-analysis", kwargs={"project_id": both.pk})
    data = researcher_client.get(url, {"target": "keystrokes", "mixed_models": "false"}).json()["live_vs_imported"]
    assert data["shared_items"] == 3
    assert data["efforts"]["keystrokes"]["ci"] == pytest.approx(list(expected_ci([6, 1, 6])))
    assert data["correlations"]["compression"]["imported"]["n"] == 3
    assert data["source_project"] is None


@pytest.mark.django_db
def test_the_report_page_shows_the_section_only_with_both_origins(both, researcher_client):
    url = reverse("metrics-report", kwargs={"project_id": both.pk})
    html = researcher_client.get(url, {"target": "keystrokes"}).content.decode()
    assert '<h2 id="live-vs-imported">Live and imported</h2>' in html
    assert f'<td data-value="{DIFFERENCE}">{DIFFERENCE:.1f}</td>' in html
    assert "with its 95% percentile\n  bootstrap interval from 1000 resamples of items (seed 42)" in html
    html = researcher_client.get(url, {"target": "keystrokes", "origin": "imported"}).content.decode()
    assert 'id="live-vs-imported"' not in html


@pytest.mark.django_db
def test_the_report_page_of_a_copy_names_its_source_escaped(researcher_client):
    source = ProjectFactory(name="<b>published</b>")
    _store(source, EDITS, only="imported")
    copy = project_copy_items(source=source, target_name="copy").project
    _store(copy, EDITS, only="live")
    clear_cache()
    html = researcher_client.get(reverse("metrics-report", kwargs={"project_id": copy.pk})).content.decode()
    assert "<strong>&lt;b&gt;published&lt;/b&gt;</strong>" in html and "<b>published</b>" not in html


@pytest.mark.django_db
def test_practice_items_are_compared_with_include_practice(copied):
    selection = selection_build(project=copied, target="keystrokes", include_practice=True)
    result = report_build(selection=selection, use_cache=False).live_vs_imported
    assert (result.shared_items, result.practice_left_out) == (4, 0)
    assert result.efforts["keystrokes"].difference == pytest.approx((6 + 1 + 6 - 99) / 4)
