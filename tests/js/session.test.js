import { equal, fakeFetch, test, withFetch } from "./harness.js";
import { createSession, errorMessage, readCookie, sessionRefusal } from "/static/annotations/editor/session.js";

test("it reads a cookie by name, decoded", () => {
  document.cookie = "csrftoken=a%20b; path=/";
  equal(readCookie("csrftoken"), "a b");
  equal(readCookie("missing"), "");
});

test("it tells a refused login or CSRF token from other refusals", () => {
  equal(sessionRefusal(403, { detail: "CSRF Failed: token missing.", code: "csrf_failed" }), "csrf");
  equal(
    sessionRefusal(403, { detail: "CSRF Failed: CSRF token from the 'X-Csrftoken' HTTP header incorrect." }),
    "csrf",
  );
  equal(
    sessionRefusal(403, { detail: "Authentication credentials were not provided.", code: "not_authenticated" }),
    "auth",
  );
  equal(sessionRefusal(401, {}), "auth");
  equal(sessionRefusal(403, { detail: "You do not have permission.", code: "permission_denied" }), null);
  equal(sessionRefusal(400, { code: "not_authenticated" }), null);
  equal(sessionRefusal(403, { detail: "Authentication credentials were not provided." }), "auth");
});

test("the message of an error body is its detail", () => {
  equal(errorMessage({ detail: "no", code: "x" }), "no");
  equal(errorMessage({ error: "not the shape" }), ""); // one shape: only detail is read
  equal(errorMessage(null), "");
});

test("the token comes from the cookie, else the page's", () => {
  const session = createSession({ fallbackToken: "page-token" });
  equal(session.token(), "page-token");
  document.cookie = "csrftoken=cookie-token; path=/";
  equal(session.token(), "cookie-token");
});

test("a refusal with the current token refuses the session until it comes back", () => {
  const seen = [];
  document.cookie = "csrftoken=t1; path=/";
  const session = createSession({ onRefused: (kind) => seen.push(`refused:${kind}`), onBack: () => seen.push("back") });
  equal(session.refused("auth", "t1"), false);
  equal([session.state, session.kind, session.retryDue()], ["refused", "auth", false]);
  document.cookie = "csrftoken=t2; path=/"; // logged in elsewhere
  equal(session.retryDue(), true);
  session.back();
  session.back();
  equal([session.state, session.kind], ["active", null]);
  equal(seen, ["refused:auth", "back"]);
});

test("a refusal of a token that changed meanwhile is retried at once", () => {
  document.cookie = "csrftoken=new; path=/";
  const session = createSession({});
  equal(session.refused("csrf", "old"), true);
  equal(session.state, "active");
});

test("postJSON sends the current token and returns the answer", async () => {
  document.cookie = "csrftoken=tok; path=/";
  const session = createSession({});
  const fake = fakeFetch(() => ({ status: 409, body: { detail: "closed", code: "closed" } }));
  const result = await withFetch(fake, () => session.postJSON("/api/x/", { a: 1 }));
  equal(result, { status: 409, answer: { detail: "closed", code: "closed" }, token: "tok" });
  equal([fake.requests[0].headers["X-CSRFToken"], fake.requests[0].body], ["tok", { a: 1 }]);
});
