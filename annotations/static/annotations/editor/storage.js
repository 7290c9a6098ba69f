// This browser's copy of the work: one localStorage record per page load of a post-edit, holding
// the events the server has not acknowledged yet and (for the current page) the draft text. A
// reload, a crash or an outage loses nothing: the next page load sends what it finds here.

const KEY_PREFIX = "editlab:pe:";
const REJECTED_PREFIX = "editlab:rejected:";

export function openStorage(win = window) {
  try {
    const probe = "editlab:probe";
    win.localStorage.setItem(probe, "1");
    win.localStorage.removeItem(probe);
    return win.localStorage;
  } catch {
    return null; // private mode or disabled: the logger still works, without crash safety
  }
}

export const pageKey = (postEditId, pageId) => `${KEY_PREFIX}${postEditId}:${pageId}`;

// The records of earlier page loads of this post-edit, oldest events first.
export function readStoredPages(store, postEditId, currentPageId) {
  const prefix = `${KEY_PREFIX}${postEditId}:`;
  const pages = [];
  if (!store) return pages;
  for (let i = 0; i < store.length; i++) {
    const key = store.key(i);
    if (!key || !key.startsWith(prefix) || key === prefix + currentPageId) continue;
    try {
      const record = JSON.parse(store.getItem(key));
      if (record && typeof record.page_id === "string" && Array.isArray(record.events)) pages.push(record);
    } catch {
      // An unreadable record is kept where it is for inspection, never sent.
    }
  }
  const firstSeq = (page) => (page.events.length ? page.events[0].seq : Infinity);
  pages.sort((a, b) => firstSeq(a) - firstSeq(b) || (a.saved || 0) - (b.saved || 0));
  return pages;
}

// Writes a page load's record; a record with neither events nor draft is removed.
export function writePage(store, postEditId, page, draft) {
  const key = pageKey(postEditId, page.page_id);
  if (!page.events.length && !draft) {
    store.removeItem(key);
    return;
  }
  store.setItem(key, JSON.stringify({ page_id: page.page_id, events: page.events, draft, saved: Date.now() }));
}

export function removePage(store, postEditId, pageId) {
  if (store) store.removeItem(pageKey(postEditId, pageId));
}

// Events the server refused are never dropped: kept under their own key for an admin to recover.
export function keepRejected(store, postEditId, pageId, events, error) {
  try {
    if (store && events.length) {
      store.setItem(
        `${REJECTED_PREFIX}${postEditId}:${pageId}:${events[0].seq}`,
        JSON.stringify({ page_id: pageId, events, error }),
      );
    }
  } catch {
    // nothing more we can do in this browser
  }
}

// Which text the editor starts from: the newest unsaved local draft when it differs from the
// server's, else a newer saved copy another tab wrote after the server rendered this page.
export function startingDraft(storedPages, server) {
  const localDrafts = storedPages
    .filter((p) => p.draft && typeof p.draft.text === "string" && Number.isInteger(p.draft.version))
    .sort((a, b) => (b.saved || 0) - (a.saved || 0));
  const unsaved = localDrafts.find((p) => p.draft.dirty);
  if (unsaved && unsaved.draft.text !== server.text) {
    return { text: unsaved.draft.text, version: unsaved.draft.version, savedText: null, restored: true };
  }
  const newer = localDrafts
    .filter((p) => !p.draft.dirty && p.draft.version > server.version)
    .sort((a, b) => b.draft.version - a.draft.version)[0];
  if (newer)
    return { text: newer.draft.text, version: newer.draft.version, savedText: newer.draft.text, restored: false };
  return { text: server.text, version: server.version, savedText: server.text, restored: false };
}
