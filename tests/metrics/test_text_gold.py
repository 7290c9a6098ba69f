"""Gold-based (EditEval) metrics on hand-computed cases; GLEU cross-checked with the `gleu` package."""

import pytest
from gleu.aggreg import make_rn_accum
from gleu.count import set_tokenization
from gleu.score import rn_accum_to_gleu
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.text import METRICS
from metrics.text.gold import additions, word_diffs


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


def test_word_diffs_widen_character_changes_to_words():
    assert word_diffs("the cat sat on the mat", "the dog sat on a mat") == [("cat", "dog"), ("the", "a")]
    assert word_diffs("same", "same") == []


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
