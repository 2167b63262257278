"""Load a normalized database into PostgreSQL with COPY, then verify it against the source.

Each database lives in its own schema (`NormalizedDatabase.schema_name`), replaced
as a whole in one transaction, so rebuilding one database never leaves a half
loaded schema behind. Verification reads every table back and compares its row
count and a content checksum with the rows that were meant to be loaded.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import time
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from plbench.dialects import DIALECTS
from plbench.normalize.emit import NormalizedDatabase, NormalizedTable


@dataclass
class LoadReport:
    database: str  # "<source>/<name>"
    dialect: str
    loaded: bool
    error: str = ""  # why loading failed: the statement's SQLSTATE and message
    tables: dict[str, dict] = field(default_factory=dict)  # target table -> rows / checksum / match
    seconds: float = 0.0

    @property
    def verified(self) -> bool:
        return self.loaded and not self.mismatches()

    def mismatches(self) -> list[str]:
        """Tables whose rows or checksum differ (a checksum of None was not compared)."""
        return [name for name, t in self.tables.items() if not t["rows_match"] or t["checksum_match"] is False]


def canonical(value) -> str:
    """One value as text that is equal on both sides of a load (source rows and rows read back)."""
    kind = type(value)  # the three types of most values first, by identity (millions of calls a build)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if kind is float:
        return repr(value)
    if value is None:
        return "\\N"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return str(value.normalize()) if value.is_finite() else str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def table_checksum(rows: list[tuple], json_columns: set[int]) -> str:
    """sha256 over the sorted canonical rows; JSON text is parsed first (jsonb normalizes it)."""
    if json_columns:
        rows = [
            tuple(json.loads(v) if i in json_columns and isinstance(v, str) else v for i, v in enumerate(row))
            for row in rows
        ]
    lines = sorted("\x1f".join(map(canonical, row)) for row in rows)
    text = "".join(line + "\x1e" for line in lines)  # each line ends with a record separator
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_columns(table: NormalizedTable) -> set[int]:
    return {i for i, c in enumerate(table.columns) if c.source.family == "json"}


def load_postgres(conn: psycopg.Connection, db: NormalizedDatabase) -> LoadReport:
    """Replace the database's schema with a fresh load in one transaction, and verify it.

    `conn` is an autocommit connection (`PostgresEngine.connection()`).
    """
    start = time.perf_counter()
    schema = sql.Identifier(db.schema_name)
    try:
        with conn.transaction():
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s}").format(s=schema))
            conn.execute(sql.SQL("SET LOCAL search_path = {s}, pg_catalog").format(s=schema))
            for statement in db.create_statements:
                conn.execute(statement)
            with conn.cursor() as cur:
                for table in db.tables:
                    if table.rows:
                        copy_sql = f"COPY {table.target.sql} ({', '.join(table.column_names)}) FROM STDIN"
                        with cur.copy(copy_sql) as copy:
                            copy.write(DIALECTS["postgres"].copy_text(table))
            for statement in db.constraint_statements:
                conn.execute(statement)
    except psycopg.Error as exc:
        return LoadReport(
            db.key, "postgres", False, f"{exc.sqlstate}: {str(exc).strip()[:500]}", seconds=time.perf_counter() - start
        )
    report = LoadReport(db.key, "postgres", True, tables=verify_postgres(conn, db))
    report.seconds = time.perf_counter() - start
    return report


def verify_postgres(conn: psycopg.Connection, db: NormalizedDatabase) -> dict[str, dict]:
    """Per table: rows and checksum loaded vs expected."""
    out = {}
    for table in db.tables:
        query = sql.SQL("SELECT {cols} FROM {s}.{t}").format(
            cols=sql.SQL(", ").join(sql.SQL(c) for c in table.column_names),
            s=sql.Identifier(db.schema_name),
            t=sql.SQL(table.target.sql),
        )
        loaded = conn.execute(query).fetchall()
        expected_sum = table_checksum(table.rows, _json_columns(table))
        loaded_sum = table_checksum(loaded, set())
        out[table.target.name] = {
            "rows": len(loaded),
            "expected_rows": len(table.rows),
            "rows_match": len(loaded) == len(table.rows),
            "checksum": loaded_sum,
            "checksum_match": loaded_sum == expected_sum,
        }
    return out


def oracle_load_statements(db: NormalizedDatabase) -> list[str]:
    """The statements that make an Oracle database: its tables, their rows (INSERT ALL batches), then the
    constraints (ENABLE NOVALIDATE foreign keys: Spider data has dangling references)."""
    inserts = [s for table in db.tables for s in DIALECTS["oracle"].insert_statements(table)]
    return db.create_statements + inserts + db.constraint_statements


def load_oracle(session, db: NormalizedDatabase) -> LoadReport:
    """Create, fill (INSERT ALL batches) and constrain the database's tables in an Oracle session (which
    drops them when it ends), then compare row counts. Checksums are compared on PostgreSQL only: Oracle
    hands values back in its own types (DATE with a time, '' as NULL), so the rows would need their own
    canonical form."""
    start = time.perf_counter()
    for statement in oracle_load_statements(db):
        result = session.execute(statement)
        if not result.ok:
            error = f"{result.error.code}: {result.error.message}" if result.error else "statement timeout"
            return LoadReport(
                db.key, "oracle", False, f"{error[:400]} in {statement[:80]}", seconds=time.perf_counter() - start
            )
    tables = {}
    for table in db.tables:
        counted = session.query(f"SELECT COUNT(*) FROM {table.target.sql}")
        rows = counted.rows[0][0] if counted.ok else -1
        tables[table.target.name] = {
            "rows": rows,
            "expected_rows": len(table.rows),
            "rows_match": rows == len(table.rows),
            "checksum": None,
            "checksum_match": None,
        }
    return LoadReport(db.key, "oracle", True, tables=tables, seconds=time.perf_counter() - start)
