"""What several benchmarks share: a throwaway database, the IWSLT2019 study, Chromium's flags,
and README sections kept between markers.

Imports nothing from Django at module level: a benchmark must point the environment at its
throwaway database before Django's settings are read.
"""

import os
import re
from pathlib import Path

IWSLT2019 = Path(__file__).resolve().parents[3] / "shared" / "data" / "iwslt2019"

# Each benchmark writes its latest figures here (one markdown file per benchmark, sections
# between markers so re-runs replace them); the README links these files and keeps the summary.
RESULTS = Path(__file__).resolve().parent / "results"


def result_file(name: str) -> Path:
    return RESULTS / f"{name}.md"


# Headless Chromium in a container: no sandbox (we may run as root), no GPU, and nothing that
# phones home or updates itself while a test or a measurement runs.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]


def setup_django(database_url: str | None, folder: Path) -> str:
    """Point Django at `database_url` (an empty database) or at a new SQLite file in `folder`,
    never at the project's own database; migrate it and return its vendor ("sqlite", "postgresql")."""
    os.environ.setdefault("DEBUG", "1")
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{folder / 'benchmark.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "editlab.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    return connection.vendor


def write_section(path: Path, start: str, end: str, body: str) -> None:
    """Write `body` between the markers `start` and `end` in `path`, replacing what stood there
    before, so re-runs update their numbers; append the section if the markers are not there yet."""
    body = body.strip().removeprefix(start).removesuffix(end).strip()
    block = f"{start}\n{body}\n{end}"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if start in text and end in text:
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    path.write_text(text, encoding="utf-8")
