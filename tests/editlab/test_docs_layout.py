"""docs/layout.md (the README's Layout) names every module of the apps, so a newcomer finds each room."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("editlab", "annotations", "metrics", "generation")
LAYOUT = ROOT / "docs" / "layout.md"


def _modules() -> list[Path]:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if path.name == "__init__.py" or "/migrations/" in relative or relative.startswith("editlab/benchmarks/"):
                continue
            found.append(path)
    return found


def _named(path: Path, text: str, patterns: list[re.Pattern]) -> bool:
    if path.parent.name == "commands":  # a management command is named by its command
        return re.search(rf"\b{re.escape(path.stem)}\b", text) is not None
    return path.name in text or any(pattern.fullmatch(path.name) for pattern in patterns)


def test_every_module_is_named_in_the_layout():
    text = LAYOUT.read_text(encoding="utf-8")
    # "serializers_*.py" names a family of modules
    patterns = [
        re.compile(re.escape(glob).replace(r"\*", "[a-z0-9_]+")) for glob in re.findall(r"[a-z_]+_\*\.py", text)
    ]
    missing = [path.relative_to(ROOT).as_posix() for path in _modules() if not _named(path, text, patterns)]
    assert missing == [], f"modules docs/layout.md does not name: {missing}"
