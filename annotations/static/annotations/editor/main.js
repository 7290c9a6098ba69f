// The editor page's entry: reads the page's config and elements and starts the editor.

import { startEditor } from "./editor.js";
import { installShortcuts } from "./shortcuts.js";

function boot() {
  const configNode = document.getElementById("editor-config");
  const textarea = document.getElementById("post-edit-text");
  if (!configNode || !textarea) return;
  const config = JSON.parse(configNode.textContent);
  const els = {
    textarea,
    status: document.getElementById("save-status"),
    session: document.getElementById("session-expired"),
    conflict: document.getElementById("conflict"),
    highlights: document.getElementById("highlight-backdrop"),
    buttons: Array.from(document.querySelectorAll("[data-editor-button]")),
    submitButton: document.getElementById("submit-button"),
  };
  const editor = startEditor(config, els);
  window.__editlabLogger = editor;
  window.__editlabLoggerStats = editor.stats;

  document.getElementById("submit-button")?.addEventListener("click", () => editor.submit());
  els.conflict?.querySelectorAll("[data-choose]").forEach((button) => {
    button.addEventListener("click", () => editor.resolveConflict(button.dataset.choose));
  });
  els.conflict?.querySelector("[data-conflict-close]")?.addEventListener("click", () => {
    if (!editor.conflict) els.conflict.hidden = true;
  });

  const dialog = document.getElementById("skip-dialog");
  const skipForm = document.getElementById("skip-form");
  const openSkip = () => dialog && !dialog.open && dialog.showModal();
  document.getElementById("skip-button")?.addEventListener("click", openSkip);

  // The keyboard shortcuts and their list (an accessible dialog: showModal keeps the focus in it,
  // Esc closes it and the focus returns to where it was).
  const help = document.getElementById("shortcuts-dialog");
  const helpButton = document.getElementById("shortcuts-button");
  const openHelp = () => help && !help.open && !dialog?.open && help.showModal();
  helpButton?.addEventListener("click", openHelp);
  help?.querySelector("[data-shortcuts-close]")?.addEventListener("click", () => help.close());
  installShortcuts({
    canAct: () => editor.phase === "editing" && !dialog?.open && !help?.open,
    openSkip,
    openHelp,
    go: (url) => window.location.assign(url),
  });
  dialog?.querySelector("[data-skip-cancel]")?.addEventListener("click", () => dialog.close());
  skipForm?.addEventListener("submit", async (e) => {
    e.preventDefault();
    const field = skipForm.elements.reason;
    const reason = field.value.trim();
    const errorNode = skipForm.querySelector("[data-skip-error]");
    if (!reason) {
      errorNode.textContent = "Please give a reason for skipping this item.";
      field.focus();
      return;
    }
    errorNode.textContent = "";
    const error = await editor.skip(reason);
    if (error) errorNode.textContent = `Not skipped: ${error}`;
  });
}

boot();
