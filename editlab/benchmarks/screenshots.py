"""The README tour's screenshots, taken again: the editor, the report and a crowd participant's view.

    python -m editlab.benchmarks.screenshots [--iwslt PATH | --no-iwslt] [--output-dir docs/img]

Like editlab.benchmarks.pages_browser (whose setup it shares): a throwaway SQLite database with the demo
accounts and project, the IWSLT2019 study imported and its metrics computed (the report shown is its own;
with --no-iwslt the demo's, after the demo annotator's five submits), a small crowd study of the demo's
sentences as one document under two conditions with a join link, served by gunicorn and photographed by
headless Chromium at 1200 x 750: editor.png (the demo annotator's first item), report.png (the metric
table) and participant.png (the study's first segment, joined by link with Prolific's ids).
"""

import argparse
import os
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from editlab.benchmarks.pages_browser import (
    CHROMIUM,
    PAGE_TIMEOUT_MS,
    compute_demo_metrics,
    editor_ready,
    log_in,
    prepare,
    serve,
)
from editlab.benchmarks.support import CHROMIUM_ARGS, IWSLT2019, setup_django

WIDTH, HEIGHT = 1200, 750
OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "img"
PARTICIPANT = {"PROLIFIC_PID": "5f8e9a0b1c2d3e4f5a6b7c8d", "STUDY_ID": "65aa00bb11cc", "SESSION_ID": "tour"}


def crowd_study() -> str:
    """A Latin-square study of the demo's sentences as one document; returns its join link's token."""
    from annotations.demo import DEMO_ITEMS
    from annotations.models import Item, Project
    from annotations.services.join_links import join_link_open
    from annotations.services.projects import project_create

    project = project_create(
        name="Crowd study (tour)",
        guidelines="Fix the **errors** of the translation; change no more than needed.",
        task_type="mt",
        instructions=["Post-edit the translation"],
    )
    Project.objects.filter(pk=project.pk).update(
        conditions=[
            {"name": "plain", "output": "sysA", "highlights": False},
            {"name": "marked", "output": "sysA", "highlights": True},
        ],
        design=Project.DESIGN_LATIN_SQUARE,
        context=Project.CONTEXT_DOCUMENT,
        source_lang="de",
        target_lang="en",
    )
    Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"{external_id}-{position}",
            source=source,
            model_output=output,
            outputs={"sysA": output},
            highlights={"sysA": [[0, output.find(" ") if " " in output else len(output), "minor"]]},
            document=f"doc{position // 3}",
            document_position=position % 3,
            position=position,
        )
        for position, (external_id, source, output) in enumerate(DEMO_ITEMS * 2)
    )
    project.refresh_from_db()
    return join_link_open(project=project, completion_code="TOUR1234").token


def photograph(base: str, projects: dict[str, int], token: str, output: Path, report_project: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from annotations.management.commands.demo import DEMO_ACCOUNTS

    passwords = {username: password for username, _, password in DEMO_ACCOUNTS}
    output.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        context.set_default_timeout(PAGE_TIMEOUT_MS)

        page = context.new_page()
        log_in(page, base, "annotator", passwords["annotator"])
        page.goto(f"{base}/annotate/")
        page.goto(base + (page.locator("a[href^='/edit/']").first.get_attribute("href") or "/annotate/"))
        editor_ready(page)
        page.keyboard.press("End")
        page.keyboard.type(" Gut.")
        shots.append(output / "editor.png")
        page.screenshot(path=str(shots[-1]))
        if report_project == "demo":  # the demo's report needs its post-edits submitted
            for _ in range(50):
                with page.expect_navigation():
                    page.keyboard.press("Control+Enter")
                if "/edit/" not in page.url:
                    break
                editor_ready(page)
            compute_demo_metrics()
        page.close()

        page = context.new_page()
        log_in(page, base, "researcher", passwords["researcher"])
        page.goto(f"{base}/research/{projects[report_project]}/report/")
        heading = page.locator("h2", has_text="Metrics against")
        page.evaluate("top => window.scrollTo(0, top)", heading.evaluate("h => h.offsetTop - 12"))
        shots.append(output / "report.png")
        page.screenshot(path=str(shots[-1]))
        page.close()

        crowd = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        crowd.set_default_timeout(PAGE_TIMEOUT_MS)
        page = crowd.new_page()
        page.goto(f"{base}/join/{token}/?{urlencode(PARTICIPANT)}")
        with page.expect_navigation(url="**/edit/*/"):
            page.click("#start")
        editor_ready(page)
        shots.append(output / "participant.png")
        page.screenshot(path=str(shots[-1]))
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iwslt", type=Path, default=IWSLT2019, help="the IWSLT2019 study folder")
    parser.add_argument("--no-iwslt", action="store_true", help="the demo's report instead of IWSLT2019's")
    parser.add_argument("--output-dir", type=Path, default=OUTPUT)
    options = parser.parse_args()
    iwslt = None if options.no_iwslt else options.iwslt
    if iwslt is not None and not iwslt.is_dir():
        parser.error(f"--iwslt {iwslt}: no such folder (or pass --no-iwslt)")
    app_dir = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        database_url = f"sqlite:///{folder / 'screenshots.sqlite3'}"
        setup_django(database_url, folder)
        projects = prepare(iwslt)
        token = crowd_study()
        server = serve(folder, app_dir, database_url)
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the ORM between Playwright's sync calls, in this thread
        try:
            shots = photograph(server.base_url, projects, token, options.output_dir, "IWSLT2019" if iwslt else "demo")
        finally:
            server.stop()
    for shot in shots:
        print(f"{shot}: {shot.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
