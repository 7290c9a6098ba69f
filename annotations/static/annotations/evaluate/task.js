// The error-span task: the rater selects a part of the text (mouse, or shift and the arrows), opens
// the chooser (the Mark button, Enter or M), picks a category and a severity (and a comment), and
// the span is drawn and listed; spans may overlap, prefilled ones are kept, edited or deleted; a
// span in the source marks an omission; for ESA a 0-100 score follows; Submit (or Ctrl+Enter) sends
// it all once the log is stored.

import { createLog } from "./log.js";
import { createSpanList, excerpt } from "./spans.js";
import { createSelection, draw } from "./textview.js";

const NON_TRANSLATION = "Non-translation";

// doc: the page (document); config: the page's JSON; fetch, now, go (navigation) and beacon are
// injectable for tests.
export function startTask({ doc = document, config, fetch, now, go = (url) => window.location.assign(url), beacon }) {
  const win = doc.defaultView;
  const $ = (selector) => doc.querySelector(selector);
  const textRoot = $("#evaluation-text");
  const sourceRoot = $("#source-text");
  const list = $("#span-list");
  const dialog = $("#span-chooser");
  const form = $("#span-form");
  const status = $("#task-status");
  const score = $("#esa-score");
  const text = config.text;

  const log = createLog({
    url: config.urls.events,
    pageId: config.page_id,
    firstSeq: config.next_seq,
    csrfToken: config.csrf_token,
    maxBatch: config.max_batch_events,
    ...(fetch ? { fetch } : {}),
    ...(now ? { now } : {}),
    ...(beacon ? { beacon } : {}),
    onRefused: (message) => say(message, true),
  });
  const spans = createSpanList(config.prefill, { maxSpans: config.max_spans });
  const selection = createSelection(textRoot, text, win);
  // Each side the rater can mark: the evaluated text, and the source (omissions) when there is one.
  const sides = { target: { root: textRoot, text, selection } };
  if (sourceRoot && config.source) {
    sides.source = { root: sourceRoot, text: config.source, selection: createSelection(sourceRoot, config.source, win) };
  }
  let side = "target"; // the side the rater last selected in
  const sideOf = (span) => sides[span.side || "target"] || sides.target;
  let editing = null; // the index of the span the chooser edits, null for a new one
  let pendingRange = null; // the range the chooser will mark
  let submitting = false;

  function say(message, error = false) {
    status.textContent = message;
    status.classList.toggle("error", error);
  }

  function render() {
    const all = spans.all();
    for (const [name, shown] of Object.entries(sides)) {
      draw(shown.root, shown.text, all.filter((span) => (span.side || "target") === name));
    }
    list.replaceChildren(
      ...all.map((span, index) => {
        const item = doc.createElement("li");
        item.dataset.index = String(index);
        const words = doc.createElement("q");
        words.textContent = excerpt(sideOf(span).text, span);
        const labels = doc.createElement("span");
        labels.className = "span-labels";
        const where = span.side === "source" ? " (in the source)" : "";
        const suggested = span.prefilled !== undefined ? " (suggested)" : "";
        labels.textContent = ` ${span.category} · ${span.severity}${where}${suggested}`;
        item.append(words, labels);
        if (span.comment) {
          const comment = doc.createElement("span");
          comment.className = "span-comment";
          comment.textContent = ` — ${span.comment}`;
          item.append(comment);
        }
        for (const [action, label] of [
          ["edit", "Edit"],
          ["delete", "Delete"],
        ]) {
          const button = doc.createElement("button");
          button.type = "button";
          button.dataset.action = action;
          button.textContent = label;
          button.setAttribute("aria-label", `${label} the span “${excerpt(sideOf(span).text, span, 20)}”`);
          item.append(" ", button);
        }
        return item;
      }),
    );
    $("#span-count").textContent = `${all.length} span${all.length === 1 ? "" : "s"}`;
  }

  // ---------------------------------------------------------------- the chooser

  function openChooser(index) {
    if (index === null) {
      sides[side].selection.read();
      const range = sides[side].selection.range();
      if (range.start >= range.end) {
        say("Select the part of the text with the error first (mouse, or Shift and the arrow keys).", true);
        return;
      }
      pendingRange = { ...range, side };
    } else {
      const span = spans.get(index);
      pendingRange = { start: span.start, end: span.end, side: span.side || "target" };
    }
    editing = index;
    const shown = index === null ? null : spans.get(index);
    const category = form.elements.category;
    if (!category.options.length) {
      say("The project's error typology cannot be read: ask an admin to fix it.", true);
      return;
    }
    category.value = shown && shown.category !== NON_TRANSLATION ? shown.category : category.options[0].value;
    const severity = shown ? (shown.category === NON_TRANSLATION ? "non-translation" : shown.severity) : "minor";
    for (const radio of form.querySelectorAll("input[name=severity]")) radio.checked = radio.value === severity;
    category.disabled = severity === "non-translation";
    form.elements.comment.value = shown ? shown.comment : "";
    $("#chooser-excerpt").textContent = excerpt(sideOf(pendingRange).text, pendingRange, 80);
    $("#chooser-title").textContent = index === null ? "Mark an error" : "Edit the error";
    log.log("chooser_open", { ...pendingRange, index });
    dialog.showModal();
    category.focus();
  }

  function closeChooser(saved) {
    log.log("chooser_close", { saved });
    dialog.close();
    const back = pendingRange ? sideOf(pendingRange) : sides.target;
    back.root.focus();
    if (pendingRange) back.selection.collapse(pendingRange.end);
    pendingRange = null;
    editing = null;
  }

  function saveChooser() {
    const severity = form.querySelector("input[name=severity]:checked");
    if (!severity || !pendingRange) return;
    const nonTranslation = severity.value === "non-translation";
    const span = {
      ...pendingRange,
      category: nonTranslation ? NON_TRANSLATION : form.elements.category.value,
      severity: nonTranslation ? "major" : severity.value,
      comment: form.elements.comment.value.slice(0, config.max_comment),
    };
    try {
      if (editing === null) {
        const index = spans.add(span);
        log.log("span_add", { index, span });
      } else {
        spans.edit(editing, span);
        log.log("span_edit", { index: editing, span });
      }
    } catch (err) {
      say(err.message, true);
    }
    render();
    say(`Marked “${excerpt(sideOf(span).text, span, 30)}” as ${span.category}, ${span.severity}.`);
    closeChooser(true);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveChooser();
  });
  form.addEventListener("change", (event) => {
    if (event.target.name === "severity") form.elements.category.disabled = event.target.value === "non-translation";
  });
  $("#chooser-cancel").addEventListener("click", () => closeChooser(false));
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault(); // Escape: closed through closeChooser, logged
    closeChooser(false);
  });

  // ---------------------------------------------------------------- the text, the list, the score

  for (const [name, shown] of Object.entries(sides)) {
    shown.root.addEventListener("focus", () => {
      side = name;
    });
    shown.root.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) return; // the submit's, on the page
      if (shown.selection.key(event)) {
        event.preventDefault();
        log.log("select", { ...shown.selection.range(), side: name });
      } else if (event.key === "Enter" || event.key === "m" || event.key === "M") {
        event.preventDefault();
        openChooser(null);
      }
    });
  }
  doc.addEventListener("mouseup", (event) => {
    if (dialog.open) return;
    for (const [name, shown] of Object.entries(sides)) {
      if (!shown.root.contains(event.target) && !shown.root.contains(win.getSelection()?.anchorNode)) continue;
      shown.selection.read();
      const range = shown.selection.range();
      if (range.start < range.end) {
        side = name;
        log.log("select", { ...range, side: name });
      }
    }
  });
  $("#mark-button").addEventListener("click", () => openChooser(null));
  list.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const index = Number(button.closest("li").dataset.index);
    if (button.dataset.action === "edit") {
      openChooser(index);
      return;
    }
    const gone = spans.get(index);
    spans.remove(index);
    log.log("span_delete", { index, prefilled: gone.prefilled ?? null });
    render();
    say(`Deleted the span “${excerpt(sideOf(gone).text, gone, 30)}”.`);
    (list.querySelector("button[data-action=delete]") || textRoot).focus();
  });
  if (score) score.addEventListener("change", () => log.log("score", { value: score.value }));

  // ---------------------------------------------------------------- logging the page's life

  log.log("load", { state: doc.visibilityState });
  doc.addEventListener("visibilitychange", () => log.log("visibility", { state: doc.visibilityState }));
  win.addEventListener("focus", () => log.log("focus", { source: "window" }));
  win.addEventListener("blur", () => log.log("blur", { source: "window" }));
  doc.addEventListener("keydown", (event) => {
    log.log("keydown", { key: event.key.length === 1 ? "char" : event.key });
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !dialog.open) {
      event.preventDefault();
      submit();
    }
  });
  doc.addEventListener("mousedown", () => log.log("mousedown"));
  win.addEventListener("pagehide", () => log.goodbye());

  // ---------------------------------------------------------------- submitting

  function scoreValue() {
    if (config.protocol !== "esa") return null;
    const raw = score.value.trim();
    const value = Number(raw);
    if (raw === "" || !Number.isFinite(value) || value < 0 || value > 100) return undefined;
    return value;
  }

  async function submit() {
    if (submitting) return;
    const value = scoreValue();
    if (value === undefined) {
      say("Give the translation a score from 0 to 100 after marking its errors.", true);
      score.focus();
      return;
    }
    submitting = true;
    say("Submitting…");
    log.log("submit", { spans: spans.count() });
    const body = { page_id: config.page_id, spans: spans.payload(), esa_score: value };
    for (let attempt = 0; attempt < 3; attempt++) {
      if (!(await log.flush())) break;
      body.last_seq = log.lastSeq();
      let response;
      let answer = {};
      try {
        response = await (fetch || win.fetch.bind(win))(config.urls.submit, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": config.csrf_token },
          body: JSON.stringify(body),
        });
        answer = await response.json().catch(() => ({}));
      } catch {
        break;
      }
      if (response.ok || answer.code === "closed") {
        log.close();
        say("Submitted.");
        go(config.urls.next);
        return;
      }
      if (answer.code !== "events_missing") {
        submitting = false;
        say(answer.detail || `The submit was refused (${response.status}).`, true);
        return;
      }
    }
    submitting = false;
    say("Could not reach the server; your spans are still here. Try Submit again.", true);
  }
  $("#submit-button").addEventListener("click", submit);

  render();
  textRoot.focus();
  say(spans.count() ? `${spans.count()} suggested spans to check.` : "Select an error to mark it.");
  return { spans, selection, log, submit, openChooser, render };
}
