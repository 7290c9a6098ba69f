"""Speed of the process measures (annotations.process): synthetic post-edits in memory.

    python -m editlab.benchmarks.process [--post-edits N] [--events E] [--workers W] [--graph-only]
                                         [--stored N --database-url URL] [--output FILE]

Each synthetic post-edit is a ~150-character MT output edited as post-editors edit: typing at the
end and inside the text (keydown, beforeinput, input), Backspace runs, arrow keys, a paste now and
then, pauses drawn from a long-tailed distribution, about E events in all. 500 distinct logs are
made once and reused in turn (every post-edit is computed in full: trace, measures at the four
default thresholds, nothing cached). Timed: one process, then W processes (multiprocessing, the
logs sent to the workers in chunks), for N post-edits. The S-notation is not part of it (computed
on demand for one post-edit). Also timed: the replay page's process graph (and S-notation) of one
20,000-event post-edit. With --stored N, also the path analyze takes: N post-edits of E events
stored in a throwaway database (events_export's synthetic logs), their measures read and computed
by metrics.selectors_process.process_frame in one process, the time split into reading the logs and
computing. Numbers go to --output between markers (re-runs replace them).
"""

import argparse
import multiprocessing
import os
import platform
import random
import time
from pathlib import Path

from annotations.effort import LogEvent
from annotations.process import DEFAULT_PAUSE_THRESHOLDS_MS, process_measures, s_notation_of_trace, trace_log
from annotations.process.graph import process_graph_svg
from editlab.benchmarks.support import result_file, write_section

START, END = "<!-- benchmark:process:start -->", "<!-- benchmark:process:end -->"
DISTINCT = 500
MT = (
    "The european parliament have adopt yesterday a resolution about the climate change, "
    "which ask the member states to reduce they emissions until 2030 ."
)


def synthetic_log(seed: int, events: int) -> tuple[str, list[LogEvent]]:
    """(start text, log) of about `events` events."""
    rng = random.Random(seed)
    text, caret, t, seq = MT, len(MT), 0.0, 0
    log: list[LogEvent] = []

    def add(kind: str, **fields) -> None:
        nonlocal seq
        log.append(LogEvent(seq=seq, t_ms=t, kind=kind, visit="p", **fields))
        seq += 1

    add("load", data=text, length_after=len(text))
    while len(log) < events:
        t += min(rng.lognormvariate(5.3, 0.9), 30_000.0)  # median ~200 ms, a long tail of pauses
        roll = rng.random()
        if roll < 0.08:  # move elsewhere
            caret = rng.randrange(len(text) + 1)
            add("keydown", key="ArrowLeft")
        elif roll < 0.22 and caret > 0:
            add("keydown", key="Backspace")
            add("beforeinput", input_type="deleteContentBackward", sel_start=caret, sel_end=caret)
            text, caret = text[: caret - 1] + text[caret:], caret - 1
            add("input", input_type="deleteContentBackward", sel_start=caret, length_after=len(text))
        elif roll < 0.23:
            pasted = rng.choice(["member states", "their ", "by 2030"])
            add("keydown", key="v", modifiers=1)
            add("paste", data=pasted)
            add("beforeinput", input_type="insertFromPaste", sel_start=caret, sel_end=caret)
            text, caret = text[:caret] + pasted + text[caret:], caret + len(pasted)
            add("input", input_type="insertFromPaste", sel_start=caret, length_after=len(text), data=pasted)
        else:
            char = rng.choice("etaoinshrdlu      ,.")
            add("keydown", key=char)
            add("beforeinput", input_type="insertText", sel_start=caret, sel_end=caret)
            text, caret = text[:caret] + char + text[caret:], caret + 1
            add("input", input_type="insertText", sel_start=caret, length_after=len(text), data=char)
    return MT, log


_LOGS: list[tuple[str, list[LogEvent]]] = []


def _init(events: int) -> None:
    _LOGS[:] = [synthetic_log(seed, events) for seed in range(DISTINCT)]


def _run(span: tuple[int, int]) -> int:
    """Measures of post-edits span[0] .. span[1]-1 (the logs in turn); how many intervals they had."""
    intervals = 0
    for index in range(*span):
        start, log = _LOGS[index % DISTINCT]
        intervals += len(process_measures(start, log, thresholds_ms=DEFAULT_PAUSE_THRESHOLDS_MS).intervals)
    return intervals


STORED_START, STORED_END = "<!-- benchmark:process-stored:start -->", "<!-- benchmark:process-stored:end -->"


def run_stored(database_url: str | None, post_edits: int, events: int) -> list[str]:
    """process_frame over `post_edits` stored post-edits of `events` events: wall, reading, computing."""
    import tempfile

    from editlab.benchmarks import events_export
    from editlab.benchmarks.support import setup_django

    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(database_url, Path(folder))
        from annotations.models import PostEdit
        from annotations.process import measures as measures_module
        from metrics import selectors_process

        began = time.perf_counter()
        stored = events_export.grow(post_edits * events, events, seed=11)
        filled = time.perf_counter() - began
        ids = list(
            PostEdit.objects.filter(assignment__item__project__name=events_export.PROJECT).values_list("id", flat=True)
        )
        computing = [0.0]
        compute = measures_module.process_measures

        def timed_compute(*args, **kwargs):
            began = time.perf_counter()
            try:
                return compute(*args, **kwargs)
            finally:
                computing[0] += time.perf_counter() - began

        selectors_process.process_measures = timed_compute
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            frame = selectors_process.process_frame(post_edit_ids=ids)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            selectors_process.process_measures = compute
    return [
        f"- {vendor}: {len(frame):,} stored post-edits, {stored:,} events (stored in {filled:.0f} s, not timed)",
        f"- process_frame, one process: {wall:.1f} s ({cpu:.1f} s CPU of this process; "
        f"{wall / len(frame) * 1e6:.0f} µs a post-edit): computing {computing[0]:.1f} s, "
        f"reading the logs {wall - computing[0]:.1f} s",
    ]


GRAPH_START, GRAPH_END = "<!-- benchmark:process-graph:start -->", "<!-- benchmark:process-graph:end -->"


def run_graph(events: int = 20_000) -> list[str]:
    """The replay page's process work for one long post-edit: trace and graph, then the S-notation."""
    start, log = synthetic_log(1, events)
    wall, cpu = time.perf_counter(), time.process_time()
    trace = trace_log(start, log)
    svg = process_graph_svg(trace)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lines = [
        f"- a {len(log):,}-event post-edit ({len(trace.changes):,} text changes): trace and process graph "
        f"({len(svg) // 1024} KiB of SVG) in {wall:.2f} s ({cpu:.2f} s CPU): goal under 1 s"
    ]
    wall, cpu = time.perf_counter(), time.process_time()
    s_notation_of_trace(trace)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lines.append(f"- its S-notation: {wall:.2f} s ({cpu:.2f} s CPU; the page draws it up to 2,000 changes)")
    return lines


def run(post_edits: int, events: int, workers: int) -> list[str]:
    _init(events)
    lines = [
        f"- {post_edits:,} post-edits x {sum(len(log) for _, log in _LOGS) / DISTINCT:.0f} events on average "
        f"({DISTINCT} distinct synthetic logs in turn), measures at {', '.join(f'{t:g}' for t in DEFAULT_PAUSE_THRESHOLDS_MS)} ms"
    ]
    single = min(post_edits, 10_000)
    began = time.perf_counter()
    _run((0, single))
    one = time.perf_counter() - began
    lines.append(
        f"- one process: {single:,} post-edits in {one:.1f} s ({one / single * 1e6:.0f} µs a post-edit; "
        f"{post_edits:,} would take {one / single * post_edits:.0f} s)"
    )
    chunk = 1000
    spans = [(low, min(low + chunk, post_edits)) for low in range(0, post_edits, chunk)]
    began = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers, initializer=_init, initargs=(events,)) as pool:
        ready = time.perf_counter() - began
        began = time.perf_counter()
        sum(pool.imap_unordered(_run, spans))
    many = time.perf_counter() - began
    lines.append(
        f"- {workers} processes: {post_edits:,} post-edits in {many:.1f} s (plus {ready:.1f} s to start the "
        f"workers and make their logs): goal under 60 s"
    )
    lines.append(f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--post-edits", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--output", type=Path, default=result_file("process"))
    parser.add_argument("--graph-only", action="store_true", help="time only the replay page's process graph")
    parser.add_argument("--stored", type=int, default=0, help="also time N post-edits read from a database")
    parser.add_argument("--database-url", help="the throwaway database for --stored (default: a SQLite file)")
    options = parser.parse_args()
    if options.stored:
        lines = run_stored(options.database_url, options.stored, options.events)
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        body = "\n".join(
            [
                STORED_START,
                f"Measures of stored logs (--stored, {time.strftime('%Y-%m-%d')}, load average {load}):",
                "",
                *lines,
                STORED_END,
            ]
        )
        print(body)
        write_section(options.output, STORED_START, STORED_END, body)
        return
    graph = "\n".join([GRAPH_START, "The replay page's process graph:", "", *run_graph(), GRAPH_END])
    print(graph)
    write_section(options.output, GRAPH_START, GRAPH_END, graph)
    if options.graph_only:
        return
    lines = run(options.post_edits, options.events, options.workers)
    body = "\n".join(
        [
            START,
            f"Process measures (python -m editlab.benchmarks.process, {time.strftime('%Y-%m-%d')}, "
            f"load average {', '.join(f'{value:.2f}' for value in os.getloadavg())} at the end):",
            "",
            *lines,
            END,
        ]
    )
    print(body)
    write_section(options.output, START, END, body)


if __name__ == "__main__":
    main()
