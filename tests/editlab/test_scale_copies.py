"""scale_copies' copy: each copied post-edit gets the stored values of the post-edit it copies."""

import sqlite3
from pathlib import Path

from editlab.benchmarks import scale
from editlab.benchmarks.scale_copies import copy_study

SCHEMA = """
CREATE TABLE annotations_project (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE annotations_item (id INTEGER PRIMARY KEY, project_id INTEGER, external_id TEXT, document TEXT,
    position INTEGER);
CREATE TABLE annotations_assignment (id INTEGER PRIMARY KEY, item_id INTEGER, status TEXT);
CREATE TABLE annotations_postedit (id INTEGER PRIMARY KEY, assignment_id INTEGER, text TEXT);
CREATE TABLE metrics_metricvalue (id INTEGER PRIMARY KEY, post_edit_id INTEGER, metric TEXT, variant TEXT,
    value REAL, metric_version TEXT, input_hash TEXT, computed_at TEXT,
    UNIQUE (post_edit_id, metric, variant));
"""


def _study(path: Path) -> None:
    """The scale project (the tables hold it alone, as scale.py's database): three items, one post-edit each,
    values of two metrics and both variants, one of them null."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO annotations_project VALUES (1, ?)", (scale.PROJECT,))
    db.executemany(
        "INSERT INTO annotations_item VALUES (?, ?, ?, '', ?)",
        [(1, 1, "a", 0), (2, 1, "b", 1), (3, 1, "c", 2)],
    )
    db.executemany("INSERT INTO annotations_assignment VALUES (?, ?, 'submitted')", [(1, 1), (2, 2), (3, 3)])
    db.executemany("INSERT INTO annotations_postedit VALUES (?, ?, ?)", [(1, 1, "x"), (2, 2, "y"), (3, 3, "z")])
    values = [
        (1, 1, "ter", "plain", 0.25, "3", "h1", "2026-01-01"),
        (2, 1, "chrf", "plain", 71.5, "2", "h2", "2026-01-01"),
        (3, 2, "ter", "plain", None, "3", "h3", "2026-01-02"),
        (4, 2, "chrf", "with_references", 40.0, "2", "h4", "2026-01-02"),
        (5, 3, "ter", "plain", 1.75, "3", "h5", "2026-01-03"),
    ]
    db.executemany("INSERT INTO metrics_metricvalue VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)
    db.commit()
    db.close()


def _values(path: Path) -> list[tuple]:
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT i.external_id, v.metric, v.variant, v.value, v.metric_version, v.input_hash FROM metrics_metricvalue v"
        " JOIN annotations_postedit p ON p.id = v.post_edit_id JOIN annotations_assignment a ON a.id = p.assignment_id"
        " JOIN annotations_item i ON i.id = a.item_id ORDER BY v.id"
    ).fetchall()
    db.close()
    return rows


def test_copy_metric_values_gives_each_copy_the_values_of_the_post_edit_it_copies(tmp_path):
    source, target = tmp_path / "source.sqlite3", tmp_path / "target.sqlite3"
    _study(source)
    counts = copy_study(source, target, 3, [], copy_metric_values=True)
    assert counts["annotations_postedit"] == 9
    assert counts["metrics_metricvalue"] == 15
    originals = _values(source)
    copied = _values(target)
    assert copied[:5] == originals
    for copy in (1, 2):
        assert copied[5 * copy : 5 * (copy + 1)] == [(f"c{copy}:{row[0]}", *row[1:]) for row in originals]


def test_copy_without_values_copies_none(tmp_path):
    source, target = tmp_path / "source.sqlite3", tmp_path / "target.sqlite3"
    _study(source)
    counts = copy_study(source, target, 2, [])
    assert counts["annotations_postedit"] == 6
    assert counts["metrics_metricvalue"] == 5
