// What the logger's handlers cost, measured by the logger itself (performance.now() around every
// handler), in a fixed ring so that measuring costs nothing either. The editor_logger benchmark
// reads it through window.__editlabLoggerStats.

const STATS_SIZE = 50000;

export function makeStats(size = STATS_SIZE) {
  const ring = new Float64Array(size);
  return {
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
      ring[this.count % size] = ms;
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
      return Array.from(ring.subarray(0, Math.min(this.count, size)));
    },
    reset() {
      this.count = 0;
      this.totalMs = 0;
      this.maxMs = 0;
      this.byHandler = {};
    },
  };
}

// Wraps a handler so that its cost lands in `stats` under the handler's name.
export function timed(stats, fn, name = fn.name) {
  return (e) => {
    const t0 = performance.now();
    try {
      fn(e);
    } finally {
      stats.add(performance.now() - t0, name);
    }
  };
}
