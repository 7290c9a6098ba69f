"""A bigger scale study from a smaller one, copied in SQL, and the researcher's pages opened on a kept database.

    python -m editlab.benchmarks.scale_copies copy --source A.sqlite3 --target B.sqlite3 --copies 10
        [--metric-values compression,levenshtein | --copy-metric-values]
    python -m editlab.benchmarks.scale_copies pages --database B.sqlite3 [--pages manage-progress,metrics-project]

`copy`: the target is the source's file with the scale study's items, assignments and post-edits copied
`copies - 1` more times (each copy's items get their own ids, external ids "c<k>:..." and positions after the
last; the same annotators, batches and conditions), then ANALYZE: `copies` times the post-edits in a
few minutes, where importing them takes much longer. With --metric-values, every submitted post-edit gets a
stored value (plain variant, the metric's current version) of each metric named, so the metrics page has
values to count: a synthetic 0.5, for counting only. With --copy-metric-values instead, each copy's post-edits
get the source's stored values of the post-edit they copy (every metric and variant, the same value,
metric_version and input_hash): the analysis of the copy is then an honest analysis of real values, each
copied `copies` times.

`pages`: scale.py's pages step (run_pages: production settings, Django's test client, three times each) on
the kept database, its table printed.
"""

import argparse
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from editlab.benchmarks import scale
from editlab.benchmarks.support import production_settings


class _Database:
    """A SQLite file or a PostgreSQL database (psycopg), in autocommit: the SQL here is written with `?`."""

    def __init__(self, target: Path | None, url: str | None) -> None:
        self.postgres = url is not None
        self.connection: Any
        if url is not None:
            import psycopg  # noqa: PLC0415  # only for a PostgreSQL study

            self.connection = psycopg.connect(url, autocommit=True)
        else:
            assert target is not None
            self.connection = sqlite3.connect(target, isolation_level=None)
            self.connection.execute("PRAGMA journal_mode=OFF")
            self.connection.execute("PRAGMA synchronous=OFF")

    def execute(self, sql: str, parameters: tuple = ()):  # noqa: ANN201  # a DB-API cursor
        if self.postgres:
            return self.connection.execute(sql.replace("?", "%s"), parameters)
        return self.connection.execute(sql, parameters)

    def columns(self, table: str) -> list[str]:
        if self.postgres:
            rows = self.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                (table,),
            )
            return [row[0] for row in rows]
        return [row[1] for row in self.execute(f'PRAGMA table_info("{table}")')]


def _copy_table(database: _Database, table: str, shift: dict[str, str], where: str, parameters: tuple) -> int:
    """Insert a copy of `table`'s rows selected by `where`, each column in `shift` computed by its expression
    (the others as they are); the number of rows copied."""
    columns = database.columns(table)
    values = ", ".join(shift.get(name, f'"{name}"') for name in columns)
    names = ", ".join(f'"{name}"' for name in columns)
    cursor = database.execute(
        f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{table}" WHERE {where}', parameters
    )
    return cursor.rowcount


def copy_study(
    source: Path | None,
    target: Path | None,
    copies: int,
    metric_values: list[str],
    url: str | None = None,
    *,
    copy_metric_values: bool = False,
) -> dict[str, int]:
    """The target database (a copy of the source's SQLite file, or the PostgreSQL database at `url` itself) with
    its scale project's rows `copies` times in all; the row counts."""
    if url is None:
        assert source is not None and target is not None
        shutil.copyfile(source, target)
    connection = _Database(target, url)
    connection.execute("BEGIN")
    (project_id,) = connection.execute("SELECT id FROM annotations_project WHERE name = ?", (scale.PROJECT,)).fetchone()
    item_ids = "SELECT id FROM annotations_item WHERE project_id = ?"
    assignment_ids = (
        "SELECT a.id FROM annotations_assignment a JOIN annotations_item i ON i.id = a.item_id"
        " WHERE i.project_id = ? AND i.id BETWEEN ? AND ?"
    )
    (last_item, items, last_position) = connection.execute(
        "SELECT MAX(id), COUNT(*), MAX(position) FROM annotations_item WHERE project_id = ?", (project_id,)
    ).fetchone()
    (first_item,) = connection.execute(
        "SELECT MIN(id) FROM annotations_item WHERE project_id = ?", (project_id,)
    ).fetchone()
    (last_assignment,) = connection.execute("SELECT MAX(id) FROM annotations_assignment").fetchone()
    (last_post_edit,) = connection.execute("SELECT MAX(id) FROM annotations_postedit").fetchone()
    (last_value,) = connection.execute("SELECT COALESCE(MAX(id), 0) FROM metrics_metricvalue").fetchone()
    post_edit_ids = (
        "SELECT p.id FROM annotations_postedit p JOIN annotations_assignment a ON a.id = p.assignment_id"
        " JOIN annotations_item i ON i.id = a.item_id WHERE i.project_id = ? AND p.id <= ?"
    )
    for copy in range(1, copies):
        # The ids of copy k are the originals' shifted past every row there is (the tables hold this study only).
        item_shift = copy * last_item
        assignment_shift = copy * last_assignment
        post_edit_shift = copy * last_post_edit
        original = "id BETWEEN ? AND ?"
        _copy_table(
            connection,
            "annotations_item",
            {
                "id": f"id + {item_shift}",
                "external_id": f"'c{copy}:' || external_id",
                "document": f"CASE WHEN document = '' THEN '' ELSE 'c{copy}:' || document END",
                "position": f"position + {copy * (last_position + 1)}",
            },
            f"project_id = ? AND {original}",
            (project_id, first_item, last_item),
        )
        _copy_table(
            connection,
            "annotations_assignment",
            {"id": f"id + {assignment_shift}", "item_id": f"item_id + {item_shift}"},
            f"id <= ? AND item_id IN ({item_ids} AND {original})",
            (last_assignment, project_id, first_item, last_item),
        )
        _copy_table(
            connection,
            "annotations_postedit",
            {"id": f"id + {post_edit_shift}", "assignment_id": f"assignment_id + {assignment_shift}"},
            f"id <= ? AND assignment_id IN ({assignment_ids})",
            (last_post_edit, project_id, first_item, last_item),
        )
        if copy_metric_values:
            _copy_table(
                connection,
                "metrics_metricvalue",
                {"id": f"id + {copy * last_value}", "post_edit_id": f"post_edit_id + {post_edit_shift}"},
                f"id <= ? AND post_edit_id IN ({post_edit_ids})",
                (last_value, project_id, last_post_edit),
            )
    if metric_values:
        from metrics import text as text_metrics  # noqa: PLC0415  # the metrics' current versions

        for name in metric_values:
            connection.execute(
                "INSERT INTO metrics_metricvalue (post_edit_id, metric, variant, value, metric_version, input_hash, "
                "computed_at) SELECT p.id, ?, 'plain', 0.5, ?, '', CURRENT_TIMESTAMP FROM annotations_postedit p "
                "JOIN annotations_assignment a ON a.id = p.assignment_id WHERE a.status = 'submitted'",
                (name, str(text_metrics.METRICS[name].version)),
            )
    connection.execute("COMMIT")
    if url is not None:
        for table in ("annotations_item", "annotations_assignment", "annotations_postedit", "metrics_metricvalue"):
            # The copies' ids were given explicitly: the sequences move past them.
            connection.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT COALESCE(MAX(id), 1) FROM {table}))"
            )
        connection.execute("VACUUM ANALYZE")
    else:
        connection.execute("ANALYZE")
    counts = {
        table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("annotations_item", "annotations_assignment", "annotations_postedit", "metrics_metricvalue")
    }
    connection.connection.close()
    return counts | {"items per copy": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    copy = commands.add_parser("copy")
    copy.add_argument("--source", type=Path, help="the SQLite study copied")
    copy.add_argument("--target", type=Path, help="the SQLite file written")
    copy.add_argument("--database-url", help="a PostgreSQL database holding the study: copied in place")
    copy.add_argument("--copies", type=int, default=10)
    copy.add_argument("--metric-values", default="", help="synthetic values (0.5) of these metrics, for counting")
    copy.add_argument(
        "--copy-metric-values",
        action="store_true",
        help="each copied post-edit gets the stored values of the post-edit it copies (real values)",
    )
    pages = commands.add_parser("pages")
    pages.add_argument("--database", type=Path, help="the SQLite file")
    pages.add_argument("--database-url", help="or a PostgreSQL database")
    pages.add_argument("--pages", default="", help="only these pages' URL names, comma-separated (default: all)")
    options = parser.parse_args()
    if options.command == "copy":
        if options.metric_values and options.copy_metric_values:
            parser.error("choose one of --metric-values (synthetic) and --copy-metric-values (the stored ones)")
        if options.metric_values:
            import django  # noqa: PLC0415  # the metrics' versions, read through Django's settings

            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "editlab.settings")
            os.environ.setdefault("DEBUG", "1")
            django.setup()
        began = time.perf_counter()
        counts = copy_study(
            options.source,
            options.target,
            options.copies,
            [m for m in options.metric_values.split(",") if m],
            url=options.database_url,
            copy_metric_values=options.copy_metric_values,
        )
        print(counts, f"{time.perf_counter() - began:.1f} s", file=sys.stderr)
        return
    os.environ["SCALE_PAGES"] = options.pages
    url = options.database_url or f"sqlite:///{options.database.resolve()}"
    env = {**os.environ, **production_settings(url), "EDITLAB_ALLOW_SQLITE": "1"}
    lines = scale.run_pages(env)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print("\n".join([*lines, "", f"load average {load} at the end ({time.strftime('%Y-%m-%d %H:%M')} UTC)"]))


if __name__ == "__main__":
    main()
