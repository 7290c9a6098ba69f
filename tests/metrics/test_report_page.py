"""The report page, its plots and downloads: permissions, contents, htmx partial, bad input."""

import csv
import io

import pytest
from django.urls import reverse

from annotations.models import Project
from metrics.selection_data import clear_cache
from tests.factories import UserFactory
from tests.metrics.report_data import build_shared_study, build_study


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()


@pytest.fixture
def study(annotator, other_annotator):
    project, _ = build_study(annotators=[annotator, other_annotator])
    return project


def _urls(project: Project) -> list[str]:
    pk = project.pk
    page = reverse("metrics-report", kwargs={"project_id": pk})
    plot = lambda kind, fmt: reverse("metrics-report-plot", kwargs={"project_id": pk, "kind": kind, "fmt": fmt})  # noqa: E731
    return [
        reverse("metrics-reports"),
        page,
        page + "?target=wall_time&variant=with_references",
        reverse("metrics-report-data", kwargs={"project_id": pk, "fmt": "json"}),
        reverse("metrics-report-data", kwargs={"project_id": pk, "fmt": "csv"}),
        plot("scatter", "svg") + "?metric=compression",
        plot("scatter", "png") + "?metric=levenshtein",
        plot("scatter", "csv") + "?metric=bleu",
        plot("scatter", "json") + "?metric=bleu",
        plot("heatmap", "svg"),
        plot("heatmap", "csv"),
        plot("effort", "png"),
        plot("effort", "json"),
    ]


def test_anonymous_users_are_sent_to_login(client, study):
    for url in _urls(study):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url


@pytest.mark.parametrize("who", ["annotator_client", "other_annotator_client"])
def test_annotators_get_403_everywhere_even_for_their_own_project(request, who, study):
    client = request.getfixturevalue(who)
    for url in _urls(study):
        assert client.get(url).status_code == 403, url


@pytest.mark.parametrize("who", ["researcher_client", "admin_client"])
def test_researchers_and_admins_read_every_page_plot_and_download(request, who, study):
    client = request.getfixturevalue(who)
    for url in _urls(study):
        assert client.get(url).status_code == 200, url


def test_researchers_cannot_post_to_the_report(researcher_client, study):
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    assert researcher_client.post(url, {"target": "keystrokes"}).status_code == 405


def test_an_unknown_project_is_404(researcher_client):
    assert researcher_client.get(reverse("metrics-report", kwargs={"project_id": 999999})).status_code == 404


def test_the_page_shows_the_tables_plots_and_effort_model(researcher_client, study):
    response = researcher_client.get(reverse("metrics-report", kwargs={"project_id": study.pk}))
    html = response.content.decode()
    assert "<html" in html and 'class="sortable report-table"' in html
    assert "metrics/sortable.js" in html and "//cdn" not in html
    best = response.context["analysis"].best_metric
    assert best == "compression"
    rows = {row["metric"]: row for row in response.context["rows"]}
    assert set(rows) == {"compression", "levenshtein", "bleu"}
    assert rows["bleu"]["pearson"] < 0 < rows["bleu"]["pearson_oriented"]
    assert rows["compression"]["per_annotator"] == [
        response.context["analysis"].metrics["compression"].pearson_per_annotator[name] for name in ("anna", "bob")
    ]
    assert "plots/scatter.svg?target=keystrokes&amp;variant=plain&amp;metric=compression" in html
    assert "plots/heatmap.svg" in html and "plots/effort.svg" in html
    assert "Effort model" in html and response.context["model"].r2_cv.mean > 0.5


def test_htmx_requests_get_only_the_report_body(researcher_client, study):
    url = reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=wall_time&annotators=anna"
    response = researcher_client.get(url, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and "report-selection" not in html
    assert response.context["selection"].annotators == ("anna",)
    assert response.context["analysis"].n_used == 15
    assert "only one annotator (anna)" in html


def test_the_form_falls_back_to_a_plain_get(researcher_client, study):
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    html = researcher_client.get(url).content.decode()
    assert f'action="{url}"' in html and f'hx-get="{url}"' in html and 'type="submit"' in html


def test_a_bad_selection_gets_a_message_not_an_error(researcher_client, study):
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    response = researcher_client.get(url + "?target=minutes")
    assert response.status_code == 400
    assert (
        "target &#x27;minutes&#x27; is not one of: wall_time, active_time, keystrokes, allkeys"
        in response.content.decode()
    )
    response = researcher_client.get(url + "?annotators=nobody")
    assert response.status_code == 400 and "nobody" in response.content.decode()
    swapped = researcher_client.get(url + "?annotators=nobody", headers={"HX-Request": "true"})
    assert swapped.status_code == 200 and 'role="alert"' in swapped.content.decode()
    plot = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "scatter", "fmt": "svg"})
    response = researcher_client.get(plot + "?metric=sari")
    assert response.status_code == 400 and "metric 'sari' has no values" in response.content.decode()
    response = researcher_client.get(plot + "?metric=bleu&variant=both")
    assert response.status_code == 400 and "variant 'both'" in response.content.decode()
    wrong = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "pie", "fmt": "svg"})
    assert researcher_client.get(wrong).status_code == 404


def test_a_project_without_metric_values_says_so(researcher_client, annotator):
    project, post_edits = build_study(annotators=[annotator], n_per_annotator=3, name="empty")
    for post_edit in post_edits:
        post_edit.metric_values.all().delete()
    response = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}))
    html = response.content.decode()
    assert response.status_code == 200
    assert "no metric values are stored for this selection yet" in html
    assert "only 3 edits" in html


def test_plot_downloads_are_svg_and_png(researcher_client, study):
    base = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "scatter", "fmt": "svg"})
    svg = researcher_client.get(base + "?metric=compression")
    assert svg["Content-Type"] == "image/svg+xml"
    assert svg.content.startswith(b"<?xml") and b"<svg" in svg.content
    assert "default-src 'none'" in svg["Content-Security-Policy"]
    png = researcher_client.get(base.replace(".svg", ".png") + "?metric=compression")
    assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    heatmap = researcher_client.get(base.replace("scatter.svg", "heatmap.png"))
    assert heatmap.content.startswith(b"\x89PNG")


def test_plot_numbers_download_as_csv_and_json(researcher_client, study):
    base = reverse("metrics-report-plot", kwargs={"project_id": study.pk, "kind": "scatter", "fmt": "csv"})
    rows = list(csv.DictReader(io.StringIO(researcher_client.get(base + "?metric=bleu").content.decode())))
    assert len(rows) == 30 and set(rows[0]) == {"post_edit_id", "external_id", "annotator", "bleu", "keystrokes"}
    data = researcher_client.get(base.replace(".csv", ".json") + "?metric=bleu&target=wall_time").json()
    assert data["target"] == "wall_ms" and data["n"] == 30 and len(data["points"]) == 30
    assert data["fit"]["slope"] < 0 and data["pearson"] < 0
    matrix = researcher_client.get(base.replace("scatter.csv", "heatmap.json")).json()
    assert matrix["metrics"] == ["compression", "levenshtein", "bleu"]
    assert matrix["values"][0][0] == pytest.approx(1.0)
    effort = list(
        csv.DictReader(io.StringIO(researcher_client.get(base.replace("scatter", "effort")).content.decode()))
    )
    assert len(effort) == 30 and {"measured", "predicted", "annotator"} <= set(effort[0])


def test_the_whole_analysis_downloads_as_json_and_csv(researcher_client, study):
    url = reverse("metrics-report-data", kwargs={"project_id": study.pk, "fmt": "json"})
    data = researcher_client.get(url + "?target=wall_time").json()
    assert data["selection"]["target_column"] == "wall_ms" and data["best_metric"] == "compression"
    assert set(data["metrics"]["levenshtein"]["pearson_per_annotator"]) == {"anna", "bob"}
    response = researcher_client.get(url.replace(".json", ".csv"))
    assert 'attachment; filename="study-keystrokes-analysis.csv"' == response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["metric"] for row in rows] == ["compression", "levenshtein", "bleu"]
    assert "pearson[anna]" in rows[0]


def test_the_variant_picks_the_other_metric_values(researcher_client, study):
    url = reverse("metrics-report-data", kwargs={"project_id": study.pk, "fmt": "json"})
    data = researcher_client.get(url + "?variant=with_references").json()
    assert list(data["metrics"]) == ["compression"]
    assert "no with_references values for levenshtein, bleu" in data["messages"][0]


def test_hostile_names_stay_inert_in_the_page_svg_and_csv(researcher_client, annotator):
    evil = UserFactory(username="<img src=x onerror=alert(1)>$\\x$", role="annotator")
    project, _ = build_study(annotators=[annotator, evil], name='<script>alert("p")</script> $x$')
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk})).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    plot = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "scatter", "fmt": "svg"})
    svg = researcher_client.get(plot + "?metric=compression").content.decode()
    assert "<script" not in svg and '&lt;script&gt;alert("p")&lt;/script&gt; $x$' in svg  # mathtext off too
    data = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "effort", "fmt": "json"})
    names = {point["annotator"] for point in researcher_client.get(data).json()["points"]}
    assert evil.username in names


def test_csv_downloads_neutralise_spreadsheet_formulas(researcher_client, annotator):
    formula = UserFactory(username="=1+2", role="annotator")
    project, _ = build_study(annotators=[annotator, formula], name="formulas")
    url = reverse("metrics-report-plot", kwargs={"project_id": project.pk, "kind": "effort", "fmt": "csv"})
    rows = list(csv.DictReader(io.StringIO(researcher_client.get(url).content.decode())))
    assert {row["annotator"] for row in rows} == {"anna", "'=1+2"}
    data = reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "csv"})
    header = researcher_client.get(data).content.decode().splitlines()[0]
    assert "pearson[=1+2]" in header  # a header cell starting with p is not a formula; left as is


def test_nav_and_home_link_to_reports_for_researchers_only(researcher_client, annotator_client):
    url = reverse("metrics-reports")
    assert url in researcher_client.get(reverse("home")).content.decode()
    assert url not in annotator_client.get(reverse("home")).content.decode()


def test_a_changed_metric_value_is_never_served_from_the_cache(researcher_client, annotator, other_annotator):
    project, post_edits = build_study(annotators=[annotator, other_annotator], name="changing")
    url = reverse("metrics-report-data", kwargs={"project_id": project.pk, "fmt": "json"})
    before = researcher_client.get(url).json()["metrics"]["levenshtein"]["pearson"]
    assert researcher_client.get(url).json()["metrics"]["levenshtein"]["pearson"] == before  # cached, same
    value = post_edits[0].metric_values.get(metric="levenshtein", variant="plain")
    value.value += 500
    value.save()
    after = researcher_client.get(url).json()["metrics"]["levenshtein"]["pearson"]
    assert after != pytest.approx(before)


def test_huge_ids_and_nul_characters_get_clear_answers(researcher_client, study):
    assert researcher_client.get(f"/research/{10**20}/report/").status_code == 404
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    response = researcher_client.get(url, {"task_type": "mt\x00"})
    assert response.status_code == 400 and "task_type contains a NUL character" in response.content.decode()


def test_the_page_shows_the_published_protocol_beside_the_tie_averaged_and_grouped_cv(researcher_client, study):
    response = researcher_client.get(reverse("metrics-report", kwargs={"project_id": study.pk}))
    html = response.content.decode()
    for header in (
        "5-NN R² (published protocol)",
        "5-NN R² tie-averaged",
        "CV random",
        "CV by item",
        "CV by annotator",
    ):
        assert f">{header}</th>" in html
    assert "scikit-learn keeps whichever tied neighbours its tree returns" in html
    analysis = response.context["analysis"]
    rows = {row["metric"]: row for row in response.context["rows"]}
    compression = analysis.metrics["compression"]
    assert rows["compression"]["knn_r2"] == compression.knn_r2
    assert rows["compression"]["knn_r2_tie_averaged"] == compression.knn_r2_tie_averaged
    assert rows["compression"]["knn_r2_cv_annotator_mean"] == compression.knn_r2_cv_annotator.mean
    assert f"{compression.knn_r2_cv_item.mean:.3f} ± {compression.knn_r2_cv_item.sd:.3f}" in html
    assert "⚑</span></td>" not in html  # every item is edited once here: nothing leaks


def test_the_page_flags_a_metric_whose_random_cv_leaks_items(researcher_client, annotator, other_annotator):
    project, _ = build_shared_study(annotators=[annotator, other_annotator])
    response = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}))
    compression = response.context["analysis"].metrics["compression"]
    assert compression.cv_optimistic is True and compression.cv_item_gap > 0.05
    html = response.content.decode()
    assert 'title="more than 0.05 above the item-grouped CV">⚑</span>' in html
    assert "random-CV R² exceeds item-grouped CV R² by" in html


def test_the_page_counts_flagged_edits_and_leaves_them_out_on_request(researcher_client, study):
    post_edit = study.items.first().assignments.first().post_edit
    post_edit.flags = ["keys_uncorroborated"]
    post_edit.save(update_fields=["flags"])
    page = reverse("metrics-report", kwargs={"project_id": study.pk})
    response = researcher_client.get(page)
    assert response.context["flagged"] == 1 and response.context["analysis"].n_rows == 30
    assert "1 of 30 post-edits in this selection are flagged" in response.content.decode()
    excluded = researcher_client.get(page + "?exclude_flagged=1")
    assert excluded.context["analysis"].n_rows == 29 and "exclude_flagged=1" in excluded.context["query"]
    html = excluded.content.decode()
    assert 'name="exclude_flagged" value="1" checked' in html and "1 flagged post-edit left out" in html


def test_log_time_reaches_the_mixed_models_the_downloads_and_the_plots(researcher_client, study):
    page = reverse("metrics-report", kwargs={"project_id": study.pk})
    response = researcher_client.get(page + "?target=wall_time&log_time=1")
    assert response.context["mixed_rows"][0]["formula"].startswith("z(log(wall_ms))")
    assert "log_time=1" in response.context["data_urls"]["json"] and "log_time=1" in response.context["heatmap"]["svg"]
    data = researcher_client.get(response.context["data_urls"]["json"]).json()
    assert data["settings"]["log_target"] is True
    refused = researcher_client.get(page + "?target=keystrokes&log_time=1")
    assert refused.status_code == 400 and "log time applies to the time targets" in refused.content.decode()


def test_rows_are_ranked_by_oriented_r_and_notes_become_shared_footnotes():
    from metrics.views.report import rank_and_footnote

    rows = [
        {"metric": "a", "pearson_oriented": 0.5, "messages": ["few rows"]},
        {"metric": "b", "pearson_oriented": None, "messages": ["b is constant", "few rows"]},
        {"metric": "c", "pearson_oriented": 0.9, "messages": []},
        {"metric": "d", "pearson_oriented": 0.5, "messages": []},
    ]
    footnotes = rank_and_footnote(rows)
    assert [(row["metric"], row["rank"]) for row in rows] == [("c", 1), ("a", 2), ("d", 2), ("b", None)]
    assert [(n["number"], n["text"], n["metrics"]) for n in footnotes] == [
        (1, "few rows", ["a", "b"]),
        (2, "b is constant", ["b"]),
    ]
    assert [note["number"] for note in rows[3]["notes"]] == [2, 1]


def test_the_key_table_comes_first_and_every_other_figure_is_under_more_columns(researcher_client, study):
    html = researcher_client.get(reverse("metrics-report", kwargs={"project_id": study.pk})).content.decode()
    key = html[html.index('id="metrics-key"') : html.index('id="more-columns"')]
    more = html[html.index('id="more-columns"') :]
    for header in ("rank", "metric", "n", "r", "r 95% CI", "p", "oriented r", "ρ", "τ"):
        assert f">{header}</th>" in key, header
    for header in ("Williams p", "Δr bootstrap [95%]", "CV random", "CV by annotator", "dropped"):
        assert f">{header}</th>" not in key and f">{header}</th>" in more, header
    assert more.startswith('id="more-columns">\n<summary>More columns')


def test_the_reports_list_and_the_form_say_what_the_report_computes(researcher_client, study):
    listing = researcher_client.get(reverse("metrics-reports")).content.decode()
    url = reverse("metrics-report", kwargs={"project_id": study.pk})
    text = "Computing correlations for 3 metrics over 30 post-edits…"  # build_study: 2 x 15 edits, 3 metrics
    assert f'<a href="{url}" data-loading="{text}">Report</a>' in listing
    page = researcher_client.get(url).content.decode()
    assert f'data-loading="{text}"' in page  # the form's Update (a whole page without htmx)
    assert f'<span id="report-loading" class="htmx-indicator" role="status">{text}</span>' in page


def test_the_loading_text_counts_in_words():
    from metrics.selectors import report_loading_text

    assert report_loading_text(metrics=1, post_edits=1) == "Computing correlations for 1 metric over 1 post-edit…"
    assert (
        report_loading_text(metrics=8, post_edits=5235) == "Computing correlations for 8 metrics over 5,235 post-edits…"
    )
