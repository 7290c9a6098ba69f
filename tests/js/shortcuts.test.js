import { equal, test } from "./harness.js";
import { installShortcuts, isMac, shortcutFor } from "/static/annotations/editor/shortcuts.js";

const key = (props) => ({ ctrlKey: false, altKey: false, shiftKey: false, metaKey: false, repeat: false, ...props });
const inText = { tagName: "TEXTAREA" };
const onPage = { tagName: "BODY" };

test("Alt+Right and Alt+Left go to the next and previous segment, in the text too", () => {
  equal(shortcutFor(key({ key: "ArrowRight", altKey: true, target: inText })), "next");
  equal(shortcutFor(key({ key: "ArrowLeft", altKey: true, target: onPage })), "previous");
});

test("arrows with other modifiers, alone, held or on a Mac stay the text's", () => {
  const cases = [
    key({ key: "ArrowRight" }),
    key({ key: "ArrowRight", shiftKey: true, altKey: true }),
    key({ key: "ArrowRight", ctrlKey: true, altKey: true }),
    key({ key: "ArrowLeft", metaKey: true, altKey: true }),
    key({ key: "ArrowRight", altKey: true, repeat: true }),
  ];
  equal(
    cases.map((e) => shortcutFor(e)),
    [null, null, null, null, null],
  );
  equal(shortcutFor(key({ key: "ArrowRight", altKey: true }), { mac: true }), null);
});

test("Ctrl+Shift+S skips; Alt+S and Ctrl+S do not (a letter, the browser's save)", () => {
  equal(shortcutFor(key({ key: "S", code: "KeyS", ctrlKey: true, shiftKey: true })), "skip");
  equal(shortcutFor(key({ key: "s", code: "KeyS", altKey: true })), null);
  equal(shortcutFor(key({ key: "s", code: "KeyS", ctrlKey: true })), null);
});

test("? opens the list outside a text field only; an IME's keys are never shortcuts", () => {
  equal(shortcutFor(key({ key: "?", shiftKey: true, target: onPage })), "help");
  equal(shortcutFor(key({ key: "?", shiftKey: true, target: inText })), null);
  equal(shortcutFor(key({ key: "?", shiftKey: true, target: { tagName: "INPUT", type: "text" } })), null);
  equal(shortcutFor(key({ key: "ArrowRight", altKey: true, isComposing: true })), null);
  equal(shortcutFor(key({ key: "Process", keyCode: 229, ctrlKey: true, shiftKey: true, code: "KeyS" })), null);
});

test("the page's links are followed, and nothing happens while the editor cannot act", () => {
  const doc = document.implementation.createHTMLDocument("t");
  doc.body.innerHTML = '<a data-shortcut="next" href="/edit/2/">n</a><textarea></textarea>';
  const went = [];
  let acting = true;
  let skips = 0;
  let helps = 0;
  const remove = installShortcuts({
    doc,
    canAct: () => acting,
    openSkip: () => skips++,
    openHelp: () => helps++,
    go: (url) => went.push(new URL(url, "http://x").pathname),
    mac: false,
  });
  const press = (init, target = doc.querySelector("textarea")) => {
    const e = new KeyboardEvent("keydown", { bubbles: true, cancelable: true, ...init });
    target.dispatchEvent(e);
    return e.defaultPrevented;
  };
  equal(press({ key: "ArrowRight", altKey: true }), true);
  equal(press({ key: "ArrowLeft", altKey: true }), true, "no previous link: still not the browser's Back");
  equal(press({ key: "S", code: "KeyS", ctrlKey: true, shiftKey: true }), true);
  equal(press({ key: "?", shiftKey: true }, doc.body), true);
  equal(press({ key: "x" }), false);
  acting = false;
  equal(press({ key: "ArrowRight", altKey: true }), false);
  remove();
  press({ key: "?", shiftKey: true }, doc.body);
  equal([went, skips, helps], [["/edit/2/"], 1, 1]);
});

test("a Mac is told by its platform", () => {
  equal([isMac({ platform: "MacIntel" }), isMac({ platform: "Linux x86_64" }), isMac({})], [true, false, false]);
});
