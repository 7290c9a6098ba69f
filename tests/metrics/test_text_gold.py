"""Gold-based (EditEval) metrics on hand-computed cases; GLEU cross-checked with the `gleu` package; EditEval's
corpus figures (metrics.text.editeval) against the numbers EditEval's own code gives on fixed examples."""

import json
import math
from pathlib import Path

import pytest
from gleu.aggreg import make_rn_accum
from gleu.count import set_tokenization
from gleu.score import rn_accum_to_gleu
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.text import METRICS, nltk37
from metrics.text.editeval import (
    EditEvalUndefined,
    Example,
    GoldFigure,
    editeval_figures,
    editeval_score,
    editeval_scores,
    gold_figures,
)
from metrics.text.gold import additions, word_diffs
from tests.metrics.editeval_expected import EXPECTED, Undefined

CASES = json.loads((Path(__file__).parent / "data" / "editeval_cases.json").read_text("utf-8"))


def gold_score(name: str, original: str, edited: str, gold: list[str]) -> float:
    return METRICS[name](original, edited, gold=gold)


def test_sari_rewards_the_gold_edit():
    # 1-grams: add {c} F 1, keep {a} F 1, delete {b} F 1; 2-grams: add {a c} 1, keep none 0, delete {a b} 1;
    # no 3- or 4-grams: 0. (1 + 1 + 1 + 1 + 0 + 1) / 12.
    assert gold_score("sari", "a b", "a c", ["a c"]) == pytest.approx(100 * 5 / 12)


def test_sari_gives_little_for_copying_the_input():
    # Only keeping 1-grams scores: kept {a, b}, gold kept {a}: P 1/2, R 1, F 2/3.
    assert gold_score("sari", "a b", "a b", ["a c"]) == pytest.approx(100 * (2 / 3) / 12)


def test_gleu_penalizes_source_ngrams_the_gold_changed():
    # Output = source "a b c d e f", gold "... g": per n, matches minus kept-but-changed: 4/6, 3/5, 2/4, 1/3.
    expected = (4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** (1 / 4)
    assert gold_score("gleu", "a b c d e f", "a b c d e f", ["a b c d e g"]) == pytest.approx(expected)
    assert gold_score("gleu", "a b c d e f", "a b c d e g", ["a b c d e g"]) == pytest.approx(1.0)


def test_gleu_applies_the_brevity_penalty():
    # Output "a b c d" against gold "a b c d e": all precisions 1, BP = exp(1 - 5/4).
    assert gold_score("gleu", "x", "a b c d", ["a b c d e"]) == pytest.approx(2.718281828459045 ** (1 - 5 / 4))


words = st.lists(st.sampled_from(["a", "b", "c", "the", "cat"]), max_size=9).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(source=words, output=words, gold=st.lists(words, min_size=1, max_size=3))
def test_gleu_equals_the_gleu_package_sentence_score(source, output, gold):
    set_tokenization("word")
    expected = rn_accum_to_gleu(
        make_rn_accum(4, source, tuple(gold), output), [len(g.split()) for g in gold], len(output.split())
    )
    assert gold_score("gleu", source, output, gold) == pytest.approx(expected, abs=1e-12)


def test_ibleu_rewards_gold_and_penalizes_copying():
    # BLEU(output, gold) = 100, BLEU(output, original) = 0 (no word in common).
    assert gold_score("ibleu", "x y z w", "a b c d", ["a b c d"]) == pytest.approx(90.0)
    # Copying the input when it is the gold: 0.9 * 100 - 0.1 * 100.
    assert gold_score("ibleu", "a b c d", "a b c d", ["a b c d"]) == pytest.approx(80.0)


def test_exact_match_ignores_outer_whitespace_only():
    assert gold_score("exact_match", "x", "The fix. ", ["other", "The fix."]) == 1.0
    assert gold_score("exact_match", "x", "the fix.", ["The fix."]) == 0.0


def test_word_diffs_widen_character_changes_to_words_until_unique_in_the_source():
    # "cat" occurs once; "the" twice, so its change takes the next word along, as EditEval's extraction does.
    assert word_diffs("the cat sat on the mat", "the dog sat on a mat") == [("cat", "dog"), ("the mat", "a mat")]
    assert word_diffs("same", "same") == []
    assert word_diffs("", "new") == [("", "new")]


def test_word_diffs_keep_two_identical_word_changes_apart():
    assert word_diffs("the cat saw the dog", "a cat saw a dog") == [("the cat", "a cat"), ("the dog", "a dog")]


def test_em_diff_counts_each_of_two_identical_changes():
    # EditEval's own value for this case is 0.5 (one of the gold's two changes); set-of-words diffs gave 1.0.
    assert gold_score("em_diff", "the cat saw the dog", "a cat saw the dog", ["a cat saw a dog"]) == 0.5


def test_em_diff_is_the_share_of_changes_the_gold_also_makes():
    original = "the cat sat on the mat"
    # Output changes {cat->dog, the->a}; gold changes {cat->dog}: 1 / max(1, 2, 1).
    assert gold_score("em_diff", original, "the dog sat on a mat", ["the dog sat on the mat"]) == 0.5
    assert gold_score("em_diff", original, "the dog sat on the mat", ["the dog sat on the mat"]) == 1.0
    # The best gold edit counts.
    assert gold_score("em_diff", original, "the dog sat on the mat", ["a cat sat", "the dog sat on the mat"]) == 1.0


def test_update_rouge_compares_only_the_added_sentences():
    original = "A b. C d."
    assert additions(original, "A b. C d. New fact here.") == "New fact here."
    # "new fact here" vs "new fact there": LCS 2 of 3 words each side.
    assert gold_score("update_rouge", original, "A b. C d. New fact here.", ["A b. C d. New fact there."]) == (
        pytest.approx(2 / 3)
    )
    assert gold_score("update_rouge", original, original, [original]) == 1.0  # nothing added by either
    # Averaged over gold edits: 2/3 and 0 (the second gold adds nothing).
    assert gold_score(
        "update_rouge", original, "A b. C d. New fact here.", ["A b. C d. New fact there.", original]
    ) == (pytest.approx(1 / 3))


def test_gold_metrics_refuse_to_run_without_gold():
    for name in ("sari", "gleu", "ibleu", "exact_match", "em_diff", "update_rouge"):
        with pytest.raises(ValueError, match=f"{name} needs at least one gold edit"):
            METRICS[name]("a", "b")


# --- EditEval's figures, against EditEval's own code ---------------------------------------------------------
# The expected numbers (tests/metrics/editeval_expected.py) are what EditEval's code (commit 013cd20, its pinned
# libraries) gives on tests/metrics/data/editeval_cases.json; tests/metrics/editeval_reference.py says how they
# were produced. Per example means "the example as a corpus of one", which is how EditEval scores one example.

METRIC_NAMES = ("sari", "gleu", "ibleu", "exact_match", "em_diff", "update_rouge")


def examples_of(corpus: str) -> list[Example]:
    return [Example(e["original"], e["edited"], tuple(e["gold"])) for e in CASES[corpus]]


def assert_same(figure, expected, where: str) -> None:
    if isinstance(expected, Undefined):
        assert figure.value is None and figure.undefined, f"{where}: EditEval raises {expected.error}, got {figure}"
    else:
        assert figure.value == pytest.approx(expected, rel=1e-12, abs=1e-12), where


@pytest.mark.parametrize("corpus", sorted(EXPECTED))
def test_each_example_scores_as_editeval_scores_it(corpus):
    for number, (example, expected) in enumerate(zip(examples_of(corpus), EXPECTED[corpus]["examples"], strict=True)):
        for figure in editeval_figures([example]):
            assert_same(figure, expected[figure.metric], f"{corpus} example {number + 1} {figure.metric}")


@pytest.mark.parametrize("corpus", sorted(EXPECTED))
def test_the_corpus_scores_as_editeval_scores_it(corpus):
    for figure in editeval_figures(examples_of(corpus)):
        assert_same(figure, EXPECTED[corpus]["corpus"][figure.metric], f"{corpus} {figure.metric}")


def test_the_fixtures_cover_every_gold_metric_and_every_case():
    assert {name for name, m in METRICS.items() if "gold" in m.needs} == set(METRIC_NAMES)
    assert sorted(EXPECTED) == sorted(CASES)
    assert all(len(EXPECTED[c]["examples"]) == len(CASES[c]) for c in CASES)
    assert sum(len(v) for v in CASES.values()) == 61


def test_editeval_own_fixture_values():
    # EditEval's src/tests/test_metrics.py: SARI 31.35 (3 decimals), GLEU 0.168629 (6 decimals), iBLEU 0.8.
    assert round(editeval_score("sari", examples_of("editeval_sari_fixture")), 3) == 31.35
    assert round(editeval_score("gleu", examples_of("editeval_gleu_fixture")), 6) == 0.168629
    assert editeval_score("ibleu", examples_of("editeval_ibleu_fixture")) == pytest.approx(0.8)


def test_gleu_gives_short_outputs_zero_where_editlab_gives_a_value():
    # Fewer than 4 tokens: no 4-gram, so EditEval's unsmoothed GLEU is 0; editlab's per-example GLEU skips the
    # empty orders (as the `gleu` package does) and scores what is there.
    example = Example("He go now .", "He goes now", ("He goes now .",))
    assert editeval_score("gleu", [example]) == 0.0
    assert gold_score("gleu", example.original, example.edited, list(example.gold)) == pytest.approx(math.exp(-1 / 3))


def test_gleu_draws_one_gold_edit_per_example_and_iteration():
    # Two examples, two gold edits each: the figure is the mean over 500 seeded draws, not any single pairing
    # nor the mean over gold edits.
    examples = examples_of("editeval_gleu_fixture")
    examples = [Example(e.original, e.edited, e.gold[:2]) for e in examples]
    first_only = editeval_score("gleu", [Example(e.original, e.edited, e.gold[:1]) for e in examples])
    second_only = editeval_score("gleu", [Example(e.original, e.edited, e.gold[1:]) for e in examples])
    drawn = editeval_score("gleu", examples)
    assert min(first_only, second_only) < drawn < max(first_only, second_only)
    assert drawn == editeval_score("gleu", list(examples))  # seeded: the same every time


def test_sari_pools_counts_instead_of_averaging_examples():
    examples = examples_of("jfleg_like")
    pooled = editeval_score("sari", examples)
    mean = sum(editeval_score("sari", [e]) for e in examples) / len(examples)
    assert pooled == pytest.approx(EXPECTED["jfleg_like"]["corpus"]["sari"], rel=1e-12)
    assert abs(pooled - mean) > 0.1


def test_sari_uses_as_many_gold_edits_as_the_example_with_fewest():
    examples = examples_of("more_golds_later")
    truncated = [Example(e.original, e.edited, e.gold[:1]) for e in examples]
    assert editeval_score("sari", examples) == editeval_score("sari", truncated)


def test_figures_editeval_cannot_compute_say_why():
    figures = {f.metric: f for f in editeval_figures(examples_of("fewer_golds_later"))}
    assert figures["gleu"].value is None
    assert "example 2 has 2 gold edit(s), fewer than the first example's 3" in figures["gleu"].undefined
    assert figures["update_rouge"].value is None
    assert figures["sari"].value == pytest.approx(EXPECTED["fewer_golds_later"]["corpus"]["sari"], rel=1e-12)
    with pytest.raises(EditEvalUndefined, match="every output is empty"):
        editeval_score("ibleu", examples_of("all_empty_outputs"))


def test_editeval_scores_refuse_bad_requests_clearly():
    with pytest.raises(ValueError, match="no examples to score"):
        editeval_scores([])
    with pytest.raises(ValueError, match="example 2 has no gold edit"):
        editeval_scores([Example("a", "b", ("c",)), Example("a", "b", ())])
    with pytest.raises(ValueError, match="no EditEval figure for bleu"):
        editeval_scores([Example("a", "b", ("c",))], ["bleu"])


def test_gold_figures_put_editlabs_mean_beside_editevals_figure():
    examples = examples_of("jfleg_like")
    values = {"sari": [METRICS["sari"](e.original, e.edited, gold=e.gold) for e in examples], "em_diff": [1.0, None]}
    sari, em_diff = gold_figures(examples, values)
    assert sari == GoldFigure(
        "sari", 10, pytest.approx(sum(values["sari"]) / 10), EXPECTED["jfleg_like"]["corpus"]["sari"]
    )
    assert em_diff.mean == 1.0 and em_diff.n == 10  # the mean of the values there are
    assert em_diff.editeval == pytest.approx(EXPECTED["jfleg_like"]["corpus"]["em_diff"], rel=1e-12)
    assert sari.to_dict()["editeval_undefined"] == ""


# --- nltk 3.7's normalization and tokenization (EditEval's pin; nltk 3.8+ differs) ------------------------------
# Expected values: nltk 3.7 itself, `TreebankWordDetokenizer().detokenize(t.split(" "))` and `nltk.word_tokenize`
# in the venv of tests/metrics/editeval_reference.py.


@pytest.mark.parametrize(
    ("text", "normalized", "tokens"),
    [
        ("do n't go . We went home .", "don't go . We went home.", ["do", "n't", "go", ".", "We", "went", "home", "."]),
        (
            'He said " hello " and left ( quickly ) .',
            'He said " hello " and left (quickly).',
            ["He", "said", "``", "hello", "``", "and", "left", "(", "quickly", ")", "."],
        ),
        (
            "“Quoted” words — with an em dash – and ‘single quotes’.",
            "“Quoted” words — with an em dash – and ‘single quotes’.",
            [
                "“",
                "Quoted",
                "”",
                "words",
                "—",
                "with",
                "an",
                "em",
                "dash",
                "–",
                "and",
                "‘",
                "single",
                "quotes",
                "’",
                ".",
            ],
        ),
        (
            "'Tis the season. It's John's car.\tIt's here.",
            "'Tis the season. It's John's car.\tIt's here.",
            ["'T", "is", "the", "season", ".", "It", "'s", "John", "'s", "car", ".", "It", "'s", "here", "."],
        ),
        (
            "Mr. Smith went to Washington. He saw the U.S. flag.",
            "Mr. Smith went to Washington. He saw the U.S. flag.",
            ["Mr.", "Smith", "went", "to", "Washington", ".", "He", "saw", "the", "U.S.", "flag", "."],
        ),
        (
            "I can not go , I 'm gon na stay .",
            "I cannot go, I'm gonna stay.",
            ["I", "can", "not", "go", ",", "I", "'m", "gon", "na", "stay", "."],
        ),
        ("(Sent1.) Sent2.", "(Sent1.) Sent2.", ["(", "Sent1", ".", ")", "Sent2", "."]),
    ],
)
def test_normalization_and_tokens_are_nltk_37s(text, normalized, tokens):
    assert nltk37.detokenize(text) == normalized
    assert nltk37.word_tokenize(normalized) == tokens
