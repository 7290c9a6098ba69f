"""Every repository path the docs name exists, so the docs cannot drift from the tree (issue 19 §4).

A path is any `annotations/…`, `metrics/…`, `generation/…`, `editlab/…`, `tests/…`, `docs/…` or
`templates/…` written in README.md, docs/*.md or the benchmark results (a module, a package with its
trailing slash, a template, a test). Paths of other repositories (the published code's `src/…`) start
with none of these and are not checked.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("annotations", "metrics", "generation", "editlab", "tests", "docs", "templates")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOPS) + r")/[\w./-]*[\w/])")
# Folders that exist only once the code has run (named in the docs as where a cache goes).
GENERATED = ("__pycache__",)
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "editlab/benchmarks/results").glob("*.md")),
]


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) for every repository path in a Markdown text."""
    return [
        (number, match.group(1))
        for number, line in enumerate(text.splitlines(), 1)
        for match in PATH.finditer(line)
        if not any(part in GENERATED for part in match.group(1).split("/"))
    ]


def test_the_pattern_finds_modules_packages_and_skips_urls_and_other_repositories():
    text = "see `annotations/effort/` and annotations/editing/locks.py.\n`/api/projects/`, `src/metrics/`, https://x.org/docs/a"
    assert named_paths(text) == [(1, "annotations/effort/"), (1, "annotations/editing/locks.py")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_path_a_doc_names_exists(doc):
    missing = [
        f"{doc.name}:{line}: {path}" for line, path in named_paths(doc.read_text()) if not (ROOT / path).exists()
    ]
    assert missing == []
