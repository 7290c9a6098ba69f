import { equal, fakeFetch, test, textarea, withFetch } from "./harness.js";
import { startEditor } from "/static/annotations/editor/editor.js";
import { openStorage, pageKey, writePage } from "/static/annotations/editor/storage.js";

let nextId = 100;

function config(overrides = {}) {
  nextId += 1;
  return {
    post_edit_id: nextId,
    page_id: `page-${nextId}`,
    next_seq: 0,
    version: 0,
    original: "Model text.",
    draft: "Model text.",
    idle_threshold_ms: 30000,
    urls: { events: "/events/", draft: "/draft/", submit: "/submit/", skip: "/skip/", next: "/next/" },
    csrf_token: "tok",
    ...overrides,
  };
}

function elements() {
  const status = document.createElement("p");
  document.body.append(status);
  return { textarea: textarea(), status, buttons: [] };
}

test("the editor starts from the server's draft and logs the page load", async () => {
  const fake = fakeFetch(() => ({ status: 200, body: {} }));
  await withFetch(fake, async () => {
    const els = elements();
    const editor = startEditor(config(), els);
    equal(
      [els.textarea.value, els.textarea.readOnly, editor.pending(), editor.phase],
      ["Model text.", false, 2, "editing"],
    );
    equal(editor.session, null);
    await editor.flush();
    equal(
      fake.requests[0].body.events.map((e) => e.k),
      ["load", "select"],
    );
    equal(els.status.textContent, "All changes saved");
  });
});

test("an unsaved draft kept in this browser is restored and its events go first", async () => {
  const cfg = config();
  writePage(
    openStorage(),
    cfg.post_edit_id,
    { page_id: "earlier", events: [{ k: "keydown", key: "x", seq: 0, t: 1 }] },
    {
      text: "Kept text.",
      version: 0,
      dirty: true,
    },
  );
  const fake = fakeFetch((request) =>
    request.url === "/draft/" ? { status: 200, body: { version: 1 } } : { status: 200, body: {} },
  );
  await withFetch(fake, async () => {
    const els = elements();
    const editor = startEditor(cfg, els);
    equal(els.textarea.value, "Kept text.");
    equal(els.status.textContent, "Restored the unsaved text kept in this browser.");
    await editor.flush();
    await editor.saveDraft();
    const events = fake.requests.filter((r) => r.url === "/events/");
    equal(
      events.map((r) => r.body.page_id),
      ["earlier", cfg.page_id],
    );
    equal(events[1].body.events[0].seq, 1, "this page numbers after the kept events");
    equal(editor.version, 1);
  });
  equal(localStorage.getItem(pageKey(cfg.post_edit_id, "earlier")), null);
});

test("a refused skip returns the server's message and leaves the editor editable", async () => {
  const fake = fakeFetch((request) =>
    request.url === "/skip/"
      ? { status: 400, body: { detail: "reason required", code: "invalid" } }
      : { status: 200, body: {} },
  );
  await withFetch(fake, async () => {
    const els = elements();
    const editor = startEditor(config(), els);
    equal(await editor.skip(""), "reason required");
    equal([editor.phase, els.textarea.readOnly, editor.pending()], ["editing", false, 0]);
  });
});

test("a server that says the item is closed closes the editor", async () => {
  const fake = fakeFetch(() => ({ status: 409, body: { detail: "This item was submitted.", code: "closed" } }));
  await withFetch(fake, async () => {
    const els = elements();
    const editor = startEditor(config(), els);
    await editor.flush();
    equal([editor.phase, els.textarea.readOnly, els.status.textContent], ["closed", true, "This item was submitted."]);
  });
});
