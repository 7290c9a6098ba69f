// The editor's keyboard shortcuts besides Ctrl+Enter (submit, in editor.js): the next and the
// previous segment, skip, and the list of shortcuts.
//
// Chosen so that none types text, none is an IME's key and none counts as a typing key in the
// effort definition (docs/effort.md): Alt+Right/Alt+Left are navigation keys there (logged and
// counted like any arrow key, as today; they change no text), Ctrl+Shift+S is a shortcut (counted
// in no class; Alt+S would be a letter no text change corroborates). On a Mac, Option+Left/Right
// move the caret by word: the editor leaves them alone there (the segment list moves instead).
// `?` opens the list only outside a text field: in the text it is a character.
// The recorder is not touched: it logs each of these keydowns like any other key. The list the
// page shows is in editor.html (#shortcuts-dialog).

export const isMac = (nav = globalThis.navigator) =>
  /Mac|iPhone|iPad/.test((nav && (nav.userAgentData?.platform || nav.platform)) || "");

function inTextField(target) {
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  return tag === "textarea" || tag === "select" || (tag === "input" && target.type !== "button") || target.isContentEditable;
}

// The action a keydown asks for ("next", "previous", "skip", "help"), or null.
export function shortcutFor(e, { mac = false } = {}) {
  if (e.isComposing || e.keyCode === 229 || e.repeat) return null; // an IME's key, or a held key
  const only = (ctrl, alt, shift) => e.ctrlKey === ctrl && e.altKey === alt && e.shiftKey === shift && !e.metaKey;
  if (!mac && only(false, true, false)) {
    if (e.key === "ArrowRight") return "next";
    if (e.key === "ArrowLeft") return "previous";
  }
  if (only(true, false, true) && (e.code === "KeyS" || e.key === "S" || e.key === "s")) return "skip";
  if (e.key === "?" && !e.ctrlKey && !e.altKey && !e.metaKey && !inTextField(e.target)) return "help";
  return null;
}

// Wires the shortcuts to the page: `canAct()` says whether the editor takes commands now (not while
// a submit is on its way); `go(url)` navigates; the links carry data-shortcut="next"/"previous".
export function installShortcuts({ doc = document, canAct, openSkip, openHelp, go, mac = isMac() }) {
  const linkOf = (action) => doc.querySelector(`a[data-shortcut="${action}"]`);
  function onKeydown(e) {
    const action = shortcutFor(e, { mac });
    if (!action) return;
    if (action === "help") {
      e.preventDefault();
      openHelp();
      return;
    }
    if (!canAct()) return;
    if (action === "skip") {
      e.preventDefault();
      openSkip();
      return;
    }
    const link = linkOf(action);
    e.preventDefault(); // not the browser's Back/Forward, nor a caret move
    if (link) go(link.href);
  }
  doc.addEventListener("keydown", onKeydown);
  return () => doc.removeEventListener("keydown", onKeydown);
}
