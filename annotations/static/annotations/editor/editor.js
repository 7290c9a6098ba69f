// editlab's editor: wires the recorder (events -> log), the outbox (log -> server), the draft
// autosave and the login session to the page. No framework, no build step.
//
// Nothing is thrown away before the server has acknowledged it: events and the draft text stay
// in localStorage (one record per page load) until a 200 comes back, so a reload, a crash or a
// network outage loses nothing.

import { createDrafts } from "./drafts.js";
import { createHighlights } from "./highlights.js";
import { createOutbox } from "./outbox.js";
import { createRecorder } from "./recorder.js";
import { createSession, errorMessage, sessionRefusal, sleep } from "./session.js";
import { makeStats, timed } from "./stats.js";
import { openStorage, readStoredPages, startingDraft } from "./storage.js";

const SEND_INTERVAL_MS = 2000;
const NETWORK_RETRY_MS = 2000;

export function startEditor(config, els) {
  const store = openStorage();
  const stats = makeStats();
  const ta = els.textarea;
  const pageId = config.page_id;
  const urls = config.urls;

  // "editing", "finishing" (a submit or skip is on its way: nothing is recorded) or "closed"
  // (submitted, skipped, closed by the server or taken over by another tab).
  let phase = "editing";
  const isClosed = () => phase === "closed";
  const isEditing = () => phase === "editing";
  // While finishing: what the status says when the server cannot be reached (the submit is
  // queued), and whether it says so now.
  let queuedText = "";
  let queued = false;

  function setStatus(text, kind = "") {
    if (!els.status) return;
    els.status.textContent = text;
    els.status.dataset.kind = kind;
  }

  const showSessionBanner = (show) => {
    if (els.session) els.session.hidden = !show;
  };

  const storedPages = readStoredPages(store, config.post_edit_id, pageId);
  const start = startingDraft(storedPages, { text: config.draft, version: config.version });

  let outbox = null;
  let drafts = null;

  const session = createSession({
    cookieName: config.csrf_cookie_name || "csrftoken",
    // The page's own token when the cookie cannot be read (CSRF_COOKIE_HTTPONLY or CSRF_USE_SESSIONS).
    fallbackToken: config.csrf_token,
    onRefused(kind) {
      showSessionBanner(true);
      const why = kind === "csrf" ? "the server refused this page's security token (CSRF)" : "your session has expired";
      const text = `Changes not saved on the server yet: ${why}. ${outbox.pending()} events and your text are kept in this browser and sent once you log in again.`;
      setStatus(phase === "finishing" ? `Waiting to finish: ${text}` : text, "error");
    },
    onBack() {
      // Logged in again: everything kept meanwhile goes out now.
      outbox.resetRetry();
      showSessionBanner(false);
      if (phase === "finishing") setStatus("Logged in again: finishing…", "ok");
      else if (drafts.state !== "conflict")
        setStatus(outbox.pending() ? "Logged in again: sending your work…" : "All changes saved", "ok");
      if (phase !== "finishing" && drafts.isDirty()) drafts.schedule(0);
    },
  });

  function closeAfterServer(message) {
    phase = "closed";
    showSessionBanner(false);
    outbox.clearStored();
    ta.readOnly = true;
    setStatus(message, "error");
  }

  outbox = createOutbox({
    postEditId: config.post_edit_id,
    pageId,
    storedPages,
    firstSeq: config.next_seq,
    store,
    url: urls.events,
    maxBatchEvents: Math.max(1, Math.min(config.max_batch_events || 500, 500)),
    maxBatchBytes: Math.max(1024, (config.max_batch_bytes || 1048576) - 1024),
    session,
    stats,
    hooks: {
      draft: () => drafts.record(),
      isClosed,
      onSent() {
        if (session.state === "refused") session.back();
        else if (isEditing() && drafts.state !== "conflict")
          setStatus(outbox.pending() ? "Saving…" : "All changes saved", "ok");
        else if (queued) showQueued(false);
      },
      onRejected: (message) => setStatus(`The server refused some events: ${message}`, "error"),
      onClosed: closeAfterServer,
      onNotFound: () =>
        // Logged in again as someone else: the work stays here for its annotator.
        setStatus(
          `Not saved: the server does not find this item among the logged-in user's (logged in as someone else?). ${outbox.pending()} events are kept in this browser.`,
          "error",
        ),
      onOffline() {
        if (phase === "finishing" && queuedText) showQueued(true);
        else setStatus(`Offline: ${outbox.pending()} events kept in this browser, retrying.`, "warn");
      },
      onStorageFull(err) {
        setStatus("This browser cannot store your work locally (storage full); keep the network on.", "error");
        console.error("editlab logger: localStorage", err);
      },
    },
  });

  drafts = createDrafts({
    textarea: ta,
    url: urls.draft,
    pageId,
    start,
    session,
    persist: () => outbox.persistNow(),
    canSave: isEditing,
    isClosed,
    hooks: {
      onSaved() {
        if (session.state === "refused") session.back();
        else if (!outbox.pending() && drafts.state !== "conflict") setStatus("All changes saved", "ok");
      },
      onConflict(mine, theirs) {
        const panel = els.conflict;
        if (!panel) return;
        panel.querySelector("[data-conflict=mine]").value = mine;
        panel.querySelector("[data-conflict=theirs]").value = theirs;
        panel.hidden = false;
        panel.querySelectorAll("[data-choose]").forEach((b) => (b.hidden = false));
        setStatus("This item was changed in another tab or device: choose which text to keep.", "warn");
      },
      onClosed: closeAfterServer,
      onError: (message) => setStatus(message, "error"),
    },
  });

  let highlights = null; // the error-highlight overlay, when the condition shows one
  const recorder = createRecorder({
    textarea: ta,
    log: outbox.log,
    isRecording: isEditing,
    onEdit: () => {
      drafts.schedule();
      if (highlights) highlights.update();
    },
  });

  // One attempt now, then none before the session's retry time unless the CSRF cookie changes.
  function retrySession() {
    if (session.state !== "refused" || isClosed()) return;
    session.armRetry();
    if (outbox.pending()) outbox.sendNext();
    else if (phase !== "finishing") drafts.save();
  }

  const pause = () => session.wait(isClosed);

  function tick() {
    if (isClosed()) return;
    if (session.state === "refused") {
      if (session.retryDue()) retrySession();
      return;
    }
    outbox.tick();
  }

  // ---------------------------------------------------------------- conflict
  function resolveConflict(choice) {
    const replaceText = (text) => {
      const t0 = performance.now();
      recorder.replaceText(text);
      stats.add(performance.now() - t0, "replaceText");
    };
    if (!drafts.resolve(choice, replaceText)) return;
    if (highlights) highlights.update();
    els.conflict.querySelectorAll("[data-choose]").forEach((b) => (b.hidden = true));
    setStatus("Kept; the other text stays below for copying.", "ok");
    ta.focus();
    drafts.save();
  }

  // ---------------------------------------------------------------- submit / skip
  function setFinishing(finishing) {
    if (!isClosed()) phase = finishing ? "finishing" : "editing";
    ta.readOnly = phase !== "editing";
    for (const b of els.buttons || []) b.disabled = phase !== "editing";
    if (!finishing) showQueued(false);
  }

  // Offline while finishing: the status and the submit button say that the submit is queued and
  // completes by itself once the connection returns (the page then goes on as usual).
  function showQueued(offline) {
    const button = els.submitButton;
    if (offline) {
      queued = true;
      setStatus(queuedText, "warn");
      if (button) {
        button.dataset.label ??= button.textContent;
        button.textContent = "Submit queued";
        button.dataset.state = "queued";
      }
      return;
    }
    if (queued && phase === "finishing") setStatus("Back online: submitting…", "ok");
    queued = false;
    if (button && button.dataset.state === "queued") {
      button.textContent = button.dataset.label;
      delete button.dataset.state;
    }
  }

  // Sends everything, then the final request; returns an error message, or null once the page
  // moves on (or another tab took over, which has this work now).
  async function finish(url, body, waitingText, offlineText = "") {
    queuedText = offlineText;
    drafts.cancel();
    await drafts.waitIdle();
    setStatus(waitingText, "");
    await outbox.flush(pause);
    for (;;) {
      if (isClosed()) return null;
      try {
        const { status, answer, token } = await session.postJSON(url, { page_id: pageId, ...body() });
        if (status === 200) {
          if (queued) setStatus("Back online: submitted. Going on…", "ok");
          phase = "closed";
          outbox.clearStored();
          showSessionBanner(false);
          window.location.assign(answer.next_url || urls.next);
          return null;
        }
        const refusal = sessionRefusal(status, answer);
        if (refusal) {
          // Not an answer to the submit: it goes through by itself once the user has logged in.
          if (!session.refused(refusal, token)) await pause();
          continue;
        }
        if (status === 409 && answer.code === "conflict") {
          drafts.showConflict(answer.server_text, answer.server_version);
          return "conflict";
        }
        return errorMessage(answer) || `HTTP ${status}`;
      } catch {
        if (queuedText) showQueued(true);
        else setStatus("Cannot reach the server; your work is kept in this browser. Retrying…", "warn");
        await sleep(NETWORK_RETRY_MS);
      }
    }
  }

  async function submit() {
    if (phase !== "editing" || drafts.state === "conflict") return;
    setFinishing(true);
    outbox.log({ k: "submit" });
    const submitting = finish(
      urls.submit,
      () => ({ text: ta.value, version: drafts.version, last_seq: outbox.nextSeq - 1 }),
      "Submitting…",
      "You are offline: your submit is queued and will complete when the connection returns. Your work is kept in this browser; keep this page open.",
    );
    if (globalThis.navigator && navigator.onLine === false && phase === "finishing") showQueued(true);
    const error = await submitting;
    if (error) {
      setFinishing(false);
      if (drafts.state !== "conflict") setStatus(`Not submitted: ${error}`, "error");
    }
  }

  async function skip(reason) {
    if (phase !== "editing") return "busy";
    setFinishing(true);
    const error = await finish(urls.skip, () => ({ reason }), "Skipping…");
    if (error) setFinishing(false);
    return error;
  }

  // Another tab opened this item: it read what this one kept, and continues.
  function takenOver() {
    outbox.persistNow();
    phase = "closed";
    ta.readOnly = true;
    for (const b of els.buttons || []) b.disabled = true;
    showSessionBanner(false);
    setStatus("This item was opened in another tab; continue there (or reload this page).", "warn");
  }

  // ---------------------------------------------------------------- wiring
  recorder.start(start.text);
  // The server placed the spans over its draft; over another text (restored from this browser)
  // they would mark the wrong words, so none are drawn then.
  const spans = start.text === config.draft ? config.highlights || [] : [];
  if (spans.length && els.highlights) {
    highlights = createHighlights({ textarea: ta, backdrop: els.highlights, spans });
    els.highlights.hidden = false;
  }
  const h = recorder.handlers;
  const on = (target, type, fn) => target.addEventListener(type, timed(stats, fn));
  on(ta, "keydown", h.onKeydown);
  on(ta, "beforeinput", h.onBeforeInput);
  on(ta, "input", h.onInput);
  on(ta, "paste", h.onPaste);
  on(ta, "cut", h.onCut);
  on(ta, "select", h.noteSelection);
  on(ta, "mousedown", h.onMousedown);
  on(ta, "compositionstart", h.onCompositionStart);
  on(ta, "compositionupdate", h.onCompositionUpdate);
  on(ta, "compositionend", h.onCompositionEnd);
  on(ta, "focus", h.onFocus);
  ta.addEventListener("blur", (e) => {
    timed(stats, h.onBlur)(e);
    if (!isClosed()) outbox.sendNext();
  });
  window.addEventListener("focus", (e) => {
    timed(stats, h.onFocus)(e);
    if (session.state === "refused" && e.target === window) retrySession(); // back from logging in elsewhere
  });
  window.addEventListener("blur", (e) => {
    timed(stats, h.onBlur)(e);
    outbox.persistNow();
    if (!isClosed()) outbox.sendNext();
  });
  on(ta, "keyup", h.noteSelection);
  on(document, "selectionchange", h.noteSelection);
  on(document, "mouseup", h.onMouseup);
  on(document, "copy", h.onCopy);
  document.addEventListener("visibilitychange", (e) => {
    timed(stats, h.onVisibility)(e);
    if (document.visibilityState === "hidden") {
      outbox.persistNow();
      if (!isClosed()) outbox.sendNext();
    } else if (session.state === "refused") {
      retrySession(); // back from logging in in another tab
    }
  });
  window.addEventListener("pagehide", () => {
    if (isClosed()) return;
    outbox.persistNow();
    outbox.sendBeacons();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      submit();
    }
  });

  if (window.BroadcastChannel) {
    const channel = new BroadcastChannel(`editlab-post-edit-${config.post_edit_id}`);
    channel.onmessage = (msg) => {
      if (msg.data && msg.data.type === "opened" && msg.data.page_id !== pageId && !isClosed()) takenOver();
    };
    channel.postMessage({ type: "opened", page_id: pageId });
  }

  setInterval(tick, SEND_INTERVAL_MS);
  outbox.persistNow(); // from now on this page's record holds the draft: older records only their events
  outbox.dropEmptyStoredPages();
  if (start.restored) {
    setStatus("Restored the unsaved text kept in this browser.", "ok");
    drafts.schedule(0);
  } else if (outbox.hasEarlierPages) {
    setStatus("Sending the events kept in this browser…", "");
  }
  if (outbox.hasEarlierPages) outbox.sendNext();

  return {
    stats,
    submit,
    skip,
    resolveConflict,
    flush: () => outbox.flush(pause),
    saveDraft: () => drafts.save(),
    pending: outbox.pending,
    get nextSeq() {
      return outbox.nextSeq;
    },
    get version() {
      return drafts.version;
    },
    get conflict() {
      return drafts.conflict;
    },
    get session() {
      return session.kind;
    },
    get phase() {
      return phase;
    },
  };
}
