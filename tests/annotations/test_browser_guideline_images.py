"""Guidelines may show images from other sites: the editor's cross-origin isolation must not block
them (COEP credentialless), and the page must stay isolated (the logger's fine clock)."""

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser_support import BROWSER_DB, db_lock, logged_in_page, open_editor

pytestmark = [pytest.mark.browser, BROWSER_DB]

# A 1x1 PNG, served by another origin with no Cross-Origin-Resource-Policy header.
DOT = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")


class _Images(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(DOT)))
        self.end_headers()
        self.wfile.write(DOT)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def image_site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_image_from_another_site_shows_in_the_guidelines_of_an_isolated_editor(
    context, site, annotator, item_for, image_site
):
    assert not site.startswith("http://127.0.0.1:") or image_site.split(":")[2] != site.split(":")[2]
    assignment = item_for("Fix this text.")
    with db_lock():
        project = assignment.item.project
        project.guidelines = f"Mark errors like this: ![dot]({image_site}/dot.png)"
        project.save()
    page = logged_in_page(context, site, annotator)
    open_editor(page, assignment)
    page.wait_for_function("() => { const i = document.querySelector('img[alt=dot]'); return i && i.complete; }")
    assert page.evaluate("() => document.querySelector('img[alt=dot]').naturalWidth") == 1
    assert page.evaluate("() => window.crossOriginIsolated") is True
