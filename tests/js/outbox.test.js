import { equal, fakeFetch, test, withFetch } from "./harness.js";
import { createOutbox, fitBatch } from "/static/annotations/editor/outbox.js";
import { createSession } from "/static/annotations/editor/session.js";
import { openStorage, pageKey, writePage } from "/static/annotations/editor/storage.js";

function outbox({ storedPages = [], firstSeq = 0, nav } = {}) {
  const calls = [];
  const state = { closed: false };
  const session = createSession({ fallbackToken: "tok", onRefused: (kind) => calls.push(`refused:${kind}`) });
  const box = createOutbox({
    postEditId: 1,
    pageId: "now",
    storedPages,
    firstSeq,
    store: openStorage(),
    url: "/events/",
    maxBatchEvents: 500,
    maxBatchBytes: 100000,
    session,
    stats: null,
    nav,
    hooks: {
      draft: () => ({ text: "draft", version: 1, dirty: true }),
      isClosed: () => state.closed,
      onSent: () => calls.push("sent"),
      onRejected: (m) => calls.push(`rejected:${m}`),
      onClosed: (m) => calls.push(`closed:${m}`),
      onNotFound: () => calls.push("not-found"),
      onOffline: () => calls.push("offline"),
      onStorageFull: () => calls.push("storage-full"),
    },
  });
  return { box, calls, session, state };
}

const ok = () => ({ status: 200, body: { stored: 1 } });

test("events are numbered from the server's next seq, after any kept in this browser", () => {
  const fresh = outbox({ firstSeq: 4 });
  equal(fresh.box.log({ k: "keydown" }).seq, 4);
  const kept = outbox({ firstSeq: 4, storedPages: [{ page_id: "old", events: [{ k: "input", seq: 9 }] }] });
  equal(kept.box.log({ k: "keydown" }).seq, 10);
  equal(kept.box.pending(), 2);
});

test("a batch fits the byte limit by halving", () => {
  const events = Array.from({ length: 8 }, (_, i) => ({ k: "input", seq: i, data: "x".repeat(100) }));
  const { n, body } = fitBatch("p", events, 500, 1200);
  equal(n, 2);
  equal(JSON.parse(body).events.length, 2);
});

test("an acknowledged batch leaves the outbox; earlier page loads go first, with their page id", async () => {
  const { box, calls } = outbox({ storedPages: [{ page_id: "old", events: [{ k: "input", seq: 0 }] }], firstSeq: 1 });
  box.log({ k: "keydown" });
  const fake = fakeFetch(ok);
  await withFetch(fake, () => box.flush(async () => {}));
  equal(
    fake.requests.map((r) => [r.body.page_id, r.body.events.map((e) => e.seq)]),
    [
      ["old", [0]],
      ["now", [1]],
    ],
  );
  equal(fake.requests[0].headers["X-CSRFToken"], "tok");
  equal([box.pending(), box.state, calls], [0, "idle", ["sent", "sent"]]);
  equal(localStorage.getItem(pageKey(1, "old")), null, "the old page's record is gone");
});

test("a refused batch is kept aside under its own key, never resent", async () => {
  const { box, calls } = outbox();
  box.log({ k: "keydown" });
  await withFetch(
    fakeFetch(() => ({ status: 400, body: { detail: "t decreases", code: "invalid" } })),
    () => box.sendNext(),
  );
  equal([box.pending(), calls], [0, ["rejected:t decreases"]]);
  equal(JSON.parse(localStorage.getItem("editlab:rejected:1:now:0")).error, "t decreases");
});

test("a seq conflict renumbers what is pending from the server's next seq", async () => {
  const { box } = outbox();
  box.log({ k: "keydown" });
  box.log({ k: "keydown" });
  const answers = [{ status: 409, body: { detail: "taken", code: "seq_conflict", next_seq: 7 } }, ok()];
  const fake = fakeFetch((request, n) => answers[n - 1]);
  await withFetch(fake, () => box.flush(async () => {}));
  equal(
    fake.requests[1].body.events.map((e) => e.seq),
    [7, 8],
  );
  equal(box.nextSeq, 9);
});

test("a closed item ends sending", async () => {
  const { box, calls } = outbox();
  box.log({ k: "keydown" });
  await withFetch(
    fakeFetch(() => ({ status: 409, body: { detail: "already submitted", code: "closed" } })),
    () => box.sendNext(),
  );
  equal(calls, ["closed:already submitted"]);
});

test("a network failure keeps the events and waits before the next attempt", async () => {
  const { box, calls } = outbox();
  box.log({ k: "keydown" });
  const fake = fakeFetch(() => {
    throw new TypeError("Failed to fetch");
  });
  equal(await withFetch(fake, () => box.sendNext()), false);
  equal([box.pending(), box.state, calls], [1, "waiting", ["offline"]]);
  await withFetch(fake, async () => box.tick());
  equal(fake.requests.length, 1, "no new attempt before the retry time");
});

test("a refused session keeps the events and refuses the session", async () => {
  const { box, calls, session } = outbox();
  box.log({ k: "keydown" });
  await withFetch(
    fakeFetch(() => ({
      status: 403,
      body: { detail: "Authentication credentials were not provided.", code: "not_authenticated" },
    })),
    () => box.sendNext(),
  );
  equal([box.pending(), session.state, calls], [1, "refused", ["refused:auth"]]);
});

test("the current page's record holds its events and the draft", () => {
  const { box } = outbox();
  box.log({ k: "keydown" });
  box.persistNow();
  const record = JSON.parse(localStorage.getItem(pageKey(1, "now")));
  equal([record.events.length, record.draft], [1, { text: "draft", version: 1, dirty: true }]);
});

test("nothing is written once the item is closed", () => {
  const { box, state } = outbox();
  box.log({ k: "keydown" });
  state.closed = true;
  box.persistNow();
  equal(localStorage.getItem(pageKey(1, "now")), null);
});

test("beacons carry every pending event as form posts of the payload", () => {
  const sent = [];
  const nav = {
    sendBeacon: (url, form) => sent.push([url, JSON.parse(form.get("payload")), form.get("csrfmiddlewaretoken")]),
  };
  writePage(openStorage(), 1, { page_id: "old", events: [{ k: "input", seq: 0 }] }, null);
  const { box } = outbox({ nav, storedPages: [{ page_id: "old", events: [{ k: "input", seq: 0 }] }], firstSeq: 1 });
  box.log({ k: "keydown" });
  box.sendBeacons();
  equal(
    sent.map(([url, payload, token]) => [url, payload.page_id, payload.events.length, token]),
    [
      ["/events/", "old", 1, "tok"],
      ["/events/", "now", 1, "tok"],
    ],
  );
  equal(box.pending(), 2, "beacons are not acknowledged: the events stay");
});
