// The hot path: every event of the post-editing text area becomes one small object appended to
// the log, with a performance.now() timestamp and a consecutive sequence number (given by
// `log`, the outbox's append). Typing must never lag: handlers only append; serialising,
// persisting and sending happen elsewhere, on timers.
//
// Wire format (README, "The editor's ingestion API"): short keys k (kind), it (inputType),
// s/e (selection start/end), len (text length after), data, f (data is the full text), mods,
// rep, src, state.

const RECENT_INPUT_MS = 1000;

export const modifierBits = (e) =>
  (e.ctrlKey ? 1 : 0) | (e.shiftKey ? 2 : 0) | (e.altKey ? 4 : 0) | (e.metaKey ? 8 : 0);

// The range [start, end) of `before` that was replaced to give `after`.
export function changedRange(before, after) {
  const max = Math.min(before.length, after.length);
  let start = 0;
  while (start < max && before.charCodeAt(start) === after.charCodeAt(start)) start++;
  let tail = 0;
  while (
    tail < max - start &&
    before.charCodeAt(before.length - 1 - tail) === after.charCodeAt(after.length - 1 - tail)
  ) {
    tail++;
  }
  return [start, before.length - tail];
}

// How the text changed from `shadow` (the text as the log has it) to `value`, given the
// beforeinput that announced it: the `input` event to log.
export function describeInput(shadow, value, before, it, caret) {
  const ev = { k: "input", it, s: caret, len: value.length };
  if (it.startsWith("insert")) {
    const inserted = value.length - (shadow.length - (before.e - before.s));
    const data = inserted < 0 ? null : value.slice(before.s, before.s + inserted);
    if (data !== null && shadow.slice(0, before.s) + data + shadow.slice(before.e) === value) {
      ev.data = data;
    } else {
      // The selection did not describe the change (spell checker, drag): the full text.
      ev.data = value;
      ev.f = true;
    }
  } else if (it.startsWith("delete")) {
    const removed = shadow.length - value.length;
    if (removed < 0 || shadow.slice(0, caret) + shadow.slice(caret + removed) !== value) {
      ev.data = value; // the caret did not mark the deletion point: the full text
      ev.f = true;
    }
  } else {
    ev.data = value; // history (undo/redo) and anything else: the full text
  }
  return ev;
}

// `isRecording()` says whether events count now (not while a submit is on its way or after the
// item closed); `onEdit()` is told after every text change (the draft autosave).
export function createRecorder({ textarea: ta, log, isRecording, onEdit = () => {}, doc = document, win = window }) {
  let shadow = ""; // the text as the log has it so far
  let lastSel = [0, 0];
  let pendingBefore = null; // the beforeinput whose input has not come yet
  let composition = null; // { s, e } of the IME's text while composing, else null
  let pointer = "up"; // "down" between a mousedown in the text area and the next mouseup
  let lastKeyT = -Infinity;
  let lastMouseT = -Infinity;

  function selectionSource() {
    if (pointer === "down") return "mouse";
    const now = performance.now();
    const latest = Math.max(lastKeyT, lastMouseT);
    if (now - latest > RECENT_INPUT_MS) return "other";
    return lastMouseT > lastKeyT ? "mouse" : "key";
  }

  function noteSelection() {
    if (!isRecording()) return;
    const s = ta.selectionStart;
    const e = ta.selectionEnd;
    if (s === lastSel[0] && e === lastSel[1]) return;
    lastSel = [s, e];
    log({ k: "select", s, e, src: selectionSource() });
  }

  function onKeydown(e) {
    if (!isRecording()) return;
    lastKeyT = performance.now();
    log({ k: "keydown", key: e.key || "Unidentified", code: e.code || "", mods: modifierBits(e), rep: e.repeat });
  }

  function onBeforeInput(e) {
    if (!isRecording()) return;
    let s = ta.selectionStart;
    let end = ta.selectionEnd;
    if (e.inputType === "insertCompositionText" && composition) {
      // During a composition the selection is the IME's caret, not the range it replaces.
      s = composition.s;
      end = composition.e;
    }
    pendingBefore = log({ k: "beforeinput", it: e.inputType, s, e: end });
  }

  function onInput(e) {
    if (!isRecording()) return;
    const it = e.inputType || "insertReplacementText";
    const value = ta.value;
    const caret = ta.selectionStart;
    let before = pendingBefore;
    pendingBefore = null;
    if (!before || before.it !== it) {
      // No beforeinput (e.g. execCommand): describe the change from the text itself.
      const [s, end] = changedRange(shadow, value);
      before = log({ k: "beforeinput", it, s, e: end });
    }
    log(describeInput(shadow, value, before, it, caret));
    if (composition && it === "insertCompositionText") {
      // The composition now spans what the IME inserted at its start.
      composition.e = composition.s + (value.length - (shadow.length - (composition.e - composition.s)));
    }
    shadow = value;
    lastSel = [caret, ta.selectionEnd];
    onEdit();
  }

  function onPaste(e) {
    if (!isRecording()) return;
    const data = e.clipboardData ? e.clipboardData.getData("text/plain") : "";
    log({ k: "paste", data });
  }

  function onCut() {
    if (!isRecording()) return;
    log({ k: "cut", data: ta.value.slice(ta.selectionStart, ta.selectionEnd) });
  }

  function onCopy(e) {
    if (!isRecording()) return;
    const field = e.target;
    const inField = field && typeof field.selectionStart === "number" && typeof field.value === "string";
    const data = inField
      ? field.value.slice(field.selectionStart, field.selectionEnd)
      : String(win.getSelection() || "");
    log({ k: "copy", data });
  }

  function onMousedown() {
    if (!isRecording()) return;
    pointer = "down";
    lastMouseT = performance.now();
    log({ k: "mousedown" });
  }

  function onMouseup() {
    if (pointer !== "down") return;
    pointer = "up";
    lastMouseT = performance.now();
    if (isRecording()) noteSelection();
    lastMouseT = performance.now();
  }

  function onCompositionStart() {
    if (!isRecording()) return;
    composition = { s: ta.selectionStart, e: ta.selectionEnd };
    log({ k: "compositionstart" });
  }

  function onCompositionUpdate(e) {
    if (!isRecording()) return;
    log({ k: "compositionupdate", data: e.data || "" });
  }

  function onCompositionEnd(e) {
    if (!isRecording()) return;
    composition = null;
    log({ k: "compositionend", data: e.data || "" });
  }

  // Window focus/blur (src "window") is what makes time unfocused; the text area's own
  // focus/blur (src "textarea") is logged too, but reading the references is work.
  function onFocus(e) {
    if (!isRecording() || (e.currentTarget === win && e.target !== win)) return;
    log({ k: "focus", src: e.currentTarget === win ? "window" : "textarea" });
  }

  function onBlur(e) {
    if (!isRecording() || (e.currentTarget === win && e.target !== win)) return;
    log({ k: "blur", src: e.currentTarget === win ? "window" : "textarea" });
  }

  function onVisibility() {
    if (!isRecording()) return;
    log({ k: "visibility", state: doc.visibilityState === "hidden" ? "hidden" : "visible" });
  }

  // The page load: the starting text, then the caret at its start.
  function start(text) {
    ta.value = text;
    shadow = text;
    ta.readOnly = false;
    log({ k: "load", data: text, len: text.length, state: doc.visibilityState === "hidden" ? "hidden" : "visible" });
    ta.focus();
    ta.setSelectionRange(0, 0);
    lastSel = [0, 0];
    log({ k: "select", s: 0, e: 0, src: "other" });
  }

  // Replaces the whole text as one logged edit (used when resolving a conflict).
  function replaceText(text) {
    log({ k: "beforeinput", it: "insertReplacementText", s: 0, e: ta.value.length });
    ta.value = text;
    log({ k: "input", it: "insertReplacementText", s: text.length, len: text.length, data: text, f: true });
    shadow = text;
    ta.setSelectionRange(text.length, text.length);
    lastSel = [text.length, text.length];
  }

  return {
    start,
    replaceText,
    handlers: {
      noteSelection,
      onKeydown,
      onBeforeInput,
      onInput,
      onPaste,
      onCut,
      onCopy,
      onMousedown,
      onMouseup,
      onCompositionStart,
      onCompositionUpdate,
      onCompositionEnd,
      onFocus,
      onBlur,
      onVisibility,
    },
  };
}
