// The draft: the text is autosaved (debounced) with an optimistic version; a save that meets a
// newer version saved from another tab or device is a conflict the annotator resolves.

import { errorMessage, sessionRefusal } from "./session.js";

const DRAFT_DEBOUNCE_MS = 1500;
const OFFLINE_RETRY_MS = 5000;

const isConflict = (answer) => answer.code === "conflict";

// canSave(): not closed and no submit/skip on its way; isClosed(); persist(): the text to
// localStorage; hooks: onSaved(), onConflict(), onClosed(message), onError(message).
export function createDrafts({ textarea: ta, url, pageId, start, session, persist, canSave, isClosed, hooks }) {
  let version = start.version;
  let savedText = start.savedText; // what the server holds at `version` (null: unknown)
  // "idle", "saving" (one request in flight) or "conflict" (until the annotator chooses).
  let state = "idle";
  let conflict = null; // { serverText, serverVersion } while state is "conflict"
  let inflight = null;
  let timer = null;
  let delay = DRAFT_DEBOUNCE_MS;
  let lastEditT = 0;

  function schedule(wait = DRAFT_DEBOUNCE_MS) {
    if (isClosed() || state === "conflict") return;
    // One timer re-armed lazily, not a clearTimeout/setTimeout pair per keystroke.
    lastEditT = performance.now();
    delay = wait;
    if (timer === null) timer = setTimeout(fired, wait);
  }

  function fired() {
    const wait = lastEditT + delay - performance.now();
    if (wait > 1) {
      timer = setTimeout(fired, wait);
      return;
    }
    timer = null;
    save();
  }

  function cancel() {
    clearTimeout(timer);
    timer = null;
  }

  function saved(text, newVersion) {
    version = newVersion;
    savedText = text;
    persist();
  }

  async function save() {
    if (!canSave() || state === "conflict") return;
    if (inflight) {
      await inflight;
      return save();
    }
    const text = ta.value;
    if (text === savedText) return;
    // The text goes to localStorage before it goes to the network, so that a tab opened while
    // this save fails (an expired session, an outage) starts from it, not from an older copy.
    persist();
    state = "saving";
    inflight = (async () => {
      try {
        const { status, answer, token } = await session.postJSON(url, { page_id: pageId, text, version });
        state = "idle";
        const refusal = sessionRefusal(status, answer);
        if (status === 200) {
          saved(text, answer.version);
          hooks.onSaved();
        } else if (refusal) {
          // Kept in localStorage; saved again when the session is back.
          if (session.refused(refusal, token)) schedule(0);
        } else if (status === 409 && isConflict(answer) && answer.server_text === text) {
          saved(text, answer.server_version); // saved already (the answer to an earlier save was lost)
        } else if (status === 409 && isConflict(answer)) {
          showConflict(answer.server_text, answer.server_version);
        } else if (status === 409) {
          hooks.onClosed(errorMessage(answer) || "This item is already closed.");
        } else {
          hooks.onError(`Draft not saved: ${errorMessage(answer) || `HTTP ${status}`} (kept in this browser).`);
        }
      } catch {
        state = "idle";
        schedule(OFFLINE_RETRY_MS); // offline: the draft is in localStorage meanwhile
      } finally {
        inflight = null;
      }
    })();
    return inflight;
  }

  function showConflict(serverText, serverVersion) {
    state = "conflict";
    conflict = { serverText, serverVersion };
    hooks.onConflict(ta.value, serverText);
  }

  // choice "mine" keeps this tab's text, "theirs" takes the saved one (via replaceText, logged).
  function resolve(choice, replaceText) {
    if (state !== "conflict") return false;
    version = conflict.serverVersion;
    savedText = null;
    if (choice === "theirs") replaceText(conflict.serverText);
    conflict = null;
    state = "idle";
    return true;
  }

  return {
    schedule,
    cancel,
    save,
    resolve,
    showConflict,
    // What localStorage keeps beside the current page's events.
    record: () => ({ text: ta.value, version, dirty: ta.value !== savedText }),
    isDirty: () => ta.value !== savedText,
    waitIdle: () => inflight || Promise.resolve(),
    get state() {
      return state;
    },
    get version() {
      return version;
    },
    get conflict() {
      return conflict;
    },
  };
}
