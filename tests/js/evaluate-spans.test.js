import { equal, test } from "./harness.js";
import { createSpanList, excerpt, moveOffset, pieces, toCodePoints, toUnits } from "/static/annotations/evaluate/spans.js";

const EMOJI = "a😀b"; // the emoji is two UTF-16 units, one code point

test("UTF-16 offsets and code points convert both ways, a pair counted once", () => {
  equal([0, 1, 2, 3, 4].map((u) => toCodePoints(EMOJI, u)), [0, 1, 1, 2, 3]);
  equal([0, 1, 2, 3].map((p) => toUnits(EMOJI, p)), [0, 1, 3, 4]);
});

test("the caret moves by character without splitting a pair, and by word", () => {
  equal(moveOffset(EMOJI, 1, 1), 3);
  equal(moveOffset(EMOJI, 3, -1), 1);
  equal(moveOffset("ab", 2, 1), 2);
  equal(moveOffset("ab", 0, -1), 0);
  const text = "Die Katze saß.";
  equal(moveOffset(text, 0, 1, true), 3);
  equal(moveOffset(text, 3, 1, true), 9);
  equal(moveOffset(text, 9, -1, true), 4);
  equal(moveOffset(text, 14, -1, true), 10);
});

test("overlapping spans cut the text into pieces covered by one or both", () => {
  const spans = [
    { start: 0, end: 5, severity: "minor" },
    { start: 3, end: 8, severity: "major" },
  ];
  equal(pieces("abcdefghij", spans), [
    { start: 0, end: 3, spans: [0] },
    { start: 3, end: 5, spans: [0, 1] },
    { start: 5, end: 8, spans: [1] },
    { start: 8, end: 10, spans: [] },
  ]);
  equal(pieces(EMOJI, [{ start: 1, end: 2 }]), [
    { start: 0, end: 1, spans: [] },
    { start: 1, end: 3, spans: [0] },
    { start: 3, end: 4, spans: [] },
  ]);
});

test("the span list starts from the prefill, each remembering which it was", () => {
  const list = createSpanList([{ start: 1, end: 3, category: "Other", severity: "major" }], { maxSpans: 2 });
  list.edit(0, { severity: "minor" });
  const index = list.add({ start: 0, end: 2, category: "Fluency/Grammar", severity: "critical", comment: "x" });
  equal(index, 1);
  equal(list.payload(), [
    { start: 1, end: 3, category: "Other", severity: "minor", comment: "", side: "target", prefilled: 0 },
    { start: 0, end: 2, category: "Fluency/Grammar", severity: "critical", comment: "x", side: "target" },
  ]);
  let refused = "";
  try {
    list.add({ start: 0, end: 1, category: "Other", severity: "minor" });
  } catch (err) {
    refused = err.message;
  }
  equal(refused, "at most 2 spans");
  list.remove(0);
  equal(list.count(), 1);
  equal(excerpt("Die Katze saß.", { start: 4, end: 9 }), "Katze");
});
