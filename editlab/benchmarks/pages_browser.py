"""What a user waits for, in Chromium: the first page, opening the editor, submit to the next item, and a
report's first and warm load, on the demo and on the IWSLT2019 study imported.

    python -m editlab.benchmarks.pages_browser [--iwslt PATH | --no-iwslt] [--app-dir TREE] [--label NAME]
                                               [--output FILE; default editlab/benchmarks/results/ux.md]

Runs against a throwaway SQLite database in a temporary folder, never the project's own: `demo` makes the
demo accounts and project; the IWSLT2019 study (5,235 post-edits) is imported with the `pet` importer and
its metrics (the effort suite, plain variant) computed in this process. The app is served by gunicorn (one
sync worker with 4 threads: one process, so one analysis cache; production settings, static files collected)
from this checkout or from --app-dir (another checkout of the same schema, e.g. a worktree at main: the "before" of a change). Headless Chromium then:
- first page: the login page loaded (navigation start to the load event), then My batches after login;
- editor open: each demo item's editor, from navigation start until the logger is ready and the text has focus;
- submit to next: Ctrl+Enter after a few typed characters, until the next page is ready (the next editor,
  or My batches after the last item);
- report first load: the researcher's report of a project whose analysis is not cached yet (the server
  computes it), then warm load: the same URL again (the analysis from the cache).
Times are the browser's (Navigation Timing / performance.now), milliseconds; the table goes to --output
between markers named by --label, so a "before" and an "after" run both stay in the file.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from editlab.benchmarks.support import CHROMIUM_ARGS, IWSLT2019, result_file, setup_django, write_section

CHROMIUM = Path("/usr/bin/chromium")
PAGE_TIMEOUT_MS = 180_000  # a report's first load on a busy machine; nothing is asserted on time
TYPED = "ok "
MAX_SUBMITS = 50  # the demo has 5 items
NAVIGATION_MS = """() => { const n = performance.getEntriesByType("navigation")[0];
  return {response: n.responseEnd - n.startTime, load: n.loadEventEnd - n.startTime}; }"""


def markers(label: str) -> tuple[str, str]:
    return f"<!-- benchmark:ux-pages:{label}:start -->", f"<!-- benchmark:ux-pages:{label}:end -->"


def prepare(iwslt: Path | None) -> dict:
    """Demo accounts and project, and the IWSLT2019 study with its metric values when `iwslt`."""
    from django.core.management import call_command

    from annotations.demo import DEMO_PROJECT
    from annotations.importers import import_items
    from annotations.models import Project

    call_command("demo", stdout=open(os.devnull, "w"))
    projects = {"demo": Project.objects.get(name=DEMO_PROJECT)}
    if iwslt is not None:
        import_items(fmt="pet", path=iwslt, create_project=True, project="IWSLT2019", annotator_prefix="iwslt-")
        from metrics import text as text_metrics

        call_command(
            "compute_metrics",
            project="IWSLT2019",
            metrics=",".join(text_metrics.EFFORT_SUITE),
            variant="plain",
            no_progress=True,
            stdout=open(os.devnull, "w"),
        )
        projects["IWSLT2019"] = Project.objects.get(name="IWSLT2019")
    return {name: project.pk for name, project in projects.items()}


def compute_demo_metrics() -> None:
    from django.core.management import call_command

    from annotations.demo import DEMO_PROJECT
    from metrics import text as text_metrics

    call_command(
        "compute_metrics",
        project=DEMO_PROJECT,
        metrics=",".join(text_metrics.EFFORT_SUITE),
        variant="plain",
        no_progress=True,
        stdout=open(os.devnull, "w"),
    )


def serve(folder: Path, app_dir: Path, database_url: str):
    from editlab.benchmarks.load.harness import Gunicorn, server_environment, server_settings

    env = server_environment(server_settings(database_url, folder / "static"))
    env["PYTHONPATH"] = str(app_dir)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=app_dir, env=env, check=True
    )
    server = Gunicorn(env=env, workers=1, worker_class="sync", threads=4, folder=folder)  # one process: one cache
    server.command[server.command.index("--chdir") + 1] = str(app_dir)
    server.start()
    return server


def log_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("form.login button[type=submit]")


def editor_ready(page) -> float:
    """performance.now() when the editor's logger is ready and its text area has the focus."""
    page.wait_for_function("() => window.__editlabLogger !== undefined")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'post-edit-text'")
    return page.evaluate("() => performance.now()")


def measure(base: str, projects: dict[str, int], after_submits) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    from annotations.management.commands.demo import DEMO_ACCOUNTS

    passwords = {username: password for username, _, password in DEMO_ACCOUNTS}
    times: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        page = context.new_page()
        page.goto(f"{base}/login/")
        times["first page: login"] = [page.evaluate(NAVIGATION_MS)["load"]]
        log_in(page, base, "annotator", passwords["annotator"])
        page.goto(f"{base}/annotate/")
        times["first page: My batches"] = [page.evaluate(NAVIGATION_MS)["load"]]
        first_editor = page.locator("a[href^='/edit/']").first.get_attribute("href") or "/annotate/"
        opens, submits = [], []
        page.goto(f"{base}{first_editor}")
        opens.append(editor_ready(page))
        for _ in range(MAX_SUBMITS):
            page.keyboard.press("End")
            page.keyboard.type(TYPED)
            pressed = page.evaluate("() => performance.timeOrigin + performance.now()")
            with page.expect_navigation():
                page.keyboard.press("Control+Enter")
            if "/edit/" not in page.url:  # the last item: My batches
                page.wait_for_load_state("load")
                submits.append(page.evaluate("() => performance.timeOrigin + performance.now()") - pressed)
                break
            ready = editor_ready(page)
            opens.append(ready)
            submits.append(page.evaluate("() => performance.timeOrigin") + ready - pressed)
        times["editor open"] = opens
        times["submit to next"] = submits
        after_submits()
        page.close()

        page = context.new_page()
        log_in(page, base, "researcher", passwords["researcher"])
        for name, pk in projects.items():
            for label in ("report first load", "report warm load"):
                page.goto(f"{base}/research/{pk}/report/")
                page.wait_for_load_state("load")
                times.setdefault(f"{label}: {name}", []).append(page.evaluate(NAVIGATION_MS)["load"])
        browser.close()
    return times


def table(times: dict[str, list[float]], label: str, described: str) -> str:
    lines = [
        f"Run `{label}` ({described}); Python {platform.python_version()}, {os.cpu_count()} cores "
        "(shared with other work: figures are indicative).",
        "",
        "| step | n | median ms | min ms | max ms |",
        "|---|---|---|---|---|",
    ]
    for step, values in times.items():
        lines.append(
            f"| {step} | {len(values)} | {statistics.median(values):,.0f} | {min(values):,.0f} | {max(values):,.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iwslt", type=Path, default=IWSLT2019, help="the IWSLT2019 study folder")
    parser.add_argument("--no-iwslt", action="store_true", help="the demo only")
    parser.add_argument("--app-dir", type=Path, default=Path(__file__).resolve().parents[2], help="the checkout served")
    parser.add_argument("--label", default="after", help="the run's name in the results file (before, after)")
    parser.add_argument("--output", type=Path, default=result_file("ux"))
    options = parser.parse_args()
    iwslt = None if options.no_iwslt else options.iwslt
    if iwslt is not None and not iwslt.is_dir():
        parser.error(f"--iwslt {iwslt}: no such folder (or pass --no-iwslt)")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        database_url = f"sqlite:///{folder / 'benchmark.sqlite3'}"
        setup_django(database_url, folder)
        projects = prepare(iwslt)
        server = serve(folder, options.app_dir.resolve(), database_url)
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the ORM between Playwright's sync calls, in this thread
        try:
            times = measure(server.base_url, projects, compute_demo_metrics)
        finally:
            server.stop()
    described = f"app from `{options.app_dir.resolve().name}`, " + ("demo + IWSLT2019" if iwslt else "demo only")
    body = table(times, options.label, described)
    print(body)
    write_section(options.output, *markers(options.label), body)


if __name__ == "__main__":
    main()
