"""The quality page (research/<id>/quality/) and its TSV downloads, on a small imported WMT MQM file.

Expected values by hand from WMT's weights (major 5, minor 1, minor Fluency/Punctuation 0.1,
Non-translation 25, critical as major), the file of tests/annotations/test_import_mqm.py:
segment scores sysA 1: 2.55, sysA 2: 1.0, sysB 1: 25.0, sysB 2: 6.0.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations.importers import import_items
from annotations.models import ErrorSpan, Evaluation, Item, Project
from metrics.analysis.mqm_breakdown import COMPARISON_RESAMPLES, COMPARISON_SEED, Piece, highlight
from metrics.exports_mqm import avg_seg_scores_tsv
from metrics.quality_report import mqm_summary
from metrics.views.quality import PER_PAGE
from tests.annotations.test_import_mqm import TSV
from tests.factories import ItemFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def wmt(tmp_path) -> Project:
    path = tmp_path / "mqm.tsv"
    path.write_text(TSV, encoding="utf-8")
    import_items(project="wmt <study>", fmt="mqm", path=path, create_project=True)
    project = Project.objects.get(name="wmt <study>")
    # ESA scores beside the spans: sysA 80 and 60 (seg 1), 90 (seg 2); sysB 10 (seg 1).
    for system, seg, rater, esa in [
        ("sysA", "1", "rater1", 80.0),
        ("sysA", "1", "rater2", 60.0),
        ("sysA", "2", "rater1", 90.0),
        ("sysB", "1", "rater1", 10.0),
    ]:
        Evaluation.objects.filter(system=system, item__external_id=seg, rater__username=rater).update(esa_score=esa)
    return project


def url(project: Project, query: str = "") -> str:
    return reverse("metrics-quality", kwargs={"project_id": project.pk}) + (f"?{query}" if query else "")


def test_the_page_shows_mqm_summary_s_figures_exactly(wmt, researcher_client):
    response = researcher_client.get(url(wmt))
    assert response.status_code == 200
    data = response.context["data"]
    summary = mqm_summary(wmt)
    assert data.systems == summary["systems"]
    assert data.raters == summary["raters"]
    assert data.esa_systems == summary["esa_systems"]
    assert data.agreement == summary["agreement"]
    assert (data.ratings, data.segments) == (summary["ratings"], summary["segments"]) == (5, 4)
    assert data.systems["sysA"]["mean"] == pytest.approx((2.55 + 1.0) / 2)
    assert data.systems["sysB"]["mean"] == pytest.approx((25.0 + 6.0) / 2)
    assert data.esa_systems["sysA"]["mean"] == pytest.approx(230 / 3)
    assert data.esa_raters["rater2"] == {"n": 1, "mean": 60.0, "ci_low": None, "ci_high": None}
    body = response.content.decode()
    assert "<td>1.775</td>" in body and "<td>15.500</td>" in body
    assert "mean over its rated segments" in body  # every figure with its definition
    assert [row["name"] for row in response.context["system_rows"]] == ["sysA", "sysB"]  # best first


def test_the_breakdown_adds_up_to_each_system_s_score(wmt, researcher_client):
    data = researcher_client.get(url(wmt)).context["data"]
    parts = {
        system: {(p["category"], p["severity"]): (p["errors"], pytest.approx(p["score"])) for p in rows}
        for system, rows in data.breakdown.items()
    }
    assert parts["sysA"] == {
        ("Accuracy/Mistranslation", "major"): (1, 5 / 2 / 2),
        ("Accuracy/Omission", "minor"): (1, 1 / 2),
        ("Fluency/Punctuation", "minor"): (1, 0.1 / 2 / 2),
    }
    assert parts["sysB"] == {
        ("Non-translation", "major"): (1, 25 / 2),
        ("Terminology/Inappropriate for context", "critical"): (1, 5 / 2),
        ("Style/Awkward", "minor"): (1, 1 / 2),
    }
    for system, rows in data.breakdown.items():
        assert sum(p["score"] for p in rows) == pytest.approx(data.systems[system]["mean"])
    assert [p["category"] for p in data.breakdown["sysB"]][0] == "Non-translation"  # the largest first


def reproduce_p(d: list[float]) -> float:
    """The definition's reproduction, as the page labels it."""
    d_ = np.asarray(d, dtype=float)
    flips = 1 - 2 * np.random.default_rng(COMPARISON_SEED).integers(
        0, 2, size=(COMPARISON_RESAMPLES, d_.size), dtype=np.int8
    )
    null = (flips * d_).mean(axis=1)
    return (1 + np.sum(np.abs(null) >= abs(d_.mean()) - 1e-9)) / (1 + COMPARISON_RESAMPLES)


def test_systems_are_compared_over_shared_segments_with_a_seeded_permutation_p(wmt, researcher_client):
    data = researcher_client.get(url(wmt)).context["data"]
    [comparison] = data.comparisons
    assert (comparison["a"], comparison["b"], comparison["segments"]) == ("sysA", "sysB", 2)
    assert comparison["difference"] == pytest.approx(((2.55 - 25.0) + (1.0 - 6.0)) / 2)
    # Two segments: the resampled means are ±13.725 (no flip or both) and ±8.725 (one flip).
    assert comparison["p"] == reproduce_p([2.55 - 25.0, 1.0 - 6.0])
    flips = 1 - 2 * np.random.default_rng(COMPARISON_SEED).integers(0, 2, size=(COMPARISON_RESAMPLES, 2), dtype=np.int8)
    same = int(np.sum(flips[:, 0] == flips[:, 1]))
    assert comparison["p"] == (1 + same) / (1 + COMPARISON_RESAMPLES)


def test_filters_narrow_the_evaluations_and_the_errors_counted(wmt, researcher_client):
    data = researcher_client.get(url(wmt, "category=Accuracy/Mistranslation")).context["data"]
    assert {name: row["mean"] for name, row in data.systems.items()} == {"sysA": 1.25, "sysB": 0.0}
    page = researcher_client.get(url(wmt, "category=Accuracy/Mistranslation")).context["page"]
    assert [(row.system, row.seg_id) for row in page.object_list] == [("sysA", "1")]
    [row] = page.object_list
    assert [(r.rater, r.score, r.errors) for r in row.ratings] == [
        ("rater1", 5.0, ["Accuracy/Mistranslation (major): “Katze”"]),
        ("rater2", 0.0, []),
    ]
    data = researcher_client.get(url(wmt, "system=sysB")).context["data"]
    assert list(data.systems) == ["sysB"] and data.systems["sysB"]["mean"] == 15.5
    data = researcher_client.get(url(wmt, "rater=rater2")).context["data"]
    half = 12.706204736 * 3.0  # t(0.975, 1) x the standard error of (0, 6)
    assert data.raters == {"rater2": {"n": 2, "mean": 3.0, "ci_low": pytest.approx(3.0 - half),
                                      "ci_high": pytest.approx(3.0 + half)}}  # fmt: skip
    data = researcher_client.get(url(wmt, "severity=minor&system=sysA")).context["data"]
    assert data.systems["sysA"]["mean"] == pytest.approx((0.05 + 1.0) / 2)
    data = researcher_client.get(url(wmt, "document=doc1")).context["data"]
    assert data.segments == 4


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("system=nope", "system: &#x27;nope&#x27; is not one of: sysA, sysB"),
        ("rater=%3Cb%3E", "rater: &#x27;&lt;b&gt;&#x27; is not one of: rater1, rater2"),
        ("document=doc9", "document: &#x27;doc9&#x27; is not one of: doc1"),
        ("category=Accuracy", "category: &#x27;Accuracy&#x27; is not one of: Accuracy/Addition"),
        ("severity=fatal", "severity: &#x27;fatal&#x27; is not one of: minor, major, critical, neutral"),
        ("system=a%00b", "system: must be a name of at most 200 characters without NUL"),
        ("page=abc", "page: &#x27;abc&#x27; is not a page number"),
        ("page=9", "page: 9 is past the last page (1)"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it_and_in_place_for_htmx(wmt, researcher_client, query, message):
    response = researcher_client.get(url(wmt, query))
    assert response.status_code == 400
    assert message in response.content.decode()
    partial = researcher_client.get(url(wmt, query), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and message in partial.content.decode()
    assert "<html" not in partial.content.decode()


def test_htmx_gets_the_body_and_the_pushed_url_is_the_whole_page(wmt, researcher_client):
    partial = researcher_client.get(url(wmt, "system=sysA"), HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and "<h2>Systems</h2>" in partial
    whole = researcher_client.get(url(wmt, "system=sysA")).content.decode()
    assert "<html" in whole and 'hx-get="/research/' in whole and "<h2>Systems</h2>" in whole
    assert '<option value="sysA" selected>' in whole
    restored = researcher_client.get(
        url(wmt, "system=sysA"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in restored.content.decode()  # Back with htmx's cache missing: the whole page
    assert "HX-Request" in restored["Vary"]


def test_only_researchers_and_admins_read_the_page_and_downloads(wmt, client, annotator_client, admin_client):
    for target in (url(wmt), reverse("metrics-quality-download", kwargs={"project_id": wmt.pk, "kind": "mqm"})):
        assert annotator_client.get(target).status_code == 403
        assert client.get(target).status_code == 302
        assert admin_client.get(target).status_code == 200
    assert admin_client.get(reverse("metrics-quality", kwargs={"project_id": 10**6})).status_code == 404


def test_the_downloads_are_wmt_s_tsvs_with_safe_names(wmt, researcher_client):
    mqm = researcher_client.get(reverse("metrics-quality-download", kwargs={"project_id": wmt.pk, "kind": "mqm"}))
    assert mqm["Content-Disposition"] == 'attachment; filename="wmt__study.mqm.tsv"'
    assert b"".join(mqm.streaming_content).decode() == TSV
    scores = researcher_client.get(
        reverse("metrics-quality-download", kwargs={"project_id": wmt.pk, "kind": "avg_seg_scores"})
    )
    assert scores["Content-Disposition"] == 'attachment; filename="wmt__study.avg_seg_scores.tsv"'
    assert scores.content.decode() == avg_seg_scores_tsv(wmt)
    assert scores.content.decode().splitlines()[1] == "sysA\t-2.550000\t1"
    unknown = reverse("metrics-quality-download", kwargs={"project_id": wmt.pk, "kind": "other"})
    assert researcher_client.get(unknown).status_code == 404
    page = researcher_client.get(url(wmt)).content.decode()
    assert f'href="/research/{wmt.pk}/quality/mqm.tsv"' in page
    assert f'href="/research/{wmt.pk}/quality/avg_seg_scores.tsv"' in page


HOSTILE = '<script>alert("x")</script> & <b>bold</b>'


def _hostile(project: Project) -> None:
    rater = UserFactory(username="rater3")
    item = Item.objects.get(project=project, external_id="1")
    evaluation = Evaluation.objects.create(
        item=item, rater=rater, system="sysC", text=HOSTILE, status=Evaluation.SUBMITTED, origin="imported"
    )
    for position, (start, end, severity) in enumerate([(9, 40, "minor"), (0, 20, "major"), (30, 10**6, "minor")]):
        ErrorSpan.objects.create(
            evaluation=evaluation, position=position, start=start, end=end, category="Other", severity=severity
        )
    ErrorSpan.objects.create(evaluation=evaluation, position=3, category="Style/Awkward<i>", severity="minor")


def test_hostile_span_texts_are_escaped_and_overlapping_spans_render_every_character(wmt, researcher_client):
    _hostile(wmt)
    body = researcher_client.get(url(wmt, "system=sysC")).content.decode()
    assert "<script>alert" not in body and "<b>bold" not in body and "Awkward<i>" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)" in body
    assert "Style/Awkward&lt;i&gt; (minor): no span" in body
    [row] = researcher_client.get(url(wmt, "system=sysC")).context["page"].object_list
    pieces = row.ratings[0].pieces
    assert "".join(piece.text for piece in pieces) == HOSTILE
    assert [(p.text, p.severity, p.depth) for p in pieces] == [
        (HOSTILE[0:9], "major", 1),
        (HOSTILE[9:20], "major", 2),
        (HOSTILE[20:30], "minor", 1),
        (HOSTILE[30:40], "minor", 2),
        (HOSTILE[40:], "minor", 1),
    ]
    assert 'class="sev sev-major overlap" title="Other (minor); Other (major)"' in body


def test_highlight_clamps_out_of_range_inverted_and_empty_spans():
    assert highlight("abcdef", [(4, 2, "X", "major"), (-3, 1, "Y", "minor"), (3, 3, "Z", "minor")]) == [
        Piece("a", "minor", ("Y (minor)",)),
        Piece("b", None),
        Piece("cd", "major", ("X (major)",)),
        Piece("ef", None),
    ]
    assert highlight("", [(0, 5, "X", "major")]) == []
    assert highlight("ab", [(None, None, "X", "major")]) == [Piece("ab", None)]


SPAN = st.tuples(
    st.one_of(st.none(), st.integers(-5, 60)),
    st.one_of(st.none(), st.integers(-5, 60)),
    st.sampled_from(["<x>", "A/B", "&amp;"]),
    st.sampled_from(["minor", "major", "critical", "neutral", "<bad>"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=40), spans=st.lists(SPAN, max_size=8))
def test_highlight_keeps_every_character_once_and_each_piece_names_the_spans_covering_it(text, spans):
    pieces = highlight(text, spans)
    assert "".join(piece.text for piece in pieces) == text
    position = 0
    for piece in pieces:
        assert piece.text
        covering = [
            f"{c} ({s})"
            for start, end, c, s in spans
            if start is not None and end is not None
            for low, high in [sorted((max(0, min(start, len(text))), max(0, min(end, len(text)))))]
            if low <= position and position + len(piece.text) <= high and low < high
        ]
        assert list(piece.labels) == covering
        assert (piece.severity is None) == (not covering)
        position += len(piece.text)


def _segments(project: Project, n: int) -> None:
    rater = UserFactory(username=f"r{n}")
    for k in range(n):
        item = ItemFactory(project=project, external_id=f"x{k}", source=f"source <{k}>", document="d")
        evaluation = Evaluation.objects.create(
            item=item, rater=rater, system="s", text=f"text {k}", status=Evaluation.SUBMITTED, esa_score=50.0
        )
        ErrorSpan.objects.create(evaluation=evaluation, position=0, start=0, end=4, category="Other", severity="minor")


def test_the_query_count_does_not_grow_with_the_segments_on_a_page(researcher_client):
    counts = []
    for n in (3, PER_PAGE + 5):
        project = ProjectFactory(name=f"segments {n}")
        _segments(project, n)
        researcher_client.get(url(project))  # the session, once
        with CaptureQueriesContext(connection) as queries:
            response = researcher_client.get(url(project))
        assert response.status_code == 200
        assert len(response.context["page"].object_list) == min(n, PER_PAGE)
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_the_segment_pages_link_with_href_and_hx_get(researcher_client):
    project = ProjectFactory(name="paged")
    _segments(project, PER_PAGE + 2)
    response = researcher_client.get(url(project, "severity=minor"))
    rows = response.context["data"].rows
    assert [bool(row.ratings) for row in rows] == [True] * PER_PAGE + [False] * 2  # only the shown page rendered
    body = response.content.decode()
    assert 'href="?severity=minor&amp;page=2#segments" hx-get="?severity=minor&amp;page=2"' in body
    second = researcher_client.get(url(project, "severity=minor&page=2"))
    assert [row.seg_id for row in second.context["page"].object_list] == ["x8", "x9"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.sampled_from(["system", "rater", "document", "category", "severity", "page"]),
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(["NaN", "inf", "-1", "0", str(2**63), "9" * 400, "\u202e\u0000", "💥" * 50]),
        ),
        max_size=6,
    )
)
def test_any_filter_query_is_a_page_or_a_named_400_never_a_500(wmt, researcher_client, query):
    """Generated filters (odd Unicode, NUL, huge and non-finite numbers) on the quality page and the agreement
    download: a page, or a 400 that says what is wrong."""
    for target in (url(wmt), reverse("metrics-report-agreement", kwargs={"project_id": wmt.pk, "fmt": "json"})):
        response = researcher_client.get(target, query)
        assert response.status_code in (200, 400), (target, query, response.status_code)
        if response.status_code == 400:
            assert response.content.strip()
