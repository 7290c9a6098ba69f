"""Event logs generated as the editor's logger records them, honest or lying, with the text they lead to.

A Stream keeps the text and caret, so that every log it writes replays exactly to `stream.text`,
and the counts an honest annotator's keys deserve (`stream.truth`). Actions are tuples
(name, argument, gap in ms before it); `honest_actions` and `lying_actions` are the Hypothesis
strategies of the property tests.
"""

from collections import Counter
from dataclasses import dataclass, field

from hypothesis import strategies as st

from annotations.api.serializers_editor import event_from_wire
from annotations.effort import classify_char
from annotations.log_event import LogEvent

TYPED = "abcxyzé0 7.,!?\n"
COMPOSED = "日本語中文한국"


@dataclass
class Stream:
    text: str
    caret: int = 0
    t: float = 0.0
    page: int = 0
    seq: int = 0
    events: list[LogEvent] = field(default_factory=list)
    truth: Counter = field(default_factory=Counter)
    no_effect: Counter = field(default_factory=Counter)  # honest commands that did nothing, by class
    history: list[str] = field(default_factory=list)
    clipboard: str = ""

    def __post_init__(self) -> None:
        self.original = self.text
        self.caret = len(self.text)
        self.reload(0.0)

    # -------------------------------------------------------------- writing events

    def log(self, kind: str, dt: float = 0.0, **fields) -> None:
        self.t += dt
        wire = {"seq": self.seq, "t": self.t, "k": kind, **fields}
        self.events.append(event_from_wire(wire, f"page-{self.page}"))
        self.seq += 1

    def _change(self, start: int, end: int, insert: str) -> None:
        self.history.append(self.text)
        self.text = self.text[:start] + insert + self.text[end:]

    # -------------------------------------------------------------- honest actions

    def reload(self, gap: float) -> None:
        """A new page load of the item: its own clock, starting at 0."""
        self.page += 1
        self.t = max(0.0, gap) if self.events else 0.0
        self.history = []  # the browser's undo history is the page's
        self.log("load", data=self.text, len=len(self.text))

    def type(self, char: str, gap: float, repeat: bool = False) -> None:
        key = "Enter" if char == "\n" else char
        it = "insertLineBreak" if char == "\n" else "insertText"
        at = self.caret
        self.log("keydown", gap, key=key, rep=repeat)
        self.log("beforeinput", 0.5, it=it, s=at, e=at)
        self._change(at, at, char)
        self.caret = at + 1
        self.log("input", 0.5, it=it, s=self.caret, len=len(self.text), data=char)
        self.truth[classify_char(char)] += 1

    def hold(self, char: str, repeats: int, gap: float) -> None:
        """A held key: the press, then auto-repeat at 30 keys/s."""
        self.type(char, gap)
        for _ in range(repeats):
            self.type(char, 1000 / 30 - 1, repeat=True)

    def backspace(self, gap: float) -> None:
        at = self.caret
        self.log("keydown", gap, key="Backspace")
        self.log("beforeinput", 0.5, it="deleteContentBackward", s=at, e=at)
        if at == 0:
            return  # nothing to erase: the browser rejects it, and it counts nowhere
        self._change(at - 1, at, "")
        self.caret = at - 1
        self.log("input", 0.5, it="deleteContentBackward", s=self.caret, len=len(self.text))
        self.truth["erase"] += 1

    def arrow(self, left: bool, gap: float) -> None:
        self.log("keydown", gap, key="ArrowLeft" if left else "ArrowRight")
        self.caret = max(0, self.caret - 1) if left else min(len(self.text), self.caret + 1)
        self.log("select", 0.5, s=self.caret, e=self.caret, src="key")
        self.truth["navigation"] += 1

    def copy(self, gap: float) -> None:
        """Ctrl+C of the text before the caret (nothing when the caret is at the start: no command)."""
        self.log("keydown", gap, key="c", mods=1)
        self.clipboard = self.text[: self.caret]
        self.log("copy", 0.5, data=self.clipboard)
        self.truth["copy"] += bool(self.clipboard)
        self.no_effect["copy"] += not self.clipboard

    def paste(self, gap: float) -> None:
        at = self.caret
        self.log("keydown", gap, key="v", mods=1)
        self.log("paste", 0.5, data=self.clipboard)
        if not self.clipboard:
            self.no_effect["paste"] += 1
            return  # the browser changes nothing: no input, no command
        self.log("beforeinput", 0.5, it="insertFromPaste", s=at, e=at)
        self._change(at, at, self.clipboard)
        self.caret = at + len(self.clipboard)
        self.log("input", 0.5, it="insertFromPaste", s=self.caret, len=len(self.text), data=self.clipboard)
        self.truth["paste"] += 1

    def undo(self, gap: float) -> None:
        self.log("keydown", gap, key="z", mods=1)
        if not self.history:
            self.no_effect["undo_redo"] += 1
            return  # nothing to undo: the browser fires nothing more
        self.log("beforeinput", 0.5, it="historyUndo", s=self.caret, e=self.caret)
        self.text = self.history.pop()
        self.caret = len(self.text)
        self.log("input", 0.5, it="historyUndo", s=self.caret, len=len(self.text), data=self.text)
        self.truth["undo_redo"] += 1

    def compose(self, committed: str, keys: int, gap: float) -> None:
        """An IME composition: `keys` keydowns (the first before compositionstart, as browsers fire it)."""
        at = self.caret
        self.log("keydown", gap, key="Process", code="KeyN")
        self.log("compositionstart", 0.5, data="")
        for _ in range(keys - 1):
            self.log("keydown", 70, key="Process", code="KeyA")
        self.log("compositionupdate", 0.5, data=committed)
        self.log("beforeinput", 0.5, it="insertCompositionText", s=at, e=at)
        self._change(at, at, committed)
        self.caret = at + len(committed)
        self.log("input", 0.5, it="insertCompositionText", s=self.caret, len=len(self.text), data=committed)
        self.log("compositionend", 0.5, data=committed)
        self.truth.update(filter(None, map(classify_char, committed[:keys])))

    # -------------------------------------------------------------- what a lying client adds

    def flood(self, pairs: int, dt: float) -> None:
        """(a, Backspace) pairs that type and erase for real, dt ms apart."""
        for _ in range(pairs):
            self.type("a", dt)
            self.backspace(dt)

    def key_flood(self, key: str, count: int, dt: float) -> None:
        for _ in range(count):
            self.log("keydown", dt, key=key)

    def copy_flood(self, count: int, dt: float) -> None:
        for _ in range(count):
            self.log("copy", dt, data="x")

    def noop_commands(self, count: int, dt: float) -> None:
        """Undo, paste and copy that change nothing, and inserts of nothing after a typed key."""
        for _ in range(count):
            self.log("keydown", dt, key="z", mods=1)
            self.log("beforeinput", 0, it="historyUndo", s=self.caret, e=self.caret)
            self.log("input", 0, it="historyUndo", s=self.caret, len=len(self.text), data=self.text)
            self.log("paste", dt, data="")
            self.log("beforeinput", 0, it="insertFromPaste", s=self.caret, e=self.caret)
            self.log("input", 0, it="insertFromPaste", s=self.caret, len=len(self.text), data="")
            self.log("cut", dt, data="")
            self.log("keydown", dt, key="q")
            self.log("beforeinput", 0, it="insertText", s=self.caret, e=self.caret)
            self.log("input", 0, it="insertText", s=self.caret, len=len(self.text), data="")

    def ime_flood(self, letters: int, keys: int, dt: float) -> None:
        """A composition of `letters` letters from `keys` keydowns, all within a few dt."""
        at = self.caret
        committed = "x" * letters
        self.log("compositionstart", dt, data="")
        for _ in range(keys):
            self.log("keydown", dt, key="Process")
        self.log("compositionupdate", dt, data=committed)
        self.log("beforeinput", 0, it="insertCompositionText", s=at, e=at)
        self._change(at, at, committed)
        self.caret = at + letters
        self.log("input", 0, it="insertCompositionText", s=self.caret, len=len(self.text), data=committed)
        self.log("compositionend", dt, data=committed)

    def jump(self, dt: float) -> None:
        """The client's clock jumps (forwards, or backwards as in logs stored before that was refused)."""
        self.t = max(-1e6, self.t + dt)

    # -------------------------------------------------------------- driving

    def run(self, actions) -> "Stream":
        for name, argument, gap in actions:
            getattr(self, f"_do_{name}")(argument, gap)
        self.log("submit", 1.0)
        return self

    def _do_type(self, argument, gap):
        self.type(argument, gap)

    def _do_hold(self, argument, gap):
        self.hold(argument[0], argument[1], gap)

    def _do_backspace(self, argument, gap):
        self.backspace(gap)

    def _do_arrow(self, argument, gap):
        self.arrow(argument, gap)

    def _do_copy(self, argument, gap):
        self.copy(gap)

    def _do_paste(self, argument, gap):
        self.paste(gap)

    def _do_undo(self, argument, gap):
        self.undo(gap)

    def _do_compose(self, argument, gap):
        committed, extra_keys = argument
        self.compose(committed, len(committed) + extra_keys, gap)

    def _do_reload(self, argument, gap):
        self.reload(gap)

    def _do_flood(self, argument, gap):
        self.flood(argument, gap)

    def _do_key_flood(self, argument, gap):
        self.key_flood(argument[0], argument[1], gap)

    def _do_copy_flood(self, argument, gap):
        self.copy_flood(argument, gap)

    def _do_noop_commands(self, argument, gap):
        self.noop_commands(argument, gap)

    def _do_ime_flood(self, argument, gap):
        self.ime_flood(argument[0], argument[1], gap)

    def _do_jump(self, argument, gap):
        self.jump(argument)


# Human rates: at least 1/15 s between keys (a fast typist), a held key repeating at 30/s.
human_gap = st.floats(1000 / 15, 5000)
honest_action = st.one_of(
    st.tuples(st.just("type"), st.sampled_from(TYPED), human_gap),
    st.tuples(st.just("hold"), st.tuples(st.sampled_from("aé "), st.integers(1, 90)), human_gap),
    st.tuples(st.just("backspace"), st.none(), human_gap),
    st.tuples(st.just("arrow"), st.booleans(), human_gap),
    st.tuples(st.just("copy"), st.none(), human_gap),
    st.tuples(st.just("paste"), st.none(), human_gap),
    st.tuples(st.just("undo"), st.none(), human_gap),
    st.tuples(st.just("compose"), st.tuples(st.text(COMPOSED, min_size=1, max_size=4), st.integers(0, 5)), human_gap),
    st.tuples(st.just("reload"), st.none(), st.floats(0, 500)),
)
honest_actions = st.lists(honest_action, max_size=60)

any_gap = st.one_of(st.just(0.0), st.floats(0, 5), st.floats(0, 5000))
count = st.integers(1, 300)
lie = st.one_of(
    st.tuples(st.just("flood"), count, any_gap),
    st.tuples(
        st.just("key_flood"),
        st.tuples(st.sampled_from(["ArrowLeft", "Backspace", "a", "Home", "Process"]), count),
        any_gap,
    ),
    st.tuples(st.just("copy_flood"), count, any_gap),
    st.tuples(st.just("noop_commands"), st.integers(1, 40), any_gap),
    st.tuples(st.just("ime_flood"), st.tuples(st.integers(1, 3000), st.integers(0, 100)), any_gap),
    st.tuples(st.just("jump"), st.floats(-1e5, 1e8), st.just(0.0)),
    st.tuples(st.just("reload"), st.none(), st.just(0.0)),
)
lying_actions = st.lists(st.one_of(honest_action, lie, lie), max_size=40)
