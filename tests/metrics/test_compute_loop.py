"""The compute_loop benchmark compares like with like: its plain library loops give, pair for pair, the
values compute_metrics stores (so the speed it reports for each is the speed of the same work)."""

import pytest

from editlab.benchmarks.compute_loop import LOOPS, project_pairs
from metrics.models import MetricValue
from metrics.services import metric_values_compute
from tests.factories import ProjectFactory, SubmittedPostEditFactory

pytestmark = pytest.mark.django_db

# (model output, post-edit): untouched, a case fix, a shift, words replaced, accents and scripts, punctuation,
# one side empty, text only appended; items with references and gold edits, which the plain variant ignores.
PAIRS = [
    ("This is a test.", "This is a test."),
    ("the cat sat on the mat.", "The cat sat on the mat."),
    ("on the mat the cat sat", "the cat sat on the mat"),
    ("He go to school every days.", "He goes to school every day."),
    ("Ça coûte 5 € — très cher!", "Ça coûte cinq euros, très cher !"),
    ("Это тест перевода.", "Это проверка перевода."),
    ("東京は日本の首都です。", "東京は日本の首都である。"),
    ("", "Written from scratch."),
    ("Nothing left.", ""),
    ("A short one", "A short one, and a much longer continuation of it that the editor added."),
]


@pytest.fixture
def project():
    project = ProjectFactory(name="loop")
    for n, (output, edited) in enumerate(PAIRS):
        SubmittedPostEditFactory(
            assignment__item__project=project,
            assignment__item__external_id=f"p{n}",
            assignment__item__model_output=output,
            assignment__item__references=["A reference text."] if n % 3 == 0 else [],
            assignment__item__gold_edits=[edited] if n % 4 == 0 else [],
            text=edited,
        )
    return project


def test_the_benchmark_reads_the_pairs_editlab_scores(project):
    assert project_pairs(project) == PAIRS


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_each_loop_gives_the_values_compute_metrics_stores(project, name):
    report = metric_values_compute(project=project, metrics=[name], variants=["plain"], processes=1)
    assert report.computed == len(PAIRS)
    stored = list(
        MetricValue.objects.filter(post_edit__assignment__item__project=project, metric=name, variant="plain")
        .order_by("post_edit_id")
        .values_list("value", flat=True)
    )
    assert stored == LOOPS[name](project_pairs(project))


def test_the_loops_are_the_libraries_called_with_editlabs_options():
    # Known values, so that a loop is not merely equal to editlab by sharing its code.
    pairs = [("the cat sat", "The cat sat"), ("a b c d", "a b c d")]
    assert LOOPS["levenshtein"](pairs) == [1.0, 0.0]
    assert LOOPS["levenshtein_words"](pairs) == [1.0, 0.0]
    assert LOOPS["ter"](pairs) == pytest.approx([100 / 3, 0.0])  # case-sensitive: "the" -> "The" is an edit
    assert LOOPS["chrf"](pairs)[1] == pytest.approx(100.0)
    assert LOOPS["bleu"](pairs)[1] == pytest.approx(100.0)  # effective order: 4 words still score 100
    assert LOOPS["compression"]([("vwxyz", "zyxwv")]) == [5.0]  # DESIGN.md's known value
