// The error spans of one evaluation, pure (no DOM): offsets, the pieces the text is drawn in, and the
// list the rater edits. The browser counts UTF-16 units, the server code points: spans are kept in
// code points (as stored) and converted at the page's edge.

// The code point offset of UTF-16 offset `units` in `text` (a unit inside a pair counts as its start).
export function toCodePoints(text, units) {
  let points = 0;
  for (let i = 0; i < units && i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        if (i + 1 >= units) return points; // inside the pair: its start
        i++;
      }
    }
    points++;
  }
  return points;
}

// The UTF-16 offset of code point offset `points` in `text`.
export function toUnits(text, points) {
  let units = 0;
  for (let p = 0; p < points && units < text.length; p++) {
    const code = text.charCodeAt(units);
    units += code >= 0xd800 && code <= 0xdbff && units + 1 < text.length ? 2 : 1;
  }
  return units;
}

const WORD = /[\p{L}\p{N}_]/u;

// The caret moved from `offset` (UTF-16) one character or one word in `direction` (-1, +1), never
// into a surrogate pair.
export function moveOffset(text, offset, direction, byWord = false) {
  const step = (at) => {
    if (direction > 0) {
      if (at >= text.length) return at;
      const code = text.charCodeAt(at);
      return code >= 0xd800 && code <= 0xdbff && at + 1 < text.length ? at + 2 : at + 1;
    }
    if (at <= 0) return at;
    const code = text.charCodeAt(at - 1);
    return code >= 0xdc00 && code <= 0xdfff && at >= 2 ? at - 2 : at - 1;
  };
  let at = step(offset);
  if (!byWord) return at;
  const isWord = (i) => i >= 0 && i < text.length && WORD.test(String.fromCodePoint(text.codePointAt(i)));
  if (direction > 0) {
    while (at < text.length && !isWord(at - 1)) at = step(at);
    while (at < text.length && isWord(at)) at = step(at);
  } else {
    while (at > 0 && !isWord(at)) at = step(at);
    while (at > 0 && isWord(at - 1)) at = step(at);
  }
  return at;
}

// The text cut at every span boundary: [{start, end, spans}] in UTF-16 units, `spans` the indices of
// the spans covering the piece (overlapping spans give pieces covered by several).
export function pieces(text, spans) {
  const cuts = new Set([0, text.length]);
  const ranges = spans.map((span) => [toUnits(text, span.start), toUnits(text, span.end)]);
  for (const [start, end] of ranges) {
    cuts.add(start);
    cuts.add(end);
  }
  const sorted = [...cuts].filter((c) => c >= 0 && c <= text.length).sort((a, b) => a - b);
  const result = [];
  for (let k = 0; k + 1 < sorted.length; k++) {
    const start = sorted[k];
    const end = sorted[k + 1];
    const covering = [];
    ranges.forEach(([s, e], index) => {
      if (s <= start && end <= e && s < e) covering.push(index);
    });
    result.push({ start, end, spans: covering });
  }
  return result;
}

const FIELDS = ["start", "end", "category", "severity", "comment", "side"];

// The rater's spans, starting from the prefilled ones (each remembers which it started as).
export function createSpanList(prefill = [], { maxSpans = 1000 } = {}) {
  const spans = prefill.map((span, index) => ({ ...pick(span), prefilled: index }));

  function pick(span) {
    const out = {};
    for (const name of FIELDS) out[name] = span[name];
    out.comment = out.comment || "";
    out.side = out.side || "target";
    return out;
  }

  return {
    all: () => spans.map((span) => ({ ...span })),
    count: () => spans.length,
    get: (index) => ({ ...spans[index] }),
    add(span) {
      if (spans.length >= maxSpans) throw new RangeError(`at most ${maxSpans} spans`);
      if (!(span.start < span.end)) throw new RangeError("a span covers at least one character");
      spans.push(pick(span));
      return spans.length - 1;
    },
    edit(index, changes) {
      const span = spans[index];
      for (const name of FIELDS) if (name in changes) span[name] = changes[name];
    },
    remove(index) {
      spans.splice(index, 1);
    },
    // What the submit sends: every span with its fields, and `prefilled` for those that started so.
    payload: () =>
      spans.map((span) => {
        const out = pick(span);
        if (span.prefilled !== undefined) out.prefilled = span.prefilled;
        return out;
      }),
  };
}

// A short label of a span for lists and the screen reader: its text, cut to `limit` characters.
export function excerpt(text, span, limit = 40) {
  const part = Array.from(text).slice(span.start, span.end).join("");
  return part.length > limit ? `${part.slice(0, limit - 1)}…` : part;
}
