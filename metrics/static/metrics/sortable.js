// Sortable tables: click a header of a table.sortable to sort its rows (again to reverse).
// Cells may carry data-value (the raw number); headers with data-type="number" sort numerically,
// empty values last. Event delegation on document, so tables swapped in by htmx work too.
document.addEventListener("click", (event) => {
  const header = event.target.closest("table.sortable thead th");
  if (!header) return;
  const table = header.closest("table");
  const column = Array.from(header.parentElement.children).indexOf(header);
  const numeric = header.dataset.type === "number";
  const descending = header.getAttribute("aria-sort") === "ascending";
  table.querySelectorAll("thead th").forEach((th) => th.removeAttribute("aria-sort"));
  header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const value = (row) => {
    const cell = row.children[column];
    const raw = cell ? (cell.dataset.value ?? cell.textContent.trim()) : "";
    if (!numeric) return raw.toLowerCase();
    return raw === "" || Number.isNaN(Number(raw)) ? null : Number(raw);
  };
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = value(a), y = value(b);
    if (x === y) return 0;
    if (x === null) return 1;
    if (y === null) return -1;
    return (x < y ? -1 : 1) * (descending ? -1 : 1);
  });
  rows.forEach((row) => body.appendChild(row));
});
