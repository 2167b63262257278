"""Release-table cells that stay in a file until the table is checked or written.

A database's mapping decisions run to hundreds of megabytes over the Spider mirror (one per column,
and Spider 2.0 has schemas of thousands of columns). Held in the stage values, they were pickled
into every store and unpickled by every stage downstream of the databases. Their partition writes
them to normalized/ once; the report and the databases.parquet rows carry a `FileCell` (the path
and the sha256 of what was written), and `cells_table` puts the text in when the release's quality
suites read the tables and when they are written.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa


@dataclass(frozen=True)
class FileCell:
    path: str  # the file, absolute
    sha256: str  # of its text as the stage that wrote it wrote it

    def render(self, text: str) -> str:
        """The cell's value from the file's text (subclasses reformat it)."""
        return text

    def text(self) -> str:
        """The cell's value: the file's text, rendered."""
        return self.render(self.read_text())

    def read_text(self) -> str:
        """The file's text, refused if it is not what its stage wrote."""
        try:
            data = Path(self.path).read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.path} is gone since the stage that wrote it ran: rerun that stage"
            ) from None
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise ValueError(f"{self.path} changed since the stage that wrote it ran: rerun that stage")
        return data.decode("utf-8")


def cells_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """The rows as an Arrow table with every FileCell read. A cell column streams into Arrow one file at a
    time, so its text is never also held as Python strings: on the databases table that is 415 MB."""
    if not len(schema):  # still as many rows: a suite counts them
        return pa.table({"row": pa.nulls(len(rows))}).select([])
    cells = {k for row in rows for k, v in row.items() if isinstance(v, FileCell)}
    plain = pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name not in cells]))
    columns = [_read_column(rows, f) if f.name in cells else plain.column(f.name) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _read_column(rows: list[dict], column: pa.Field) -> pa.ChunkedArray:
    # A chunk a cell: one array built from all of them took three times the text's size at its peak.
    values = (row.get(column.name) for row in rows)
    chunks = [pa.array([v.text() if isinstance(v, FileCell) else v], type=column.type) for v in values]
    return pa.chunked_array(chunks, type=column.type)


def text_bytes(row: dict) -> int:
    """About the text a row holds: its strings' lengths and the sizes of its FileCells' files."""
    return sum(len(v) for v in row.values() if isinstance(v, str)) + sum(
        os.path.getsize(v.path) for v in row.values() if isinstance(v, FileCell)
    )


def row_groups(rows: list[dict], max_bytes: int, size: Callable[[dict], int] = text_bytes) -> Iterator[list[dict]]:
    """`rows` in consecutive runs whose sizes (by default the text they hold, file cells read) add up to at
    most `max_bytes` (a run of one row may hold more), so a reader holds one run's text at a time; rows of
    no size are one run."""
    group: list[dict] = []
    held = 0
    for row in rows:
        row_size = size(row)
        if group and held + row_size > max_bytes:
            yield group
            group, held = [], 0
        group.append(row)
        held += row_size
    yield group
