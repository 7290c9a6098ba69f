"""score_pairs, the engine's batch entry point: order, None where a metric does not apply, variants,
progress, errors, and identical values whether run in one process or spread over several."""

import importlib.util
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from metrics.text import (
    EFFORT_SUITE,
    METRICS,
    REFERENCE_SEPARATOR,
    Metric,
    MetricFailed,
    MetricUnavailable,
    Pair,
    parallel,
    score_pairs,
    variant_original,
)

PAIRS = [
    Pair("the cat sat on the mat", "a cat sat on a mat"),
    Pair("vwxyz", "zyxwv", gold=("zyxwv",)),
    Pair("Ça va très bien", "ça va bien, merci", references=("merci beaucoup",)),
]


def test_the_effort_suite_is_registered():
    assert EFFORT_SUITE == (
        "compression",
        "levenshtein",
        "levenshtein_words",
        "ter",
        "bleu",
        "chrf",
        "rouge_l",
        "charac_ter",
    )
    assert all(name in METRICS for name in EFFORT_SUITE)


def test_it_returns_values_in_input_order_equal_to_direct_calls():
    values = score_pairs(PAIRS, ["compression", "ter", "bleu"], processes=1)
    assert list(values) == ["compression", "ter", "bleu"]
    for name, column in values.items():
        assert column == [METRICS[name](p.original, p.edited) for p in PAIRS]
    assert values["compression"][1] == 5.0


def test_it_leaves_none_where_a_pair_has_no_gold():
    values = score_pairs(PAIRS, ["exact_match", "levenshtein"], processes=1)
    assert values["exact_match"] == [None, 1.0, None]
    assert values["levenshtein"][1] == 4.0


def test_with_references_appends_the_references_to_the_original():
    assert variant_original("model output", ["doc one", "doc two"]) == "model output\n\ndoc one\n\ndoc two"
    assert REFERENCE_SEPARATOR == "\n\n"
    assert variant_original("alone", []) == "alone"
    pair = Pair("abc", "abc xyzxyz", references=("xyzxyz",))
    plain = score_pairs([pair], ["compression"], processes=1)["compression"][0]
    with_refs = score_pairs([pair], ["compression"], variant="with_references", processes=1)["compression"][0]
    # Plain: "abc" (copied), " ", "x", "y", "z", "xyz" (copied) = 6 phrases.
    # With the reference in the original: "abc", " " (new: the separator is newlines), "xyzxyz" = 3.
    assert (plain, with_refs) == (6.0, 3.0)


def test_gold_metrics_ignore_the_references_variant():
    pair = Pair("a b", "a c", references=("ref",), gold=("a c",))
    plain = score_pairs([pair], ["sari"], processes=1)
    assert score_pairs([pair], ["sari"], variant="with_references", processes=1) == plain


def test_it_rejects_unknown_metrics_and_variants():
    with pytest.raises(ValueError, match="unknown metric 'nope'; known metrics: compression, "):
        score_pairs(PAIRS, ["compression", "nope"])
    with pytest.raises(ValueError, match="unknown variant 'both'; choose one of: plain, with_references"):
        score_pairs(PAIRS, ["compression"], variant="both")


def test_it_refuses_a_metric_whose_extra_is_missing(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a)
    )
    with pytest.raises(MetricUnavailable, match=r"needs the optional extra editlab\[semantic\] \(torch, bert-score\)"):
        score_pairs(PAIRS, ["bertscore"])


def test_it_reports_progress_for_every_value():
    done: list[int] = []
    score_pairs(PAIRS, ["compression", "chrf"], processes=1, progress=done.append)
    assert sum(done) == len(PAIRS) * 2


def many_pairs(n: int) -> list[Pair]:
    words = "the cat sat on a mat dog went away über 日本 é".split()
    return [
        Pair(
            " ".join(words[(i + k) % len(words)] for k in range(i % 9)),
            " ".join(words[(i * 3 + k) % len(words)] for k in range(i % 7)),
            gold=(("the cat",) if i % 4 == 0 else ()),
        )
        for i in range(n)
    ]


def test_worker_processes_give_the_same_values_as_one_process():
    pairs = many_pairs(150)
    names = [*EFFORT_SUITE, "ncd", "hter", "gleu", "em_diff"]
    done: list[int] = []
    spread = score_pairs(pairs, names, processes=2, progress=done.append)
    assert spread == score_pairs(pairs, names, processes=1)
    assert sum(done) == len(pairs) * len(names)
    assert spread["gleu"][1] is None and spread["gleu"][0] is not None


def test_bertscore_is_scored_in_batches_with_the_same_values():
    pairs = [Pair("The cat sat.", "A cat sat."), Pair("", ""), Pair("Hello", "")]
    values = score_pairs(pairs, ["bertscore"])["bertscore"]
    assert values == [pytest.approx(METRICS["bertscore"]("The cat sat.", "A cat sat."), abs=1e-6), 1.0, 0.0]


def test_a_failing_library_names_the_metric_and_the_pair(register_test_metric):
    def fragile(original: str, edited: str, **_: object) -> float:
        return 1 / len(edited)

    register_test_metric("boom", fragile, description="divides by the post-edit's length")
    with pytest.raises(MetricFailed, match="boom failed on pair 2: ZeroDivisionError: division by zero"):
        score_pairs([Pair("a", "b"), Pair("a", "")], ["boom"], processes=1)


def test_repeated_pairs_are_scored_once_and_get_the_same_values(register_test_metric):
    calls: list[tuple[str, str]] = []

    def counting(original: str, edited: str, **_: object) -> float:
        calls.append((original, edited))
        return float(len(edited) - len(original))

    register_test_metric("count", counting, description="length difference")
    pairs = [Pair("a", "abc"), Pair("a", "ab"), Pair("a", "abc"), Pair("a", "abc")]
    done: list[int] = []
    assert score_pairs(pairs, ["count"], processes=1, progress=done.append) == {"count": [2.0, 1.0, 2.0, 2.0]}
    assert calls == [("a", "abc"), ("a", "ab")]
    assert sum(done) == 4


def test_a_failure_on_a_repeated_pair_names_its_first_position(register_test_metric):
    def fragile(original: str, edited: str, **_: object) -> float:
        return 1 / len(edited)

    register_test_metric("boom", fragile, description="divides by the post-edit's length")
    with pytest.raises(MetricFailed, match="boom failed on pair 2: ZeroDivisionError") as failure:
        score_pairs([Pair("a", "b"), Pair("a", ""), Pair("a", "")], ["boom"], processes=1)
    assert failure.value.pair_index == 1


def test_a_batch_function_scores_each_chunk_in_one_call_and_a_failing_batch_names_the_pair(register_test_metric):
    batches: list[list[tuple[str, str]]] = []

    def lengths(pairs):
        batches.append(list(pairs))
        if any(edited == "" for _, edited in pairs):
            raise ZeroDivisionError("division by zero")
        return [1 / len(edited) for _, edited in pairs]

    def fragile(original: str, edited: str, **_: object) -> float:
        return 1 / len(edited)

    register_test_metric("inverse", fragile, batch=lengths, description="one over the post-edit's length")
    assert score_pairs([Pair("a", "bb"), Pair("a", "b")], ["inverse"], processes=1) == {"inverse": [0.5, 1.0]}
    assert batches == [[("a", "bb"), ("a", "b")]]
    with pytest.raises(MetricFailed, match="inverse failed on pair 2: ZeroDivisionError") as failure:
        score_pairs([Pair("a", "b"), Pair("a", "")], ["inverse"], processes=1)
    assert failure.value.pair_index == 1


def test_a_batch_function_is_refused_for_a_metric_that_needs_more_than_the_two_texts():
    with pytest.raises(ValueError, match="a batch function gets only"):
        Metric(
            name="gold_batch",
            func=lambda original, edited, **_: 0.0,
            batch=lambda pairs: [0.0 for _ in pairs],
            family="gold-based",
            direction="similarity",
            needs=frozenset({"gold"}),
            library="test",
            version="1",
            description="refused",
        )


def test_workers_come_from_a_fork_server_when_other_threads_run(monkeypatch):
    monkeypatch.setattr(parallel, "_pool", None)  # start a pool of its own, restored afterwards
    pairs = many_pairs(80)
    seen: dict[str, object] = {}

    def in_a_thread() -> None:
        seen["fork_is_safe"] = parallel._fork_is_safe()
        seen["values"] = score_pairs(pairs, ["compression", "ter"], processes=2)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    pool = parallel._pool[1]
    try:
        assert seen["fork_is_safe"] is False
        assert pool._mp_context.get_start_method() == "forkserver"
        assert seen["values"] == score_pairs(pairs, ["compression", "ter"], processes=1)
    finally:
        pool.shutdown()


FORK_CHECK = """
from metrics.text import Pair, parallel, score_pairs
pairs = [Pair(f"the cat sat {i}", f"a cat sat on {i % 7}") for i in range(100)]
spread = score_pairs(pairs, ["compression", "ter", "chrf"], processes=2)
assert parallel._pool[1]._mp_context.get_start_method() == "fork", "expected forked workers"
assert spread == score_pairs(pairs, ["compression", "ter", "chrf"], processes=1)
print("forked workers agree")
"""


def test_workers_are_forked_from_a_single_threaded_caller():
    # A fresh interpreter: this test process has loaded torch (bertscore), which rules fork out.
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", FORK_CHECK], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "forked workers agree"
