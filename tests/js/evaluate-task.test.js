import { equal, fakeFetch, test } from "./harness.js";
import { startTask } from "/static/annotations/evaluate/task.js";

const TEXT = "Die Katze saß.";

function page(protocol = "mqm") {
  document.body.innerHTML = `
    <div id="source-text" tabindex="0">The cat sat.</div>
    <div id="evaluation-text" tabindex="0">${TEXT}</div>
    <button id="mark-button">Mark</button><span id="span-count"></span>
    <ol id="span-list"></ol>
    ${protocol === "esa" ? '<input id="esa-score" type="number">' : ""}
    <p id="task-status"></p><button id="submit-button">Submit</button>
    <dialog id="span-chooser"><form id="span-form" method="dialog">
      <h2 id="chooser-title"></h2><span id="chooser-excerpt"></span>
      <select name="category"><option>Other</option><option>Fluency/Grammar</option></select>
      <input type="radio" name="severity" value="minor"><input type="radio" name="severity" value="major">
      <input type="radio" name="severity" value="non-translation">
      <textarea name="comment"></textarea>
      <button type="submit" id="chooser-save">Save</button><button type="button" id="chooser-cancel">Cancel</button>
    </form></dialog>`;
  return {
    evaluation_id: 1,
    page_id: "9b2c1c7e-3f3a-4c55-9a57-7a1f58f3c1a0",
    next_seq: 0,
    protocol,
    text: TEXT,
    source: "The cat sat.",
    prefill: [{ start: 0, end: 3, category: "Other", severity: "major", comment: "" }],
    max_spans: 10,
    max_comment: 100,
    max_batch_events: 50,
    csrf_token: "tok",
    urls: { events: "/events/", submit: "/submit/", next: "/evaluate/" },
  };
}

function press(target, key, extra = {}) {
  target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...extra }));
}

test("keyboard: select, open the chooser, save; the prefill kept; submit sends the exact spans", async () => {
  const config = page();
  const fake = fakeFetch((request) => (request.url === "/events/" ? { status: 200, body: {} } : { status: 200, body: { id: 1 } }));
  const gone = [];
  const task = startTask({ config, fetch: fake.fetch, go: (url) => gone.push(url), beacon: () => true });
  const text = document.getElementById("evaluation-text");
  task.selection.collapse(4);
  for (let n = 0; n < 5; n++) press(text, "ArrowRight", { shiftKey: true });
  press(text, "Enter");
  const form = document.getElementById("span-form");
  form.elements.category.value = "Fluency/Grammar";
  form.querySelector("input[value=major]").checked = true;
  form.elements.comment.value = "wrong animal";
  form.requestSubmit();
  equal(document.querySelectorAll("#span-list li").length, 2);
  // The prefilled span's Non-translation edit.
  document.querySelector("#span-list li button[data-action=edit]").click();
  form.querySelector("input[value=non-translation]").checked = true;
  form.requestSubmit();
  // An omission: "The" in the source, by keyboard.
  const source = document.getElementById("source-text");
  source.focus();
  press(source, "Home");
  for (let n = 0; n < 3; n++) press(source, "ArrowRight", { shiftKey: true });
  press(source, "m");
  form.requestSubmit();
  equal(document.querySelector("#span-list li:last-child .span-labels").textContent, " Other · minor (in the source)");
  await task.submit();
  const submit = fake.requests.find((r) => r.url === "/submit/");
  equal(submit.body.spans, [
    { start: 0, end: 3, category: "Non-translation", severity: "major", comment: "", side: "target", prefilled: 0 },
    { start: 4, end: 9, category: "Fluency/Grammar", severity: "major", comment: "wrong animal", side: "target" },
    { start: 0, end: 3, category: "Other", severity: "minor", comment: "", side: "source" },
  ]);
  equal(submit.body.esa_score, null);
  const logged = fake.requests.filter((r) => r.url === "/events/").flatMap((r) => r.body.events);
  equal(submit.body.last_seq, logged[logged.length - 1].seq);
  equal(logged.map((e) => e.seq), logged.map((e, n) => n));
  equal(logged.filter((e) => e.k === "span_add").map((e) => [e.span.side, e.span.start]), [["target", 4], ["source", 0]]);
  equal(gone, ["/evaluate/"]);
});

test("ESA: no submit without a score from 0 to 100; a refusal is shown and the spans stay", async () => {
  const config = page("esa");
  const fake = fakeFetch((request) =>
    request.url === "/events/" ? { status: 200, body: {} } : { status: 400, body: { detail: "spans[0]: bad" } },
  );
  const task = startTask({ config, fetch: fake.fetch, go: () => {}, beacon: () => true });
  const score = document.getElementById("esa-score");
  score.value = "101";
  await task.submit();
  equal(fake.requests.filter((r) => r.url === "/submit/").length, 0);
  score.value = "70";
  await task.submit();
  equal(document.getElementById("task-status").textContent, "spans[0]: bad");
  equal(fake.requests.find((r) => r.url === "/submit/").body.esa_score, 70);
  equal(task.spans.count(), 1);
});

test("deleting a span logs which prefilled span went", async () => {
  const config = page();
  const fake = fakeFetch(() => ({ status: 200, body: {} }));
  const task = startTask({ config, fetch: fake.fetch, go: () => {}, beacon: () => true });
  document.querySelector("#span-list li button[data-action=delete]").click();
  await task.log.flush();
  const deleted = fake.requests.flatMap((r) => r.body.events).filter((e) => e.k === "span_delete");
  equal(deleted.map((e) => [e.index, e.prefilled]), [[0, 0]]);
  equal(task.spans.count(), 0);
});
