// The evaluated text on the page: drawn in pieces with its (overlapping) spans marked, and the
// selection in it read and set as offsets, by mouse (the browser's selection) or keyboard (shift and
// the arrows move the selection's focus; the browser does not, on text that is not editable).

import { moveOffset, pieces, toCodePoints, toUnits } from "./spans.js";

// The UTF-16 offset in `root`'s text of the point (node, offset); a point before the text is its
// start, one after it its end (a drag that ends outside the text), none for a point elsewhere.
export function offsetOf(root, node, offset) {
  if (!node) return null;
  if (!root.contains(node)) {
    const where = root.compareDocumentPosition(node);
    if (where & Node.DOCUMENT_POSITION_PRECEDING) return 0;
    if (where & Node.DOCUMENT_POSITION_FOLLOWING) return root.textContent.length;
    return null;
  }
  const range = root.ownerDocument.createRange();
  range.setStart(root, 0);
  range.setEnd(node, offset);
  return range.toString().length;
}

// The (text node, offset) at UTF-16 offset `units` of `root`'s text.
export function pointAt(root, units) {
  const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let seen = 0;
  let last = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (units <= seen + node.length) return [node, units - seen];
    seen += node.length;
    last = node;
  }
  return last ? [last, last.length] : [root, 0];
}

// Draws `text` into `root` with `spans` (code points) marked; a piece under several spans is marked
// once with all their indices and its depth.
export function draw(root, text, spans) {
  const doc = root.ownerDocument;
  const parts = [];
  for (const piece of pieces(text, spans)) {
    const value = text.slice(piece.start, piece.end);
    if (!piece.spans.length) {
      parts.push(doc.createTextNode(value));
      continue;
    }
    const mark = doc.createElement("mark");
    const worst = piece.spans.map((i) => spans[i].severity).sort(bySeverity)[0];
    mark.className = `error-span severity-${worst} depth-${Math.min(piece.spans.length, 3)}`;
    mark.dataset.spans = piece.spans.join(" ");
    mark.textContent = value;
    parts.push(mark);
  }
  root.replaceChildren(...parts);
}

const ORDER = ["critical", "major", "minor", "neutral"];
const bySeverity = (a, b) => ORDER.indexOf(a) - ORDER.indexOf(b);

// The selection over `root` as the rater moves it: {anchor, focus} in UTF-16 units.
export function createSelection(root, text, win = window) {
  let anchor = 0;
  let focus = 0;

  // The browser's selection, when it lies in the text (a mouse selection), becomes ours.
  function read() {
    const selection = win.getSelection();
    if (!selection || selection.rangeCount === 0) return;
    const a = offsetOf(root, selection.anchorNode, selection.anchorOffset);
    const f = offsetOf(root, selection.focusNode, selection.focusOffset);
    // Ours only when it touches the text: a selection elsewhere on the page (or none) keeps ours.
    if (a === null || f === null || !(root.contains(selection.anchorNode) || root.contains(selection.focusNode))) return;
    anchor = a;
    focus = f;
  }

  function show() {
    const selection = win.getSelection();
    if (!selection) return;
    const [an, ao] = pointAt(root, anchor);
    const [fn, fo] = pointAt(root, focus);
    selection.setBaseAndExtent(an, ao, fn, fo);
  }

  // A key on the text: true when it moved the selection (the page then ignores it).
  function key(event) {
    const byWord = event.ctrlKey || event.altKey;
    let target = null;
    if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      read();
      const forward = (event.key === "ArrowRight") !== (win.getComputedStyle(root).direction === "rtl");
      target = moveOffset(text, focus, forward ? 1 : -1, byWord);
    } else if (event.key === "Home") {
      read();
      target = 0;
    } else if (event.key === "End") {
      read();
      target = text.length;
    }
    if (target === null) return false;
    focus = target;
    if (!event.shiftKey) anchor = target;
    show();
    return true;
  }

  return {
    read,
    key,
    // The selection as a span's offsets in code points, start before end ([s, s] when empty).
    range() {
      const [s, e] = anchor <= focus ? [anchor, focus] : [focus, anchor];
      return { start: toCodePoints(text, s), end: toCodePoints(text, e) };
    },
    set(start, end) {
      anchor = toUnits(text, start);
      focus = toUnits(text, end);
      show();
    },
    collapse(at) {
      anchor = focus = toUnits(text, at);
      show();
    },
  };
}
