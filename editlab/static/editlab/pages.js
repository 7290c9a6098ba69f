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

// A link or form marked data-loading="Computing …" leads to a page that takes a while to compute: while the
// browser waits for it, a status line says what is being computed. Without JS the link simply loads.
(function () {
  function say(text) {
    if (!text) return;
    let line = document.getElementById("page-loading");
    if (!line) {
      line = document.createElement("p");
      line.id = "page-loading";
      line.className = "page-loading";
      line.setAttribute("role", "status");
      document.body.appendChild(line);
    }
    line.textContent = text;
    document.body.setAttribute("aria-busy", "true");
  }

  document.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("a[data-loading]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey || link.target) return;
    say(link.dataset.loading);
  });
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form.dataset && form.dataset.loading && !event.defaultPrevented) say(form.dataset.loading);
  });
  // Back to a page kept in the back-forward cache: the wait is over.
  window.addEventListener("pageshow", function () {
    const line = document.getElementById("page-loading");
    if (line) line.remove();
    document.body.removeAttribute("aria-busy");
  });
})();
