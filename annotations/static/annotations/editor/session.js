// The login session as the server sees it. A session that ends mid-edit (expired, or flushed by
// an admin) makes the server refuse every request with a 403 until the annotator logs in again,
// which they do in another tab. Logging in rotates the CSRF token, so every request reads the
// current token from the CSRF cookie instead of the one the page was rendered with: an old tab
// then works again by itself, and notices the new login at once because the cookie changed.

const SESSION_RETRY_MS = 15000; // asking the server while nobody has logged in again is wasted
const SESSION_POLL_MS = 500;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function readCookie(name, doc = document) {
  for (const part of doc.cookie.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return "";
      }
    }
  }
  return "";
}

// The human message of an API error: its detail (every error answers {"detail", "code"}).
export const errorMessage = (answer) => (answer && answer.detail) || "";

// "auth" when the server refused the request for want of a login, "csrf" for a refused CSRF
// token (DRF: "CSRF Failed: ..."), null for anything else (a 403 for a permission is not ours to fix).
export function sessionRefusal(status, answer) {
  if (status !== 401 && status !== 403) return null;
  const code = String((answer && answer.code) || "");
  const message = String(errorMessage(answer));
  if (code === "csrf_failed" || /^CSRF Failed/i.test(message)) return "csrf";
  if (status === 401 || code === "not_authenticated" || code === "authentication_failed") return "auth";
  if (/authenticat/i.test(message)) return "auth"; // "Authentication credentials were not provided."
  return null;
}

// state: "active" (requests go through) or "refused" (kind "auth" | "csrf"; retried when the
// CSRF cookie changes, i.e. a login elsewhere, or every SESSION_RETRY_MS).
export function createSession({ cookieName = "csrftoken", fallbackToken = "", onRefused, onBack, doc = document }) {
  let state = "active";
  let kind = null;
  let cookieSeen = "";
  let retryAt = 0;

  const token = () => readCookie(cookieName, doc) || fallbackToken;

  function armRetry() {
    cookieSeen = readCookie(cookieName, doc);
    retryAt = Date.now() + SESSION_RETRY_MS;
  }

  return {
    get state() {
      return state;
    },
    get kind() {
      return state === "refused" ? kind : null;
    },
    token,
    armRetry,
    // The server refused a request sent with `sentToken` for the session, not for what it
    // carried. True when it is worth retrying at once (the token changed while it was out).
    refused(why, sentToken) {
      const cookie = readCookie(cookieName, doc);
      if (cookie && cookie !== sentToken) return true;
      state = "refused";
      kind = why;
      cookieSeen = cookie;
      retryAt = Date.now() + SESSION_RETRY_MS;
      if (onRefused) onRefused(why);
      return false;
    },
    // Any 2xx: logged in again.
    back() {
      if (state !== "refused") return;
      state = "active";
      kind = null;
      if (onBack) onBack();
    },
    retryDue() {
      return state === "refused" && (Date.now() >= retryAt || readCookie(cookieName, doc) !== cookieSeen);
    },
    // Waits before another attempt: a second, or while refused, until a login elsewhere (a new
    // CSRF cookie), the periodic retry, or an answer that brought the session back.
    async wait(isClosed) {
      if (state !== "refused") return sleep(1000);
      while (state === "refused" && !isClosed() && !this.retryDue()) await sleep(SESSION_POLL_MS);
      if (state === "refused") armRetry();
    },
    async postJSON(url, body) {
      const sentToken = token();
      const response = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": sentToken },
        body: JSON.stringify(body),
      });
      const answer = await response.json().catch(() => ({}));
      return { status: response.status, answer, token: sentToken };
    },
  };
}
