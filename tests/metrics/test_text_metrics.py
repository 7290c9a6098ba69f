"""Known values of the edit-distance, n-gram, compression (ncd) and semantic metrics, computed by hand.

Convention: the model output (original) is the hypothesis, the post-edit (edited) the reference; `ter`
measures the post-edit against the original instead.
"""

import importlib.util
import zlib

import pytest

from metrics.text import METRICS, MetricUnavailable


def score(name: str, original: str, edited: str) -> float:
    return METRICS[name](original, edited)


def test_levenshtein_counts_character_edits():
    assert score("levenshtein", "kitten", "sitting") == 3.0
    assert score("levenshtein", "日本語", "日本") == 1.0
    assert score("levenshtein", "", "abc") == 3.0


def test_levenshtein_words_counts_word_edits():
    # cat -> dog substituted, "down" inserted
    assert score("levenshtein_words", "the cat sat", "the dog sat down") == 2.0


def test_ter_normalizes_by_the_original_and_hter_by_the_post_edit():
    # One word deleted: 1 edit per 4 original words; HTER: 1 edit per 3 post-edit words.
    assert score("ter", "a b c d", "a b c") == pytest.approx(100 * 1 / 4)
    assert score("hter", "a b c d", "a b c") == pytest.approx(100 * 1 / 3)


def test_hter_counts_a_block_move_as_one_shift():
    assert score("hter", "a b c d e", "c d e a b") == pytest.approx(100 * 1 / 5)


def test_ter_is_case_sensitive():
    assert score("hter", "The cat", "the cat") == pytest.approx(100 * 1 / 2)


def test_bleu_is_sentence_bleu_with_sacrebleus_exp_smoothing():
    # Precisions 3/4, 2/3, 1/2 and 0/1 for 4-grams, which 'exp' smoothing turns into 1/2; lengths equal (BP 1).
    assert score("bleu", "a b c d", "a b c e") == pytest.approx(100 * (3 / 4 * 2 / 3 * 1 / 2 * 1 / 2) ** (1 / 4))
    assert score("bleu", "same words here", "same words here") == pytest.approx(100.0)
    assert score("bleu", "", "") == 100.0


def test_chrf_averages_character_ngram_precision_and_recall():
    # 1-grams: P = R = 1/2; 2-grams: P = R = 0; no longer n-grams: averages 1/4, so F = 1/4.
    assert score("chrf", "ab", "ac") == pytest.approx(25.0)


def test_rouge_l_uses_the_longest_common_subsequence_of_words():
    # LCS "a c d" = 3 of 4 words on each side.
    assert score("rouge_l", "a b c d", "a c d e") == pytest.approx(0.75)


def test_rouge_l_keeps_words_of_any_script():
    # rouge-score's own tokenizer would drop "Ça" and "très"; here LCS = 3, P = 3/4, R = 3/3.
    assert score("rouge_l", "Ça va très bien", "ça va bien") == pytest.approx(2 * 0.75 * 1 / 1.75)
    assert score("rouge_l", "日本 語", "日本 語") == pytest.approx(1.0)


def test_charac_ter_counts_character_edits_per_hypothesis_character():
    assert score("charac_ter", "abc def", "abd def") == pytest.approx(1 / 7)


def test_charac_ter_survives_empty_texts():
    assert score("charac_ter", "", "") == 0.0
    assert score("charac_ter", "some words", "") == 1.0
    assert score("charac_ter", "", "some words") == 1.0


def test_meteor_matches_wordnet_synonyms_with_the_fragmentation_penalty():
    # All 4 words match ("car"/"auto" through WordNet) in 1 chunk: 1 - 0.5 * (1/4)^3.
    assert score("meteor", "the car is red", "the auto is red") == pytest.approx(1 - 0.5 * (1 / 4) ** 3)
    # Without a synonym: 3 of 4 match in 2 chunks: 0.75 * (1 - 0.5 * (2/3)^3).
    assert score("meteor", "the car is red", "the bus is red") == pytest.approx(0.75 * (1 - 0.5 * (2 / 3) ** 3))


def test_meteor_prepares_wordnet_in_the_cache_folder(tmp_path):
    from metrics.text.ngram import prepare_wordnet, wordnet_source

    root = prepare_wordnet(tmp_path)
    copied = root / "corpora" / "wordnet" / "data.noun"
    assert copied.is_file()
    assert b"\r\n" not in copied.read_bytes()[:100_000]
    assert copied.stat().st_size < (wordnet_source() / "data.noun").stat().st_size  # CRLF -> LF


def test_ncd_follows_its_definition_with_zlib():
    x, y = "the cat sat on the mat " * 4, "a dog ran in the park " * 4
    c = {text: len(zlib.compress(text.encode(), 9)) for text in (x, y, x + y)}
    expected = (c[x + y] - min(c[x], c[y])) / max(c[x], c[y])
    assert score("ncd", x, y) == pytest.approx(expected)
    assert score("ncd", x, x) < score("ncd", x, y)


def test_bertscore_scores_identical_texts_one_and_guards_empty_ones():
    assert score("bertscore", "The cat sat on the mat.", "The cat sat on the mat.") == pytest.approx(1.0, abs=1e-5)
    assert score("bertscore", "", "") == 1.0
    assert score("bertscore", "", "Something") == 0.0
    close = score("bertscore", "The cat sat on the mat.", "A cat sat on the mat.")
    far = score("bertscore", "The cat sat on the mat.", "Stock markets fell sharply today.")
    assert 0 < far < close < 1


def test_bertscore_reports_the_missing_extra(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bert_score" else real_find_spec(name, *a)
    )
    metric = METRICS["bertscore"]
    assert metric.available() is False
    with pytest.raises(MetricUnavailable, match=r"bertscore needs the optional extra editlab\[semantic\]"):
        metric("a", "b")


def test_every_metric_declares_what_reports_need():
    for name, metric in METRICS.items():
        assert metric.name == name
        assert metric.direction in ("effort", "similarity")
        assert metric.library and metric.version and metric.description
    assert [m for m in METRICS if METRICS[m].family == "gold-based"] == [
        "sari",
        "gleu",
        "ibleu",
        "exact_match",
        "em_diff",
        "update_rouge",
    ]
