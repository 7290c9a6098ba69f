"""Imported by the worker fork server (see parallel._context): every library a per-pair metric uses, so
that each forked worker starts with them loaded instead of importing them again."""

import cer  # noqa: F401
import nltk.translate.meteor_score  # noqa: F401
import rapidfuzz.distance  # noqa: F401
import rouge_score.rouge_scorer  # noqa: F401
import sacrebleu.metrics  # noqa: F401
import sacrebleu.tokenizers.tokenizer_13a  # noqa: F401

import metrics.text  # noqa: F401
