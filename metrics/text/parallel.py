"""score_pairs: many pairs x many metrics, the per-pair metrics spread over processes.

Work is cut into chunks of pairs; a worker process computes every requested per-pair metric on its chunk.
The workers live on between calls, so each pays a library's set-up once. BERTScore runs batched in the
calling process instead: torch already uses every core.
"""

from __future__ import annotations

import math
import multiprocessing
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from .config import CONFIG, configure, process_count
from .registry import METRICS, Metric, MetricFailed, MetricUnavailable

VARIANTS = ("plain", "with_references")
REFERENCE_SEPARATOR = "\n\n"
# Below this many pairs a process pool costs more than it saves.
PARALLEL_FROM = 64
_MAX_CHUNK = 128


@dataclass(frozen=True)
class Pair:
    original: str
    edited: str
    references: tuple[str, ...] = ()
    gold: tuple[str, ...] = ()


def variant_original(original: str, references: Sequence[str]) -> str:
    """The `with_references` variant's original: the model output, then each reference document, separated
    by a blank line ("\\n\\n"), so text the annotator copied from a reference costs little."""
    return REFERENCE_SEPARATOR.join([original, *references])


def _check_request(metrics: Sequence[str], variant: str) -> list[Metric]:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of: {', '.join(VARIANTS)}")
    chosen = []
    for name in metrics:
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(METRICS)}")
        metric = METRICS[name]
        reason = metric.unavailable_reason()
        if reason is not None:
            raise MetricUnavailable(reason)
        chosen.append(metric)
    return chosen


def _effective_original(pair: Pair, metric: Metric, variant: str) -> str:
    # Gold-based metrics judge an output against gold edits; the references variant does not concern them.
    if variant == "with_references" and metric.family != "gold-based":
        return variant_original(pair.original, pair.references)
    return pair.original


def _score_chunk(
    pairs: Sequence[Pair], names: Sequence[str], variant: str, offset: int = 0
) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {}
    for name in names:
        metric = METRICS[name]
        if metric.batch is not None:
            batched = _score_batch(metric.batch, [(_effective_original(p, metric, variant), p.edited) for p in pairs])
            if batched is not None:
                out[name] = batched
                continue
        values: list[float | None] = []
        for i, pair in enumerate(pairs):
            if not metric.applies_to(references=pair.references, gold=pair.gold):
                values.append(None)
                continue
            original = _effective_original(pair, metric, variant)
            try:
                values.append(float(metric.func(original, pair.edited, references=pair.references, gold=pair.gold)))
            except Exception as exc:
                # A library failing on one text should say which metric and which pair, not just crash.
                raise MetricFailed(name, offset + i, f"{type(exc).__name__}: {exc}") from exc
        out[name] = values
    return out


def _score_batch(
    batch: Callable[[Sequence[tuple[str, str]]], Sequence[float]], texts: list[tuple[str, str]]
) -> list[float | None] | None:
    """A chunk in one call of a metric's batch function; None if it raised, so that the pair-by-pair loop runs
    instead and names the pair that fails."""
    try:
        values: list[float | None] = list(batch(texts))
    except Exception:
        return None
    return values


def _warm_up(names: Sequence[str]) -> None:
    """Run each metric once in this process: a set-up error (say, WordNet missing) surfaces here, once."""
    _score_chunk([Pair("a b", "a c", ("b",), ("a c",))], names, "plain")


def score_pairs(
    pairs: Sequence[Pair | tuple[str, str]],
    metrics: Sequence[str],
    *,
    variant: str = "plain",
    processes: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> dict[str, list[float | None]]:
    """Every requested metric on every pair, values in input order; None where a pair lacks what the metric
    needs (a gold-based metric and no gold). `progress(n)` reports n more (pair, metric) values done."""
    chosen = _check_request(metrics, variant)
    given = [p if isinstance(p, Pair) else Pair(*p) for p in pairs]
    # Each distinct pair is scored once (studies repeat pairs: several annotators leave a text unchanged);
    # every metric is deterministic, so copies get identical values.
    first_position: dict[Pair, int] = {}
    for position, pair in enumerate(given):
        first_position.setdefault(pair, position)
    distinct = list(first_position)
    row_of = {pair: row for row, pair in enumerate(distinct)}
    batched = [m.name for m in chosen if m.name == "bertscore"]
    per_pair = [m.name for m in chosen if m.name != "bertscore"]
    results: dict[str, list[float | None]] = {}
    try:
        if per_pair:
            results.update(_score_per_pair(distinct, per_pair, variant, process_count(processes), progress))
        for name in batched:
            results[name] = _score_bertscore(distinct, variant, progress)
    except MetricFailed as exc:
        raise MetricFailed(exc.metric, first_position[distinct[exc.pair_index]], exc.detail) from exc
    if progress and len(distinct) < len(given):
        progress((len(given) - len(distinct)) * len(chosen))
    return {m.name: [results[m.name][row_of[pair]] for pair in given] for m in chosen}


def _score_per_pair(
    pairs: list[Pair], names: list[str], variant: str, workers: int, progress: Callable[[int], object] | None
) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {name: [None] * len(pairs) for name in names}

    def store(a: int, b: int, values: dict[str, list[float | None]]) -> None:
        for name, chunk_values in values.items():
            out[name][a:b] = chunk_values
        if progress:
            progress((b - a) * len(names))

    if workers <= 1 or len(pairs) < PARALLEL_FROM:
        store(0, len(pairs), _score_chunk(pairs, names, variant))
        return out
    size = max(1, min(_MAX_CHUNK, math.ceil(len(pairs) / (workers * 8))))
    todo = deque((start, min(start + size, len(pairs))) for start in range(0, len(pairs), size))
    # workers - 1 processes take chunks from the front; this process takes them from the back meanwhile, so
    # it is busy from the start (the processes take a moment to start) and nothing waits on a slow last chunk.
    done: queue.Queue = queue.Queue()
    stop = threading.Event()
    if _fork_is_safe():
        _shared_pool(workers - 1)  # fork now, before the feeder thread exists
    feeder = threading.Thread(
        target=_feed_pool, args=(todo, pairs, names, variant, workers - 1, done, stop), daemon=True
    )
    feeder.start()
    try:
        _warm_up(names)  # while the processes start; a set-up error surfaces here once
        finished = False
        while not finished:
            try:
                a, b = todo.pop()
            except IndexError:
                break
            store(a, b, _score_chunk(pairs[a:b], names, variant, a))
            finished = _drain(done, store, block=False)
        if not finished:
            _drain(done, store, block=True)
    finally:
        stop.set()
        feeder.join()
    return out


_FINISHED = object()


def _drain(done: queue.Queue, store: Callable, *, block: bool) -> bool:
    """Store the chunks the worker processes finished; with block, until the feeder is finished. True once
    the feeder is finished. Results are stored in the calling thread, so `progress` never runs elsewhere."""
    while True:
        try:
            item = done.get(block=block)
        except queue.Empty:
            return False
        if item is _FINISHED:
            return True
        if isinstance(item, BaseException):
            raise item
        store(*item)


def _feed_pool(
    todo: deque,
    pairs: list[Pair],
    names: list[str],
    variant: str,
    processes: int,
    done: queue.Queue,
    stop: threading.Event,
) -> None:
    running: dict = {}
    try:
        pool = _shared_pool(processes)
        while not stop.is_set():
            # Keep each process busy with one chunk and one queued, no more: the rest stays takeable.
            while len(running) < 2 * processes:
                try:
                    a, b = todo.popleft()
                except IndexError:
                    break
                running[pool.submit(_score_chunk, pairs[a:b], names, variant, a)] = (a, b)
            if not running:
                break
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                a, b = running.pop(future)
                done.put((a, b, future.result()))
    except BrokenProcessPool as error:
        _discard_pool()
        done.put(error)
    except BaseException as error:  # handed to the calling thread, which raises it
        done.put(error)
    finally:
        for future in running:
            future.cancel()
        done.put(_FINISHED)


# One pool per process, kept between calls: its workers keep their loaded libraries and warm caches
# (WordNet for meteor takes seconds to load), and callers such as compute_metrics call once per chunk.
_pool_lock = threading.Lock()
_pool: tuple[tuple, ProcessPoolExecutor] | None = None


def _shared_pool(processes: int) -> ProcessPoolExecutor:
    """The pool for `processes` workers configured like this process (`configure` may have changed since)."""
    global _pool
    key = (processes, *_settings())
    with _pool_lock:
        if _pool is not None and _pool[0] != key:
            _pool[1].shutdown(wait=False, cancel_futures=True)
            _pool = None
        if _pool is None:
            context = _context()
            executor = ProcessPoolExecutor(
                max_workers=processes, mp_context=context, initializer=_configure_worker, initargs=key[1:]
            )
            if context.get_start_method() == "fork":
                executor.submit(int)  # forks every worker now, from this (the only) thread
            _pool = (key, executor)
        return _pool[1]


def _settings() -> tuple:
    return (str(CONFIG.cache_dir), CONFIG.bertscore_model and str(CONFIG.bertscore_model), CONFIG.bertscore_layers)


def _configure_worker(cache_dir: str, bertscore_model: str | None, bertscore_layers: int) -> None:
    # Workers import this package afresh: without this they would read the environment, not the caller's
    # `configure` (Django's settings), and prepare WordNet in another folder.
    configure(cache_dir=cache_dir, bertscore_model=bertscore_model, bertscore_layers=bertscore_layers)


def _discard_pool() -> None:
    """Forget a pool whose worker died; the next call starts a new one."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool[1].shutdown(wait=False, cancel_futures=True)
            _pool = None


def _context():
    """fork when it is safe, else a fork server.

    Forking copies a process with everything loaded, so workers start at once. It is safe from the main
    thread while no other Python thread runs and torch (whose thread pools do not survive a fork) is not
    loaded: then no lock can be held by a thread the child lacks. libdivsufsort's OpenMP team, which hangs a
    forked child that uses it again, is no risk either: the engine runs it on one thread. Otherwise a fork
    server (a fresh interpreter that imports the metric libraries once) starts the workers, in seconds.
    """
    if _fork_is_safe():
        return multiprocessing.get_context("fork")
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([f"{__package__}.preload"])
        return context
    return multiprocessing.get_context("spawn")


def _fork_is_safe() -> bool:
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.current_thread() is threading.main_thread()
        and threading.active_count() == 1
        and "torch" not in sys.modules
    )


def _score_bertscore(pairs: list[Pair], variant: str, progress: Callable[[int], object] | None) -> list[float | None]:
    from .semantic import BATCH_SIZE, bertscore_many

    metric = METRICS["bertscore"]
    values: list[float | None] = []
    for start in range(0, len(pairs), BATCH_SIZE * 4):
        chunk = pairs[start : start + BATCH_SIZE * 4]
        originals = [_effective_original(p, metric, variant) for p in chunk]
        values.extend(bertscore_many(originals, [p.edited for p in chunk]))
        if progress:
            progress(len(chunk))
    return values
