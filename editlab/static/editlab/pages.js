// What every page does after it loads and after each htmx swap: a box that scrolls sideways (a wide
// table in .table-scroll, or any table in a narrow window) can be reached and scrolled with the keyboard,
// and is announced as a region named by its caption or the heading before it.
(function () {
  function nameOf(box) {
    const caption = box.querySelector("caption");
    if (caption) return caption.textContent.trim();
    for (let node = box.previousElementSibling; node; node = node.previousElementSibling) {
      if (/^H[1-6]$/.test(node.tagName)) return node.textContent.trim();
    }
    return "Table";
  }

  function reachScrollBoxes(root) {
    root.querySelectorAll(".table-scroll, table").forEach(function (box) {
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        if (box.tagName !== "TABLE") {
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", nameOf(box));
        }
        box.dataset.scrollBox = "1";
      } else if (!scrolls && box.dataset.scrollBox) {
        box.removeAttribute("tabindex");
        if (box.tagName !== "TABLE") box.removeAttribute("role");
        delete box.dataset.scrollBox;
      }
    });
  }

  function all() { reachScrollBoxes(document); }
  document.addEventListener("DOMContentLoaded", all);
  document.addEventListener("htmx:afterSettle", all);
  let queued = false;
  window.addEventListener("resize", function () {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () {
      queued = false;
      all();
    });
  });
})();
