"""EditEval's figures for a whole set of examples, computed as EditEval's own code computes them.

EditEval (Dwivedi-Yu et al. 2022; github.com/facebookresearch/EditEval at commit 013cd20, src/evaluator.py,
src/preprocessing.py and src/metrics/) scores a test set, not a sentence: its SARI, GLEU and iBLEU pool n-gram
counts over the set. Its pipeline, reproduced here step by step:

1. every text (original, output, gold edit) is normalized: nltk 3.7's Treebank detokenizer on the text split at
   single spaces (`do n't go .` -> `don't go.`), which also strips outer whitespace;
2. GLEU and iBLEU tokenize the normalized texts with nltk 3.7's `word_tokenize`;
3. sari: EASSE's corpus SARI (lower-cased 13a tokens), n-gram statistics summed over the examples, with as
   many gold edits per example as the example with the fewest has (EditEval transposes the references with
   zip, which drops the rest);
4. gleu: Napoles et al.'s GLEU on the tokens, statistics summed over the examples, one gold edit drawn per
   example in each of 500 iterations (Python's `random` seeded with 101 * iteration, an index below the
   first example's number of gold edits), the mean of the 500 corpus scores; no smoothing, so a corpus with
   no 4-gram in its outputs (every output shorter than 4 tokens) scores 0;
5. ibleu: 0.9 * BLEU(outputs, gold) - 0.1 * BLEU(outputs, originals), with the unsmoothed corpus BLEU of
   tensorflow/nmt that `datasets.load_metric("bleu")` runs, on 0-1;
6. exact_match (EditEval's `em`): the share of outputs equal to one of their gold edits, after normalization;
7. em_diff: the mean over examples of gold.em_diff on the normalized texts;
8. update_rouge (EditEval's `update_rougeLsum`): ROUGE-Lsum F1 (rouge-score's own tokens: lower-case a-z and
   0-9 only) between the sentences the output added and those a gold edit added, 1 when neither added one;
   for each of the first example's number of gold edits, the mean over examples; then the mean over those.
   EditEval reports the median of 1,000 unseeded bootstrap means instead of the mean: its figure varies from
   run to run around the one given here (on a 10-example fixture its runs gave 0.761-0.766, the mean 0.758).

Where EditEval's code raises (no output token in the whole set for iBLEU, an example with fewer gold edits
than the first one for GLEU and update-ROUGE), there is no figure: EditEvalUndefined says why.
EditEval normalizes FRUIT and WAFER-insert differently (a T5 tokenizer round trip and Wikipedia markup
removal); editlab always applies the normalization of EditEval's other datasets.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import ClassVar

import numpy as np

from . import gold, nltk37

EDITEVAL_COMMIT = "013cd20"
GLEU_ITERATIONS = 500
GLEU_SEED_STEP = 101
IBLEU_ALPHA = 0.9
MAX_N = 4

# editlab's name -> the name EditEval's report gives the same figure.
EDITEVAL_NAMES = {
    "sari": "sari",
    "gleu": "gleu",
    "ibleu": "ibleu",
    "exact_match": "em",
    "em_diff": "em_diff",
    "update_rouge": "update_rougeLsum",
}
METRICS = tuple(EDITEVAL_NAMES)


class EditEvalUndefined(ValueError):
    """EditEval's own code raises on this set of examples, so it has no figure; the message says why."""


@dataclass(frozen=True)
class Example:
    original: str
    edited: str
    gold: tuple[str, ...]


class _Corpus:
    """The examples after EditEval's normalization; tokens computed when a metric first needs them."""

    def __init__(self, examples: Sequence[Example]) -> None:
        if not examples:
            raise ValueError("no examples to score")
        for number, example in enumerate(examples, start=1):
            if not example.gold:
                raise ValueError(f"example {number} has no gold edit")
        self.originals = [nltk37.detokenize(e.original) for e in examples]
        self.outputs = [nltk37.detokenize(e.edited) for e in examples]
        self.golds = [[nltk37.detokenize(g) for g in e.gold] for e in examples]

    def __len__(self) -> int:
        return len(self.outputs)

    @cached_property
    def original_tokens(self) -> list[list[str]]:
        return [nltk37.word_tokenize(text) for text in self.originals]

    @cached_property
    def output_tokens(self) -> list[list[str]]:
        return [nltk37.word_tokenize(text) for text in self.outputs]

    @cached_property
    def gold_tokens(self) -> list[list[list[str]]]:
        return [[nltk37.word_tokenize(text) for text in golds] for golds in self.golds]

    def gold_count_of_first(self, metric: str) -> int:
        """EditEval reads the number of gold edits off the first example; fewer elsewhere is an IndexError."""
        count = len(self.golds[0])
        for number, golds in enumerate(self.golds, start=1):
            if len(golds) < count:
                raise EditEvalUndefined(
                    f"{metric}: example {number} has {len(golds)} gold edit(s), fewer than the first example's "
                    f"{count}; EditEval's code fails on such a set (IndexError)"
                )
        return count


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


# --- SARI -------------------------------------------------------------------------------------------------


def _sari(corpus: _Corpus) -> float:
    kept = min(len(golds) for golds in corpus.golds)
    totals = [[0] * 9 for _ in range(MAX_N)]
    for original, output, golds in zip(corpus.originals, corpus.outputs, corpus.golds, strict=True):
        counts = gold.sari_counts(
            gold._sari_tokens(original), gold._sari_tokens(output), [gold._sari_tokens(g) for g in golds[:kept]]
        )
        for total, count in zip(totals, counts, strict=True):
            for i, value in enumerate(count):
                total[i] += value
    return gold.sari_from_counts(totals)


# --- GLEU -------------------------------------------------------------------------------------------------


def _gleu_statistics(source: list[str], output: list[str], target: list[str]) -> list[int]:
    """[output length, target length, then per n: matches less source n-grams the target dropped, n-grams]."""
    stats = [len(output), len(target)]
    for n in range(1, MAX_N + 1):
        s, o, r = _ngrams(source, n), _ngrams(output, n), _ngrams(target, n)
        dropped = Counter({gram: count for gram, count in s.items() if gram not in r})
        stats.append(max(sum((o & r).values()) - sum((o & dropped).values()), 0))
        stats.append(max(len(output) + 1 - n, 0))
    return stats


def _gleu_score(stats: Sequence[int]) -> float:
    if any(value == 0 for value in stats):
        return 0.0
    output_length, target_length = stats[0], stats[1]
    log_precision = sum(math.log(m / t) for m, t in zip(stats[2::2], stats[3::2], strict=True)) / MAX_N
    return math.exp(min(0.0, 1.0 - target_length / output_length) + log_precision)


@cache
def _gleu_draws(examples: int, references: int) -> np.ndarray:
    """The gold edit each iteration draws for each example: EditEval seeds Python's generator per iteration."""
    draws = np.empty((GLEU_ITERATIONS, examples), dtype=np.int64)
    for iteration in range(GLEU_ITERATIONS):
        rng = random.Random(iteration * GLEU_SEED_STEP)
        draws[iteration] = [rng.randint(0, references - 1) for _ in range(examples)]
    draws.setflags(write=False)
    return draws


def _gleu(corpus: _Corpus) -> float:
    references = corpus.gold_count_of_first("gleu")
    stats = np.array(
        [
            [_gleu_statistics(source, output, target) for target in targets[:references]]
            for source, output, targets in zip(
                corpus.original_tokens, corpus.output_tokens, corpus.gold_tokens, strict=True
            )
        ],
        dtype=np.int64,
    )
    if references == 1:  # every iteration draws the same gold edits
        return float(np.mean([_gleu_score(stats[:, 0].sum(axis=0).tolist())] * GLEU_ITERATIONS))
    draws = _gleu_draws(len(corpus), references)
    rows = np.arange(len(corpus))
    scores = [_gleu_score(stats[rows, draw].sum(axis=0).tolist()) for draw in draws]
    return float(np.mean(scores))


# --- iBLEU ------------------------------------------------------------------------------------------------


def _corpus_bleu(references: Sequence[Sequence[list[str]]], outputs: Sequence[list[str]], what: str) -> float:
    """tensorflow/nmt's compute_bleu, unsmoothed, n = 1..4, as datasets' "bleu" metric runs it (0-1)."""
    matches, possible = [0] * MAX_N, [0] * MAX_N
    reference_length = output_length = 0
    for refs, output in zip(references, outputs, strict=True):
        reference_length += min(len(r) for r in refs)
        output_length += len(output)
        merged: Counter = Counter()
        for ref in refs:
            for n in range(1, MAX_N + 1):
                merged |= _ngrams(ref, n)
        for n in range(1, MAX_N + 1):
            overlap = _ngrams(output, n) & merged
            matches[n - 1] += sum(overlap.values())
            if len(output) - n + 1 > 0:
                possible[n - 1] += len(output) - n + 1
    precisions = [m / p if p > 0 else 0.0 for m, p in zip(matches, possible, strict=True)]
    geometric_mean = math.exp(sum(math.log(p) / MAX_N for p in precisions)) if min(precisions) > 0 else 0.0
    if reference_length == 0:
        raise EditEvalUndefined(f"ibleu: every {what} is empty after tokenization; EditEval divides by zero")
    ratio = output_length / reference_length
    if ratio == 0:
        raise EditEvalUndefined("ibleu: every output is empty after tokenization; EditEval divides by zero")
    brevity = 1.0 if ratio > 1.0 else math.exp(1 - 1.0 / ratio)
    return geometric_mean * brevity


def _ibleu(corpus: _Corpus) -> float:
    outputs = corpus.output_tokens
    to_gold = _corpus_bleu(corpus.gold_tokens, outputs, "gold edit")
    to_original = _corpus_bleu([[tokens] for tokens in corpus.original_tokens], outputs, "original")
    return IBLEU_ALPHA * to_gold - (1 - IBLEU_ALPHA) * to_original


# --- exact match, EM-Diff, update-ROUGE -------------------------------------------------------------------


def _exact_match(corpus: _Corpus) -> float:
    return sum(1 for output, golds in zip(corpus.outputs, corpus.golds, strict=True) if output in golds) / len(corpus)


def _em_diff(corpus: _Corpus) -> float:
    total = 0.0
    for original, output, golds in zip(corpus.originals, corpus.outputs, corpus.golds, strict=True):
        total += gold.em_diff(original, output, gold=golds)
    return total / len(corpus)


@cache
def _rouge_lsum():
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeLsum"])


def _update_rouge_one(original: str, output: str, target: str) -> float:
    added, target_added = gold.additions(original, output), gold.additions(original, target)
    if not added.strip() and not target_added.strip():
        return 1.0
    return float(_rouge_lsum().score(target_added, added)["rougeLsum"].fmeasure)


def _update_rouge(corpus: _Corpus) -> float:
    count = corpus.gold_count_of_first("update_rouge")
    means = []
    for i in range(count):
        scores = [
            _update_rouge_one(original, output, golds[i])
            for original, output, golds in zip(corpus.originals, corpus.outputs, corpus.golds, strict=True)
        ]
        means.append(float(np.mean(scores)))
    return sum(means) / len(means)


_FIGURES: dict[str, Callable[[_Corpus], float]] = {
    "sari": _sari,
    "gleu": _gleu,
    "ibleu": _ibleu,
    "exact_match": _exact_match,
    "em_diff": _em_diff,
    "update_rouge": _update_rouge,
}


def editeval_score(metric: str, examples: Sequence[Example]) -> float:
    """EditEval's figure for `metric` (editlab's name) over the examples; EditEvalUndefined where EditEval's
    code raises, ValueError for an unknown metric, no examples, or an example without gold edits."""
    return editeval_scores(examples, [metric])[metric]


def editeval_scores(examples: Sequence[Example], metrics: Sequence[str] = METRICS) -> dict[str, float]:
    """EditEval's figures over the examples, one per metric; raises like editeval_score (the first failure)."""
    unknown = [m for m in metrics if m not in _FIGURES]
    if unknown:
        raise ValueError(f"no EditEval figure for {', '.join(unknown)}; known: {', '.join(METRICS)}")
    corpus = _Corpus(examples)
    return {metric: _FIGURES[metric](corpus) for metric in metrics}


@dataclass(frozen=True)
class Figure:
    """One metric's EditEval figure over a set of examples, or the reason there is none."""

    metric: str
    n: int
    value: float | None
    undefined: str = ""


def editeval_figures(examples: Sequence[Example], metrics: Sequence[str] = METRICS) -> list[Figure]:
    """Like editeval_scores, but a metric EditEval cannot score comes back with its reason instead of raising."""
    unknown = [m for m in metrics if m not in _FIGURES]
    if unknown:
        raise ValueError(f"no EditEval figure for {', '.join(unknown)}; known: {', '.join(METRICS)}")
    corpus = _Corpus(examples)
    figures = []
    for metric in metrics:
        try:
            figures.append(Figure(metric, len(corpus), _FIGURES[metric](corpus)))
        except EditEvalUndefined as exc:
            figures.append(Figure(metric, len(corpus), None, str(exc)))
    return figures


@dataclass(frozen=True)
class GoldFigure:
    """One gold-based metric over a set of examples: the mean of editlab's per-example values (its own
    conventions, see gold.py) beside EditEval's corpus figure, the one to cite with published EditEval results."""

    metric: str
    n: int
    mean: float | None
    editeval: float | None
    editeval_undefined: str = ""

    COLUMNS: ClassVar[tuple[str, ...]] = ("metric", "n", "mean", "editeval", "editeval_undefined")

    def to_dict(self) -> dict[str, object]:
        return {column: getattr(self, column) for column in self.COLUMNS}


def gold_figures(examples: Sequence[Example], per_example: Mapping[str, Sequence[float | None]]) -> list[GoldFigure]:
    """For each metric of `per_example` (editlab's values for the examples, in order; None where missing):
    their mean and EditEval's figure over the examples."""
    figures = {f.metric: f for f in editeval_figures(examples, list(per_example))}
    rows = []
    for metric, values in per_example.items():
        present = [v for v in values if v is not None]
        mean = float(np.mean(present)) if present else None
        figure = figures[metric]
        rows.append(GoldFigure(metric, figure.n, mean, figure.value, figure.undefined))
    return rows
