"""Unit tests of the editor's ES modules (annotations/static/annotations/editor/ and replay.js),
run in Chromium on a static test page: the files are served by request routing, no server.

The tests themselves are JavaScript (tests/js/<module>.test.js, on tests/js/harness.js); each
module's file is one test here, failing with the names and messages of its failing cases.
"""

import mimetypes
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = "http://editlab.test"  # routed, never contacted
SERVED = {
    "/static/annotations/": ROOT / "annotations" / "static" / "annotations",
    "/tests/js/": ROOT / "tests" / "js",
}
MODULES = sorted(path.name for path in (ROOT / "tests" / "js").glob("*.test.js"))

pytestmark = pytest.mark.browser


def page_html(module: str) -> str:
    return (
        "<!doctype html><html><body><script type=module>"
        'import { run } from "/tests/js/harness.js";'
        f'import "/tests/js/{module}";'
        "window.__results = await run();"
        "</script></body></html>"
    )


def serve(module: str):
    def handle(route) -> None:
        path = route.request.url.removeprefix(ORIGIN).split("?")[0]
        if path == "/":
            route.fulfill(status=200, content_type="text/html", body=page_html(module))
            return
        for prefix, folder in SERVED.items():
            if path.startswith(prefix):
                file = (folder / path.removeprefix(prefix)).resolve()
                if file.is_file() and folder in file.parents:
                    kind = "text/javascript" if file.suffix == ".js" else mimetypes.guess_type(file.name)[0]
                    route.fulfill(status=200, content_type=kind or "application/octet-stream", body=file.read_bytes())
                    return
        route.fulfill(status=404, body="")

    return handle


def test_every_module_has_its_tests():
    modules = {path.stem for path in (ROOT / "annotations" / "static" / "annotations" / "editor").glob("*.js")}
    tested = {name.removesuffix(".test.js") for name in MODULES}
    # main.js only reads the page and calls startEditor (editor.test.js); the browser tests drive it.
    assert modules - {"main"} <= tested, f"modules without unit tests: {sorted(modules - {'main'} - tested)}"
    assert "replay" in tested


@pytest.mark.parametrize("module", MODULES)
def test_module(browser, module):
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.route(f"{ORIGIN}/**", serve(module))
        page.goto(f"{ORIGIN}/")
        page.wait_for_function("() => window.__results !== undefined || window.__failed", timeout=30000)
        results = page.evaluate("() => window.__results")
    finally:
        context.close()
    assert not errors, errors
    assert results, f"{module} ran no tests"
    failures = [f"{r['name']}: {r['message']}" for r in results if not r["ok"]]
    assert not failures, "\n".join(failures)
