"""The registered metrics, in the order reports list them. Bump a metric's `version` whenever a change
alters its values: stored values carry it, so stale ones can be found and recomputed."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from . import compression, edit, gold, ngram, semantic
from .registry import Metric, register

NO_NEEDS: frozenset[str] = frozenset()
GOLD = frozenset({"gold"})


def _library(package: str, what: str = "") -> str:
    try:
        label = f"{package} {version(package)}"
    except PackageNotFoundError:
        label = f"{package} (not installed)"
    return f"{label}{what}"


def _compression(original: str, edited: str, **_: object) -> float:
    return float(compression.compression_distance(original, edited))


def _compression_batch(pairs: Sequence[tuple[str, str]]) -> list[float]:
    return [float(value) for value in compression.compression_distances(pairs)]


def _ncd(original: str, edited: str, **_: object) -> float:
    return compression.ncd(original, edited)


register(
    Metric(
        name="compression",
        func=_compression,
        family="compression",
        direction="effort",
        needs=NO_NEEDS,
        batch=_compression_batch,
        library="own C code (pydivsufsort if it is not built), equal to compression-distance 0.1.1",
        version="1",
        description="LZ77 phrases the post-edit needs when it may copy from the model output "
        "(Ergun et al. 2003's compression distance, by code point)",
    )
)
register(
    Metric(
        name="levenshtein",
        func=edit.levenshtein,
        family="edit distance",
        direction="effort",
        needs=NO_NEEDS,
        library=_library("rapidfuzz"),
        version="1",
        description="character insertions, deletions and substitutions from model output to post-edit",
    )
)
register(
    Metric(
        name="levenshtein_words",
        func=edit.levenshtein_words,
        family="edit distance",
        direction="effort",
        needs=NO_NEEDS,
        library=_library("rapidfuzz"),
        version="1",
        description="word (whitespace token) insertions, deletions and substitutions",
    )
)
register(
    Metric(
        name="ter",
        func=edit.ter,
        family="edit distance",
        direction="effort",
        needs=NO_NEEDS,
        library=_library("sacrebleu"),
        version="1",
        description="TER in %, case-sensitive, with shifts: edits per word of the model output (post-edit as "
        "hypothesis, model output as reference)",
    )
)
register(
    Metric(
        name="hter",
        func=edit.hter,
        family="edit distance",
        direction="effort",
        needs=NO_NEEDS,
        library=_library("sacrebleu"),
        version="1",
        description="HTER in %, case-sensitive, with shifts: edits per word of the post-edit (the targeted reference)",
    )
)
register(
    Metric(
        name="bleu",
        func=ngram.bleu,
        family="n-gram overlap",
        direction="similarity",
        needs=NO_NEEDS,
        library=_library("sacrebleu"),
        version="1",
        description="sentence BLEU (0-100, effective order) of the model output against the post-edit",
    )
)
register(
    Metric(
        name="chrf",
        func=ngram.chrf,
        family="n-gram overlap",
        direction="similarity",
        needs=NO_NEEDS,
        library=_library("sacrebleu"),
        version="1",
        description="sentence chrF (0-100) of the model output against the post-edit",
    )
)
register(
    Metric(
        name="rouge_l",
        func=ngram.rouge_l,
        family="n-gram overlap",
        direction="similarity",
        needs=NO_NEEDS,
        library=_library("rouge-score", "; words of any script"),
        version="1",
        description="ROUGE-L F1 (0-1) on case-folded words of any script (longest common subsequence)",
    )
)
register(
    Metric(
        name="charac_ter",
        func=edit.charac_ter,
        family="edit distance",
        direction="effort",
        needs=NO_NEEDS,
        library=_library("cer"),
        version="1",
        description="CharacTER (0-1): character edits after word shifts, per character of the model output",
    )
)
register(
    Metric(
        name="meteor",
        func=ngram.meteor,
        family="n-gram overlap",
        direction="similarity",
        needs=NO_NEEDS,
        library=_library("nltk", " + WordNet 3.0 from wn 0.0.23"),
        version="1",
        description="METEOR (0-1): unigram matches (exact, stem, WordNet synonym) with a fragmentation penalty",
    )
)
register(
    Metric(
        name="ncd",
        func=_ncd,
        family="compression",
        direction="effort",
        needs=NO_NEEDS,
        library="zlib (Python standard library)",
        version="1",
        description="normalized compression distance (zlib level 9, UTF-8 bytes), about 0 for equal texts",
    )
)
register(
    Metric(
        name="bertscore",
        func=semantic.bertscore,
        family="semantic",
        direction="similarity",
        needs=frozenset({"semantic"}),
        library=_library("bert-score", " + a local model (all-MiniLM-L6-v2)"),
        version="1",
        _check=semantic.unavailable_reason,
        description="BERTScore F1 (0-1) of the model output against the post-edit, from a local model",
    )
)

# Gold-based (EditEval): `edited` is the output judged against the gold edits; None (via score_pairs) without gold.
# Per-example values with editlab's conventions; EditEval's corpus figures for a set of examples: editeval.py.
register(
    Metric(
        name="sari",
        func=gold.sari,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library="own (Xu et al. 2016; EASSE conventions as in EditEval)",
        version="1",
        description="SARI (0-100): F1 of the n-grams added, kept and deleted relative to the original, vs gold",
    )
)
register(
    Metric(
        name="gleu",
        func=gold.gleu,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library="own (Napoles et al. 2015/2016), checked against gleu 1.1.0",
        version="1",
        description="GEC GLEU (0-1): n-gram precision vs gold, penalizing source n-grams the gold changed",
    )
)
register(
    Metric(
        name="ibleu",
        func=gold.ibleu,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library=_library("sacrebleu", "; own formula (Sun & Zhou 2012)"),
        version="1",
        description="0.9 x BLEU(output, gold) - 0.1 x BLEU(output, original), sentence BLEU 0-100",
    )
)
register(
    Metric(
        name="exact_match",
        func=gold.exact_match,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library="own",
        version="1",
        description="1 if the output equals one of the gold edits (outer whitespace ignored), else 0",
    )
)
register(
    Metric(
        name="em_diff",
        func=gold.em_diff,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library="own (difflib; EditEval's em_diff and its diff extraction)",
        version="2",
        description="share of the output's changes to the original (EditEval's word diffs, widened until unique) "
        "that the best gold edit also makes",
    )
)
register(
    Metric(
        name="update_rouge",
        func=gold.update_rouge,
        family="gold-based",
        direction="similarity",
        needs=GOLD,
        library=_library("rouge-score", "; own additions (Iv et al. 2022, EditEval)"),
        version="1",
        description="ROUGE-L F1 (0-1) between the sentences the output added to the original and those gold added",
    )
)
