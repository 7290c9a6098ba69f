"""Run EditEval's own metric code on fixed examples and print its numbers as JSON (how test_text_gold's
expected values were made). Not a test and not part of editlab: it needs EditEval's checkout and its pins.

Setup, once (Python 3.9 as in 2022; the versions are EditEval's requirements.txt):

    python3.9 -m venv /tmp/editeval-venv
    /tmp/editeval-venv/bin/pip install nltk==3.7 rouge-score==0.0.4 sacrebleu==2.1.0 cdifflib==1.2.5 \
        sacremoses==0.0.53 numpy==1.22.3 scipy==1.8.1 datasets==2.3.2 protobuf==3.20.0 pandas==1.4.3 \
        matplotlib==3.5.2 pyarrow==8.0.0 dill==0.3.5.1 multiprocess==0.70.13 fsspec==2022.5.0 \
        huggingface-hub==0.8.1 responses==0.18.0 xxhash==3.0.0 requests==2.28.1 aiohttp==3.8.1 'urllib3<1.27'
    # EditEval's repository at commit 013cd20, unpacked at $EDITEVAL (its src/ beside main.py).
    # datasets 2.3.2's metrics/bleu/bleu.py with tensorflow/nmt's nmt/scripts/bleu.py saved beside it as
    # nmt_bleu.py (load_metric("bleu") downloads both; offline, point BLEU_SCRIPT at the local copy and drop
    # the URL comment on its `from .nmt_bleu import` line so datasets takes the file beside it).
    # nltk's English Punkt model as tokenizers/punkt/PY3/english.pickle under /tmp/editeval-venv/nltk_data
    # (built from editlab's metrics/text/punkt_english/ with nltk 3.7's PunktParameters).

Run:

    EDITEVAL=$EDITEVAL BLEU_SCRIPT=/tmp/editeval-metrics/bleu/bleu.py HF_DATASETS_OFFLINE=1 \
        /tmp/editeval-venv/bin/python tests/metrics/editeval_reference.py CASES.json > expected.json

CASES.json: {"corpus name": [{"original": ..., "edited": ..., "gold": [...]}, ...], ...}. For every corpus the
output has EditEval's figure for the whole corpus and for each example alone (a corpus of one), as EditEval's
pipeline computes them (Evaluator.evaluate with normalize=True, as its dataset evaluation always passes); an
error EditEval raises is reported as {"error": "<exception type>"}. update_rouge's corpus figure is the median of
an unseeded bootstrap in EditEval: it is printed for numpy seeds 0-4, beside `update_rouge_mean`, the same
computation with the mean of the examples' scores in place of the bootstrap median.

Then `python tests/metrics/editeval_reference.py --as-python expected.json` prints the EXPECTED table of
tests/metrics/editeval_expected.py (any Python 3.9+; it only reads the JSON).
"""

from __future__ import annotations

import json
import os
import sys
import types

METRICS = ("sari", "gleu", "ibleu", "em", "em_diff", "update_rouge")


def _load_editeval():
    sys.path.insert(0, os.environ["EDITEVAL"])
    # Only FRUIT and WAFER normalize with a T5 tokenizer; the other datasets never touch transformers.
    sys.modules.setdefault("transformers", types.SimpleNamespace(AutoTokenizer=None))
    import datasets
    from src.evaluator import Evaluator
    from src.metrics import custom_metrics

    bleu_script = os.environ["BLEU_SCRIPT"]
    custom_metrics.load_metric = lambda name: datasets.load_metric(bleu_script if name == "bleu" else name)
    return Evaluator


def _score(evaluator, examples: list[dict], metric: str, seed: int | None = None):
    import numpy as np

    if seed is not None:
        np.random.seed(seed)
    try:
        result = evaluator.evaluate(
            inputs=[e["original"] for e in examples],
            predictions=[e["edited"] for e in examples],
            targets=[list(e["gold"]) for e in examples],
            metrics=[metric],
            normalize=True,
        )
    except Exception as exc:  # noqa: BLE001 (what EditEval raises is the answer)
        return {"error": type(exc).__name__}
    if metric == "update_rouge":
        return result["update_rougeLsum"]
    return result[metric]


def _update_rouge_mean(evaluator, examples: list[dict]):
    """EditEval's update_rouge with the mean in place of its bootstrap median: for each of the first example's
    number of gold edits, EditEval's score of every example alone with that gold edit, averaged over examples;
    then averaged over the gold edits."""
    count = len(examples[0]["gold"])
    if any(len(e["gold"]) < count for e in examples):
        return {"error": "IndexError"}
    means = []
    for i in range(count):
        scores = [_score(evaluator, [{**e, "gold": [e["gold"][i]]}], "update_rouge") for e in examples]
        means.append(sum(scores) / len(scores))
    return sum(means) / len(means)


def main(path: str) -> None:
    evaluator = _load_editeval()
    with open(path, encoding="utf-8") as handle:
        corpora = json.load(handle)
    out = {}
    for name, examples in corpora.items():
        corpus = {metric: _score(evaluator, examples, metric) for metric in METRICS}
        corpus["update_rouge_mean"] = _update_rouge_mean(evaluator, examples)
        corpus["update_rouge_bootstrap_seeds_0_4"] = [
            _score(evaluator, examples, "update_rouge", seed) for seed in range(5)
        ]
        per_example = [{metric: _score(evaluator, [e], metric) for metric in METRICS} for e in examples]
        out[name] = {"corpus": corpus, "examples": per_example}
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)


def as_python(path: str) -> None:
    """Print EditEval's numbers (main's JSON) as the EXPECTED table of tests/metrics/editeval_expected.py, under
    editlab's names: exact_match is EditEval's em; update_rouge is update_rougeLsum, per corpus its mean."""
    with open(path, encoding="utf-8") as handle:
        results = json.load(handle)

    def value(v):
        return f"Undefined({v['error']!r})" if isinstance(v, dict) else repr(v)

    def row(values: dict, update_rouge_key: str) -> str:
        names = {"sari": "sari", "gleu": "gleu", "ibleu": "ibleu", "exact_match": "em", "em_diff": "em_diff"}
        cells = [f"{ours!r}: {value(values[theirs])}" for ours, theirs in names.items()]
        cells.append(f"'update_rouge': {value(values[update_rouge_key])}")
        return "{" + ", ".join(cells) + "}"

    print("EXPECTED = {")
    for name, result in results.items():
        boot = ", ".join(value(v) for v in result["corpus"]["update_rouge_bootstrap_seeds_0_4"])
        print(f"    {name!r}: {{")
        print(f"        # EditEval's own update_rouge (bootstrap median), numpy seeds 0-4: {boot}")
        print(f"        'corpus': {row(result['corpus'], 'update_rouge_mean')},")
        print("        'examples': [")
        for example in result["examples"]:
            print(f"            {row(example, 'update_rouge')},")
        print("        ],")
        print("    },")
    print("}")


if __name__ == "__main__":
    if sys.argv[1] == "--as-python":
        as_python(sys.argv[2])
    else:
        main(sys.argv[1])
