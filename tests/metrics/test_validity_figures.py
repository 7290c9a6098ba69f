"""Figures a reviewer can rerun: the grouped folds are scikit-learn's on the ids as exported, outliers are
flagged by a documented rule with the figures without them beside, the published protocol's dependence on
row order is measured, and every coefficient, p and interval says what it is."""

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupKFold, LeaveOneGroupOut, cross_val_score, train_test_split
from sklearn.neighbors import KNeighborsRegressor

from metrics.analysis import Settings, analyze, analyze_targets, summary_rows
from metrics.analysis.conditions import ITEM_EFFECT_IN, ITEM_EFFECT_ONE_EDIT, analyze_conditions
from metrics.analysis.folds import FoldTables, group_codes, group_fold_ids
from metrics.analysis.outliers import THRESHOLD, flag_outliers
from metrics.analysis.pipeline import ROW_ORDERS
from metrics.analysis.tables import condition_rows
from metrics.analysis_options import selection_build
from metrics.exports import export_spec, export_stream
from metrics.reports import report_build
from metrics.selection_data import clear_cache
from tests.factories import UserFactory
from tests.metrics.report_data import build_shared_study, build_study
from tests.metrics.test_analysis_conditions import CONDITIONS, latin_square
from tests.metrics.test_conditions_report import study  # noqa: F401 - the fixture: a Latin-square study

# Ids a reviewer may meet: numbers as text (sorted as text: "10" < "9"), mixed case, accents, other scripts.
ID_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=4)


def sklearn_test_folds(ids: np.ndarray, *, folds: int, repeats: int, seed: int) -> np.ndarray:
    """The call the README documents, run on the ids themselves: (repeats, n) test folds."""
    table = np.empty((repeats, ids.size), dtype=int)
    rng = np.random.RandomState(seed)
    for r in range(repeats):
        splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=rng)
        for fold, (_, test) in enumerate(splitter.split(ids, groups=ids)):
            table[r, test] = fold
    return table


@settings(max_examples=80, deadline=None)
@given(
    ids=st.lists(ID_TEXT, min_size=2, max_size=60),
    folds=st.integers(2, 6),
    repeats=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_item_folds_are_scikit_learns_group_k_fold_on_the_ids(ids, folds, repeats, seed):
    ids = np.array(ids, dtype=object)
    codes = group_codes(ids)
    table = group_fold_ids(codes, folds=folds, repeats=repeats, seed=seed)
    n_groups = np.unique(ids.astype(str)).size
    if n_groups < 2:
        assert table is None
    elif n_groups <= folds:  # every item left out once: LeaveOneGroupOut's partition, in one repeat
        expected = np.empty(ids.size, dtype=int)
        for fold, (_, test) in enumerate(LeaveOneGroupOut().split(ids, groups=ids.astype(str))):
            expected[test] = fold
        assert (table[0] == expected).all()
    else:
        assert (table == sklearn_test_folds(ids.astype(str), folds=folds, repeats=repeats, seed=seed)).all()


@settings(max_examples=40, deadline=None)
@given(
    ids=st.lists(ID_TEXT, min_size=12, max_size=60),
    keep=st.lists(st.booleans(), min_size=60, max_size=60),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_folds_of_the_rows_analysed_are_scikit_learns_on_those_rows(ids, keep, seed):
    """The analysis leaves out rows without a target or metric value: the folds are sklearn's on the rest."""
    ids = np.array(ids, dtype=object)
    mask = np.array(keep[: ids.size])
    tables = FoldTables(folds=3, repeats=2, seed=seed, groups={"item": group_codes(ids), "annotator": None})
    table = tables.table("item", mask)
    kept = ids[mask].astype(str)
    if np.unique(kept).size > 3:
        assert (table == sklearn_test_folds(kept, folds=3, repeats=2, seed=seed)).all()


@pytest.mark.parametrize("style", ["item{}", "{}", "Ünit-{}"])
def test_item_grouped_knn_cv_is_cross_val_score_on_the_ids(style):
    """Ids whose sorted order differs from their order of appearance (item10 < item2, "10" < "9")."""
    rng = np.random.default_rng(7)
    item = np.repeat(rng.permutation(60), 3)
    frame = pd.DataFrame(
        {
            "external_id": [style.format(i) for i in item],
            "annotator": [f"a{k % 3}" for k in range(item.size)],
            "m": rng.gamma(2, 5, 60)[item] + rng.normal(0, 0.3, item.size),
        }
    )
    frame["keystrokes"] = 2 * frame["m"] + rng.normal(0, 4, 60)[item] + rng.normal(0, 1, item.size)
    result = analyze(frame, metrics=["m"], target="keystrokes", settings=Settings(cv_repeats=4)).metrics["m"]
    x, y, ids = frame[["m"]].to_numpy(), frame["keystrokes"].to_numpy(), frame["external_id"].to_numpy()
    rng_sk = np.random.RandomState(42)
    expected = [
        cross_val_score(
            KNeighborsRegressor(n_neighbors=5),
            x,
            y,
            groups=ids,
            cv=GroupKFold(n_splits=5, shuffle=True, random_state=rng_sk),
            scoring="r2",
        ).mean()
        for _ in range(4)
    ]
    assert result.knn_r2_cv_item.repeats == pytest.approx(expected, rel=1e-12)


@pytest.mark.django_db
def test_a_reviewer_reruns_the_item_grouped_cv_from_the_exported_csv():
    """The README's call on the CSV export (read with the ids as text) gives the report's figure."""
    clear_cache()
    people = [UserFactory(username=name, role="annotator") for name in ("anna", "bob", "carl")]
    project, _ = build_shared_study(annotators=people, n_items=40)  # ids item-N: item-10 sorts before item-2
    report = report_build(selection=selection_build(project=project, target="keystrokes"), use_cache=False)
    figure = report.analysis.metrics["compression"].knn_r2_cv_item
    exported = b"".join(export_stream(export_spec(project=project), "csv")).decode("utf-8")
    read = pd.read_csv(io.StringIO(exported), dtype={"external_id": str}, keep_default_na=False, na_values=[""])
    rows = read.dropna(subset=["compression", "keystrokes"])  # the rows the figure is computed on
    X, y, ids = rows[["compression"]].to_numpy(float), rows["keystrokes"].to_numpy(float), rows["external_id"]
    rng = np.random.RandomState(42)
    per_repeat = [
        cross_val_score(
            KNeighborsRegressor(n_neighbors=5),
            X,
            y,
            groups=ids,
            cv=GroupKFold(n_splits=5, shuffle=True, random_state=rng),
            scoring="r2",
        ).mean()
        for _ in range(10)
    ]
    assert figure.repeats == pytest.approx(per_repeat, rel=1e-12)
    assert figure.mean == pytest.approx(np.mean(per_repeat), rel=1e-12)
    # The former coding (order of first appearance) gave other folds, so another figure.
    first_seen = pd.factorize(ids)[0]
    rng = np.random.RandomState(42)
    former = [
        cross_val_score(
            KNeighborsRegressor(5), X, y, groups=first_seen, cv=GroupKFold(5, shuffle=True, random_state=rng)
        ).mean()
        for _ in range(10)
    ]
    assert not np.allclose(former, per_repeat)


# --- outliers -------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1e9, allow_nan=False), min_size=1, max_size=200))
def test_the_outlier_rule_is_the_modified_z_score_on_log_scale(values):
    y = np.array(values)
    outliers = flag_outliers(y)
    logs = np.log1p(y)
    mad = stats.median_abs_deviation(logs, scale=1.0)
    if mad == 0:
        assert outliers.flagged == 0 and outliers.messages
        return
    expected = 0.6745 * (logs - np.median(logs)) / mad > THRESHOLD
    assert (outliers.mask == expected).all() and outliers.flagged == int(expected.sum())
    assert outliers.largest == sorted(y[expected].tolist(), reverse=True)[:5]
    if outliers.flagged:
        assert min(outliers.largest) > outliers.upper_bound * (1 - 1e-9)


def divemt_like(n: int = 200, seed: int = 11) -> pd.DataFrame:
    """Edit times that follow the metric, log-normally, and one edit left open for 13.5 hours."""
    rng = np.random.default_rng(seed)
    m = rng.gamma(2, 10, n)
    frame = pd.DataFrame(
        {
            "external_id": [f"s{i}" for i in range(n)],
            "annotator": [f"t{i % 4}" for i in range(n)],
            "m": m,
            "wall_ms": np.exp(9 + 0.04 * m + rng.normal(0, 0.3, n)),
        }
    )
    frame.loc[17, "wall_ms"] = 13.5 * 3600 * 1000
    return frame


def test_a_13_hour_edit_is_flagged_and_the_figures_without_it_are_beside():
    frame = divemt_like()
    analysis = analyze(frame, metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2, mixed_models=False))
    outliers, m = analysis.outliers, analysis.metrics["m"]
    assert outliers.flagged == 1 and outliers.largest == [13.5 * 3600 * 1000]
    assert any("1 of 200 edits have an outlying wall_ms" in message for message in analysis.messages)
    # Every figure is computed on every edit; the figures without the flagged one are scipy's / sklearn's there.
    assert m.n == 200 and m.pearson == pytest.approx(stats.pearsonr(frame["m"], frame["wall_ms"]).statistic)
    clean = frame.drop(index=17)
    without = outliers.without["m"]
    assert without["n"] == 199
    assert without["pearson"] == pytest.approx(stats.pearsonr(clean["m"], clean["wall_ms"]).statistic, rel=1e-12)
    assert without["spearman"] == pytest.approx(stats.spearmanr(clean["m"], clean["wall_ms"]).statistic, rel=1e-12)
    x_train, x_test, y_train, y_test = train_test_split(
        clean[["m"]].to_numpy(), clean["wall_ms"].to_numpy(), test_size=0.2, random_state=42
    )
    knn = KNeighborsRegressor(5).fit(x_train, y_train)
    assert without["knn_r2"] == pytest.approx(r2_score(y_test, knn.predict(x_test)), rel=1e-12)
    assert m.pearson < 0.2 < 0.7 < without["pearson"]  # one edit hides the relation; the flag shows it
    assert m.knn_r2_cv.mean < 0 < without["knn_r2_cv_mean"]
    assert outliers.effort_model_r2_cv_without > analysis.effort_model.r2_cv.mean
    row = summary_rows(analysis)[0]
    assert row["outliers_flagged"] == 1 and row["pearson_without_outliers"] == without["pearson"]
    data = analysis.to_dict()
    json.dumps(data, allow_nan=False)
    assert data["outliers"]["flagged"] == 1 and "mask" not in data["outliers"]
    assert data["outliers"]["without"]["m"]["knn_r2_cv_item_mean"] == without["knn_r2_cv_item_mean"]


def test_without_outliers_nothing_is_recomputed():
    frame = divemt_like()
    frame.loc[17, "wall_ms"] = 9000.0
    analysis = analyze(frame, metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2, mixed_models=False))
    assert analysis.outliers.flagged == 0 and analysis.outliers.without == {}
    assert summary_rows(analysis)[0]["pearson_without_outliers"] is None


# --- the published protocol and row order ----------------------------------------------------------------


def test_the_row_order_figure_is_the_published_protocol_on_shuffled_rows():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 12, 300).astype(float)  # integer values: many ties at the 5th distance
    frame = pd.DataFrame({"m": x, "keystrokes": 3 * x + rng.normal(0, 4, 300)})
    result = analyze(frame, metrics=["m"], target="keystrokes", settings=Settings(cv_repeats=2)).metrics["m"]
    order_rng = np.random.RandomState(42)
    expected = []
    for _ in range(ROW_ORDERS):
        order = order_rng.permutation(300)
        a, b, c, d = train_test_split(
            x[order, None], frame["keystrokes"].to_numpy()[order], test_size=0.2, random_state=42
        )
        expected.append(r2_score(d, KNeighborsRegressor(5).fit(a, c).predict(b)))
    assert result.knn_r2_row_orders.repeats == pytest.approx(expected, rel=1e-12)
    assert result.knn_r2_row_orders.sd == pytest.approx(np.std(expected, ddof=1), rel=1e-12)
    row = summary_rows(
        analyze(frame, metrics=["m"], target="keystrokes", settings=Settings(cv_repeats=2, mixed_models=False))
    )[0]
    assert (row["knn_r2_row_orders_min"], row["knn_r2_row_orders_max"]) == (min(expected), max(expected))


# --- labels --------------------------------------------------------------------------------------------


def test_log_time_columns_say_they_are_of_log_time():
    frame = divemt_like()
    plain = summary_rows(analyze(frame, metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2)))[0]
    assert plain["mixed_target"] == "wall_ms" and "mixed_log_coefficient" not in plain
    logged = summary_rows(
        analyze(frame, metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2, log_target=True))
    )[0]
    assert logged["mixed_target"] == "log(wall_ms)"
    for key in ("coefficient", "se", "df", "p", "ci_low", "ci_high", "wald_p", "r2_marginal", "r2_conditional"):
        assert logged[f"mixed_log_{key}"] == logged[f"mixed_{key}"] is not None


def test_the_json_says_what_the_two_kinds_of_coefficient_are_in():
    units = analyze(divemt_like(), metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2)).to_dict()["units"]
    assert "target sds per metric sd" in units["metrics.*.mixed.coefficient"]
    assert "target units per input sd" in units["effort_model.coefficients"]


def test_one_post_edit_per_item_says_the_item_effect_dropped_out():
    unshared = latin_square().assign(external_id=lambda f: [f"e{i}" for i in range(len(f))])
    result = analyze_conditions(unshared, target="keystrokes", declared=CONDITIONS)
    assert result.model.item_effect == ITEM_EFFECT_ONE_EDIT
    assert "item random intercept is dropped" in result.model.messages[0]
    assert {row["model_item_effect"] for row in condition_rows(result)} == {ITEM_EFFECT_ONE_EDIT}
    assert result.to_dict()["model"]["item_effect"] == ITEM_EFFECT_ONE_EDIT
    shared = analyze_conditions(latin_square(), target="keystrokes", declared=CONDITIONS)
    assert shared.model.item_effect == ITEM_EFFECT_IN and "(1 | item)" in shared.model.formula
    assert not any("dropped" in message for message in shared.model.messages)


@pytest.mark.django_db
def test_the_conditions_table_names_every_column(study):  # noqa: F811 - the imported fixture
    clear_cache()
    out = io.StringIO()
    call_command("analyze", project=study.name, target="wall_time", log_time=True, stdout=out)
    text = out.getvalue()
    header = next(line for line in text.splitlines() if line.startswith("condition "))
    cells = [cell.strip() for cell in header.split("  ") if cell.strip()]
    assert len(cells) == len(set(cells)), cells  # no two columns share a name
    for name in ("effect 95% CI", "effect p", "time ratio (geometric means)", "time ratio 95% CI", "time ratio p"):
        assert name in cells
    assert "ratio of geometric means" in text and "item random effect: in the model" in text


@pytest.mark.django_db
def test_the_command_labels_the_two_kinds_of_coefficient_and_the_row_order():
    clear_cache()
    project, _ = build_study(annotators=[UserFactory(username=n, role="annotator") for n in ("anna", "bob")])
    out = io.StringIO()
    call_command("analyze", project=project.name, target="keystrokes", stdout=out)
    text = out.getvalue()
    assert "β = standardised slope: target sds per metric sd" in text and "β (sd per sd)" in text
    assert "coefficient (target units per input sd)" in text
    assert "knn_r2_orders" in text and "Trust knn_r2_ties and the CV columns" in text.replace("\n", " ")
    assert "Outliers of keystrokes: 0 of 30 edits flagged (modified z-score" in text


def test_score_corpus_prints_one_scale_per_row(tmp_path, capsys):
    from tests.metrics.test_score_command import jfleg_like_lines, write_jsonl

    source = write_jsonl(tmp_path / "in.jsonl", jfleg_like_lines())
    scores, table = tmp_path / "s.jsonl", tmp_path / "corpus.csv"
    call_command("score", str(source), metrics="sari,ibleu", output=str(scores), corpus=True, corpus_output=str(table))
    per_line = [json.loads(line)["ibleu"] for line in scores.read_text("utf-8").splitlines()]
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("ibleu"))
    mean, editeval, scale = line.split()[2:5]
    assert float(mean) == pytest.approx(np.mean(per_line) / 100, abs=5e-5) and scale == "0-1"
    assert 0 <= float(editeval) <= 1
    rows = {row["metric"]: row for row in csv.DictReader(table.open(encoding="utf-8"))}
    assert float(rows["ibleu"]["mean"]) == pytest.approx(np.mean(per_line), rel=1e-12)  # kept on its own scale
    assert (rows["ibleu"]["per_line_scale"], rows["ibleu"]["scale"]) == ("0-100", "0-1")
    assert float(rows["ibleu"]["mean_on_scale"]) == pytest.approx(np.mean(per_line) / 100, rel=1e-12)
    assert (rows["sari"]["scale"], rows["sari"]["per_line_scale"]) == ("0-100", "0-100")
    assert math.isclose(float(rows["sari"]["mean_on_scale"]), float(rows["sari"]["mean"]))


def test_the_row_order_figure_is_shared_between_targets_and_skipped_on_large_selections(monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 9, 200).astype(float)
    frame = pd.DataFrame(
        {"m": x, "keystrokes": 2 * x + rng.normal(0, 2, 200), "wall_ms": 900 * x + rng.gamma(2, 900, 200)}
    )
    quick = Settings(cv_repeats=2, mixed_models=False)
    together = analyze_targets(frame, metrics=["m"], targets=["keystrokes", "wall_ms"], settings=quick)
    for target in ("keystrokes", "wall_ms"):
        alone = analyze(frame, metrics=["m"], target=target, settings=quick).metrics["m"].knn_r2_row_orders
        assert together[target].metrics["m"].knn_r2_row_orders.repeats == pytest.approx(alone.repeats, rel=1e-12)
    monkeypatch.setattr("metrics.analysis.pipeline.LARGE", 199)
    assert analyze(frame, metrics=["m"], target="keystrokes", settings=quick).metrics["m"].knn_r2_row_orders is None


# --- the report page and the API ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_and_the_api_show_an_outlier_and_the_figures_without_it(researcher_client):
    clear_cache()
    people = [UserFactory(username=n, role="annotator") for n in ("anna", "bob")]
    project, post_edits = build_study(annotators=people)
    post_edits[4].wall_ms = 13.5 * 3600 * 1000
    post_edits[4].save(update_fields=["wall_ms"])
    url = reverse("metrics-report", kwargs={"project_id": project.pk})
    response = researcher_client.get(url, {"target": "wall_time"})
    html = response.content.decode()
    analysis = response.context["analysis"]
    without = analysis.outliers.without["compression"]
    assert analysis.outliers.flagged == 1
    assert "<h3>Outliers of wall_ms</h3>" in html and "<strong>1</strong> of 30 edits flagged" in html
    assert f"<td>{without['pearson']:.3f}</td>" in html
    assert ">published protocol over row orders</th>" in html and "Trust the tie-averaged and CV figures" in html
    assert "coefficient (wall_ms per input sd)" in html and "β (sd per sd)" in html
    data = researcher_client.get(
        reverse("api-project-analysis", kwargs={"project_id": project.pk}) + "?target=wall_time"
    ).json()
    assert data["outliers"]["flagged"] == 1 and data["outliers"]["largest"] == [13.5 * 3600 * 1000]
    assert data["outliers"]["without"]["compression"]["pearson"] == pytest.approx(without["pearson"], rel=1e-12)
    assert data["metrics"]["compression"]["knn_r2_row_orders"]["repeats"] == pytest.approx(
        analysis.metrics["compression"].knn_r2_row_orders.repeats, rel=1e-12
    )
    assert "target units per input sd" in data["units"]["effort_model.coefficients"]
    download = researcher_client.get(
        reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "csv"}), {"target": "wall_time"}
    )
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert {row["outliers_flagged"] for row in rows} == {"1"}
    assert float(rows[0]["pearson_without_outliers"]) == pytest.approx(without["pearson"])


@pytest.mark.django_db
def test_the_conditions_section_names_the_time_ratio_and_the_item_effect(researcher_client, study):  # noqa: F811
    clear_cache()
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    html = researcher_client.get(url, {"target": "wall_time", "log_time": "1"}).content.decode()
    for header in ("effect 95% CI", "effect p", "time ratio (geometric means)", "time ratio 95% CI", "time ratio p"):
        assert f">{header}</th>" in html
    assert "a ratio of <em>geometric</em> means" in html and "Item random effect: in the model." in html


def test_on_large_selections_the_figures_without_outliers_take_two_cv_repeats(monkeypatch):
    monkeypatch.setattr("metrics.analysis.pipeline.LARGE", 150)
    frame = divemt_like()
    analysis = analyze(frame, metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=4, mixed_models=False))
    outliers = analysis.outliers
    assert outliers.cv_repeats_without == 2 and outliers.without["m"]["knn_r2"] is None
    alone = analyze(
        frame.drop(index=17), metrics=["m"], target="wall_ms", settings=Settings(cv_repeats=2, mixed_models=False)
    )
    assert outliers.without["m"]["knn_r2_cv_mean"] == pytest.approx(alone.metrics["m"].knn_r2_cv.mean, rel=1e-12)
    assert analysis.metrics["m"].knn_r2_cv.repeats.__len__() == 4  # the figures with every edit keep their repeats
