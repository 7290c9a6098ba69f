"""Quality metrics against gold edits, as in EditEval (Dwivedi-Yu et al. 2022).

Here `edited` is the system output being judged, `original` the text it edited, `gold` the acceptable targets.
Written from the papers' definitions, following the EditEval repository's conventions where it has them.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import cache
from statistics import mean

from .ngram import _bleu, rouge_l_f

MAX_N = 4


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


# --- SARI (Xu et al. 2016), EASSE's implementation as EditEval runs it -------------------------------------


@cache
def _tokenizer_13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def _sari_tokens(text: str) -> list[str]:
    # EASSE's normalization: lower-case, then sacrebleu's 13a tokenizer.
    return _tokenizer_13a()(text.lower()).split()


def _f1(correct: float, system_total: float, reference_total: float) -> float:
    precision = correct / system_total if system_total > 0 else 0.0
    recall = correct / reference_total if reference_total > 0 else 0.0
    if precision > 0 and recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _scaled(counts: Counter, factor: int) -> Counter:
    return Counter({gram: count * factor for gram, count in counts.items()})


# Per n-gram order: (correct, system total, reference total) for additions, keeps and deletions.
SariCounts = list[list[int]]


def sari_counts(source: list[str], output: list[str], targets: Sequence[list[str]]) -> SariCounts:
    """EASSE's n-gram statistics of one example (tokens already normalized); summing them over examples
    gives the corpus statistics EASSE's corpus_sari scores."""
    k = len(targets)
    counts = []
    for n in range(1, MAX_N + 1):
        s, o = _ngrams(source, n), _ngrams(output, n)
        r: Counter = Counter()
        for target in targets:
            r += _ngrams(target, n)
        # Additions are counted as sets (binary); keeps and deletions weigh by how many gold edits agree.
        added_by_output, added_by_gold = set(o) - set(s), set(r) - set(s)
        s_k, o_k = _scaled(s, k), _scaled(o, k)
        kept_by_output, kept_by_gold = s_k & o_k, s_k & r
        deleted_by_output, deleted_by_gold = s_k - o_k, s_k - r
        counts.append(
            [
                len(added_by_output & set(r)),
                len(added_by_output),
                len(added_by_gold),
                sum((kept_by_output & kept_by_gold).values()),
                sum(kept_by_output.values()),
                sum(kept_by_gold.values()),
                sum((deleted_by_output & deleted_by_gold).values()),
                sum(deleted_by_output.values()),
                sum(deleted_by_gold.values()),
            ]
        )
    return counts


def sari_from_counts(counts: SariCounts) -> float:
    """SARI (0-100) from n-gram statistics: the F1 of each operation averaged over n, then over operations."""
    add = keep = delete = 0.0
    for c in counts:  # EASSE's order of operations, so that equal inputs give bit-equal figures
        add += _f1(c[0], c[1], c[2]) / MAX_N
        keep += _f1(c[3], c[4], c[5]) / MAX_N
        delete += _f1(c[6], c[7], c[8]) / MAX_N
    return (100.0 * add + 100.0 * keep + 100.0 * delete) / 3


def sari(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """SARI (0-100): mean of the F1 of added, kept and deleted n-grams (n = 1..4, averaged per n), against
    all gold edits at once. EditEval/EASSE conventions: 13a tokens, lower-cased, F1 also for deletions, and
    an operation nobody performed scores 0. No detokenization (EditEval's corpus figure detokenizes first)."""
    return sari_from_counts(sari_counts(_sari_tokens(original), _sari_tokens(edited), [_sari_tokens(g) for g in gold]))


# --- GLEU for grammatical error correction (Napoles et al. 2015; the 2016 "without tuning" revision) -------


def _gleu_one(source: list[str], output: list[str], target: list[str]) -> float:
    log_precisions = 0.0
    for n in range(1, MAX_N + 1):
        s, o, r = _ngrams(source, n), _ngrams(output, n), _ngrams(target, n)
        total = sum(o.values())
        if total == 0:
            continue  # no n-grams of this order in the output: precision 1, as in the reference code
        matched = sum(min(count, r[gram]) for gram, count in o.items())
        # n-grams the output kept from the source although the target changed them are penalized.
        penalty = sum(min(count, s[gram]) for gram, count in o.items() if r[gram] == 0)
        numerator = matched - min(matched, penalty)
        if numerator == 0:
            return 0.0
        log_precisions += math.log(numerator / total)
    if not output:
        return 1.0 if not target else 0.0
    brevity = 0.0 if len(output) > len(target) else 1.0 - len(target) / len(output)
    return math.exp(brevity + log_precisions / MAX_N)


def gleu(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """GEC GLEU (0-1) on whitespace tokens: n-gram precision (n = 1..4) of the output against a gold edit,
    minus n-grams kept from the source that the gold edit changed, with BLEU's brevity penalty; the
    sentence-level score averaged over the gold edits (like the `gleu` package's sgleu)."""
    source, output = original.split(), edited.split()
    return mean(_gleu_one(source, output, g.split()) for g in gold)


# --- iBLEU (Sun & Zhou 2012) --------------------------------------------------------------------------------

IBLEU_ALPHA = 0.9


def _sentence_bleu(hypothesis: str, references: Sequence[str]) -> float:
    if not hypothesis and all(not r for r in references):
        return 100.0
    return float(_bleu().sentence_score(hypothesis, list(references)).score)


def ibleu(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """0.9 * BLEU(output, gold) - 0.1 * BLEU(output, original): close to gold without copying the input
    (sacrebleu sentence BLEU, 0-100, effective order, all gold edits as references)."""
    return IBLEU_ALPHA * _sentence_bleu(edited, gold) - (1 - IBLEU_ALPHA) * _sentence_bleu(edited, [original])


# --- exact match, and exact match on the diffs --------------------------------------------------------------


def exact_match(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """1 if the output equals a gold edit (ignoring leading and trailing whitespace), else 0."""
    return 1.0 if edited.strip() in {g.strip() for g in gold} else 0.0


def _opcodes(source: str, target: str) -> list[tuple[str, int, int, int, int]]:
    if source == target:
        return []
    return [op for op in difflib.SequenceMatcher(None, source, target).get_opcodes() if op[0] != "equal"]


def _span(source: str, start: int, end: int) -> tuple[int, int]:
    """EditEval's widening of a changed span [start, end) of the source: left to the start of its word, right
    to the end of its word and on over whole words until the span occurs only once in the source."""
    left = start - 1 if start == len(source) else start
    while left >= 0 and not source[left].isspace():
        left -= 1
    left += 1  # a change that starts on a space keeps the span right of it, as in EditEval
    right = end
    while right < len(source):
        if source[right].isspace() and source.count(source[left:right]) == 1:
            break
        right += 1
    return left, right


def word_diffs(source: str, target: str) -> list[tuple[str, str]]:
    """The changes turning source into target as (source span, target span) pairs, extracted as EditEval's
    source_target_to_diffs (num_context_words=0) does: difflib's character changes, each widened to whole
    words and then rightwards until its source span is unique, touching ones merged (a merged group takes
    the right end of its last change). Two identical word changes at different places stay two diffs."""
    groups: list[list] = []
    for op in _opcodes(source, target):
        left, right = _span(source, op[1], op[2])
        if groups and left <= groups[-1][1]:
            groups[-1][1] = right
            groups[-1][2].append(op)
        else:
            groups.append([left, right, [op]])
    diffs = []
    for left, right, ops in groups:
        pieces, position = [], left
        for _, i1, i2, j1, j2 in ops:
            pieces.append(source[position:i1] + target[j1:j2])
            position = i2
        pieces.append(source[position:right])
        diffs.append((source[left:right], "".join(pieces)))
    return diffs


def em_diff(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """Share of the output's changes (word_diffs against the original) that a gold edit makes too:
    |output diffs ∩ gold diffs| / max(1, #output diffs, #gold diffs), best gold edit (EditEval's em_diff,
    on the texts as given: EditEval's corpus figure detokenizes them first)."""
    output = word_diffs(original, edited)
    best = 0.0
    for g in gold:
        target = word_diffs(original, g)
        best = max(best, len(set(output) & set(target)) / max(1, len(output), len(target)))
    return best


# --- update-ROUGE (Iv et al. 2022, FRUIT; as EditEval computes it) ------------------------------------------

_SENTENCE = re.compile(r"[^.]+\.?")


def additions(source: str, text: str) -> str:
    """The sentences of text (split after each period) that do not occur in source, joined by spaces."""
    return " ".join(m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0) not in source)


def update_rouge(original: str, edited: str, *, gold: Sequence[str], **_: object) -> float:
    """ROUGE-L F1 (0-1, words of any script) between the sentences the output added and those a gold edit
    added; 1 when neither added anything; averaged over the gold edits (as EditEval does)."""
    added = additions(original, edited)
    scores = []
    for g in gold:
        target = additions(original, g)
        if not added.strip() and not target.strip():
            scores.append(1.0)
        else:
            scores.append(rouge_l_f(added, target))
    return mean(scores)
