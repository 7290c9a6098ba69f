"""How many of editlab's own files one keystroke passes through, from the browser to the export.

Follows one post-edit ("This are a test." -> "This is a test.", 11 events) through the stages a keystroke
takes: the editor page, the event batch that stores it, the submit that turns the log into effort, a
metric job, the report page, and the export. For each stage it records which first-party Python files had
code run (a profile hook on every call, in this process; metric scoring kept in-process) and, for the
editor, which JavaScript modules the page loads (the ES-module import graph from the editor's entry). The
same run on two commits gives a before/after that does not depend on reading the code by hand.

    python -m editlab.benchmarks.keystroke_path [--output FILE; default results/house.md]

Run it from the checkout to measure (it is a pytest module: it uses the test database and the factories).
"""

from __future__ import annotations

import io
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("editor page", "event batch", "submit and effort", "metric job", "report", "export")
_SKIP = ("tests/", "editlab/benchmarks/", "/migrations/", ".venv/")


def first_party(filename: str) -> str | None:
    try:
        relative = Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if not relative.endswith(".py") or any(part in relative for part in _SKIP):
        return None
    return relative


def traced(run: Callable[[], object]) -> set[str]:
    """The first-party files whose code ran during `run()` (module bodies imported on the way included)."""
    seen: set[str] = set()
    codes: set[object] = set()

    def hook(frame, event, arg):  # noqa: ANN001
        if event == "call" and frame.f_code not in codes and frame.f_code.co_name != "<module>":
            codes.add(frame.f_code)
            name = first_party(frame.f_code.co_filename)
            if name:
                seen.add(name)

    sys.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


_IMPORT = re.compile(r"""(?:^|\n)\s*import\s+(?:[^'"]*?\s+from\s+)?['"](\.{1,2}/[^'"]+)['"]""")


def js_modules(entry: Path) -> set[str]:
    """The ES modules `entry` imports, transitively (relative imports), itself included."""
    found: set[str] = set()
    todo = [entry.resolve()]
    while todo:
        path = todo.pop()
        name = path.relative_to(ROOT).as_posix()
        if name in found or not path.exists():
            continue
        found.add(name)
        for target in _IMPORT.findall(path.read_text(encoding="utf-8")):
            todo.append((path.parent / target).resolve())
    return found


def editor_entry() -> Path:
    """The module the editor page's template loads."""
    return ROOT / "annotations" / "static" / "annotations" / "editor" / "main.js"


def walk(assignment, annotator, researcher, client, folder: Path) -> dict[str, set[str]]:  # noqa: ANN001
    """One post-edit from the editor page to the export, each stage traced."""
    from django.core.management import call_command
    from django.urls import reverse

    from annotations.models import PostEdit, Visit
    from tests.annotations.editing_helpers import EDITED, edit_log, post_json, url

    project = assignment.item.project
    stages: dict[str, set[str]] = {}
    client.force_login(annotator)
    stages["editor page"] = traced(lambda: client.get(reverse("editor", args=[assignment.pk])))
    post_edit = PostEdit.objects.get(assignment=assignment)
    visit = Visit.objects.filter(post_edit=post_edit).latest("pk")
    batch = {"page_id": str(visit.page_id), "events": edit_log()}
    answers: list[Any] = []
    stages["event batch"] = traced(lambda: answers.append(post_json(client, url("events", post_edit), batch)))
    submit = {"page_id": str(visit.page_id), "text": EDITED, "version": 0, "last_seq": 10}
    stages["submit and effort"] = traced(lambda: answers.append(post_json(client, url("submit", post_edit), submit)))
    assert [answer.status_code for answer in answers] == [200, 200], [answer.content for answer in answers]
    out = io.StringIO()
    stages["metric job"] = traced(
        lambda: call_command("compute_metrics", "--project", project.name, "--metrics", "compression", stdout=out)
    )
    client.force_login(researcher)
    report = []
    stages["report"] = traced(lambda: report.append(client.get(reverse("metrics-report", args=[project.pk]))))
    assert report[0].status_code == 200
    target = folder / f"export-{project.pk}.csv"
    stages["export"] = traced(
        lambda: call_command("export", project=project.name, fmt="csv", output=str(target), stdout=io.StringIO())
    )
    assert EDITED in target.read_text(encoding="utf-8")
    return stages


def test_keystroke_path(db, client, tmp_path):  # noqa: ANN001
    from tests.factories import AssignmentFactory, UserFactory

    annotator = UserFactory(username="anna", role="annotator")
    researcher = UserFactory(username="rita", role="researcher")
    # The first walk imports and warms everything (module bodies are not the path); the second is measured.
    walks = [
        walk(
            AssignmentFactory(annotator=annotator, item__model_output="This are a test."),
            annotator,
            researcher,
            client,
            tmp_path,
        )
        for _ in range(2)
    ]
    stages = walks[-1]
    js = js_modules(editor_entry())
    Path(os.environ["KEYSTROKE_PATH_OUT"]).write_text(
        json.dumps({"stages": {name: sorted(files) for name, files in stages.items()}, "js": sorted(js)}, indent=1)
    )


def main() -> None:
    import argparse
    import subprocess
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="Also keep the file lists here.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "path.json"
        env = dict(os.environ, KEYSTROKE_PATH_OUT=str(out), DEBUG="1", EDITLAB_METRIC_WORKERS="1")
        env["EDITLAB_METRIC_PROCESSES"] = "1"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-o", "addopts="]
        done = subprocess.run(command, cwd=ROOT, env=env)
        if done.returncode:
            raise SystemExit(done.returncode)
        found = json.loads(out.read_text())
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    seen: set[str] = set()
    print("| stage | files whose code ran | new at this stage |\n|---|---:|---:|")
    for name in STAGES:
        files = set(found["stages"][name])
        print(f"| {name} | {len(files)} | {len(files - seen)} |")
        seen |= files
    lines = {name: len((ROOT / name).read_text(encoding="utf-8").splitlines()) for name in seen}
    largest = max(lines, key=lines.__getitem__)
    print(f"| all stages (union) | {len(seen)} | |")
    print(
        f"| their lines: total, median, largest | {sum(lines.values()):,}, {statistics.median(lines.values()):.0f}, "
        f"{lines[largest]} ({largest}) | |"
    )
    print(f"| editor JavaScript modules | {len(found['js'])} | |")


if __name__ == "__main__":
    main()
