import { equal, fakeFetch, test, textarea, withFetch } from "./harness.js";
import { createDrafts } from "/static/annotations/editor/drafts.js";
import { createSession } from "/static/annotations/editor/session.js";

function drafts({ text = "saved", version = 1, canSave = true } = {}) {
  const ta = textarea(text);
  const calls = [];
  const session = createSession({ fallbackToken: "tok", onRefused: (kind) => calls.push(`refused:${kind}`) });
  const d = createDrafts({
    textarea: ta,
    url: "/draft/",
    pageId: "page",
    start: { version, savedText: text },
    session,
    persist: () => calls.push("persist"),
    canSave: () => canSave,
    isClosed: () => false,
    hooks: {
      onSaved: () => calls.push("saved"),
      onConflict: (mine, theirs) => calls.push(`conflict:${mine}|${theirs}`),
      onClosed: (m) => calls.push(`closed:${m}`),
      onError: (m) => calls.push(`error:${m}`),
    },
  });
  return { d, ta, calls, session };
}

test("an unchanged text is not sent", async () => {
  const { d } = drafts();
  const fake = fakeFetch(() => ({ status: 200, body: { version: 2 } }));
  await withFetch(fake, () => d.save());
  equal(fake.requests.length, 0);
});

test("a saved draft takes the server's new version", async () => {
  const { d, ta, calls } = drafts();
  ta.value = "changed";
  equal(d.isDirty(), true);
  const fake = fakeFetch(() => ({ status: 200, body: { version: 2 } }));
  await withFetch(fake, () => d.save());
  equal(fake.requests[0].body, { page_id: "page", text: "changed", version: 1 });
  equal(
    [d.version, d.isDirty(), d.state, d.record()],
    [2, false, "idle", { text: "changed", version: 2, dirty: false }],
  );
  equal(calls, ["persist", "persist", "saved"]);
});

test("a conflict with the same text is a save whose answer was lost", async () => {
  const { d, ta } = drafts();
  ta.value = "changed";
  const answer = { detail: "conflict", code: "conflict", server_text: "changed", server_version: 5 };
  await withFetch(
    fakeFetch(() => ({ status: 409, body: answer })),
    () => d.save(),
  );
  equal([d.version, d.state, d.isDirty()], [5, "idle", false]);
});

test("a conflict with another text waits for the annotator's choice", async () => {
  const { d, ta, calls } = drafts();
  ta.value = "mine";
  const answer = { detail: "conflict", code: "conflict", server_text: "theirs", server_version: 5 };
  await withFetch(
    fakeFetch(() => ({ status: 409, body: answer })),
    () => d.save(),
  );
  equal([d.state, d.conflict], ["conflict", { serverText: "theirs", serverVersion: 5 }]);
  equal(calls.includes("conflict:mine|theirs"), true);
  const fake = fakeFetch(() => ({ status: 200, body: { version: 6 } }));
  await withFetch(fake, () => d.save());
  equal(fake.requests.length, 0, "no save while the conflict is open");
  const replaced = [];
  equal(
    d.resolve("theirs", (text) => ((ta.value = text), replaced.push(text))),
    true,
  );
  equal([d.state, d.version, replaced, d.isDirty()], ["idle", 5, ["theirs"], true]);
});

test("a closed item and other errors are reported with the server's message", async () => {
  const closed = drafts();
  closed.ta.value = "x";
  await withFetch(
    fakeFetch(() => ({ status: 409, body: { detail: "already submitted", code: "closed" } })),
    () => closed.d.save(),
  );
  equal(closed.calls.at(-1), "closed:already submitted");
  const invalid = drafts();
  invalid.ta.value = "y";
  await withFetch(
    fakeFetch(() => ({ status: 400, body: { detail: "text too long", code: "invalid" } })),
    () => invalid.d.save(),
  );
  equal(invalid.calls.at(-1), "error:Draft not saved: text too long (kept in this browser).");
});

test("a refused session keeps the draft for later", async () => {
  const { d, ta, session } = drafts();
  ta.value = "later";
  document.cookie = "csrftoken=tok; path=/";
  await withFetch(
    fakeFetch(() => ({
      status: 403,
      body: { code: "not_authenticated", detail: "Authentication credentials were not provided." },
    })),
    () => d.save(),
  );
  equal([session.state, d.isDirty(), d.state], ["refused", true, "idle"]);
});

test("nothing is saved while a submit is on its way", async () => {
  const { d, ta } = drafts({ canSave: false });
  ta.value = "changed";
  const fake = fakeFetch(() => ({ status: 200, body: { version: 2 } }));
  await withFetch(fake, () => d.save());
  equal(fake.requests.length, 0);
});
