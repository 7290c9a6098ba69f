// The evaluation task page's entry: reads the page's config and starts the task.

import { startTask } from "./task.js";

const node = document.getElementById("evaluation-config");
if (node) {
  window.__editlabEvaluation = startTask({ doc: document, config: JSON.parse(node.textContent) });
}
