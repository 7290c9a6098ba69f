"""A long finished-study table streams: read a line at a time, its post-edits spooled to disk and
written a chunk at a time, still atomic, its refusals naming file and line (issue 24)."""

import csv

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from annotations.importers import ImportDataError, import_items
from annotations.importers.base import InputFile, Origin, PostEditRow
from annotations.importers.checks import post_edit_facts
from annotations.importers.spool import PostEditSpool
from annotations.importers.store import BULK_SIZE
from annotations.importers.table_read import _lines, read_table
from annotations.models import Assignment, Item, PostEdit, Project

ROWS = 2 * BULK_SIZE + 500  # more than two chunks
HEADER = ["external_id", "source", "model_output", "edited", "annotator", "wall_ms", "letters", "note"]


def study_rows(count: int) -> list[list[str]]:
    """`count` finished post-edits: items of five rows each, five annotators."""
    return [
        [f"i{n // 5}", f"Quelle {n // 5}.", f"Output {n // 5}.", f"Edited {n}.", f"ed-{n % 5}", str(1000 + n), "3", "x"]
        for n in range(count)
    ]


def write_study(tmp_path, rows: list[list[str]], name: str = "study.tsv"):
    path = tmp_path / name
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, dialect="excel-tab")
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def nothing_stored() -> bool:
    return not Item.objects.exists() and not Assignment.objects.exists() and not PostEdit.objects.exists()


@pytest.mark.django_db
def test_a_long_study_is_written_a_chunk_at_a_time_and_reads_back_whole(tmp_path):
    path = write_study(tmp_path, study_rows(ROWS))

    with CaptureQueriesContext(connection) as queries:
        report = import_items(project="long", fmt="table", path=path, create_project=True)

    assert (report.items_created, report.post_edits_created) == (ROWS // 5, ROWS)
    if connection.vendor == "postgresql":
        # One COPY a chunk (logged as its statement only): BULK_SIZE, BULK_SIZE, then 500 rows.
        copies = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('COPY "annotations_postedit"')]
        assert len(copies) == 3
    else:
        inserts = [q["sql"] for q in queries.captured_queries if 'INSERT INTO "annotations_postedit"' in q["sql"]]
        # One executemany a chunk (logged as "N times: INSERT ..."): BULK_SIZE, BULK_SIZE, then 500 rows.
        assert [sql.split(" times: ")[0] for sql in inserts] == [str(BULK_SIZE), str(BULK_SIZE), "500"]
    last = PostEdit.objects.select_related("assignment__item", "assignment__annotator").get(text=f"Edited {ROWS - 1}.")
    assert last.assignment.item.external_id == f"i{(ROWS - 1) // 5}"
    assert last.assignment.annotator.username == f"ed-{(ROWS - 1) % 5}"
    assert last.assignment.status == Assignment.SUBMITTED
    assert (last.wall_ms, last.letters, last.draft_text, last.extra) == (1000 + ROWS - 1, 3, last.text, {"note": "x"})
    assert last.origin_detail == {"format": "table", "file": str(path), "line": ROWS + 1}
    assert last.origin == PostEdit.IMPORTED and last.definition_version == "table"
    item = Item.objects.get(external_id="i0")
    assert (item.source, item.model_output, item.position, item.assignments.count()) == ("Quelle 0.", "Output 0.", 0, 5)
    assert Item.objects.get(external_id=f"i{ROWS // 5 - 1}").position == ROWS // 5 - 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("last", "field", "message"),
    [
        (["i0", "Quelle 0.", "Output 0.", "E", "ed-late", "many", "3", "x"], "wall_ms", "is not a number"),
        (["i0", "Quelle 0.", "Output 0.", "E", "ed-0", "1", "3", "x"], "annotator", "edits item 'i0' twice"),
        (["i0", "Quelle 0.", "Other output.", "E", "ed-late", "1", "3", "x"], "model_output", "different model_output"),
        (["i0", "Quelle 0.", "Output 0.", "E", "ed late", "1", "3", "x"], "annotator", "is not a valid username"),
        (["i0", "Quelle 0.", "Output 0.", "E", "ed-late", "1", "3"], None, "7 fields, but the header names 8"),
    ],
)
def test_a_bad_last_row_of_a_long_study_stores_nothing_and_names_its_line(tmp_path, last, field, message):
    Project.objects.create(name="long")
    path = write_study(tmp_path, [*study_rows(ROWS), last])

    with pytest.raises(ImportDataError, match=message) as refused:
        import_items(project="long", fmt="table", path=path)

    assert (refused.value.file, refused.value.line, refused.value.field) == (str(path), ROWS + 2, field)
    assert nothing_stored()


@pytest.mark.django_db
def test_a_text_over_the_limit_in_the_last_row_stores_nothing(tmp_path, settings):
    settings.EDITLAB_TEXT_MAX_BYTES = 1000
    path = write_study(tmp_path, [*study_rows(ROWS), ["late", "S", "O", "E" * 1001, "ed-1", "1", "3", "x"]])

    with pytest.raises(ImportDataError, match="the editor takes at most 1,000") as refused:
        import_items(project="long", fmt="table", path=path, create_project=True)

    assert (refused.value.line, refused.value.field) == (ROWS + 2, "text")
    assert nothing_stored() and not Project.objects.exists()


@pytest.mark.django_db
def test_a_bad_byte_at_the_end_is_refused_before_any_row_is_read(tmp_path):
    path = write_study(tmp_path, study_rows(ROWS))
    with path.open("ab") as handle:
        handle.write(b"late\tS\tO\tE\xff\ted-1\t1\t3\tx\n")

    with pytest.raises(ImportDataError, match="byte 0xff at offset .* is not UTF-8") as refused:
        import_items(project="long", fmt="table", path=path, create_project=True)

    assert refused.value.line == ROWS + 2
    assert nothing_stored()


def test_a_table_file_is_read_a_line_at_a_time(tmp_path):
    path = write_study(tmp_path, study_rows(ROWS))
    file = InputFile.from_path(path, streamed=True)
    assert file.data == b""  # only its path: the bytes stay on disk

    columns, records = read_table(file)
    first = next(records)
    # A row appended once reading has begun is still read: the records come from the file as asked for.
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write("late\tS\tO\tE\ted-1\t1\t3\tx\n")
    rest = list(records)

    assert columns == HEADER
    assert first == (2, dict(zip(HEADER, study_rows(1)[0], strict=True)))
    assert len(rest) == ROWS and rest[-1][0] == ROWS + 2


texts = st.text(alphabet=st.sampled_from("ab \r\n\té€"), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
post_edit_rows = st.builds(
    PostEditRow,
    external_id=st.sampled_from(["a", "b", "c"]),
    annotator=st.sampled_from(["x", "y", "bad name"]),
    text=texts,
    origin=st.builds(Origin, file=st.just("f.tsv"), line=st.integers(1, 10**6)),
    effort=st.dictionaries(st.sampled_from(["wall_ms", "letters"]), st.integers(0, 10**9), max_size=2),
    extra=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    condition=st.sampled_from(["", "A"]),
)


@given(rows=st.lists(post_edit_rows, max_size=40), chunk=st.integers(1, 7))
def test_the_spool_gives_back_each_row_as_the_writer_stores_it_as_often_as_asked(rows, chunk):
    spool = PostEditSpool(chunk=chunk)
    for row in rows:
        spool.append(row)

    expected = []
    for row in rows:
        crlf = row.text.count("\r\n")
        cr = row.text.count("\r") - crlf
        normalized = row.text.replace("\r\n", "\n").replace("\r", "\n")
        endings = {"crlf": crlf, "cr": cr} if crlf or cr else {}
        expected.append((row.external_id, row.annotator, normalized, row.effort, row.extra, row.condition, endings))
    for _ in range(2):
        back = [(r.external_id, r.annotator, r.text, r.effort, r.extra, r.condition, r.line_endings) for r in spool]
        assert back == expected
        assert [r.origin for r in spool] == [r.origin for r in rows]
    assert len(spool) == len(rows)
    assert all(len(c) <= chunk for c in spool.chunks())
    spool.close()


@given(rows=st.lists(post_edit_rows, max_size=40))
def test_the_facts_refuse_the_first_bad_row_as_a_row_by_row_check_would(rows):
    """The first row with an invalid annotator name or an (item, annotator) pair seen before."""
    seen: dict[tuple[str, str], int] = {}
    expected = None
    for n, row in enumerate(rows):
        if row.annotator == "bad name":
            expected = (n, "is not a valid username")
            break
        key = (row.external_id, row.annotator)
        if key in seen:
            expected = (n, f"twice (first at f.tsv, line {rows[seen[key]].origin.line})")
            break
        seen[key] = n
    spool = PostEditSpool(chunk=3)
    for row in rows:
        spool.append(row)

    for source in (rows, spool):
        facts = post_edit_facts(source)
        assert facts.count == len(rows)
        if expected is None:
            assert facts.refused is None
        else:
            assert facts.refused is not None
            assert facts.refused.line == rows[expected[0]].origin.line
            assert expected[1] in facts.refused.message
        assert list(facts.annotators) == list(dict.fromkeys(row.annotator for row in rows))
    spool.close()


@given(st.lists(st.sampled_from(["a", "é", "\r", "\n", "\r\n", '"', "\t", "\u2028", "\x0b", "\ufeff"]), max_size=40))
def test_a_file_read_a_line_at_a_time_gives_the_lines_of_its_whole_text(pieces):
    text = "".join(pieces)
    file = InputFile(name="t.tsv", data=text.encode())

    assert list(file.lines()) == list(_lines(text.removeprefix("\ufeff")))
