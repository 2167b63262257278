"""Trivial-candidate verdicts kept from one build to the next, so the release gate grades only what changed.

The gate (plbench.grading.trivial) runs every released task's trivial candidates: a minute of the mirror
build, spent again whenever the release tables are prepared again, though most tasks did not change. A
verdict depends on the candidate's code, what the task gives its grader (`content`), the database it runs
on, the grading code and the server, so it is kept under all of them:
- `keys(task, codes)`: the task's whole row but its STAMP_COLUMNS (more than any grader reads, so a change
  anywhere in the row grades it again), the database's identity (its DDL, data and loaded tables'
  checksums, from databases.parquet) and the candidate's code;
- the scope: the source closure of the grading path (plbench.evaluate and the engine's module), the
  engine's dialect and server version, and the statement timeout. A verdict under another scope is never
  read, and saving drops them.
Only settled verdicts are kept: a candidate that passed, or failed by what it did. One that failed because a
case ran out of time or did not run (plbench.evaluate.passes says None) is graded again by the next build.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from plbench.code_closure import source_digest
from plbench.content_digest import content_digest
from plbench.engines.base import Engine

FILE_NAME = "trivial_verdicts.sqlite3"
# databases.parquet columns that identify what a loaded database holds
DATABASE_IDENTITY = ("schema_name", "ddl_sha256", "data_sha256", "table_checksums")
STAMP_COLUMNS = ("builder_version", "build_id")  # who built the row: no grader reads them


class VerdictCache:
    """The settled verdicts of earlier gates in one scope, read once; new ones are written by `save`."""

    def __init__(self, path: Path, engine: Engine):
        self.path = path
        code = source_digest("plbench.evaluate", type(engine).__module__)
        self.scope = content_digest([code, engine.dialect, engine.version(), engine.statement_timeout_s])
        self.databases: dict[tuple[str, str], str] = {}  # (database, dialect) -> its identity
        self.kept = self._read()
        self.new: dict[str, bool] = {}
        self.counts = {"kept": 0, "graded": 0, "unsettled": 0}  # verdicts read, graded now, not kept of those
        self._lock = threading.Lock()  # the gate grades several batches at a time

    def identify_databases(self, rows: list[dict]) -> None:
        """Learn the loaded databases' identities from their databases.parquet rows."""
        self.databases = {
            (row["database"], row["dialect"]): content_digest([row.get(c) for c in DATABASE_IDENTITY])
            for row in rows
            if row.get("loaded")
        }

    def keys(self, task: dict, codes: list[str]) -> list[str]:
        row = content_digest({k: v for k, v in task.items() if k not in STAMP_COLUMNS})
        database = self.databases.get((task.get("database"), task["dialect"]))
        return [content_digest([self.scope, row, database, code]) for code in codes]

    def get(self, keys: list[str]) -> dict[str, bool]:
        """The kept verdicts of those keys that have one."""
        found = {key: self.kept[key] for key in keys if key in self.kept}
        with self._lock:
            self.counts["kept"] += len(found)
        return found

    def put(self, verdicts: dict[str, bool | None]) -> None:
        """Keep this gate's verdicts but the unsettled ones (None)."""
        with self._lock:
            self.counts["graded"] += len(verdicts)
            self.counts["unsettled"] += sum(passed is None for passed in verdicts.values())
            self.new |= {key: passed for key, passed in verdicts.items() if passed is not None}

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path)
        db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (scope TEXT, key TEXT, passed INTEGER, PRIMARY KEY (scope, key))"
        )
        return db

    def _read(self) -> dict[str, bool]:
        if not self.path.exists():
            return {}
        try:
            with closing(self._connect()) as db:
                rows = db.execute("SELECT key, passed FROM verdicts WHERE scope = ?", (self.scope,)).fetchall()
        except sqlite3.DatabaseError:  # not a file of verdicts (torn, or another tool's): grade everything again
            self.path.unlink()
            return {}
        return {key: bool(passed) for key, passed in rows}

    def save(self) -> None:
        """Write this gate's new verdicts; verdicts of other scopes (older code, another server) go."""
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM verdicts WHERE scope != ?", (self.scope,))
            db.executemany(
                "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?)",
                [(self.scope, key, int(passed)) for key, passed in self.new.items()],
            )
