// editlab's editor logger: one plain module, no framework, no build step.
//
// It records every event of the post-editing text area with performance.now()
// timestamps, numbers them with consecutive sequence numbers, and sends them in
// batches. Nothing is thrown away before the server has acknowledged it: events and
// the draft text stay in localStorage (one record per page load) until a 200 comes
// back, so a reload, a crash or a network outage loses nothing.
//
// Typing must never lag: the event handlers only append a small object to an
// in-memory array. Serialising, persisting and sending happen on timers.
//
// Wire format: the editor <-> server contract (README, "The editor and its logger").
//
// A login session that ends mid-edit (expired, or flushed by an admin) makes the server refuse
// every request with a 403 until the annotator logs in again, which they do in another tab (a
// link in a banner). Logging in rotates the CSRF token, so every request reads the current token
// from the CSRF cookie instead of the one the page was rendered with: the old tab then works again
// by itself, and it notices the new login at once because the cookie changed.

const KEY_PREFIX = "editlab:pe:";
const REJECTED_PREFIX = "editlab:rejected:";
const SEND_INTERVAL_MS = 2000;
const PERSIST_DELAY_MS = 300;
const DRAFT_DEBOUNCE_MS = 1500;
const RETRY_MAX_MS = 30000;
const BEACON_MAX_BYTES = 60000; // browsers cap queued beacon data at 64 KiB
const KEEPALIVE_MAX_BYTES = 60000;
const STATS_SIZE = 50000;
const RECENT_INPUT_MS = 1000;
const SESSION_RETRY_MS = 15000; // asking the server while nobody has logged in again is wasted
const SESSION_POLL_MS = 500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const modifierBits = (e) => (e.ctrlKey ? 1 : 0) | (e.shiftKey ? 2 : 0) | (e.altKey ? 4 : 0) | (e.metaKey ? 8 : 0);

// The range [start, end) of `before` that was replaced to give `after`.
function changedRange(before, after) {
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

// Per-event handler cost, in a fixed ring so that measuring costs nothing either.
function makeStats() {
  const samples = new Float64Array(STATS_SIZE);
  const stats = {
    count: 0,
    totalMs: 0,
    maxMs: 0,
    persistCount: 0,
    persistTotalMs: 0,
    persistMaxMs: 0,
    byHandler: {},
    add(ms, name) {
      const h = this.byHandler[name] || (this.byHandler[name] = { count: 0, totalMs: 0, maxMs: 0 });
      h.count++;
      h.totalMs += ms;
      if (ms > h.maxMs) h.maxMs = ms;
      samples[this.count % STATS_SIZE] = ms;
      this.count++;
      this.totalMs += ms;
      if (ms > this.maxMs) this.maxMs = ms;
    },
    addPersist(ms) {
      this.persistCount++;
      this.persistTotalMs += ms;
      if (ms > this.persistMaxMs) this.persistMaxMs = ms;
    },
    samples() {
      return Array.from(samples.subarray(0, Math.min(this.count, STATS_SIZE)));
    },
    reset() {
      this.count = 0;
      this.totalMs = 0;
      this.maxMs = 0;
      this.byHandler = {};
    },
  };
  return stats;
}

function readCookie(name) {
  for (const part of document.cookie.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return "";
      }
    }
  }
  return "";
}

// "auth" when the server refused the request for want of a login, "csrf" for a refused CSRF
// token (DRF: "CSRF Failed: ..."), null for anything else (a 403 for a permission is not ours to fix).
function sessionRefusal(status, answer) {
  if (status !== 401 && status !== 403) return null;
  const code = String((answer && answer.code) || "");
  const error = String((answer && (answer.error || answer.detail)) || "");
  if (code === "csrf_failed" || /^CSRF Failed/i.test(error)) return "csrf";
  if (status === 401 || code === "not_authenticated" || code === "authentication_failed") return "auth";
  if (/authenticat/i.test(error)) return "auth"; // "Authentication credentials were not provided."
  return null;
}

function storage() {
  try {
    const probe = "editlab:probe";
    window.localStorage.setItem(probe, "1");
    window.localStorage.removeItem(probe);
    return window.localStorage;
  } catch {
    return null; // private mode or disabled: the logger still works, without crash safety
  }
}

function readStoredPages(store, postEditId, currentPageId) {
  const prefix = `${KEY_PREFIX}${postEditId}:`;
  const pages = [];
  if (!store) return pages;
  for (let i = 0; i < store.length; i++) {
    const key = store.key(i);
    if (!key || !key.startsWith(prefix) || key === prefix + currentPageId) continue;
    try {
      const record = JSON.parse(store.getItem(key));
      if (record && typeof record.page_id === "string" && Array.isArray(record.events)) pages.push(record);
    } catch {
      // An unreadable record is kept where it is for inspection, never sent.
    }
  }
  const firstSeq = (page) => (page.events.length ? page.events[0].seq : Infinity);
  pages.sort((a, b) => firstSeq(a) - firstSeq(b) || (a.saved || 0) - (b.saved || 0));
  return pages;
}

export function startEditor(config, els) {
  const store = storage();
  const stats = makeStats();
  const ta = els.textarea;
  const pageId = config.page_id;
  const urls = config.urls;
  const maxBatchEvents = Math.max(1, Math.min(config.max_batch_events || 500, 500));
  const maxBatchBytes = Math.max(1024, (config.max_batch_bytes || 1048576) - 1024);
  const csrfCookie = config.csrf_cookie_name || "csrftoken";

  // The cookie holds the current token (a login elsewhere rotates it); the page's own token is
  // the fallback when the cookie cannot be read (CSRF_COOKIE_HTTPONLY or CSRF_USE_SESSIONS).
  const csrfToken = () => readCookie(csrfCookie) || config.csrf_token;

  // ---------------------------------------------------------------- outbox
  // One entry per page load whose events are not acknowledged yet; older pages first.
  const storedPages = readStoredPages(store, config.post_edit_id, pageId);
  const current = { page_id: pageId, events: [] };
  const outbox = storedPages.filter((p) => p.events.length).map((p) => ({ page_id: p.page_id, events: p.events }));
  outbox.push(current);
  const maxPendingSeq = storedPages.reduce(
    (m, p) => p.events.reduce((mm, ev) => Math.max(mm, ev.seq), m),
    -1,
  );
  let nextSeq = Math.max(config.next_seq, maxPendingSeq + 1);

  // ---------------------------------------------------------------- draft
  // Start from the newest unsaved local draft when it differs from the server's.
  let version = config.version;
  let startText = config.draft;
  let restored = false;
  const localDrafts = storedPages
    .filter((p) => p.draft && typeof p.draft.text === "string" && Number.isInteger(p.draft.version))
    .sort((a, b) => (b.saved || 0) - (a.saved || 0));
  const unsaved = localDrafts.find((p) => p.draft.dirty);
  // A tab that saved after the server rendered this page (an old tab sending what it kept
  // when its session came back, while this one loaded): its text is the server's by now.
  const newer = localDrafts
    .filter((p) => !p.draft.dirty && p.draft.version > config.version)
    .sort((a, b) => b.draft.version - a.draft.version)[0];
  let savedText = config.draft; // what the server holds at `version`
  if (unsaved && unsaved.draft.text !== config.draft) {
    startText = unsaved.draft.text;
    version = unsaved.draft.version;
    restored = true;
    savedText = null;
  } else if (newer) {
    startText = newer.draft.text;
    version = newer.draft.version;
    savedText = startText;
  }
  let shadow = startText; // the text as the log has it so far
  let lastSel = [0, 0];
  let pendingBefore = null;
  let composition = null;
  let lastKeyT = -Infinity;
  let lastMouseT = -Infinity;
  let mouseDown = false;

  let closed = false; // submitted, skipped or taken over by another tab
  let quiet = false; // not recording: closed, or a submit/skip is on its way
  let submitting = false;
  let inflight = null;
  let retryAt = 0;
  let failures = 0;
  let persistTimer = null;
  let draftTimer = null;
  let draftDelay = DRAFT_DEBOUNCE_MS;
  let lastEditT = 0;
  let draftInflight = null;
  let conflict = null;
  let session = null; // while the server refuses us for the session: { kind, cookie, retryAt }

  // ---------------------------------------------------------------- status
  function setStatus(text, kind = "") {
    if (!els.status) return;
    els.status.textContent = text;
    els.status.dataset.kind = kind;
  }

  function pendingCount() {
    let n = 0;
    for (const entry of outbox) n += entry.events.length;
    return n;
  }

  // ---------------------------------------------------------------- the login session
  function showSessionBanner(show) {
    if (els.session) els.session.hidden = !show;
  }

  function sessionStatus() {
    const why =
      session.kind === "csrf"
        ? "the server refused this page's security token (CSRF)"
        : "your session has expired";
    return `Changes not saved on the server yet: ${why}. ${pendingCount()} events and your text are kept in this browser and sent once you log in again.`;
  }

  // The server refused a request sent with `token` for the session, not for what it carried.
  // Returns true when it is worth retrying at once (the token changed while the request was out).
  function refusedForSession(kind, token) {
    const cookie = readCookie(csrfCookie);
    if (cookie && cookie !== token) return true; // logged in elsewhere meanwhile: retry now
    session = { kind, cookie, retryAt: Date.now() + SESSION_RETRY_MS };
    showSessionBanner(true);
    setStatus(submitting ? `Waiting to finish: ${sessionStatus()}` : sessionStatus(), "error");
    return false;
  }

  // Any 2xx: logged in again. Everything kept meanwhile goes out now.
  function sessionBack() {
    if (!session) return;
    session = null;
    failures = 0;
    retryAt = 0;
    showSessionBanner(false);
    if (submitting) setStatus("Logged in again: finishing…", "ok");
    else if (!conflict) setStatus(pendingCount() ? "Logged in again: sending your work…" : "All changes saved", "ok");
    if (!submitting && ta.value !== savedText) scheduleDraftSave(0);
  }

  // One attempt now, then none before SESSION_RETRY_MS unless the CSRF cookie changes (a login).
  function retrySession() {
    if (!session || closed) return;
    session.cookie = readCookie(csrfCookie);
    session.retryAt = Date.now() + SESSION_RETRY_MS;
    if (pendingCount()) sendNext();
    else if (!submitting) saveDraft();
  }

  function sessionRetryDue() {
    return session && (Date.now() >= session.retryAt || readCookie(csrfCookie) !== session.cookie);
  }

  // Waits before another attempt: a second, or while the session is refused, until a login
  // elsewhere (a new CSRF cookie), the periodic retry, or an answer that brought it back.
  async function pause() {
    if (!session) return sleep(1000);
    while (session && !closed && !sessionRetryDue()) await sleep(SESSION_POLL_MS);
    if (session) {
      session.cookie = readCookie(csrfCookie);
      session.retryAt = Date.now() + SESSION_RETRY_MS;
    }
  }

  // ---------------------------------------------------------------- recording (the hot path)
  function record(ev) {
    ev.seq = nextSeq++;
    ev.t = performance.now();
    current.events.push(ev);
    schedulePersist();
    return ev;
  }

  function timed(fn) {
    const name = fn.name;
    return (e) => {
      const t0 = performance.now();
      try {
        fn(e);
      } finally {
        stats.add(performance.now() - t0, name);
      }
    };
  }

  function selectionSource() {
    if (mouseDown) return "mouse";
    const now = performance.now();
    const latest = Math.max(lastKeyT, lastMouseT);
    if (now - latest > RECENT_INPUT_MS) return "other";
    return lastMouseT > lastKeyT ? "mouse" : "key";
  }

  function noteSelection() {
    if (quiet) return;
    const s = ta.selectionStart;
    const e = ta.selectionEnd;
    if (s === lastSel[0] && e === lastSel[1]) return;
    lastSel = [s, e];
    record({ k: "select", s, e, src: selectionSource() });
  }

  function onKeydown(e) {
    if (quiet) return;
    lastKeyT = performance.now();
    record({ k: "keydown", key: e.key || "Unidentified", code: e.code || "", mods: modifierBits(e), rep: e.repeat });
  }

  function onBeforeInput(e) {
    if (quiet) return;
    let s = ta.selectionStart;
    let end = ta.selectionEnd;
    if (e.inputType === "insertCompositionText" && composition) {
      // During a composition the selection is the IME's caret, not the range it replaces.
      s = composition.s;
      end = composition.e;
    }
    pendingBefore = record({ k: "beforeinput", it: e.inputType, s, e: end });
  }

  function onInput(e) {
    if (quiet) return;
    const it = e.inputType || "insertReplacementText";
    const value = ta.value;
    const caret = ta.selectionStart;
    let before = pendingBefore;
    pendingBefore = null;
    if (!before || before.it !== it) {
      // No beforeinput (e.g. execCommand): describe the change from the text itself.
      const [s, end] = changedRange(shadow, value);
      before = record({ k: "beforeinput", it, s, e: end });
    }
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
    record(ev);
    if (composition && it === "insertCompositionText") {
      // The composition now spans what the IME inserted at its start.
      composition.e = composition.s + (value.length - (shadow.length - (composition.e - composition.s)));
    }
    shadow = value;
    lastSel = [caret, ta.selectionEnd];
    scheduleDraftSave();
  }

  function onPaste(e) {
    if (quiet) return;
    const data = e.clipboardData ? e.clipboardData.getData("text/plain") : "";
    record({ k: "paste", data });
  }

  function onCut() {
    if (quiet) return;
    record({ k: "cut", data: ta.value.slice(ta.selectionStart, ta.selectionEnd) });
  }

  function onCopy(e) {
    if (quiet) return;
    const field = e.target;
    const inField = field && typeof field.selectionStart === "number" && typeof field.value === "string";
    const data = inField
      ? field.value.slice(field.selectionStart, field.selectionEnd)
      : String(window.getSelection() || "");
    record({ k: "copy", data });
  }

  function onMousedown() {
    if (quiet) return;
    mouseDown = true;
    lastMouseT = performance.now();
    record({ k: "mousedown" });
  }

  function onMouseup() {
    if (!mouseDown) return;
    mouseDown = false;
    lastMouseT = performance.now();
    if (!quiet) noteSelection();
    lastMouseT = performance.now();
  }

  function onCompositionStart() {
    if (quiet) return;
    composition = { s: ta.selectionStart, e: ta.selectionEnd };
    record({ k: "compositionstart" });
  }

  function onCompositionUpdate(e) {
    if (quiet) return;
    record({ k: "compositionupdate", data: e.data || "" });
  }

  function onCompositionEnd(e) {
    if (quiet) return;
    composition = null;
    record({ k: "compositionend", data: e.data || "" });
  }

  // Window focus/blur (src "window") is what makes time unfocused; the text area's own
  // focus/blur (src "textarea") is logged too, but reading the references is work.
  function onFocus(e) {
    if (quiet || (e.currentTarget === window && e.target !== window)) return;
    record({ k: "focus", src: e.currentTarget === window ? "window" : "textarea" });
  }

  function onBlur(e) {
    if (quiet || (e.currentTarget === window && e.target !== window)) return;
    record({ k: "blur", src: e.currentTarget === window ? "window" : "textarea" });
  }

  function onVisibility() {
    if (quiet) return;
    record({ k: "visibility", state: document.visibilityState === "hidden" ? "hidden" : "visible" });
  }

  // ---------------------------------------------------------------- persisting (off the hot path)
  function schedulePersist() {
    if (persistTimer !== null || !store) return;
    persistTimer = setTimeout(() => {
      if (window.requestIdleCallback) window.requestIdleCallback(persistNow, { timeout: 700 });
      else persistNow();
    }, PERSIST_DELAY_MS);
  }

  function writeRecord(entry, draft) {
    const key = `${KEY_PREFIX}${config.post_edit_id}:${entry.page_id}`;
    if (!entry.events.length && !draft) {
      store.removeItem(key);
      return;
    }
    store.setItem(key, JSON.stringify({ page_id: entry.page_id, events: entry.events, draft, saved: Date.now() }));
  }

  function persistNow() {
    if (persistTimer !== null) clearTimeout(persistTimer);
    persistTimer = null;
    if (!store || closed) return;
    const t0 = performance.now();
    const text = ta.value;
    try {
      for (const entry of outbox) {
        if (entry === current) {
          writeRecord(entry, { text, version, dirty: text !== savedText });
        } else if (entry.dirty) {
          writeRecord(entry, null);
          entry.dirty = false;
        }
      }
    } catch (err) {
      setStatus("This browser cannot store your work locally (storage full); keep the network on.", "error");
      console.error("editlab logger: localStorage", err);
    }
    stats.addPersist(performance.now() - t0);
  }

  function clearStored() {
    if (!store) return;
    for (const entry of outbox) store.removeItem(`${KEY_PREFIX}${config.post_edit_id}:${entry.page_id}`);
  }

  // ---------------------------------------------------------------- sending
  function nextBatch() {
    const entry = outbox.find((e) => e.events.length);
    if (!entry) return null;
    let n = Math.min(entry.events.length, maxBatchEvents);
    let body = JSON.stringify({ page_id: entry.page_id, events: entry.events.slice(0, n) });
    while (body.length * 3 > maxBatchBytes && n > 1) {
      // UTF-16 length times 3 bounds the UTF-8 size.
      n = Math.max(1, Math.floor(n / 2));
      body = JSON.stringify({ page_id: entry.page_id, events: entry.events.slice(0, n) });
    }
    return { entry, n, body };
  }

  function acknowledge(entry, n) {
    entry.events.splice(0, n);
    if (entry !== current) {
      entry.dirty = true;
      if (!entry.events.length) outbox.splice(outbox.indexOf(entry), 1);
      if (store && !entry.events.length) store.removeItem(`${KEY_PREFIX}${config.post_edit_id}:${entry.page_id}`);
    }
    persistNow();
  }

  function keepRejected(entry, n, error) {
    // Never dropped: kept in this browser under its own key for an admin to recover.
    const events = entry.events.slice(0, n);
    try {
      if (store) {
        store.setItem(
          `${REJECTED_PREFIX}${config.post_edit_id}:${entry.page_id}:${events[0].seq}`,
          JSON.stringify({ page_id: entry.page_id, events, error }),
        );
      }
    } catch {
      // nothing more we can do in this browser
    }
    console.error("editlab logger: batch rejected", error);
    setStatus(`The server refused some events: ${error}`, "error");
    acknowledge(entry, n);
  }

  // Sends one batch; resolves to true when it was acknowledged (or set aside).
  async function sendNext() {
    if (inflight) return inflight;
    const batch = nextBatch();
    if (!batch) return true;
    persistNow();
    inflight = (async () => {
      let offline = true;
      try {
        const token = csrfToken();
        const response = await fetch(urls.events, {
          method: "POST",
          credentials: "same-origin",
          keepalive: batch.body.length < KEEPALIVE_MAX_BYTES,
          headers: { "Content-Type": "application/json", "X-CSRFToken": token },
          body: batch.body,
        });
        if (response.ok) {
          failures = 0;
          acknowledge(batch.entry, batch.n);
          if (session) sessionBack();
          else if (!submitting && !conflict) setStatus(pendingCount() ? "Saving…" : "All changes saved", "ok");
          return true;
        }
        offline = false;
        const answer = await response.json().catch(() => ({}));
        const refusal = sessionRefusal(response.status, answer);
        if (refusal) {
          if (refusedForSession(refusal, token)) retryAt = 0;
          return false;
        }
        if (response.status === 404) {
          // Logged in again as someone else: the work stays here for its annotator.
          setStatus(
            `Not saved: the server does not find this item among the logged-in user's (logged in as someone else?). ${pendingCount()} events are kept in this browser.`,
            "error",
          );
        }
        if (response.status === 400) {
          keepRejected(batch.entry, batch.n, answer.error || "bad request");
          return true;
        }
        if (response.status === 409 && answer.code === "seq_conflict" && Number.isInteger(answer.next_seq)) {
          renumber(answer.next_seq); // another tab numbered from the same point: move ours after
          return false;
        }
        if (response.status === 409) {
          closeAfterServer(answer.error || "This item is already closed.");
          return true;
        }
        throw new Error(answer.error || `HTTP ${response.status}`);
      } catch (err) {
        failures++;
        retryAt = Date.now() + Math.min(RETRY_MAX_MS, 1000 * 2 ** Math.min(failures, 5));
        if (offline) setStatus(`Offline: ${pendingCount()} events kept in this browser, retrying.`, "warn");
        console.warn("editlab logger: send failed", err);
        return false;
      } finally {
        inflight = null;
      }
    })();
    return inflight;
  }

  function renumber(from) {
    let seq = from;
    for (const entry of outbox) {
      for (const ev of entry.events) ev.seq = seq++;
      entry.dirty = true;
    }
    nextSeq = seq;
    persistNow();
  }

  function tick() {
    if (closed) return;
    if (session) {
      if (sessionRetryDue()) retrySession();
      return;
    }
    if (Date.now() < retryAt) return;
    if (pendingCount()) sendNext();
  }

  async function flushAll() {
    while (pendingCount() && !closed) {
      const ok = await sendNext();
      if (!ok) await pause();
    }
  }

  function sendBeacons() {
    if (!navigator.sendBeacon) return;
    for (const entry of outbox) {
      let start = 0;
      while (start < entry.events.length) {
        let n = Math.min(entry.events.length - start, maxBatchEvents);
        let payload = JSON.stringify({ page_id: entry.page_id, events: entry.events.slice(start, start + n) });
        while (payload.length * 3 > BEACON_MAX_BYTES && n > 1) {
          n = Math.max(1, Math.floor(n / 2));
          payload = JSON.stringify({ page_id: entry.page_id, events: entry.events.slice(start, start + n) });
        }
        const form = new FormData();
        form.append("csrfmiddlewaretoken", csrfToken());
        form.append("payload", payload);
        // Not acknowledged: the events stay stored and the next visit re-sends them (stored once).
        if (!navigator.sendBeacon(urls.events, form)) return;
        start += n;
      }
    }
  }

  // ---------------------------------------------------------------- drafts
  function scheduleDraftSave(delay = DRAFT_DEBOUNCE_MS) {
    if (closed || conflict) return;
    // One timer re-armed lazily, not a clearTimeout/setTimeout pair per keystroke.
    lastEditT = performance.now();
    draftDelay = delay;
    if (draftTimer === null) draftTimer = setTimeout(draftTimerFired, delay);
  }

  function draftTimerFired() {
    const wait = lastEditT + draftDelay - performance.now();
    if (wait > 1) {
      draftTimer = setTimeout(draftTimerFired, wait);
      return;
    }
    draftTimer = null;
    saveDraft();
  }

  async function postJSON(url, body) {
    const token = csrfToken();
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
      body: JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({}));
    return { status: response.status, answer, token };
  }

  async function saveDraft() {
    if (closed || conflict || submitting) return;
    if (draftInflight) {
      await draftInflight;
      return saveDraft();
    }
    const text = ta.value;
    if (text === savedText) return;
    // The text goes to localStorage before it goes to the network, so that a tab opened while
    // this save fails (an expired session, an outage) starts from it, not from an older copy.
    persistNow();
    draftInflight = (async () => {
      try {
        const { status, answer, token } = await postJSON(urls.draft, { page_id: pageId, text, version });
        const refusal = sessionRefusal(status, answer);
        if (status === 200) {
          version = answer.version;
          savedText = text;
          persistNow();
          if (session) sessionBack();
          else if (!pendingCount() && !conflict) setStatus("All changes saved", "ok");
        } else if (refusal) {
          // Kept in localStorage; saved again when the session is back (sessionBack).
          if (refusedForSession(refusal, token)) scheduleDraftSave(0);
        } else if (status === 409 && answer.error === "conflict" && answer.server_text === text) {
          version = answer.server_version; // saved already (the answer to an earlier save was lost)
          savedText = text;
          persistNow();
        } else if (status === 409 && answer.error === "conflict") {
          showConflict(answer.server_text, answer.server_version);
        } else if (status === 409) {
          closeAfterServer(answer.error || "This item is already closed.");
        } else {
          setStatus(`Draft not saved: ${answer.error || `HTTP ${status}`} (kept in this browser).`, "error");
        }
      } catch {
        scheduleDraftSave(5000); // offline: the draft is in localStorage meanwhile
      } finally {
        draftInflight = null;
      }
    })();
    return draftInflight;
  }

  // Replaces the whole text as one logged edit (used when resolving a conflict).
  function replaceText(text) {
    const t0 = performance.now();
    record({ k: "beforeinput", it: "insertReplacementText", s: 0, e: ta.value.length });
    ta.value = text;
    record({ k: "input", it: "insertReplacementText", s: text.length, len: text.length, data: text, f: true });
    shadow = text;
    ta.setSelectionRange(text.length, text.length);
    lastSel = [text.length, text.length];
    stats.add(performance.now() - t0, "replaceText");
  }

  function showConflict(serverText, serverVersion) {
    conflict = { serverText, serverVersion };
    const panel = els.conflict;
    if (!panel) return;
    panel.querySelector("[data-conflict=mine]").value = ta.value;
    panel.querySelector("[data-conflict=theirs]").value = serverText;
    panel.hidden = false;
    panel.querySelectorAll("[data-choose]").forEach((b) => (b.hidden = false));
    setStatus("This item was changed in another tab or device: choose which text to keep.", "warn");
  }

  function resolveConflict(choice) {
    if (!conflict) return;
    version = conflict.serverVersion;
    savedText = null;
    if (choice === "theirs") replaceText(conflict.serverText);
    conflict = null;
    els.conflict.querySelectorAll("[data-choose]").forEach((b) => (b.hidden = true));
    setStatus("Kept; the other text stays below for copying.", "ok");
    ta.focus();
    saveDraft();
  }

  // ---------------------------------------------------------------- submit / skip
  function setBusy(busy) {
    submitting = busy;
    quiet = busy || closed;
    ta.readOnly = busy || closed;
    for (const b of els.buttons || []) b.disabled = busy || closed;
  }

  function closeAfterServer(message) {
    closed = true;
    quiet = true;
    showSessionBanner(false);
    clearStored();
    ta.readOnly = true;
    setStatus(message, "error");
  }

  async function finish(url, body, waitingText) {
    clearTimeout(draftTimer);
    draftTimer = null;
    if (draftInflight) await draftInflight;
    setStatus(waitingText, "");
    await flushAll();
    for (;;) {
      if (closed) return null; // taken over by another tab, which has this work now
      try {
        const { status, answer, token } = await postJSON(url, { page_id: pageId, ...body() });
        if (status === 200) {
          closed = true;
          quiet = true;
          clearStored();
          showSessionBanner(false);
          window.location.assign(answer.next_url || urls.next);
          return null;
        }
        const refusal = sessionRefusal(status, answer);
        if (refusal) {
          // Not an answer to the submit: it goes through by itself once the user has logged in.
          if (!refusedForSession(refusal, token)) await pause();
          continue;
        }
        if (status === 409 && answer.error === "conflict") {
          showConflict(answer.server_text, answer.server_version);
          return answer.error;
        }
        return answer.error || `HTTP ${status}`;
      } catch {
        setStatus("Cannot reach the server; your work is kept in this browser. Retrying…", "warn");
        await sleep(2000);
      }
    }
  }

  async function submit() {
    if (submitting || closed || conflict) return;
    setBusy(true);
    record({ k: "submit" });
    const error = await finish(
      urls.submit,
      () => ({ text: ta.value, version, last_seq: nextSeq - 1 }),
      "Submitting…",
    );
    if (error) {
      setBusy(false);
      if (!conflict) setStatus(`Not submitted: ${error}`, "error");
    }
  }

  async function skip(reason) {
    if (submitting || closed) return "busy";
    setBusy(true);
    const error = await finish(urls.skip, () => ({ reason }), "Skipping…");
    if (error) setBusy(false);
    return error;
  }

  // ---------------------------------------------------------------- another tab takes over
  function takenOver() {
    persistNow();
    closed = true;
    quiet = true;
    ta.readOnly = true;
    for (const b of els.buttons || []) b.disabled = true;
    showSessionBanner(false); // the other tab has this work (it read what this one kept)
    setStatus("This item was opened in another tab; continue there (or reload this page).", "warn");
  }

  // ---------------------------------------------------------------- wiring
  ta.value = startText;
  ta.readOnly = false;
  record({ k: "load", data: startText, len: startText.length, state: document.visibilityState === "hidden" ? "hidden" : "visible" });
  ta.focus();
  ta.setSelectionRange(0, 0);
  lastSel = [0, 0];
  record({ k: "select", s: 0, e: 0, src: "other" });

  ta.addEventListener("keydown", timed(onKeydown));
  ta.addEventListener("beforeinput", timed(onBeforeInput));
  ta.addEventListener("input", timed(onInput));
  ta.addEventListener("paste", timed(onPaste));
  ta.addEventListener("cut", timed(onCut));
  ta.addEventListener("select", timed(noteSelection));
  ta.addEventListener("mousedown", timed(onMousedown));
  ta.addEventListener("compositionstart", timed(onCompositionStart));
  ta.addEventListener("compositionupdate", timed(onCompositionUpdate));
  ta.addEventListener("compositionend", timed(onCompositionEnd));
  ta.addEventListener("focus", timed(onFocus));
  ta.addEventListener("blur", (e) => {
    timed(onBlur)(e);
    if (!closed) sendNext();
  });
  window.addEventListener("focus", (e) => {
    timed(onFocus)(e);
    if (session && e.target === window) retrySession(); // back from logging in elsewhere
  });
  window.addEventListener("blur", (e) => {
    timed(onBlur)(e);
    persistNow();
    if (!closed) sendNext();
  });
  ta.addEventListener("keyup", timed(noteSelection));
  document.addEventListener("selectionchange", timed(noteSelection));
  document.addEventListener("mouseup", timed(onMouseup));
  document.addEventListener("copy", timed(onCopy));
  document.addEventListener("visibilitychange", (e) => {
    timed(onVisibility)(e);
    if (document.visibilityState === "hidden") {
      persistNow();
      if (!closed) sendNext();
    } else if (session) {
      retrySession(); // back from logging in in another tab
    }
  });
  window.addEventListener("pagehide", () => {
    if (closed) return;
    persistNow();
    sendBeacons();
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
      if (msg.data && msg.data.type === "opened" && msg.data.page_id !== pageId && !closed) takenOver();
    };
    channel.postMessage({ type: "opened", page_id: pageId });
  }

  setInterval(tick, SEND_INTERVAL_MS);
  persistNow(); // from now on this page's record holds the draft: older records only their events
  if (store) {
    for (const page of storedPages) {
      if (!page.events.length) store.removeItem(`${KEY_PREFIX}${config.post_edit_id}:${page.page_id}`);
    }
  }
  if (restored) {
    setStatus("Restored the unsaved text kept in this browser.", "ok");
    scheduleDraftSave(0);
  } else if (outbox.length > 1) {
    setStatus("Sending the events kept in this browser…", "");
  }
  if (outbox.length > 1) sendNext();

  return {
    stats,
    submit,
    skip,
    resolveConflict,
    flush: flushAll,
    saveDraft,
    pending: pendingCount,
    get nextSeq() {
      return nextSeq;
    },
    get version() {
      return version;
    },
    get conflict() {
      return conflict;
    },
    get session() {
      return session && session.kind;
    },
  };
}

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
    buttons: Array.from(document.querySelectorAll("[data-editor-button]")),
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
  document.getElementById("skip-button")?.addEventListener("click", () => dialog.showModal());
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
