// A minimal test harness for the editor's ES modules, run in Chromium on a static page
// (tests/annotations/test_editor_modules.py routes the files; no server, no build step).

const registered = [];

export function test(name, fn) {
  registered.push({ name, fn });
}

export class AssertionError extends Error {
  name = "AssertionError";
}

export function assert(condition, message = "assertion failed") {
  if (!condition) throw new AssertionError(message);
}

const show = (value) => JSON.stringify(value, (key, v) => (v === undefined ? "<undefined>" : v));

export function equal(actual, expected, message = "") {
  if (show(actual) !== show(expected)) {
    throw new AssertionError(`${message ? `${message}: ` : ""}expected ${show(expected)}, got ${show(actual)}`);
  }
}

// A fake fetch: `respond(request)` returns {status, body} (or throws to simulate the network
// failing); every request is kept with its parsed JSON body and headers.
export function fakeFetch(respond) {
  const requests = [];
  const fetch = async (url, options = {}) => {
    const request = {
      url,
      headers: options.headers || {},
      body: typeof options.body === "string" ? JSON.parse(options.body) : options.body,
    };
    requests.push(request);
    const { status, body } = await respond(request, requests.length);
    return new Response(JSON.stringify(body ?? {}), { status, headers: { "Content-Type": "application/json" } });
  };
  return { fetch, requests };
}

// Runs fn with window.fetch replaced, restoring it afterwards.
export async function withFetch(fake, fn) {
  const original = window.fetch;
  window.fetch = fake.fetch;
  try {
    return await fn();
  } finally {
    window.fetch = original;
  }
}

export function textarea(value = "") {
  const ta = document.createElement("textarea");
  ta.value = value;
  document.body.append(ta);
  return ta;
}

export async function run() {
  const results = [];
  for (const { name, fn } of registered) {
    localStorage.clear();
    document.cookie = "csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/";
    document.body.replaceChildren();
    try {
      await fn();
      results.push({ name, ok: true });
    } catch (err) {
      results.push({ name, ok: false, message: `${err && err.name}: ${err && err.message}` });
    }
  }
  return results;
}
