// The outbox: events not yet acknowledged by the server, one entry per page load (older page
// loads first, found in localStorage after a reload), sent in batches with retries, kept in
// localStorage until a 200 comes back, and beaconed when the page goes away.

import { sessionRefusal } from "./session.js";
import { keepRejected, pageKey, removePage, writePage } from "./storage.js";

const PERSIST_DELAY_MS = 300;
const RETRY_MAX_MS = 30000;
const BEACON_MAX_BYTES = 60000; // browsers cap queued beacon data at 64 KiB
const KEEPALIVE_MAX_BYTES = 60000;

// Splits the front of `events` into a batch whose JSON fits `maxBytes` (UTF-16 length times 3
// bounds the UTF-8 size): { n, body }.
export function fitBatch(pageId, events, maxEvents, maxBytes) {
  let n = Math.min(events.length, maxEvents);
  let body = JSON.stringify({ page_id: pageId, events: events.slice(0, n) });
  while (body.length * 3 > maxBytes && n > 1) {
    n = Math.max(1, Math.floor(n / 2));
    body = JSON.stringify({ page_id: pageId, events: events.slice(0, n) });
  }
  return { n, body };
}

// hooks: draft() -> the draft record to keep with the current page ({text, version, dirty});
// isClosed(); onSent() after an acknowledged batch; onRejected(message); onClosed(message) when
// the server says the item is closed; onNotFound(); onOffline(); onStorageFull(error).
export function createOutbox({
  postEditId,
  pageId,
  storedPages,
  firstSeq,
  store,
  url,
  maxBatchEvents,
  maxBatchBytes,
  session,
  stats,
  hooks,
  nav = navigator,
}) {
  const current = { page_id: pageId, events: [] };
  const entries = storedPages.filter((p) => p.events.length).map((p) => ({ page_id: p.page_id, events: p.events }));
  entries.push(current);
  const maxStoredSeq = storedPages.reduce((m, p) => p.events.reduce((mm, ev) => Math.max(mm, ev.seq), m), -1);
  let nextSeq = Math.max(firstSeq, maxStoredSeq + 1);

  // "idle", "sending" (one batch in flight), or "waiting" (until retryAt, after a failure).
  let state = "idle";
  let inflight = null;
  let failures = 0;
  let retryAt = 0;
  let persistTimer = null;

  const pending = () => entries.reduce((n, entry) => n + entry.events.length, 0);

  function schedulePersist() {
    if (persistTimer !== null || !store) return;
    persistTimer = setTimeout(() => {
      if (window.requestIdleCallback) window.requestIdleCallback(persistNow, { timeout: 700 });
      else persistNow();
    }, PERSIST_DELAY_MS);
  }

  // The hot path's one call: number, timestamp and keep the event.
  function log(ev) {
    ev.seq = nextSeq++;
    ev.t = performance.now();
    current.events.push(ev);
    schedulePersist();
    return ev;
  }

  function persistNow() {
    if (persistTimer !== null) clearTimeout(persistTimer);
    persistTimer = null;
    if (!store || hooks.isClosed()) return;
    const t0 = performance.now();
    try {
      for (const entry of entries) {
        if (entry === current) {
          writePage(store, postEditId, entry, hooks.draft());
        } else if (entry.dirty) {
          writePage(store, postEditId, entry, null);
          entry.dirty = false;
        }
      }
    } catch (err) {
      hooks.onStorageFull(err);
    }
    if (stats) stats.addPersist(performance.now() - t0);
  }

  function clearStored() {
    for (const entry of entries) removePage(store, postEditId, entry.page_id);
  }

  function nextBatch() {
    const entry = entries.find((e) => e.events.length);
    if (!entry) return null;
    return { entry, ...fitBatch(entry.page_id, entry.events, maxBatchEvents, maxBatchBytes) };
  }

  function acknowledge(entry, n) {
    entry.events.splice(0, n);
    if (entry !== current) {
      entry.dirty = true;
      if (!entry.events.length) {
        entries.splice(entries.indexOf(entry), 1);
        removePage(store, postEditId, entry.page_id);
      }
    }
    persistNow();
  }

  function reject(entry, n, message) {
    keepRejected(store, postEditId, entry.page_id, entry.events.slice(0, n), message);
    console.error("editlab logger: batch rejected", message);
    hooks.onRejected(message);
    acknowledge(entry, n);
  }

  // Another tab numbered from the same point: move ours after `from`.
  function renumber(from) {
    let seq = from;
    for (const entry of entries) {
      for (const ev of entry.events) ev.seq = seq++;
      entry.dirty = true;
    }
    nextSeq = seq;
    persistNow();
  }

  async function post(batch) {
    const token = session.token();
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      keepalive: batch.body.length < KEEPALIVE_MAX_BYTES,
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
      body: batch.body,
    });
    const answer = response.ok ? null : await response.json().catch(() => ({}));
    return { response, answer, token };
  }

  // Sends one batch; resolves to true when it was acknowledged (or set aside).
  function sendNext() {
    if (inflight) return inflight;
    const batch = nextBatch();
    if (!batch) return Promise.resolve(true);
    persistNow();
    state = "sending";
    inflight = (async () => {
      let offline = true;
      try {
        const { response, answer, token } = await post(batch);
        if (response.ok) {
          failures = 0;
          state = "idle";
          acknowledge(batch.entry, batch.n);
          hooks.onSent();
          return true;
        }
        offline = false;
        const message = answer.detail;
        const refusal = sessionRefusal(response.status, answer);
        if (refusal) {
          state = "idle";
          if (session.refused(refusal, token)) retryAt = 0;
          return false;
        }
        if (response.status === 404) hooks.onNotFound();
        if (response.status === 400) {
          state = "idle";
          reject(batch.entry, batch.n, message || "bad request");
          return true;
        }
        if (response.status === 409 && answer.code === "seq_conflict" && Number.isInteger(answer.next_seq)) {
          state = "idle";
          renumber(answer.next_seq);
          return false;
        }
        if (response.status === 409) {
          state = "idle";
          hooks.onClosed(message || "This item is already closed.");
          return true;
        }
        throw new Error(message || `HTTP ${response.status}`);
      } catch (err) {
        failures++;
        state = "waiting";
        retryAt = Date.now() + Math.min(RETRY_MAX_MS, 1000 * 2 ** Math.min(failures, 5));
        if (offline) hooks.onOffline();
        console.warn("editlab logger: send failed", err);
        return false;
      } finally {
        inflight = null;
      }
    })();
    return inflight;
  }

  // The periodic timer: send what is pending unless waiting out a failure.
  function tick() {
    if (Date.now() < retryAt) return;
    if (pending()) sendNext();
  }

  // Everything out, waiting (`pause`) between failed attempts.
  async function flush(pause) {
    while (pending() && !hooks.isClosed()) {
      const ok = await sendNext();
      if (!ok) await pause();
    }
  }

  // The page is going away: what is pending goes out as beacons. Not acknowledged: the events
  // stay stored and the next visit re-sends them (stored once).
  function sendBeacons() {
    if (!nav.sendBeacon) return;
    for (const entry of entries) {
      let start = 0;
      while (start < entry.events.length) {
        const { n, body } = fitBatch(entry.page_id, entry.events.slice(start), maxBatchEvents, BEACON_MAX_BYTES);
        const form = new FormData();
        form.append("csrfmiddlewaretoken", session.token());
        form.append("payload", body);
        if (!nav.sendBeacon(url, form)) return;
        start += n;
      }
    }
  }

  // After the session came back: try again at once.
  function resetRetry() {
    failures = 0;
    retryAt = 0;
    if (state === "waiting") state = "idle";
  }

  // Page loads found in storage with nothing left to send hold only an old draft: drop them now
  // that this page's record holds the draft.
  function dropEmptyStoredPages() {
    if (!store) return;
    for (const page of storedPages) {
      if (!page.events.length) store.removeItem(pageKey(postEditId, page.page_id));
    }
  }

  return {
    log,
    pending,
    persistNow,
    clearStored,
    sendNext,
    tick,
    flush,
    sendBeacons,
    resetRetry,
    dropEmptyStoredPages,
    get hasEarlierPages() {
      return entries.length > 1;
    },
    get state() {
      return state;
    },
    get nextSeq() {
      return nextSeq;
    },
  };
}
