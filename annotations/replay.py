"""Replay an editor event log onto the model output (pure; no Django).

The replay is the server's proof that the log is complete: applying the logged input events, in seq
order across all page loads, to the model output must give exactly the submitted text.

All offsets and lengths are UTF-16 code units, as the browser reports them; the text is kept as
UTF-16-LE bytes (offset x 2), so astral characters (emoji) replay exactly.

Rules (the README's contract, "The editor's ingestion API"; events by their wire names):
- `load`: the text the page started with (`data`). If it differs from the replayed text, that is a
  divergence (work lost between visits); replay continues from the load text.
- `input` is matched with the latest `beforeinput` since the previous input (an unmatched beforeinput
  was cancelled). insert*: the selection [before.s, before.e] is replaced by `data`. Without a
  beforeinput, the inserted text is taken to end at the caret (`s`) and the removed length follows
  from `len`. delete*: (length before - len) units are removed at the caret after (`s`).
  historyUndo/historyRedo, any other input type, and any input with `f` true: `data` is the full text.
- insertCompositionText: when the beforeinput reports the composition's range (its `s` is where the
  composition starts), the plain insert rule applies. When it reports the IME's caret instead, the
  composition (from the first such input's selection) is replaced by the latest compositionupdate
  `data` — the whole composition string — because an IME conversion can shrink the composition
  behind the caret, which a caret cannot describe. If the chosen rule does not give the logged
  length, the other one is tried.
- After each input, the text length must equal `len`; the first event where it does not is THE
  divergence point. Finally the text must equal the submitted text.
- A composition's committed text (`compositionend` `data`) is corroborated when the composition's
  last input (by the rules above) inserted exactly that text; the effort counts only corroborated
  compositions' characters (ReplayResult.committed_compositions).
- An input CHANGED NOTHING when it removed nothing and inserted nothing, or, for a full-text input,
  when its text is the text before it (ReplayResult.noop_inputs: such an input corroborates no key,
  and an undo/redo, a paste that changed nothing is no command).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from annotations.log_event import LogEvent

CONTEXT_UNITS = 40


def _encode(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _decode(units: bytes | bytearray) -> str:
    return bytes(units).decode("utf-16-le", "surrogatepass")


def utf16_len(text: str) -> int:
    return len(_encode(text)) // 2


@dataclass(frozen=True)
class ReplayStep:
    """One text change: the UTF-16 range [start, end) of the previous text was replaced by `insert`."""

    seq: int
    kind: str
    start: int
    end: int
    insert: str
    text: str | None  # None unless asked for (decoding the whole text at every step costs)
    divergence: dict | None = None


@dataclass(frozen=True)
class ReplayResult:
    text: str
    ok: bool
    divergence: dict | None
    steps: int
    committed_compositions: frozenset[int] = field(default_factory=frozenset)  # compositionend seqs
    noop_inputs: frozenset[int] = field(default_factory=frozenset)  # seqs of the inputs that changed nothing


@dataclass
class _Composition:
    start: int | None = None
    length: int = 0
    data: str | None = None
    inserted: str | None = None  # what the composition's latest input inserted


def _context(units: bytes | bytearray, at: int) -> str:
    """Text around a point; a surrogate pair cut at the edge becomes U+FFFD (storable anywhere)."""
    low = max(0, at - CONTEXT_UNITS)
    return bytes(units[2 * low : 2 * (at + CONTEXT_UNITS)]).decode("utf-16-le", "replace")


def _first_difference(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b)) // 2
    for unit in range(limit):
        if a[2 * unit : 2 * unit + 2] != b[2 * unit : 2 * unit + 2]:
            return unit
    return limit


def _divergence(event: LogEvent | None, reason: str, *, expected: int, got: int, context: str) -> dict:
    return {
        "seq": None if event is None else event.seq,
        "kind": None if event is None else (event.input_type or event.kind),
        "reason": reason,
        "expected_len": expected,
        "got_len": got,
        "context": context,
    }


def _full_text(event: LogEvent) -> bool:
    return event.full_text or not event.input_type.startswith(("insert", "delete"))


def _plain_operation(length: int, event: LogEvent, before: LogEvent | None) -> tuple[int, int, str]:
    """(start, end, insert) of an input under the contract's rules."""
    if _full_text(event):
        return 0, length, event.data
    caret = event.sel_start if event.sel_start is not None else 0
    after_len = event.length_after if event.length_after is not None else length
    if event.input_type.startswith("delete"):
        return caret, caret + (length - after_len), ""
    if before is not None and before.sel_start is not None:
        end = before.sel_end if before.sel_end is not None else before.sel_start
        return before.sel_start, end, event.data
    start = caret - utf16_len(event.data)
    return start, start + (length - (after_len - utf16_len(event.data))), event.data


def _fits(length: int, operation: tuple[int, int, str], expected: int | None) -> bool:
    start, end, insert = operation
    if not 0 <= start <= end <= length:
        return False
    return expected is None or length - (end - start) + utf16_len(insert) == expected


def _composition_operation(
    length: int, event: LogEvent, before: LogEvent | None, composition: _Composition
) -> tuple[int, int, str]:
    """Which rule describes this composition step: the plain insert or "the composition is replaced".

    A client whose beforeinput reports the composition's range (s = its start) describes the change
    exactly with the plain rule; one that reports the IME's caret does not, and the composition
    rule applies. Whichever comes first and gives the logged length wins.
    """
    plain = _plain_operation(length, event, before)
    if composition.start is None:
        composition.start = plain[0]
        candidates = [plain, (plain[0], plain[1], composition.data or "")]
    else:
        ours = (composition.start, composition.start + composition.length, composition.data or "")
        reports_range = before is not None and before.sel_start == composition.start
        candidates = [plain, ours] if reports_range else [ours, plain]
    for operation in candidates:
        if _fits(length, operation, event.length_after):
            return operation
    return candidates[0]


def iter_replay(
    original: str,
    events: Iterable[LogEvent],
    *,
    with_text: bool = True,
    committed: set[int] | None = None,
    noop: set[int] | None = None,
) -> Iterator[ReplayStep]:
    """Every text change of the log, in seq order (with the text after it if with_text); the seqs of
    the compositionend events whose text the composition inserted are added to `committed`, those of
    the inputs that changed nothing to `noop`."""
    units = bytearray(_encode(original))
    before: LogEvent | None = None
    composition: _Composition | None = None
    for event in sorted(events, key=lambda e: e.seq):
        if event.kind == "load":
            loaded = _encode(event.data)
            divergence = None
            if bytes(units) != loaded:
                at = _first_difference(bytes(units), loaded)
                divergence = _divergence(
                    event,
                    "the text this page load started with differs from the replayed text (work lost between visits?)",
                    expected=len(loaded) // 2,
                    got=len(units) // 2,
                    context=_context(units, at),
                )
            previous_length = len(units) // 2
            units = bytearray(loaded)
            before, composition = None, None
            text = _decode(units) if with_text else None
            yield ReplayStep(event.seq, "load", 0, previous_length, event.data, text, divergence)
        elif event.kind == "beforeinput":
            before = event
        elif event.kind == "compositionstart":
            composition = _Composition()
        elif event.kind == "compositionupdate":
            composition = composition or _Composition()
            composition.data = event.data
        elif event.kind == "compositionend":
            if committed is not None and composition is not None and event.data and composition.inserted == event.data:
                committed.add(event.seq)
            composition = None
        elif event.kind == "input":
            step = _apply_input(units, event, before, composition, with_text=with_text, noop=noop)
            if composition is not None:
                composition.inserted = step.insert
            before = None
            yield step


def _apply_input(
    units: bytearray,
    event: LogEvent,
    before: LogEvent | None,
    composition: _Composition | None,
    *,
    with_text: bool,
    noop: set[int] | None = None,
) -> ReplayStep:
    length = len(units) // 2
    if event.input_type == "insertCompositionText" and composition is not None and composition.data is not None:
        start, end, insert = _composition_operation(length, event, before, composition)
    else:
        start, end, insert = _plain_operation(length, event, before)
    divergence = None
    if not 0 <= start <= end <= length:
        divergence = _divergence(
            event,
            f"the change's range [{start}, {end}) lies outside the text (length {length})",
            expected=event.length_after if event.length_after is not None else -1,
            got=length,
            context=_context(units, min(max(start, 0), length)),
        )
        start = min(max(start, 0), length)
        end = min(max(end, start), length)
    encoded = _encode(insert)
    if noop is not None and (
        units[2 * start : 2 * end] == encoded if _full_text(event) else start == end and not insert
    ):
        noop.add(event.seq)
    units[2 * start : 2 * end] = encoded
    if composition is not None and event.input_type == "insertCompositionText":
        composition.length = utf16_len(insert)
    elif composition is not None and event.input_type.startswith("delete"):
        composition.length = max(0, composition.length - (end - start))
    got = len(units) // 2
    if divergence is None and event.length_after is not None and got != event.length_after:
        divergence = _divergence(
            event,
            "after this input the replayed text has another length than the browser reported",
            expected=event.length_after,
            got=got,
            context=_context(units, start),
        )
    text = _decode(units) if with_text else None
    return ReplayStep(event.seq, event.input_type or "input", start, end, insert, text, divergence)


def replay_texts(original: str, events: Iterable[LogEvent]) -> Iterator[tuple[int, str]]:
    """(event seq, text after) for every text change."""
    for step in iter_replay(original, events, with_text=True):
        assert step.text is not None  # with_text: every step carries its text
        yield step.seq, step.text


def replay(original: str, events: Iterable[LogEvent], *, final_text: str | None = None) -> ReplayResult:
    """Replay the whole log; ok when nothing diverged and the result equals final_text (if given)."""
    ordered = sorted(events, key=lambda e: e.seq)
    units = bytearray(_encode(original))
    divergence = None
    steps = 0
    committed: set[int] = set()
    noop: set[int] = set()
    for step in iter_replay(original, ordered, with_text=False, committed=committed, noop=noop):
        steps += 1
        units[2 * step.start : 2 * step.end] = _encode(step.insert)
        if divergence is None and step.divergence is not None:
            divergence = step.divergence
    text = _decode(units)
    if final_text is not None and text != final_text and divergence is None:
        replayed, submitted = bytes(units), _encode(final_text)
        at = _first_difference(replayed, submitted)
        divergence = _divergence(
            ordered[-1] if ordered else None,
            "the replayed text differs from the submitted text",
            expected=len(submitted) // 2,
            got=len(replayed) // 2,
            context=_context(replayed, at),
        )
        divergence["submitted_context"] = _context(submitted, at)
    ok = divergence is None and (final_text is None or text == final_text)
    return ReplayResult(
        text=text,
        ok=ok,
        divergence=divergence,
        steps=steps,
        committed_compositions=frozenset(committed),
        noop_inputs=frozenset(noop),
    )
