"""Cost of the editor's keystroke logger in a real browser (Debian's Chromium, headless).

    python -m editlab.benchmarks.editor_logger [--keys 3000] [--text-chars 200 20000] [--chromium /usr/bin/chromium]

Loads the editor (annotations/static/annotations/editor/) into a page with one text area (the
server is simulated by request routing: every batch and draft is acknowledged), types
`--keys` real key presses (letters, spaces, Backspace, arrows) into a text of each
`--text-chars` length, and prints the per-event cost of the logger's handlers as the
logger measures it itself (performance.now() around each handler; the page is
cross-origin isolated, so the clock has 5 µs resolution): mean, median, p99, max, plus
the cost of one localStorage persist (off the typing path, on an idle timer).
"""

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path

from playwright.sync_api import Route, sync_playwright

from editlab.benchmarks.support import CHROMIUM_ARGS

EDITOR_JS = Path(__file__).resolve().parents[2] / "annotations" / "static" / "annotations" / "editor"
ORIGIN = "http://localhost:9"  # routed, never contacted; localhost is a secure context
ISOLATED = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "credentialless"}
TYPED = "the quick brown fox jumps over the lazy dog "


def page_html(text: str) -> str:
    config = {
        "post_edit_id": 1,
        "page_id": str(uuid.uuid4()),
        "next_seq": 0,
        "version": 0,
        "original": text,
        "draft": text,
        "idle_threshold_ms": 30000,
        "urls": {
            "events": "/api/events/",
            "draft": "/api/draft/",
            "submit": "/api/submit/",
            "skip": "/api/skip/",
            "next": "/",
        },
        "csrf_token": "benchmark",
    }
    config_json = json.dumps(config).replace("<", "\\u003c")
    return (
        "<!doctype html><html><body>"
        '<textarea id="post-edit-text" rows="20" cols="100" readonly></textarea>'
        '<p id="save-status"></p>'
        f'<script id="editor-config" type="application/json">{config_json}</script>'
        '<script type="module" src="/editor/main.js"></script></body></html>'
    )


def serve(text: str):
    version = {"n": 0}

    def handle(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN)
        if path == "/":
            route.fulfill(status=200, content_type="text/html", headers=ISOLATED, body=page_html(text))
        elif path.startswith("/editor/") and (EDITOR_JS / path.removeprefix("/editor/")).is_file():
            body = (EDITOR_JS / path.removeprefix("/editor/")).read_text()
            route.fulfill(status=200, content_type="text/javascript", headers=ISOLATED, body=body)
        elif path == "/api/events/":
            batch = json.loads(route.request.post_data or "{}")
            seqs = [event["seq"] for event in batch.get("events", [])]
            reply: dict[str, object] = {
                "stored": len(seqs),
                "duplicates": 0,
                "gaps": [],
                "max_seq": max(seqs, default=-1),
            }
            route.fulfill(status=200, content_type="application/json", body=json.dumps(reply))
        elif path == "/api/draft/":
            version["n"] += 1
            route.fulfill(status=200, content_type="application/json", body=json.dumps({"version": version["n"]}))
        else:
            route.fulfill(status=404, body="")

    return handle


def run(page, *, keys: int, text_chars: int) -> dict:
    text = (TYPED * (text_chars // len(TYPED) + 1))[:text_chars]
    page.unroute("**/*")
    page.route(f"{ORIGIN}/**", serve(text))
    page.goto(f"{ORIGIN}/")
    page.wait_for_function("() => window.__editlabLogger !== undefined")
    assert page.evaluate("() => window.crossOriginIsolated"), "the page is not cross-origin isolated"
    page.evaluate("() => window.__editlabLoggerStats.reset()")
    keyboard = page.keyboard
    keyboard.press("Control+End")
    pressed = 0
    started = time.perf_counter()
    while pressed < keys:
        for char in TYPED[:20]:
            keyboard.type(char)
        keyboard.press("Backspace")
        keyboard.press("Backspace")
        keyboard.press("ArrowLeft")
        keyboard.press("ArrowRight")
        pressed += 24
    elapsed = time.perf_counter() - started
    page.evaluate("() => window.__editlabLogger.flush()")
    stats = page.evaluate(
        """() => { const s = window.__editlabLoggerStats;
                   return {samples: s.samples(), byHandler: s.byHandler, persistCount: s.persistCount,
                           persistTotalMs: s.persistTotalMs, persistMaxMs: s.persistMaxMs}; }"""
    )
    samples = sorted(1000.0 * ms for ms in stats["samples"])
    return {
        "text_chars": text_chars,
        "keys": pressed,
        "events": len(samples),
        "mean_us": statistics.fmean(samples),
        "median_us": statistics.median(samples),
        "p99_us": samples[int(0.99 * (len(samples) - 1))],
        "max_us": samples[-1],
        "persist_mean_ms": stats["persistTotalMs"] / max(1, stats["persistCount"]),
        "persist_max_ms": stats["persistMaxMs"],
        "keys_per_s": pressed / elapsed,
        "by_handler": stats["byHandler"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=3000)
    parser.add_argument("--text-chars", type=int, nargs="+", default=[200, 20000])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    if not Path(args.chromium).exists():
        raise SystemExit(f"{args.chromium} is missing: install Debian's chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        print(f"logger handler cost, Chromium {browser.version}, {args.keys} key presses per text")
        for text_chars in args.text_chars:
            result = run(page, keys=args.keys, text_chars=text_chars)
            print(
                f"text {result['text_chars']:>6} chars: {result['events']} handler calls, "
                f"mean {result['mean_us']:.1f} µs, median {result['median_us']:.1f} µs, "
                f"p99 {result['p99_us']:.1f} µs, max {result['max_us']:.1f} µs; "
                f"persist (idle timer) mean {result['persist_mean_ms']:.2f} ms, max {result['persist_max_ms']:.2f} ms "
                f"({result['keys_per_s']:.0f} keys/s driven)"
            )
            for name, h in sorted(result["by_handler"].items()):
                print(
                    f"    {name:<20} {h['count']:>6} calls, mean {1000 * h['totalMs'] / h['count']:.1f} µs, "
                    f"max {1000 * h['maxMs']:.1f} µs"
                )
        browser.close()


if __name__ == "__main__":
    main()
