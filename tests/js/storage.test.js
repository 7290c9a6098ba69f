import { equal, test } from "./harness.js";
import {
  keepRejected,
  openStorage,
  pageKey,
  readStoredPages,
  removePage,
  startingDraft,
  writePage,
} from "/static/annotations/editor/storage.js";

const event = (seq) => ({ k: "keydown", key: "a", seq, t: seq });

test("it reads the earlier page loads of this post-edit, oldest events first", () => {
  const store = openStorage();
  writePage(store, 7, { page_id: "late", events: [event(5)] }, null);
  writePage(store, 7, { page_id: "early", events: [event(2), event(3)] }, null);
  writePage(store, 7, { page_id: "current", events: [event(9)] }, null);
  writePage(store, 8, { page_id: "other-item", events: [event(0)] }, null);
  store.setItem(pageKey(7, "broken"), "{not json");
  const pages = readStoredPages(store, 7, "current");
  equal(
    pages.map((p) => p.page_id),
    ["early", "late"],
  );
  equal(store.getItem(pageKey(7, "broken")), "{not json", "an unreadable record stays for inspection");
});

test("a record with neither events nor draft is removed", () => {
  const store = openStorage();
  writePage(store, 1, { page_id: "p", events: [event(0)] }, null);
  writePage(store, 1, { page_id: "p", events: [] }, null);
  equal(store.getItem(pageKey(1, "p")), null);
  writePage(store, 1, { page_id: "p", events: [] }, { text: "x", version: 1, dirty: true });
  equal(JSON.parse(store.getItem(pageKey(1, "p"))).draft, { text: "x", version: 1, dirty: true });
  removePage(store, 1, "p");
  equal(store.getItem(pageKey(1, "p")), null);
});

test("rejected events are kept under their own key", () => {
  const store = openStorage();
  keepRejected(store, 3, "page", [event(4), event(5)], "bad");
  const kept = JSON.parse(store.getItem("editlab:rejected:3:page:4"));
  equal([kept.page_id, kept.events.length, kept.error], ["page", 2, "bad"]);
});

test("the editor starts from an unsaved local draft that differs from the server's", () => {
  const pages = [{ page_id: "a", events: [], draft: { text: "mine", version: 2, dirty: true }, saved: 1 }];
  equal(startingDraft(pages, { text: "server", version: 2 }), {
    text: "mine",
    version: 2,
    savedText: null,
    restored: true,
  });
});

test("it takes a newer saved copy another tab kept, else the server's text", () => {
  const newer = [{ page_id: "a", events: [], draft: { text: "newer", version: 5, dirty: false }, saved: 1 }];
  equal(startingDraft(newer, { text: "server", version: 4 }), {
    text: "newer",
    version: 5,
    savedText: "newer",
    restored: false,
  });
  const older = [{ page_id: "a", events: [], draft: { text: "old", version: 3, dirty: false }, saved: 1 }];
  equal(startingDraft(older, { text: "server", version: 4 }), {
    text: "server",
    version: 4,
    savedText: "server",
    restored: false,
  });
});
