import { equal, test, textarea } from "./harness.js";
import { createHighlights, mapSpan, renderMarks } from "/static/annotations/editor/highlights.js";

test("a span shifts with changes before it and is edited by changes inside it", () => {
  equal(mapSpan(5, 9, 0, 2, 0), [3, 7, false], "deletion before");
  equal(mapSpan(5, 9, 5, 5, 3), [8, 12, false], "insertion at its start");
  equal(mapSpan(5, 9, 9, 9, 2), [5, 9, false], "insertion at its end");
  equal(mapSpan(5, 9, 12, 14, 1), [5, 9, false], "change after");
  equal(mapSpan(5, 9, 7, 7, 2), [5, 11, true], "insertion inside");
  equal(mapSpan(5, 9, 3, 6, 1), [3, 7, true], "replacement over its start");
  equal(mapSpan(5, 9, 8, 12, 0), [5, 8, true], "deletion over its end");
  equal(mapSpan(5, 9, 4, 10, 0), [4, 4, true], "deleted whole");
  equal(mapSpan(5, 6, 6, 6, 1, true), [5, 7, true], "typing on at the end of an edited span");
  equal(mapSpan(5, 5, 5, 5, 1, true), [5, 6, true], "retyping a deleted span");
  equal(mapSpan(5, 6, 6, 6, 1, false), [5, 6, false], "typing after an untouched span");
});

test("the backdrop marks the spans as text, never markup", () => {
  const nodes = renderMarks(document, "a <b>x</b> z", [{ start: 2, end: 10, label: "major", edited: false }]);
  const box = document.createElement("div");
  box.append(...nodes);
  equal(box.querySelector("mark").textContent, "<b>x</b>");
  equal(box.querySelector("b"), null);
  equal(box.querySelector("mark").dataset.label, "major");
});

test("overlapping or empty spans are skipped instead of drawn twice", () => {
  const box = document.createElement("div");
  box.append(
    ...renderMarks(document, "abcdef", [
      { start: 0, end: 3, label: "x" },
      { start: 2, end: 4, label: "y" },
      { start: 5, end: 5, label: "z" },
    ]),
  );
  equal(box.querySelectorAll("mark").length, 1);
});

test("the overlay follows edits and marks the spans whose text changed", async () => {
  const ta = textarea("The cat sat on teh mat.");
  const backdrop = document.createElement("div");
  document.body.append(backdrop);
  const overlay = createHighlights({
    textarea: ta,
    backdrop,
    spans: [
      { start: 4, end: 7, label: "minor", edited: false },
      { start: 15, end: 18, label: "major", edited: false },
    ],
  });
  ta.value = "A cat sat on teh mat.";
  overlay.update();
  ta.value = "A cat sat on the mat.";
  overlay.update();
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  equal(
    overlay.spans.map((s) => [s.start, s.end, s.edited]),
    [
      [2, 5, false],
      [13, 16, true],
    ],
  );
  equal(
    [...backdrop.querySelectorAll("mark")].map((m) => [m.textContent, m.className]),
    [
      ["cat", ""],
      ["the", "edited"],
    ],
  );
});
