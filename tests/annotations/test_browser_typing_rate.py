"""The effort rate bound never trips on the editor's own logger: a fast typist and held keys in Chromium.

Real key presses (CDP input events) at a fast typist's 15 keys/s, then a letter and Backspace held
down with auto-repeat (keydown events with `repeat: true`, as a held key sends them) at 30 keys/s,
then an IME composition driven by keys; the submitted post-edit must have exactly the keys pressed, and no flag. The largest real rate
reached (most keydowns in one second of the stored log) is printed (pytest -s).
"""

import time
from bisect import bisect_right

import pytest

from annotations.effort import RATE_LIMIT_KEYS, RATE_WINDOW_MS, classify_char
from annotations.models import EditEvent
from tests.browser_support import BROWSER_DB, assert_submitted, db_lock, logged_in_page, open_editor, submit_with_keys

pytestmark = [pytest.mark.browser, BROWSER_DB]

TYPED = "Fast typing, 15 keys a second: 42 words!"
TYPING_RATE = 15.0
REPEAT_RATE = 30.0
REPEATS = 60


def paced(count: int, rate: float, press) -> None:
    """Calls press(n) `count` times at `rate` per second (to the clock, not a sleep after each)."""
    start = time.perf_counter()
    for n in range(count):
        wait = start + n / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        press(n)


def hold(page, key: str, repeats: int) -> None:
    """The key pressed, then held: Playwright sends every further down of a pressed key with repeat set."""
    paced(repeats + 1, REPEAT_RATE, lambda n: page.keyboard.down(key))
    page.keyboard.up(key)


def compose_with_keys(page, steps: list[str]) -> None:
    """An IME composition as an IME drives Chromium: a keydown "Process" (keyCode 229) before each
    composition step and before the commit (CDP), the last step committed."""
    cdp = page.context.new_cdp_session(page)
    process = {"type": "rawKeyDown", "key": "Process", "code": "KeyA", "windowsVirtualKeyCode": 229}
    for text in steps:
        cdp.send("Input.dispatchKeyEvent", process)
        cdp.send("Input.imeSetComposition", {"text": text, "selectionStart": len(text), "selectionEnd": len(text)})
    cdp.send("Input.dispatchKeyEvent", process)
    cdp.send("Input.insertText", {"text": steps[-1]})
    cdp.detach()


def most_in_a_window(times: list[float]) -> int:
    times = sorted(times)
    return max((bisect_right(times, at) - bisect_right(times, at - RATE_WINDOW_MS) for at in times), default=0)


def test_a_fast_typist_and_held_keys_count_exactly_and_are_not_flagged(context, site, annotator, item_for):
    assignment = item_for("")
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)

    paced(len(TYPED), TYPING_RATE, lambda n: page.keyboard.press(TYPED[n]))
    hold(page, "x", REPEATS)
    hold(page, "Backspace", REPEATS // 2)
    compose_with_keys(page, ["n", "に", "にh", "にほ", "日本"])  # 6 keys for 2 characters: 2 letters
    expected_text = TYPED + "x" * (REPEATS + 1 - (REPEATS // 2 + 1)) + "日本"
    submit_with_keys(page)

    post_edit, _ = assert_submitted(assignment, expected_text)  # also: no flag at all, key_rate neither
    expected = {"letters": 0, "digits": 0, "spaces": 0, "symbols": 0}
    for char in TYPED:
        expected[classify_char(char)] += 1
    expected["letters"] += REPEATS + 1 + 2
    expected["erase"] = REPEATS // 2 + 1
    assert {name: getattr(post_edit, name) for name in expected} == expected
    assert (post_edit.uncorroborated_keys, post_edit.definition_version) == (0, "3")

    with db_lock():
        keydowns = list(
            EditEvent.objects.filter(post_edit=post_edit, kind="keydown")
            .exclude(key="Control")
            .exclude(key="Enter", modifiers=1)
            .exclude(key="Process")
            .values_list("t_ms", "key", "repeat")
        )
    repeated = [key for _, key, repeat in keydowns if repeat]
    assert repeated == ["x"] * REPEATS + ["Backspace"] * (REPEATS // 2)  # the browser marked the auto-repeats
    typing = [t for t, key, repeat in keydowns[: len(TYPED)]]
    held = [t for t, key, repeat in keydowns[len(TYPED) :]]
    print(
        f"\nlargest real rate: {most_in_a_window([t for t, _, _ in keydowns])} keydowns in one "
        f"{RATE_WINDOW_MS:.0f} ms window (bound {RATE_LIMIT_KEYS}); typing "
        f"{(len(typing) - 1) * 1000 / (typing[-1] - typing[0]):.1f} keys/s, held keys "
        f"{(len(held) - 1) * 1000 / (held[-1] - held[0]):.1f} keys/s on average"
    )
