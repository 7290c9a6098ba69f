import { equal, test } from "./harness.js";
import { applyStep, startReplay, textTimeline } from "/static/annotations/replay.js";

const steps = [
  { start: 0, end: 0, insert: "A ", kind: "input", seq: 3, t: 1000, page: 1 },
  { start: 2, end: 5, insert: "dog", kind: "input", seq: 5, t: 2000, page: 1 },
  { start: 5, end: 5, insert: "!", kind: "input", seq: 8, t: 2500, page: 1 },
];

test("a step replaces its range", () => {
  equal(applyStep("a cat", { start: 2, end: 5, insert: "dog" }), "a dog");
});

test("the timeline's checkpoints give the same texts as replaying every step", () => {
  const textAt = textTimeline("cat", steps, 2);
  equal([0, 1, 2, 3].map(textAt), ["cat", "A cat", "A dog", "A dog!"]);
  equal(textAt(1), "A cat", "going back uses the checkpoints");
});

function page(data) {
  document.body.innerHTML = `
    <button id="replay-first"></button><button id="replay-prev"></button><button id="replay-play">Play</button>
    <button id="replay-next"></button><button id="replay-last"></button>
    <select id="replay-speed"><option value="20" selected>fast</option></select>
    <input type="range" id="replay-slider" min="0" max="${data.steps.length}" value="0">
    <p id="replay-info"></p><pre id="replay-text"></pre><button id="replay-goto-divergence"></button>`;
  const node = document.createElement("script");
  node.type = "application/json";
  node.id = "replay-data";
  node.textContent = JSON.stringify(data);
  document.body.append(node);
  return startReplay(document);
}

test("the page shows each step's deletion and insertion as text, never markup", () => {
  const markup = [{ start: 0, end: 0, insert: "<b>x</b>", kind: "input", seq: 1, t: 0, page: 1 }];
  page({ original: "<i>o</i>", steps: markup, divergence_step: null });
  document.getElementById("replay-last").click();
  const out = document.getElementById("replay-text");
  equal(out.querySelector("ins").textContent, "<b>x</b>");
  equal(out.querySelector("b"), null);
  equal(document.getElementById("replay-goto-divergence").hidden, true);
});

test("the buttons step through the log and say where they are", () => {
  page({ original: "cat", steps, divergence_step: 2 });
  const $ = (id) => document.getElementById(id);
  $("replay-next").click();
  $("replay-next").click();
  equal($("replay-text").textContent, "A catdog");
  equal($("replay-info").textContent, "step 2 / 3 · seq 5 · t 2.0 s · page 1 · input");
  $("replay-first").click();
  equal([$("replay-text").textContent, $("replay-slider").value], ["cat", "0"]);
  $("replay-goto-divergence").click();
  equal($("replay-slider").value, "2");
});
