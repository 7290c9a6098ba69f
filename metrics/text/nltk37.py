"""Text normalization and tokenization exactly as nltk 3.7 does them, the version EditEval pins.

EditEval normalizes every text with `TreebankWordDetokenizer().detokenize(text.split(" "))` and tokenizes it
with `nltk.word_tokenize` (Punkt sentences, then the NLTK word tokenizer). nltk 3.8 and later changed all
three (the detokenizer attaches every " ." instead of only a final one, the tokenizer splits dashes and
treats leading apostrophes and whitespace differently, Punkt knows curly quotes), so the installed nltk
would give other tokens than the published figures were computed on. The rules below are nltk 3.7's
(Apache-2.0), applied with the standard `re` module as nltk 3.7 did; Punkt reuses the installed nltk's
algorithm with 3.7's patterns and its pre-3.8 scan for sentence-end contexts, and the English model
shipped beside this module (`punkt_english/`, NLTK's punkt_tab data: no download at run time).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path

from nltk.tokenize.punkt import PunktLanguageVars, PunktParameters, PunktSentenceTokenizer

PUNKT_ENGLISH = Path(__file__).with_name("punkt_english")

Rule = tuple[re.Pattern[str], str]


def _rules(*pairs: tuple[str, str], flags: int = 0) -> list[Rule]:
    return [(re.compile(pattern, flags), replacement) for pattern, replacement in pairs]


# --- the word tokenizer (nltk.tokenize.destructive.NLTKWordTokenizer, 3.7) ----------------------------------

_CONTRACTIONS2 = (
    r"(?i)\b(can)(?#X)(not)\b",
    r"(?i)\b(d)(?#X)('ye)\b",
    r"(?i)\b(gim)(?#X)(me)\b",
    r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b",
    r"(?i)\b(lem)(?#X)(me)\b",
    r"(?i)\b(more)(?#X)('n)\b",
    r"(?i)\b(wan)(?#X)(na)(?=\s)",
)
_CONTRACTIONS3 = (r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")

_TOKENIZE_STARTING_QUOTES = _rules(
    ("([«“‘„]|[`]+)", r" \1 "),
    (r"^\"", r"``"),
    (r"(``)", r" \1 "),
    (r"([ \(\[{<])(\"|\'{2})", r"\1 `` "),
    (r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", r"\1 \2"),
)
_TOKENIZE_PUNCTUATION = _rules(
    (r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$", r"\1 \2 \3 "),
    (r"([:,])([^\d])", r" \1 \2"),
    (r"([:,])$", r" \1 "),
    (r"\.{2,}", r" \g<0> "),
    (r"[;@#$%&]", r" \g<0> "),
    (r'([^\.])(\.)([\]\)}>"\']*)\s*$', r"\1 \2\3 "),
    (r"[?!]", r" \g<0> "),
    (r"([^'])' ", r"\1 ' "),
    (r"[*]", r" \g<0> "),
)
_TOKENIZE_PARENS = _rules((r"[\]\[\(\)\{\}\<\>]", r" \g<0> "))
_TOKENIZE_DASHES = _rules((r"--", r" -- "))
_TOKENIZE_ENDING_QUOTES = _rules(
    ("([»”’])", r" \1 "),
    (r"''", " '' "),
    (r'"', " '' "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 "),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 "),
)
_TOKENIZE_CONTRACTIONS = _rules(*((p, r" \1 \2 ") for p in (*_CONTRACTIONS2, *_CONTRACTIONS3)))


def _apply(rules: list[Rule], text: str) -> str:
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


def _words(sentence: str) -> list[str]:
    text = _apply(_TOKENIZE_STARTING_QUOTES, sentence)
    text = _apply(_TOKENIZE_PUNCTUATION, text)
    text = _apply(_TOKENIZE_PARENS, text)
    text = _apply(_TOKENIZE_DASHES, text)
    text = _apply(_TOKENIZE_ENDING_QUOTES, f" {text} ")
    return _apply(_TOKENIZE_CONTRACTIONS, text).split()


def word_tokenize(text: str) -> list[str]:
    """`nltk.word_tokenize(text)` as nltk 3.7 computes it: English Punkt sentences, then words."""
    return [word for sentence in _punkt().tokenize(text) for word in _words(sentence)]


# --- the detokenizer (nltk.tokenize.treebank.TreebankWordDetokenizer, 3.7) ----------------------------------

_DETOKENIZE_CONTRACTIONS = _rules(*((p.replace("(?#X)", r"\s"), r"\1\2") for p in (*_CONTRACTIONS3, *_CONTRACTIONS2)))
_DETOKENIZE_ENDING_QUOTES = _rules(
    (r"([^' ])\s('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1\2 "),
    (r"([^' ])\s('[sS]|'[mM]|'[dD]|') ", r"\1\2 "),
    (r"(\S)\s(\'\')", r"\1\2"),
    (r"(\'\')\s([.,:)\]>};%])", r"\1\2"),
    (r"''", '"'),
)
_DETOKENIZE_DASHES = _rules((r" -- ", r"--"))
_DETOKENIZE_PARENS = _rules(
    (r"([\[\(\{\<])\s", r"\g<1>"),
    (r"\s([\]\)\}\>])", r"\g<1>"),
    (r"([\]\)\}\>])\s([:;,.])", r"\1\2"),
)
_DETOKENIZE_PUNCTUATION = _rules(
    (r"([^'])\s'\s", r"\1' "),
    (r"\s([?!])", r"\g<1>"),
    (r'([^\.])\s(\.)([\]\)}>"\']*)\s*$', r"\1\2\3"),
    (r"([#$])\s", r"\g<1>"),
    (r"\s([;%])", r"\g<1>"),
    (r"\s\.\.\.\s", r"..."),
    (r"\s([:,])", r"\1"),
)
_DETOKENIZE_STARTING_QUOTES = _rules(
    (r"([ (\[{<])\s``", r"\1``"),
    (r"(``)\s", r"\1"),
    (r"``", r'"'),
)


def detokenize(text: str) -> str:
    """`TreebankWordDetokenizer().detokenize(text.split(" "))` as nltk 3.7 computes it (EditEval's
    normalize_text): tokenized text such as JFLEG's `do n't go .` becomes `don't go.`."""
    text = _apply(_DETOKENIZE_CONTRACTIONS, text)
    text = _apply(_DETOKENIZE_ENDING_QUOTES, text).strip()
    text = _apply(_DETOKENIZE_DASHES, text)
    text = _apply(_DETOKENIZE_PARENS, text)
    text = _apply(_DETOKENIZE_PUNCTUATION, text)
    return _apply(_DETOKENIZE_STARTING_QUOTES, text).strip()


# --- Punkt sentences --------------------------------------------------------------------------------------


class _LanguageVars37(PunktLanguageVars):
    """nltk 3.7's English patterns: curly quotes and guillemets are ordinary characters to it."""

    re_boundary_realignment = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)

    @property
    def _re_non_word_chars(self) -> str:
        other_ends = re.escape("".join(set(self.sent_end_chars) - {"."}))
        return r"(?:[)\";}\]\*:@\'\({\[" + other_ends + "])"

    @cache  # noqa: B019 (one instance per process)
    def _word_tokenizer_re(self) -> re.Pattern[str]:
        return re.compile(
            self._word_tokenize_fmt
            % {
                "NonWord": self._re_non_word_chars,
                "MultiChar": self._re_multi_char_punct,
                "WordStart": self._re_word_start,
            },
            re.UNICODE | re.VERBOSE,
        )

    @cache  # noqa: B019
    def period_context_re(self) -> re.Pattern[str]:
        return re.compile(
            self._period_context_fmt % {"NonWord": self._re_non_word_chars, "SentEndChars": self._re_sent_end_chars},
            re.UNICODE | re.VERBOSE,
        )


class _Punkt37(PunktSentenceTokenizer):
    def _match_potential_end_contexts(self, text: str) -> list[tuple[re.Match[str], str]]:
        # nltk 3.7 scans from the end and drops a candidate whose context overlaps the word before the one
        # kept after it; nltk 3.8 rewrote this scan forwards.
        kept: list[tuple[re.Match[str], str]] = []
        before_start = 0
        for match in reversed(list(self._lang_vars.period_context_re().finditer(text))):
            if kept and match.end() > before_start:
                continue
            split = text[: match.start()].rsplit(maxsplit=1)
            before_start = len(split[0]) if len(split) == 2 else 0
            before = split[-1] if split else ""
            kept.append((match, before + match.group() + match.group("after_tok")))
        return kept[::-1]


def _lines(name: str) -> list[str]:
    text = (PUNKT_ENGLISH / name).read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line]


@cache
def _punkt() -> _Punkt37:
    params = PunktParameters()
    params.abbrev_types = set(_lines("abbrev_types.txt"))
    params.sent_starters = set(_lines("sent_starters.txt"))
    params.collocations = {tuple(line.split("\t")) for line in _lines("collocations.tab")}
    params.ortho_context = defaultdict(
        int, {word: int(flags) for word, flags in (line.split("\t") for line in _lines("ortho_context.tab"))}
    )
    tokenizer = _Punkt37(lang_vars=_LanguageVars37())
    tokenizer._params = params
    return tokenizer
