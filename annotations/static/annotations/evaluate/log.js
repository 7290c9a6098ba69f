// The evaluation task's event log: events numbered from the seq the server gave the page, sent in
// batches in order, retried until acknowledged (a batch the server already stored is stored once),
// renumbered after the server's next seq when another page load of the same evaluation took theirs,
// and beaconed when the page goes away.

const RETRY_MAX_MS = 30000;
const BATCH_DELAY_MS = 1000; // events logged within it leave in one batch

// fetch, now (ms clock), setTimer/clearTimer and beacon are injectable (tests/js/evaluate-log.test.js).
export function createLog({
  url,
  pageId,
  firstSeq,
  csrfToken,
  maxBatch = 500,
  fetch = (...args) => window.fetch(...args),
  now = () => performance.now(),
  setTimer = (fn, ms) => setTimeout(fn, ms),
  clearTimer = (id) => clearTimeout(id),
  beacon = (target, body) => navigator.sendBeacon(target, body),
  onRefused = () => {},
}) {
  let nextSeq = firstSeq;
  let queue = [];
  let inflight = null;
  let timer = null;
  let failures = 0;
  let closed = false;

  function log(kind, data = {}) {
    const event = { ...data, seq: nextSeq++, t: Math.round(now() * 1000) / 1000, k: kind };
    queue.push(event);
    schedule(BATCH_DELAY_MS);
    return event;
  }

  function schedule(ms) {
    if (timer !== null || closed) return;
    timer = setTimer(() => {
      timer = null;
      send();
    }, ms);
  }

  function renumber(from) {
    let seq = from;
    for (const event of queue) event.seq = seq++;
    nextSeq = seq;
  }

  async function post(events) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken },
      body: JSON.stringify({ page_id: pageId, events }),
    });
    const answer = await response.json().catch(() => ({}));
    return { status: response.status, answer };
  }

  // Sends what is queued, one batch at a time; resolves when the queue is empty or a send failed.
  function send() {
    if (inflight) return inflight;
    inflight = (async () => {
      while (queue.length && !closed) {
        const batch = queue.slice(0, maxBatch);
        let result;
        try {
          result = await post(batch);
        } catch {
          result = { status: 0, answer: {} };
        }
        if (result.status === 200) {
          queue = queue.slice(batch.length);
          failures = 0;
        } else if (result.status === 409 && result.answer.code === "seq_conflict") {
          renumber(result.answer.next_seq);
        } else if (result.status === 409 && result.answer.code === "closed") {
          closed = true;
          queue = [];
        } else if (result.status === 400 || result.status === 404 || result.status === 403) {
          onRefused(result.answer.detail || `events refused (${result.status})`);
          queue = queue.slice(batch.length); // a batch the server will never take is not sent forever
        } else {
          failures++;
          inflight = null;
          schedule(Math.min(RETRY_MAX_MS, 500 * 2 ** failures));
          return false;
        }
      }
      inflight = null;
      return true;
    })();
    return inflight;
  }

  // Sends everything logged so far; resolves to true once the server holds it all.
  async function flush() {
    if (timer !== null) {
      clearTimer(timer);
      timer = null;
    }
    for (let attempt = 0; attempt < 5 && queue.length; attempt++) {
      await send();
    }
    return queue.length === 0;
  }

  // The page goes away: what is left goes as one beacon (a form post, as the editor's).
  function goodbye() {
    if (!queue.length || closed) return;
    const form = new FormData();
    form.append("payload", JSON.stringify({ page_id: pageId, events: queue.slice(0, maxBatch) }));
    form.append("csrfmiddlewaretoken", csrfToken);
    beacon(url, form);
  }

  return {
    log,
    flush,
    goodbye,
    renumber,
    pending: () => queue.length,
    lastSeq: () => nextSeq - 1,
    close: () => {
      closed = true;
    },
  };
}
