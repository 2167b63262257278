"""Release-table cells that stay in a file until the table is checked or written.

A database's mapping decisions run to hundreds of megabytes over the Spider mirror (one per column,
and Spider 2.0 has schemas of thousands of columns). Held in the stage values, they were pickled
into every store and unpickled by every stage downstream of the databases. Their partition writes
them to normalized/ once; the report and the databases.parquet rows carry a `FileCell` (the path
and the sha256 of what was written), and `read_cells` puts the text in when the release's quality
suites read the tables and when they are written.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


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


def read_cells(rows: list[dict]) -> list[dict]:
    """The rows with every FileCell read; the same list when none holds one."""
    columns = {k for row in rows for k, v in row.items() if isinstance(v, FileCell)}
    if not columns:
        return rows
    return [row | {k: row[k].text() for k in columns if isinstance(row[k], FileCell)} for row in rows]


def cell_groups(rows: list[dict], max_bytes: int) -> Iterator[list[dict]]:
    """`rows` in consecutive runs whose FileCells hold at most `max_bytes` of file between them (a run of one
    row may hold more), so a writer reads one run's cells at a time; a table without cells is one run."""
    group: list[dict] = []
    held = 0
    for row in rows:
        size = sum(os.path.getsize(v.path) for v in row.values() if isinstance(v, FileCell))
        if group and held + size > max_bytes:
            yield group
            group, held = [], 0
        group.append(row)
        held += size
    yield group
