// The replay page: steps through the logged text changes of a post-edit, from the model output
// to the submitted text. Texts only ever reach the page through textContent: markup in an edit is
// shown, never run.

const CHECKPOINT = 200;

// Offsets are UTF-16 code units, which is what JavaScript strings index.
export const applyStep = (text, step) => text.slice(0, step.start) + step.insert + text.slice(step.end);

// textAt(position): the text after the first `position` steps, from checkpoints every
// CHECKPOINT steps so that dragging the slider never replays the whole log.
export function textTimeline(original, steps, every = CHECKPOINT) {
  const checkpoints = [original];
  return function textAt(position) {
    const base = Math.floor(position / every);
    while (checkpoints.length <= base) {
      const from = (checkpoints.length - 1) * every;
      let text = checkpoints[checkpoints.length - 1];
      for (let i = from; i < from + every; i++) text = applyStep(text, steps[i]);
      checkpoints.push(text);
    }
    let text = checkpoints[base];
    for (let i = base * every; i < position; i++) text = applyStep(text, steps[i]);
    return text;
  };
}

function span(doc, tag, text) {
  const node = doc.createElement(tag);
  node.textContent = text;
  return node;
}

export function startReplay(doc = document) {
  const dataNode = doc.getElementById("replay-data");
  if (!dataNode) return null;
  const data = JSON.parse(dataNode.textContent);
  const steps = data.steps;
  const textAt = textTimeline(data.original, steps);
  const $ = (id) => doc.getElementById(id);
  const slider = $("replay-slider");
  const info = $("replay-info");
  const out = $("replay-text");
  const playButton = $("replay-play");
  let timer = null; // the play interval while playing, else null

  function show(position) {
    position = Math.max(0, Math.min(steps.length, position));
    slider.value = String(position);
    out.replaceChildren();
    if (position === 0) {
      out.textContent = data.original;
      info.textContent = `step 0 / ${steps.length} · the model output`;
      return;
    }
    const step = steps[position - 1];
    const previous = textAt(position - 1);
    const current = applyStep(previous, step);
    if (step.kind === "load") {
      out.append(span(doc, "span", current));
    } else {
      out.append(
        span(doc, "span", current.slice(0, step.start)),
        span(doc, "del", previous.slice(step.start, step.end)),
        span(doc, "ins", step.insert),
        span(doc, "span", current.slice(step.start + step.insert.length)),
      );
    }
    info.textContent =
      `step ${position} / ${steps.length} · seq ${step.seq} · t ${(step.t / 1000).toFixed(1)} s` +
      ` · page ${step.page} · ${step.kind}` +
      (step.diverged ? " · REPLAY DIVERGED HERE" : "");
  }

  function stop() {
    clearInterval(timer);
    timer = null;
    playButton.textContent = "Play";
  }

  function play() {
    if (Number(slider.value) >= steps.length) show(0);
    playButton.textContent = "Pause";
    timer = setInterval(
      () => {
        const next = Number(slider.value) + 1;
        show(next);
        if (next >= steps.length) stop();
      },
      Number($("replay-speed").value),
    );
  }

  const stepTo = (position) => {
    stop();
    show(position);
  };
  slider.addEventListener("input", () => show(Number(slider.value)));
  playButton.addEventListener("click", () => (timer ? stop() : play()));
  $("replay-speed").addEventListener("change", () => {
    if (timer) {
      stop();
      play();
    }
  });
  $("replay-first").addEventListener("click", () => stepTo(0));
  $("replay-last").addEventListener("click", () => stepTo(steps.length));
  $("replay-prev").addEventListener("click", () => stepTo(Number(slider.value) - 1));
  $("replay-next").addEventListener("click", () => stepTo(Number(slider.value) + 1));
  const goto = $("replay-goto-divergence");
  if (goto && data.divergence_step !== null) goto.addEventListener("click", () => stepTo(data.divergence_step));
  else if (goto) goto.hidden = true;
  return { show };
}

startReplay();
