"""axe-core over every page under every role, in Chromium: no serious or critical violation, and no
page wider than an 800 px window.

The pages are the URL matrix's (tests/editlab/test_url_permissions.py ROUTES, its world of objects):
every route a role GETs with a 200 that is an HTML page (not the API's JSON, a download or a plot).
axe-core is the npm package tests/js/package.json pins (installed by editlab/scripts/install test),
injected into each page as it is. Each page is checked at 1366 px and at 800 px. Run with -s to see every page's violations of any impact.
"""

from pathlib import Path

import pytest
from django.urls import get_resolver, reverse

from tests.browser_support import BROWSER_DB, db_lock, logged_in_page
from tests.editlab.test_url_permissions import ROLES, ROUTES, build_world

pytestmark = [pytest.mark.browser, BROWSER_DB]

AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"
PAGE_TIMEOUT_MS = 60000  # how long a step may wait for the page (a busy machine); no time is asserted
NOT_PAGES = {"healthz", "logout", "metrics-export", "metrics-report-data", "metrics-report-documents"}
NOT_PAGES |= {"metrics-report-plot", "api-schema", "manage-post-edit-process-graph", "manage-participation-export"}
NOT_PAGES |= {"metrics-report-agreement", "metrics-quality-download"}
BLOCKING = ("serious", "critical")
NARROW_PX = 800

# Swagger UI's own widget on the API docs page is drf-spectacular's copy of a third-party app: the
# page around it (the bar, the way back) is checked, the widget is not.
NEXT_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
RUN_AXE = """async () => {
  const context = document.querySelector("#swagger-ui") ? {exclude: [["#swagger-ui"]]} : document;
  const result = await axe.run(context, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                                      where: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""


def pages_of(role: str) -> list[str]:
    """The route names `role` reads as a page with a 200."""
    return [
        name
        for name, route in ROUTES.items()
        if route.get.get(role) == 200 and name not in NOT_PAGES and (not name.startswith("api-") or name == "api-docs")
    ]


def test_the_page_list_covers_every_role():
    assert pages_of("anonymous") == ["login", "join"]
    assert {"annotator_home", "editor", "editor_diff", "api-docs"} <= set(pages_of("annotator_a"))
    assert {"manage-project-edit", "manage-design", "metrics-report", "metrics-job"} <= set(pages_of("researcher"))
    assert {"manage-import", "manage-project-create", "manage-project-copy"} <= set(pages_of("admin"))


def test_every_page_under_every_role_passes_axe_and_fits_800_px(context, site):
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run editlab/scripts/install test (npm ci in tests/js)")
    get_resolver().url_patterns  # noqa: B018 - loaded before the browser asks (it imports the metrics libraries)
    with db_lock():
        world = build_world()
    problems: list[str] = []
    for role in ROLES:
        if role == "anonymous":
            page = context.new_page()
        else:
            page = logged_in_page(context, site, world.users[role])
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        for name in pages_of(role):
            route = ROUTES[name]
            url = reverse(name, kwargs=route.kwargs(world)) + route.query
            page.set_viewport_size({"width": 1366, "height": 900})
            response = page.goto(url)
            assert response.status == 200, f"{url} as {role}: {response.status}"
            if name == "api-docs":
                page.wait_for_selector("#swagger-ui .info")
            page.add_script_tag(path=str(AXE))
            violations = page.evaluate(RUN_AXE)
            page.set_viewport_size({"width": NARROW_PX, "height": 900})
            page.evaluate(NEXT_FRAMES)  # the page's resize handler has run
            narrow = page.evaluate(RUN_AXE)
            seen = {(v["id"], v["impact"]) for v in violations}
            violations += [v for v in narrow if (v["id"], v["impact"]) not in seen]
            for violation in violations:
                line = (
                    f"{role} {url}: {violation['impact']} {violation['id']} ×{violation['nodes']} {violation['where']}"
                )
                print(line)
                if violation["impact"] in BLOCKING:
                    problems.append(line)
            width = page.evaluate("() => document.documentElement.scrollWidth")
            print(f"{role} {url}: {len(violations)} violations; {width} px wide at {NARROW_PX} px")
            if width > NARROW_PX:
                problems.append(f"{role} {url}: {width} px wide in an {NARROW_PX} px window")
        page.close()
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
