"""A consistent typing session, exactly as the browser's logger sends it (pure: no I/O)."""

import random
from dataclasses import dataclass

LETTERS = "abcdefghijklmnopqrstuvwxyzéè"
DIGITS = "0123456789"
SYMBOLS = ",.;:!?-'()"
WORDS = (
    "the a of and to in is was for on that with as by at from this translation model output "
    "sentence meaning human effort measure word edit fix état naïve résumé quality fluent adequate"
).split()


# ---------------------------------------------------------------- the typing session (pure)


@dataclass
class KeyCounts:
    """The key classes the client typed, counted by what it chose to type (not by the server's rules)."""

    letters: int = 0
    digits: int = 0
    spaces: int = 0
    symbols: int = 0
    erase: int = 0
    navigation: int = 0

    @property
    def keystrokes(self) -> int:
        return self.letters + self.digits + self.spaces + self.symbols + self.erase

    @property
    def allkeys(self) -> int:
        return self.keystrokes + self.navigation


class TypingSession:
    """A consistent event log of one page load, produced batch by batch.

    Keeps the text and caret like the browser's textarea does, so the server's replay of the log
    gives exactly `text`. Offsets are str indices: the texts hold no astral characters, so they equal
    the contract's UTF-16 offsets.
    """

    def __init__(self, text: str, *, next_seq: int, rng: random.Random):
        self.text = text
        self.caret = 0
        self.next_seq = next_seq
        self.rng = rng
        self.counts = KeyCounts()
        self.last_t = 0.0

    def _event(self, t: float, **fields) -> dict:
        event = {"seq": self.next_seq, "t": round(t, 1), **fields}
        self.next_seq += 1
        self.last_t = max(self.last_t, event["t"])
        return event

    def load(self, t: float) -> list[dict]:
        """The page's first events: the text shown and the caret put at its start."""
        return [
            self._event(t, k="load", data=self.text, len=len(self.text), state="visible"),
            self._event(t, k="select", s=0, e=0, src="other"),
        ]

    def type_keys(self, *, keys: int, until_t: float) -> list[dict]:
        """`keys` key presses spread evenly between the last event and `until_t` (ms)."""
        start = self.last_t
        step = max(0.0, until_t - start) / (keys + 1)
        events: list[dict] = []
        for n in range(1, keys + 1):
            events.extend(self._key(start + n * step))
        return events

    def _key(self, t: float) -> list[dict]:
        roll = self.rng.random()
        if roll < 0.66:
            return self._type_char(t, *self._char())
        if roll < 0.76 and self.caret > 0:
            return self._backspace(t)
        if roll < 0.80 and self.caret < len(self.text):
            return self._delete(t)
        if roll < 0.96:
            return self._arrow(t)
        return self._select_and_type(t)

    def _char(self) -> tuple[str, str]:
        roll = self.rng.random()
        if roll < 0.75:
            return self.rng.choice(LETTERS), "letters"
        if roll < 0.90:
            return " ", "spaces"
        if roll < 0.95:
            return self.rng.choice(DIGITS), "digits"
        return self.rng.choice(SYMBOLS), "symbols"

    def _insert(self, t: float, char: str, start: int, end: int) -> list[dict]:
        before = self._event(t + 0.3, k="beforeinput", it="insertText", s=start, e=end)
        self.text = self.text[:start] + char + self.text[end:]
        self.caret = start + len(char)
        after = self._event(t + 0.6, k="input", it="insertText", s=self.caret, len=len(self.text), data=char)
        return [before, after]

    def _keydown(self, t: float, key: str) -> dict:
        code = {" ": "Space"}.get(key, key if len(key) > 1 else "Key" + key.upper())
        return self._event(t, k="keydown", key=key, code=code)

    def _type_char(self, t: float, char: str, kind: str) -> list[dict]:
        setattr(self.counts, kind, getattr(self.counts, kind) + 1)
        return [self._keydown(t, char), *self._insert(t, char, self.caret, self.caret)]

    def _backspace(self, t: float) -> list[dict]:
        self.counts.erase += 1
        events = [
            self._keydown(t, "Backspace"),
            self._event(t + 0.3, k="beforeinput", it="deleteContentBackward", s=self.caret, e=self.caret),
        ]
        self.text = self.text[: self.caret - 1] + self.text[self.caret :]
        self.caret -= 1
        events.append(self._event(t + 0.6, k="input", it="deleteContentBackward", s=self.caret, len=len(self.text)))
        return events

    def _delete(self, t: float) -> list[dict]:
        self.counts.erase += 1
        events = [
            self._keydown(t, "Delete"),
            self._event(t + 0.3, k="beforeinput", it="deleteContentForward", s=self.caret, e=self.caret),
        ]
        self.text = self.text[: self.caret] + self.text[self.caret + 1 :]
        events.append(self._event(t + 0.6, k="input", it="deleteContentForward", s=self.caret, len=len(self.text)))
        return events

    def _arrow(self, t: float) -> list[dict]:
        self.counts.navigation += 1
        key = self.rng.choice(("ArrowLeft", "ArrowRight", "ArrowRight"))
        self.caret = max(0, self.caret - 1) if key == "ArrowLeft" else min(len(self.text), self.caret + 1)
        return [self._keydown(t, key), self._event(t + 0.3, k="select", s=self.caret, e=self.caret, src="key")]

    def _select_and_type(self, t: float) -> list[dict]:
        """Select a few characters with the mouse and type a letter over them."""
        start = self.rng.randrange(0, max(1, len(self.text) - 6))
        end = min(len(self.text), start + self.rng.randint(1, 6))
        self.counts.letters += 1
        char = self.rng.choice(LETTERS)
        return [
            self._event(t, k="mousedown"),
            self._event(t + 0.1, k="select", s=start, e=end, src="mouse"),
            self._keydown(t + 0.2, char),
            *self._insert(t + 0.2, char, start, end),
        ]

    def finish(self, t: float) -> list[dict]:
        """Ctrl+Enter (a shortcut: counts in no key class) and the submit marker."""
        t = max(t, self.last_t)
        return [
            self._event(t, k="keydown", key="Enter", code="Enter", mods=1),
            self._event(t, k="submit"),
        ]


def item_text(rng: random.Random) -> str:
    """A model output of 150-500 characters."""
    target = rng.randint(150, 500)
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < target:
        words.append(rng.choice(WORDS))
    return (" ".join(words).capitalize() + ".")[:target]
