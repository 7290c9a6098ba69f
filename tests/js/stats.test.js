import { equal, test } from "./harness.js";
import { makeStats, timed } from "/static/annotations/editor/stats.js";

test("it keeps every sample until the ring is full, then the latest", () => {
  const stats = makeStats(3);
  for (const ms of [1, 2, 3, 4]) stats.add(ms, "h");
  equal(stats.count, 4);
  equal(stats.samples().sort(), [2, 3, 4]);
  equal(stats.maxMs, 4);
  equal(stats.byHandler.h, { count: 4, totalMs: 10, maxMs: 4 });
});

test("reset forgets the handler samples but not the persist figures", () => {
  const stats = makeStats();
  stats.add(1, "h");
  stats.addPersist(5);
  stats.reset();
  equal([stats.count, stats.samples(), stats.byHandler], [0, [], {}]);
  equal([stats.persistCount, stats.persistMaxMs], [1, 5]);
});

test("timed records the handler under its own name, even when it throws", () => {
  const stats = makeStats();
  function onKeydown() {}
  timed(stats, onKeydown)({});
  const failing = timed(
    stats,
    () => {
      throw new Error("boom");
    },
    "failing",
  );
  let thrown = false;
  try {
    failing({});
  } catch {
    thrown = true;
  }
  equal(thrown, true);
  equal(Object.keys(stats.byHandler).sort(), ["failing", "onKeydown"]);
});
