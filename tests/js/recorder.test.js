import { equal, test, textarea } from "./harness.js";
import { changedRange, createRecorder, describeInput, modifierBits } from "/static/annotations/editor/recorder.js";

function recorder(text, { recording = true } = {}) {
  const ta = textarea();
  const log = [];
  let edits = 0;
  const state = { recording };
  const rec = createRecorder({
    textarea: ta,
    log: (ev) => {
      ev.seq = log.length;
      log.push(ev);
      return ev;
    },
    isRecording: () => state.recording,
    onEdit: () => edits++,
  });
  rec.start(text);
  return { ta, log, rec, state, edits: () => edits };
}

// What the browser does when the user types `data` over the selection.
function type(r, data) {
  const { ta, rec } = r;
  rec.handlers.onBeforeInput({ inputType: "insertText" });
  const s = ta.selectionStart;
  ta.value = ta.value.slice(0, s) + data + ta.value.slice(ta.selectionEnd);
  ta.setSelectionRange(s + data.length, s + data.length);
  rec.handlers.onInput({ inputType: "insertText" });
}

test("the changed range is the part between the common prefix and suffix", () => {
  equal(changedRange("abc", "abXc"), [2, 2]);
  equal(changedRange("abcd", "ad"), [1, 3]);
  equal(changedRange("same", "same"), [4, 4]);
  equal(changedRange("", "new"), [0, 0]);
});

test("modifier bits: ctrl 1, shift 2, alt 4, meta 8", () => {
  equal(modifierBits({ ctrlKey: true, altKey: true }), 5);
  equal(modifierBits({ shiftKey: true, metaKey: true }), 10);
});

test("an input is described by what the selection replaced, else by the full text", () => {
  equal(describeInput("abc", "abXc", { s: 2, e: 2 }, "insertText", 3), {
    k: "input",
    it: "insertText",
    s: 3,
    len: 4,
    data: "X",
  });
  equal(describeInput("color", "colour", { s: 0, e: 0 }, "insertReplacementText", 6), {
    k: "input",
    it: "insertReplacementText",
    s: 6,
    len: 6,
    data: "colour",
    f: true,
  });
  equal(describeInput("abc", "ac", { s: 1, e: 2 }, "deleteContentBackward", 1), {
    k: "input",
    it: "deleteContentBackward",
    s: 1,
    len: 2,
  });
  equal(describeInput("abc", "abc", { s: 0, e: 0 }, "historyUndo", 0).data, "abc");
});

test("the page load logs the starting text and the caret", () => {
  const { log, ta } = recorder("Start");
  equal(
    log.map((e) => e.k),
    ["load", "select"],
  );
  equal([log[0].data, log[0].len, ta.readOnly], ["Start", 5, false]);
});

test("typing logs keydown, beforeinput and input with the inserted text", () => {
  const r = recorder("ab");
  r.ta.setSelectionRange(2, 2);
  r.rec.handlers.onKeydown({ key: "c", code: "KeyC", shiftKey: false, repeat: false });
  type(r, "c");
  const [key, before, input] = r.log.slice(2);
  equal(key, { k: "keydown", key: "c", code: "KeyC", mods: 0, rep: false, seq: 2 });
  equal([before.k, before.it, before.s, before.e], ["beforeinput", "insertText", 2, 2]);
  equal([input.k, input.data, input.len], ["input", "c", 3]);
  equal(r.edits(), 1);
});

test("an input without beforeinput is described from the text itself", () => {
  const r = recorder("abc");
  r.ta.value = "abXc";
  r.ta.setSelectionRange(3, 3);
  r.rec.handlers.onInput({ inputType: "insertText" });
  const [before, input] = r.log.slice(2);
  equal([before.k, before.s, before.e, input.data], ["beforeinput", 2, 2, "X"]);
});

test("a composition replaces the IME's own range, not the caret", () => {
  const r = recorder("x");
  r.ta.setSelectionRange(1, 1);
  r.rec.handlers.onCompositionStart();
  r.rec.handlers.onBeforeInput({ inputType: "insertCompositionText" });
  r.ta.value = "xに";
  r.ta.setSelectionRange(2, 2);
  r.rec.handlers.onInput({ inputType: "insertCompositionText" });
  r.rec.handlers.onBeforeInput({ inputType: "insertCompositionText" });
  const second = r.log[r.log.length - 1];
  equal([second.s, second.e], [1, 2], "the second update replaces the whole composition");
  r.rec.handlers.onCompositionEnd({ data: "に" });
  equal(r.log[r.log.length - 1], { k: "compositionend", data: "に", seq: r.log.length - 1 });
});

test("a selection made with the mouse says so, and an unchanged one is not logged again", () => {
  const r = recorder("hello");
  r.rec.handlers.onMousedown();
  r.ta.setSelectionRange(1, 3);
  r.rec.handlers.noteSelection();
  r.rec.handlers.noteSelection();
  r.rec.handlers.onMouseup();
  const selects = r.log.filter((e) => e.k === "select");
  equal(selects.length, 2);
  equal([selects[1].s, selects[1].e, selects[1].src], [1, 3, "mouse"]);
});

test("nothing is logged while not recording", () => {
  const r = recorder("abc");
  r.state.recording = false;
  r.rec.handlers.onKeydown({ key: "x" });
  r.rec.handlers.onPaste({ clipboardData: null });
  r.rec.handlers.onVisibility();
  equal(r.log.length, 2);
});

test("replacing the whole text is one logged edit", () => {
  const r = recorder("old text");
  r.rec.replaceText("new");
  const [before, input] = r.log.slice(2);
  equal([before.it, before.s, before.e], ["insertReplacementText", 0, 8]);
  equal([input.data, input.f, input.len, r.ta.value], ["new", true, 3, "new"]);
});

test("cut and copy log the selected text", () => {
  const r = recorder("hello world");
  r.ta.setSelectionRange(0, 5);
  r.rec.handlers.onCut();
  r.rec.handlers.onCopy({ target: r.ta });
  equal(
    r.log.slice(2).map((e) => [e.k, e.data]),
    [
      ["cut", "hello"],
      ["copy", "hello"],
    ],
  );
});
