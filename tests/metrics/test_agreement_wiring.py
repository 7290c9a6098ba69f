"""Agreement wired up: the overlap selector, `analyze --agreement`, GET /api/projects/<id>/agreement/ and the
report's Agreement section, against the packages (krippendorff, pingouin) on the same ratings."""

from __future__ import annotations

import csv
import io
import json

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotations.models import Assignment
from metrics.analysis_options import selection_build
from metrics.selectors_agreement import overlap_rows
from metrics.text import METRICS
from tests.factories import ItemFactory, ProjectFactory, SubmittedPostEditFactory, UserFactory

pytestmark = pytest.mark.django_db

EDITORS = ["ed0", "ed1", "ed2", "ed3", "ed4"]
ITEMS = 6
SENTENCE = "the committee approved the new budget for the coming year after a long debate"


def keystrokes_of(item: int, editor: int) -> int:
    return 10 + 7 * item + (item * editor) % 5 + 3 * editor


def text_of(item: int, editor: int) -> str:
    if editor == 4:  # the careless one: nonsense unlike anyone's edit
        return f"zq xv {item} kj wp lmn oo rrr"
    words = SENTENCE.split()
    words[(item + editor) % len(words)] = "revised"
    return " ".join(words) + f" ({item})"


@pytest.fixture
def study():
    project = ProjectFactory(name="Overlap")
    users = [UserFactory(username=name, role="annotator") for name in EDITORS]
    for item_index in range(ITEMS):
        item = ItemFactory(project=project, external_id=f"s{item_index}", model_output=SENTENCE)
        for editor_index, user in enumerate(users):
            if item_index == 5 and editor_index == 3:
                continue  # item s5 misses ed3: incomplete for the ICC, still pairable for alpha
            SubmittedPostEditFactory(
                assignment__item=item,
                assignment__annotator=user,
                assignment__status=Assignment.SUBMITTED,
                keystrokes=keystrokes_of(item_index, editor_index),
                text=text_of(item_index, editor_index),
            )
    single = ItemFactory(project=project, external_id="alone")
    SubmittedPostEditFactory(assignment__item=single, assignment__annotator=users[0], keystrokes=999)
    practice = ItemFactory(project=project, external_id="practice", practice=True)
    for user in users[:2]:
        SubmittedPostEditFactory(assignment__item=practice, assignment__annotator=user, keystrokes=500)
    return project


def ratings() -> pd.DataFrame:
    rows = [
        {"item": f"s{i}", "annotator": EDITORS[e], "keystrokes": float(keystrokes_of(i, e))}
        for i in range(ITEMS)
        for e in range(5)
        if not (i == 5 and e == 3)
    ]
    return pd.DataFrame(rows)


def package_alpha() -> float:
    matrix = ratings().pivot(index="annotator", columns="item", values="keystrokes").to_numpy(float)
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", "--project", "Overlap", "--agreement", *args, stdout=out)
    return out.getvalue()


def test_the_selector_reads_overlapping_human_non_practice_edits_in_one_query(study, django_assert_num_queries):
    selection = selection_build(project=study, target="keystrokes")
    with django_assert_num_queries(1):
        rows = overlap_rows(selection=selection, fields=("keystrokes",), with_texts=True)
    assert rows.items.size == ITEMS * 5 - 1
    assert sorted(set(rows.external_ids)) == [f"s{i}" for i in range(ITEMS)]  # no single, no practice item
    assert rows.texts is not None and rows.texts[0] == text_of(0, 0)
    with_practice = overlap_rows(
        selection=selection_build(project=study, target="keystrokes", include_practice=True), fields=("keystrokes",)
    )
    assert "practice" in set(with_practice.external_ids)


def test_analyze_agreement_json_is_the_packages_alpha_and_icc(study):
    data = json.loads(run("--target", "keystrokes", "--format", "json"))
    assert (data["post_edits"], data["items"], data["annotators"]) == (29, 6, EDITORS)
    alpha = data["effort"]["alpha"]
    assert alpha["alpha"] == pytest.approx(package_alpha(), abs=1e-10)
    assert (alpha["pairable"], alpha["units"]) == (29, 6)
    icc = data["effort"]["icc"]
    assert (icc["items"], icc["raters"], icc["dropped"]) == (5, 5, 1)
    theirs = pingouin.intraclass_corr(
        data=ratings(), targets="item", raters="annotator", ratings="keystrokes", nan_policy="omit"
    )
    # pingouin's rows are ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k: ours in the same order.
    assert [row["type"] for row in icc["rows"]] == ["ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)",
                                                    "ICC(3,k)"]  # fmt: skip
    for ours, (_, row) in zip(icc["rows"], theirs.iterrows(), strict=True):
        assert ours["value"] == pytest.approx(row["ICC"], abs=1e-10)
        assert ours["f"] == pytest.approx(row["F"], rel=1e-10)
        assert ours["ci95"] == pytest.approx(list(row["CI95"]), abs=0.005 + 1e-12)  # pingouin rounds to 2 places
    oneway = data["effort"]["icc_oneway"]
    assert (oneway["items"], oneway["ratings"]) == (6, 29)  # every item, s5 with 4 values
    from scipy import stats

    groups = [ratings().query("item == @name")["keystrokes"].to_numpy() for name in sorted(ratings()["item"].unique())]
    assert oneway["f"] == pytest.approx(stats.f_oneway(*groups).statistic, rel=1e-10)
    assert "Item" not in data["messages"][0] and "1 item(s) left out" in data["messages"][0]


def test_analyze_agreement_output_distances_and_the_careless_editor_is_flagged(study):
    data = json.loads(run("--target", "keystrokes", "--format", "json", "--distances", "compression,chrf"))
    assert [out["metric"] for out in data["output"]] == ["compression", "chrf"]
    compression = data["output"][0]
    assert compression["pairs"] == 5 * 10 + 6  # five items with 5 editors (10 pairs), s5 with 4 (6 pairs)
    # Every pair's symmetric distance, recomputed here: the mean over all pairs and ed4's mean.
    texts = {(i, e): text_of(i, e) for i in range(ITEMS) for e in range(5) if not (i == 5 and e == 3)}
    f = METRICS["compression"].func
    pairs = [
        (a, b, (f(texts[i, a], texts[i, b]) + f(texts[i, b], texts[i, a])) / 2)
        for i in range(ITEMS)
        for a in range(5)
        for b in range(a + 1, 5)
        if (i, a) in texts and (i, b) in texts
    ]
    assert compression["mean"] == pytest.approx(np.mean([d for _, _, d in pairs]), abs=1e-12)
    ed4 = next(editor for editor in compression["editors"] if editor["editor"] == "ed4")
    assert ed4["mean"] == pytest.approx(np.mean([d for a, b, d in pairs if 4 in (a, b)]), abs=1e-12)
    assert ed4["pairs"] == 5 * 4 + 3  # s5 lacks ed3
    assert compression["flagged"] == ["ed4"]
    assert data["output"][1]["direction"] == "similarity" and data["output"][1]["flagged"] == ["ed4"]


def test_analyze_agreement_csv_and_text(study):
    rows = list(csv.DictReader(io.StringIO(run("--target", "keystrokes", "--format", "csv", "--distances", "ter"))))
    first = rows[0]
    assert first["figure"] == "alpha_interval" and float(first["value"]) == pytest.approx(package_alpha(), abs=1e-10)
    assert rows[1]["figure"] == "ICC(1) one-way"
    assert [row["figure"] for row in rows[2:8]] == ["ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)",
                                                    "ICC(3,k)"]  # fmt: skip
    assert {row["annotator"] for row in rows if row["figure"] == "annotator_mean"} == set(EDITORS)
    text = run("--target", "keystrokes", "--format", "text", "--distances", "compression")
    assert f"Krippendorff's alpha (interval) on keystrokes: {package_alpha():.4f}" in text
    assert "krippendorff.alpha(reliability_data=R" in text and "pingouin.intraclass_corr" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--target", "iki_median"), "target must be one of"),
        (("--target", "keystrokes", "--distances", "bleu"), "distance 'bleu' is not one of"),
        (("--target", "keystrokes", "--distances", "a\x00b"), "NUL"),
        (("--target", "keystrokes", "--format", "conditions-csv"), "does not apply to --agreement"),
        (("--target", "keystrokes", "--scenarios"), "choose one of"),
    ],
)
def test_analyze_agreement_refuses_bad_options_by_name(study, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_distances_without_agreement_is_refused(study):
    with pytest.raises(CommandError, match="--distances applies to --agreement only"):
        call_command("analyze", "--project", "Overlap", "--target", "keystrokes", "--distances", "ter")


def api_url(project_id: int, query: str = "target=keystrokes&distances=compression") -> str:
    return reverse("api-project-agreement", kwargs={"project_id": project_id}) + f"?{query}"


def test_the_api_answers_the_command_s_figures_to_readers_only(study, researcher_client, annotator_client, client):
    response = researcher_client.get(api_url(study.pk))
    assert response.status_code == 200
    body = response.json()
    assert body == json.loads(run("--target", "keystrokes", "--format", "json", "--distances", "compression"))
    assert body["effort"]["alpha"]["alpha"] == pytest.approx(package_alpha(), abs=1e-10)
    assert annotator_client.get(api_url(study.pk)).status_code == 403
    assert client.get(api_url(study.pk)).status_code == 403
    assert researcher_client.get(api_url(10**6)).status_code == 404


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("target=keystrokes&distances=rouge_l", "distance"),
        ("target=pause_count@1000", "target"),
        ("target=nonsense", "target"),
        ("target=keystrokes&distances=" + "x" * 300, "distances"),
        ("target=keystrokes&annotators=nobody", "annotator"),
        ("target=active_time&idle_threshold=5", "idle threshold"),
    ],
)
def test_the_api_refuses_bad_input_with_a_400_naming_it(study, researcher_client, query, field):
    response = researcher_client.get(api_url(study.pk, query))
    assert response.status_code == 400
    assert field in json.dumps(response.json())


def test_the_report_shows_the_agreement_section(study, researcher_client):
    url = reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=keystrokes"
    page = researcher_client.get(url).content.decode()
    assert "<h2>Agreement</h2>" in page
    assert f"{package_alpha():.4f}" in page
    assert "far from the others" in page  # ed4, on compression distance
    partial = researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<h2>Agreement</h2>" in partial and "<html" not in partial


def test_the_report_has_no_agreement_section_without_overlap(researcher_client):
    project = ProjectFactory(name="Alone")
    SubmittedPostEditFactory(assignment__item=ItemFactory(project=project))
    page = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk})).content.decode()
    assert "<h2>Agreement</h2>" not in page


def test_compression_is_the_default_distance(study):
    data = json.loads(run("--target", "keystrokes", "--format", "json"))
    assert [out["metric"] for out in data["output"]] == ["compression"]


def test_the_api_computes_ter_and_chrf_over_a_bounded_number_of_pairs(study, researcher_client, monkeypatch):
    from editlab import limits

    monkeypatch.setattr(limits, "AGREEMENT_SLOW_PAIRS_MAX", 55)  # the study has 56 pairs
    response = researcher_client.get(api_url(study.pk, "target=keystrokes&distances=compression,ter"))
    assert response.status_code == 400
    assert "ter over 56 pairs is more than the 55" in response.json()["detail"]
    assert researcher_client.get(api_url(study.pk, "target=keystrokes&distances=compression")).status_code == 200
    monkeypatch.setattr(limits, "AGREEMENT_SLOW_PAIRS_MAX", 56)
    response = researcher_client.get(api_url(study.pk, "target=keystrokes&distances=ter,chrf"))
    assert response.status_code == 200 and [out["metric"] for out in response.json()["output"]] == ["ter", "chrf"]


def test_a_warm_report_page_does_not_compare_the_pairs_again(study, researcher_client, monkeypatch):
    """The Agreement section is kept with the report under the selection's fingerprint: the second load
    reuses it; a post-edit changed since recomputes it."""
    import metrics.agreement_report as agreement_report
    from annotations.models import PostEdit
    from metrics.selection_data import clear_cache

    built = []
    real = agreement_report.agreement_build

    def counted(**kwargs):
        built.append(kwargs["selection"].target)
        return real(**kwargs)

    monkeypatch.setattr(agreement_report, "agreement_build", counted)
    clear_cache()
    url = reverse("metrics-report", kwargs={"project_id": study.pk}) + "?target=keystrokes"
    first = researcher_client.get(url).content.decode()
    second = researcher_client.get(url).content.decode()
    assert built == ["keystrokes"]
    assert "<h2>Agreement</h2>" in second and f"{package_alpha():.4f}" in second
    assert first.count("<h2>Agreement</h2>") == second.count("<h2>Agreement</h2>") == 1
    edit = PostEdit.objects.filter(assignment__item__project=study).order_by("id").first()
    edit.keystrokes = (edit.keystrokes or 0) + 1
    edit.save()
    researcher_client.get(url)
    assert built == ["keystrokes", "keystrokes"]
    clear_cache()
