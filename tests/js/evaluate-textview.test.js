import { equal, test } from "./harness.js";
import { createSelection, draw, offsetOf, pointAt } from "/static/annotations/evaluate/textview.js";

function root(text) {
  const div = document.createElement("div");
  div.tabIndex = 0;
  div.textContent = text;
  document.body.append(div);
  return div;
}

const key = (props) => ({ ctrlKey: false, altKey: false, shiftKey: false, metaKey: false, ...props });

test("overlapping spans are drawn as marks whose text is the text", () => {
  const text = "Die Katze saß.";
  const div = root(text);
  draw(div, text, [
    { start: 4, end: 9, severity: "major" },
    { start: 0, end: 5, severity: "minor" },
  ]);
  equal(div.textContent, text);
  equal(
    [...div.querySelectorAll("mark")].map((m) => [m.textContent, m.dataset.spans, m.className]),
    [
      ["Die ", "1", "error-span severity-minor depth-1"],
      ["K", "0 1", "error-span severity-major depth-2"],
      ["atze", "0", "error-span severity-major depth-1"],
    ],
  );
  const mark = div.querySelectorAll("mark")[1];
  equal(offsetOf(div, mark.firstChild, 1), 5);
  const [node, at] = pointAt(div, 6);
  equal([node.textContent, at], ["atze", 1]);
});

test("shift and the arrows select by character and by word, in code points", () => {
  const text = "a😀 bc de";
  const div = root(text);
  draw(div, text, []);
  const selection = createSelection(div, text);
  selection.collapse(0);
  selection.key(key({ key: "ArrowRight", shiftKey: true }));
  selection.key(key({ key: "ArrowRight", shiftKey: true }));
  equal(selection.range(), { start: 0, end: 2 });
  equal(window.getSelection().toString(), "a😀");
  selection.key(key({ key: "ArrowRight", shiftKey: true, ctrlKey: true }));
  equal(selection.range(), { start: 0, end: 5 });
  selection.key(key({ key: "ArrowLeft" }));
  equal(selection.range(), { start: 4, end: 4 });
  selection.key(key({ key: "End", shiftKey: true }));
  equal(selection.range(), { start: 4, end: 8 });
  equal(selection.key(key({ key: "x" })), false);
});

test("a selection made by the mouse (the browser's) is read as offsets, backwards too", () => {
  const text = "Die Katze saß.";
  const div = root(text);
  draw(div, text, [{ start: 4, end: 9, severity: "minor" }]);
  const selection = createSelection(div, text);
  const [endNode, endAt] = pointAt(div, 13);
  const [startNode, startAt] = pointAt(div, 6);
  window.getSelection().setBaseAndExtent(endNode, endAt, startNode, startAt);
  selection.read();
  equal(selection.range(), { start: 6, end: 13 });
});

test("a drag that ends past the text selects to its end; a selection elsewhere keeps ours", () => {
  const text = "Die Katze saß.";
  const div = root(text);
  draw(div, text, []);
  const after = document.createElement("p");
  after.textContent = "elsewhere";
  document.body.append(after);
  const selection = createSelection(div, text);
  const [node, at] = pointAt(div, 4);
  window.getSelection().setBaseAndExtent(node, at, after.firstChild, 3);
  selection.read();
  equal(selection.range(), { start: 4, end: 14 });
  window.getSelection().setBaseAndExtent(after.firstChild, 0, after.firstChild, 2);
  selection.read();
  equal(selection.range(), { start: 4, end: 14 });
});
