import { equal, fakeFetch, test } from "./harness.js";
import { createLog } from "/static/annotations/evaluate/log.js";

const PAGE = "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0";

function make(fake, extra = {}) {
  let clock = 0;
  return createLog({
    url: "/api/evaluations/1/events/",
    pageId: PAGE,
    firstSeq: 4,
    csrfToken: "tok",
    fetch: fake.fetch,
    now: () => (clock += 10),
    setTimer: () => 1, // nothing is sent on its own: the test flushes
    clearTimer: () => {},
    ...extra,
  });
}

test("events are numbered from the page's first seq and sent once in order", async () => {
  const fake = fakeFetch(() => ({ status: 200, body: { stored: 2, next_seq: 6 } }));
  const log = make(fake);
  log.log("load", { state: "visible" });
  log.log("keydown", { key: "ArrowRight" });
  equal(await log.flush(), true);
  equal(fake.requests.length, 1);
  equal(fake.requests[0].body, {
    page_id: PAGE,
    events: [
      { state: "visible", seq: 4, t: 10, k: "load" },
      { key: "ArrowRight", seq: 5, t: 20, k: "keydown" },
    ],
  });
  equal(fake.requests[0].headers["X-CSRFToken"], "tok");
  equal([log.pending(), log.lastSeq()], [0, 5]);
  equal(await log.flush(), true);
  equal(fake.requests.length, 1);
});

test("a failed send is sent again whole; a seq conflict renumbers after the server's next seq", async () => {
  const answers = [
    { status: 503, body: {} },
    { status: 409, body: { code: "seq_conflict", next_seq: 9 } },
    { status: 200, body: {} },
  ];
  const fake = fakeFetch((request, n) => answers[n - 1]);
  const log = make(fake);
  log.log("load");
  equal(await log.flush(), true);
  equal(
    fake.requests.map((r) => r.body.events.map((e) => e.seq)),
    [[4], [4], [9]],
  );
  equal(log.lastSeq(), 9);
});

test("a refused batch is reported and dropped; a closed evaluation stops the log", async () => {
  const refusals = [];
  const fake = fakeFetch((request, n) =>
    n === 1 ? { status: 400, body: { detail: "events[0].k: bad" } } : { status: 409, body: { code: "closed" } },
  );
  const log = make(fake, { onRefused: (message) => refusals.push(message) });
  log.log("load");
  await log.flush();
  log.log("keydown");
  await log.flush();
  equal(refusals, ["events[0].k: bad"]);
  equal(log.pending(), 0);
});

test("what is left when the page goes away leaves as one beacon form", async () => {
  const sent = [];
  const fake = fakeFetch(() => ({ status: 200, body: {} }));
  const log = make(fake, { beacon: (url, form) => sent.push([url, JSON.parse(form.get("payload")), form.get("csrfmiddlewaretoken")]) });
  log.log("blur", { source: "window" });
  log.goodbye();
  equal(sent, [["/api/evaluations/1/events/", { page_id: PAGE, events: [{ source: "window", seq: 4, t: 10, k: "blur" }] }, "tok"]]);
});
