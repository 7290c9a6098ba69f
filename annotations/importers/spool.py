"""A long file's post-edits kept on disk between the import's checks and its inserts.

The table importer appends each row's PostEditRow as it reads it; the rows are written to a
temporary file a chunk at a time and read back, in order, a chunk at a time, as often as the
checks and the writer ask: memory holds one chunk, whatever the file's length. Each row is
stored as the writer stores it, its line endings already normalized to LF (the counts kept in
its line_endings), so reading it again gives the same row.
"""

from __future__ import annotations

import marshal
import tempfile
from collections.abc import Iterator

from annotations.importers.base import Origin, PostEditRow, normalize_line_endings

CHUNK = 1000


class PostEditSpool:
    """PostEditRows in file order: append(), len(), iteration (any number of times)."""

    def __init__(self, chunk: int = CHUNK) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the spool; close())
        self._chunk = chunk
        self._pending: list[tuple] = []
        self._chunks: list[tuple[int, int]] = []  # (offset, size) of each chunk written
        self._end = 0
        self._count = 0

    def append(self, row: PostEditRow) -> None:
        text, crlf, cr = normalize_line_endings(row.text)
        endings = {"crlf": crlf, "cr": cr} if crlf or cr else row.line_endings
        self._pending.append(
            (row.external_id, row.annotator, text, row.effort, row.extra, row.condition, row.origin.file,
             row.origin.line, endings)
        )  # fmt: skip
        self._count += 1
        if len(self._pending) >= self._chunk:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        data = marshal.dumps(self._pending)
        self._file.seek(self._end)
        self._file.write(data)
        self._chunks.append((self._end, len(data)))
        self._end += len(data)
        self._pending = []

    def __len__(self) -> int:
        return self._count

    def chunks(self) -> Iterator[list[PostEditRow]]:
        """The rows, a chunk at a time (each a new list: nothing of it is kept here)."""
        self._flush()
        for offset, size in self._chunks:
            self._file.seek(offset)
            packed = marshal.loads(self._file.read(size))
            yield [
                PostEditRow(
                    external_id=external_id,
                    annotator=annotator,
                    text=text,
                    origin=Origin(file, line),
                    effort=effort,
                    extra=extra,
                    condition=condition,
                    line_endings=endings,
                )
                for external_id, annotator, text, effort, extra, condition, file, line, endings in packed
            ]

    def __iter__(self) -> Iterator[PostEditRow]:
        for chunk in self.chunks():
            yield from chunk

    def close(self) -> None:
        self._file.close()
