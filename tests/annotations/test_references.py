"""Reference documents: what the editor shows is what the with_references metrics read."""

import pytest

from annotations.references import Reference, reference_texts, references_shown
from metrics import text as engine
from metrics.models import MetricValue
from metrics.services import input_hash, metric_values_compute
from tests.factories import ProjectFactory, SubmittedPostEditFactory

EDITEVAL_DOC = {
    "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
    "title": "Eiffel Tower",
    "text": "It is 330 m tall.",
}


@pytest.mark.parametrize(
    ("raw", "shown", "read"),
    [
        (None, [], ()),
        ([], [], ()),
        ("One reference.", [Reference("", "One reference.")], ("One reference.",)),
        (["A <b>ref</b>.", ""], [Reference("", "A <b>ref</b>."), Reference("", "")], ("A <b>ref</b>.", "")),
        (
            [EDITEVAL_DOC],
            [Reference("Eiffel Tower", "It is 330 m tall.", EDITEVAL_DOC["url"])],
            ("Eiffel Tower\nIt is 330 m tall.",),
        ),
        ({"text": "No title."}, [Reference("", "No title.")], ("No title.",)),
        ({"name": "Manual", "content": "Body."}, [Reference("Manual", "Body.")], ("Manual\nBody.",)),
        ({"title": "Empty", "text": ""}, [Reference("Empty", "")], ("Empty\n",)),
        ({"title": "T", "url": 5, "text": "x"}, [Reference("T", "x")], ("T\nx",)),
        ([{"id": 3}], [Reference("", '{\n  "id": 3\n}')], ('{\n  "id": 3\n}',)),
        ([42], [Reference("", "42")], ("42",)),
    ],
)
def test_each_reference_has_one_title_and_text_for_the_page_and_the_metrics(raw, shown, read):
    assert references_shown(raw) == shown
    assert reference_texts(raw) == read


@pytest.mark.django_db
def test_with_references_metrics_read_the_documents_title_and_text_not_a_repr(monkeypatch):
    project = ProjectFactory(name="docs")
    post_edit = SubmittedPostEditFactory(
        assignment__item__project=project,
        assignment__item__model_output="The tower is tall.",
        assignment__item__references=[EDITEVAL_DOC, "A plain reference."],
        text="The tower is 330 m tall.",
    )
    seen = []
    real = engine.score_pairs

    def spy(pairs, metrics, **kwargs):
        seen.extend(pairs)
        return real(pairs, metrics, **kwargs)

    monkeypatch.setattr(engine, "score_pairs", spy)

    metric_values_compute(project=project, metrics=["levenshtein"], variants=["with_references"])

    assert [pair.references for pair in seen] == [("Eiffel Tower\nIt is 330 m tall.", "A plain reference.")]
    value = MetricValue.objects.get(post_edit=post_edit, variant=MetricValue.WITH_REFERENCES)
    assert value.input_hash == input_hash(
        original="The tower is tall.",
        edited="The tower is 330 m tall.",
        references=("Eiffel Tower\nIt is 330 m tall.", "A plain reference."),
        gold=(),
    )
