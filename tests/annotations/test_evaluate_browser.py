"""The error-span task in Chromium: one span selected by mouse, one by keyboard (overlapping it), an
omission in the source, a prefilled span edited and one deleted, an ESA score, submit; the exact stored
spans and the log."""

import pytest
from django.urls import get_resolver

from annotations.models import Evaluation, EvaluationEvent
from annotations.services.evaluation_task import evaluation_assign
from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.factories import ItemFactory, ProjectFactory

pytestmark = [pytest.mark.browser, BROWSER_DB]

TEXT = "Der Hund 😀 bellt laut heute."  # the emoji: two UTF-16 units, one code point
KEY_DELAY_MS = 25

# The client rectangle of the characters [start, end) (UTF-16 units) of the task's text.
RECT = """([start, end]) => {
  const root = document.getElementById("evaluation-text");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const point = (units) => {
    let seen = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (units <= seen + node.length) return [node, units - seen];
      seen += node.length;
    }
  };
  const range = document.createRange();
  range.setStart(...point(start));
  walker.currentNode = root;
  range.setEnd(...point(end));
  const r = range.getBoundingClientRect();
  return {left: r.left, right: r.right, y: r.top + r.height / 2};
}"""


@pytest.fixture
def esa_ai(annotator):
    with db_lock():
        project = ProjectFactory(name="ESA study", idle_threshold_s=30)
        ItemFactory(
            project=project,
            external_id="seg-1",
            source="The dog barks loudly today.",
            outputs={"sysA": TEXT},
            highlights={"sysA": [[0, 3, "minor"], [23, 28, "major"]]},
        )
        evaluation_assign(project=project, raters=[annotator], systems=["sysA"], protocol="esa", prefill=True)
        return Evaluation.objects.get()


def test_spans_by_mouse_and_keyboard_are_stored_exactly(context, site, annotator, esa_ai):
    get_resolver().url_patterns  # noqa: B018 - loaded before the browser asks
    page = logged_in_page(context, site, annotator)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/evaluate/{esa_ai.pk}/")
    page.wait_for_function("() => window.__editlabEvaluation !== undefined")
    assert page.locator("#span-list li").count() == 2  # the prefilled spans, to check

    # By mouse: drag over "Hund" (characters 4..8), then Enter opens the chooser.
    box = page.evaluate(RECT, [4, 8])
    page.mouse.move(box["left"] + 1, box["y"])
    page.mouse.down()
    page.mouse.move((box["left"] + box["right"]) / 2, box["y"], steps=3)
    page.mouse.move(box["right"] - 0.5, box["y"], steps=3)
    page.mouse.up()
    assert page.evaluate("() => window.getSelection().toString()") == "Hund"
    page.keyboard.press("Enter")
    page.wait_for_selector("#span-chooser[open]")
    page.select_option("#span-category", "Accuracy/Mistranslation")
    page.check("#span-chooser input[value=major]")
    page.fill("#span-comment", "a cat, not a dog")
    page.click("#chooser-save")
    page.wait_for_selector("#span-chooser", state="hidden")

    # By keyboard: from the start, 6 characters right, then Shift+Right over "nd 😀 b" (overlaps "Hund").
    text = page.locator("#evaluation-text")
    text.focus()
    page.keyboard.press("Home")
    for _ in range(6):
        page.keyboard.press("ArrowRight", delay=KEY_DELAY_MS)
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight", delay=KEY_DELAY_MS)
    assert page.evaluate("() => window.getSelection().toString()") == "nd 😀 b"
    page.keyboard.press("m")
    page.wait_for_selector("#span-chooser[open]")
    page.keyboard.press("Tab")  # from the category to the severities: the first (minor) is checked
    page.keyboard.press("Enter")  # the form's default button: Save
    page.wait_for_selector("#span-chooser", state="hidden")

    # An omission in the source: "dog", by keyboard.
    page.locator("#source-text").focus()
    page.keyboard.press("Home")
    page.keyboard.press("Control+ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+Control+ArrowRight")
    assert page.evaluate("() => window.getSelection().toString()") == "dog"
    page.keyboard.press("Enter")
    page.wait_for_selector("#span-chooser[open]")
    page.select_option("#span-category", "Accuracy/Omission")
    page.click("#chooser-save")
    page.wait_for_selector("#span-chooser", state="hidden")

    # The prefilled spans: the first's severity changed, the second deleted.
    page.click("#span-list li[data-index='0'] button[data-action=edit]")
    page.check("#span-chooser input[value=critical]")
    page.click("#chooser-save")
    page.click("#span-list li[data-index='1'] button[data-action=delete]")
    assert page.locator("mark.depth-2").count() == 1  # "nd" lies under both new spans

    page.fill("#esa-score", "35")
    with page.expect_navigation(url="**/evaluate/"):
        page.keyboard.press("Control+Enter")
    assert errors == []

    with db_lock():
        done = Evaluation.objects.get(pk=esa_ai.pk)
        spans = list(
            done.spans.values_list("side", "start", "end", "category", "severity", "comment", "prefilled", "edited")
        )
        kinds = list(EvaluationEvent.objects.filter(evaluation=done).order_by("seq").values_list("seq", "kind"))
    assert (done.status, done.esa_score) == ("submitted", 35.0)
    assert spans == [
        ("target", 0, 3, "Other", "critical", "", 0, True),
        ("target", 4, 8, "Accuracy/Mistranslation", "major", "a cat, not a dog", None, False),
        ("target", 6, 12, "Accuracy/Addition", "minor", "", None, False),
        ("source", 4, 7, "Accuracy/Omission", "minor", "", None, False),
    ]
    assert [seq for seq, _ in kinds] == list(range(len(kinds)))
    assert kinds[0][1] == "load" and kinds[-1][1] == "submit"
    assert [kind for _, kind in kinds].count("span_add") == 3
    assert [kind for _, kind in kinds].count("span_delete") == 1
    assert 0 < done.active_ms <= done.wall_ms
