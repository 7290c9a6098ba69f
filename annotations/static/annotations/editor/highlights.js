// Error highlights drawn under the text area (QE4PE-style): a backdrop with the same text and
// metrics as the text area, whose marked spans show through its transparent background. The
// text area stays an ordinary text area on top, so highlights never get in the way of editing.
// Spans move with the edits by the same rule as the server's (annotations/highlights.py): a
// change before a span shifts it, one after it leaves it, one that overlaps it (or inserts
// strictly inside it) edits it, and typing on at the end of an edited span extends it.

import { changedRange } from "./recorder.js";

// The span [start, end) after [changeStart, changeEnd) was replaced by `inserted` units:
// [start, end, touched].
export function mapSpan(start, end, changeStart, changeEnd, inserted, edited = false) {
  const delta = inserted - (changeEnd - changeStart);
  // Typing on at the end of an edited span extends it: a word being retyped stays marked whole.
  if (edited && changeStart === changeEnd && changeStart === end && inserted) return [start, end + inserted, true];
  if (changeEnd <= start) return [start + delta, end + delta, false];
  if (changeStart >= end) return [start, end, false];
  const newStart = start < changeStart ? start : changeStart;
  const newEnd = end > changeEnd ? end + delta : changeStart + inserted;
  return [newStart, Math.max(newStart, newEnd), true];
}

// The backdrop's content for `text` with `spans` marked: text nodes and <mark> elements only
// (textContent: markup in the text is shown, never run).
export function renderMarks(doc, text, spans) {
  const nodes = [];
  let at = 0;
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    if (span.end <= span.start || span.start < at) continue;
    if (span.start > at) nodes.push(doc.createTextNode(text.slice(at, span.start)));
    const mark = doc.createElement("mark");
    mark.dataset.label = span.label;
    mark.className = span.edited ? "edited" : "";
    mark.textContent = text.slice(span.start, span.end);
    nodes.push(mark);
    at = span.end;
  }
  // A trailing newline needs a character after it to take up its line, as in the text area.
  nodes.push(doc.createTextNode(text.slice(at) + "\u200b"));
  return nodes;
}

export function createHighlights({ textarea: ta, backdrop, spans, doc = document, win = window }) {
  let text = ta.value;
  let current = spans.map((span) => ({ ...span }));
  let frame = null;

  function draw() {
    frame = null;
    backdrop.replaceChildren(...renderMarks(doc, text, current));
    backdrop.scrollTop = ta.scrollTop;
  }

  // After an edit (off the typing path: the drawing waits for the next frame).
  function update() {
    const value = ta.value;
    if (value !== text) {
      const [start, end] = changedRange(text, value);
      const inserted = value.length - (text.length - (end - start));
      current = current.map((span) => {
        const [s, e, touched] = mapSpan(span.start, span.end, start, end, inserted, span.edited);
        return { ...span, start: s, end: e, edited: span.edited || touched };
      });
      text = value;
    }
    if (frame === null) frame = win.requestAnimationFrame(draw);
  }

  ta.addEventListener("scroll", () => {
    backdrop.scrollTop = ta.scrollTop;
  });
  draw();
  return {
    update,
    get spans() {
      return current;
    },
  };
}
