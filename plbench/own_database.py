"""`plbench normalize --sqlite FILE`: a researcher's own SQLite database through the Spider path.

The database is read and normalized into both dialects by plbench.normalize, loaded into PostgreSQL
and verified, and the user's queries are checked for equivalence by plbench.spider.gold, as the
Spider 1.0 databases and their gold queries are. Every input is checked before anything is
written, and the database file is only ever opened read-only, so bad input loses nothing.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

from plbench.config import DIALECT_NAMES
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_database_ddl
from plbench.normalize.emit import normalize, write_files
from plbench.normalize.load import load_postgres
from plbench.normalize.sqlite_source import connect_readonly, read_sqlite
from plbench.spider.gold import GoldQuery, check_database
from plbench.spider.gold import summarize as summarize_equivalence
from plbench.spider.gold.equivalence import run_sqlite

SOURCE = "own"  # the `source` of the normalized folder: normalized/own/<database>/<dialect>/
SQLITE_HEADER = b"SQLite format 3\x00"


class OwnDatabaseError(ValueError):
    """Input that cannot be normalized: names the file (and the query) and the reason."""


def check_sqlite_file(path: Path) -> None:
    """A readable SQLite file that no other process holds locked."""
    if not path.is_file():
        raise OwnDatabaseError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise OwnDatabaseError(f"{path}: empty file, not a SQLite database")
    with path.open("rb") as f:
        header = f.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        raise OwnDatabaseError(f"{path}: not a SQLite database (it does not start with {SQLITE_HEADER!r})")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0)  # honours locks, unlike immutable=1
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise OwnDatabaseError(
            f"{path}: cannot be read ({exc}); if another process is writing it, retry later"
        ) from exc
    finally:
        conn.close()


def read_queries(path: Path, database: str) -> list[GoldQuery]:
    """A JSON list of objects with a `query` field (the shape of Spider's dev.json)."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OwnDatabaseError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(items, list):
        raise OwnDatabaseError(f"{path}: expected a JSON list of objects with a `query` field")
    queries = []
    for number, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise OwnDatabaseError(f"{path}: item {number} has no `query` string")
        queries.append(GoldQuery(str(number), database, str(item.get("question", "")), item["query"], "user"))
    return queries


def check_queries_on_sqlite(sqlite_path: Path, queries: list[GoldQuery]) -> None:
    """Every query must run on the SQLite file itself: one that fails there has no reference result."""
    conn = connect_readonly(sqlite_path)
    failures = []
    try:
        for q in queries:
            try:
                run_sqlite(conn, q.sql)
            except sqlite3.Error as exc:
                failures.append(f"query {q.source_id} ({' '.join(q.sql.split())[:80]}): {type(exc).__name__}: {exc}")
    finally:
        conn.close()
    if failures:
        raise OwnDatabaseError(f"{sqlite_path}: {len(failures)} query(ies) fail on SQLite: " + "; ".join(failures))


def checked_input(sqlite_path: Path, queries_path: Path | None) -> list[GoldQuery]:
    """The user's queries, once the file, the queries file and every query on SQLite have been checked."""
    check_sqlite_file(sqlite_path)
    queries = read_queries(queries_path, sqlite_path.stem) if queries_path else []
    check_queries_on_sqlite(sqlite_path, queries)
    return queries


def normalize_own_database(sqlite_path: Path, queries: list[GoldQuery], out_dir: Path, engine) -> dict:
    """Normalize into both dialects, write the files, load and verify on PostgreSQL (`engine`), check the
    queries; writes report.json beside the dialect folders and returns it."""
    name = sqlite_path.stem
    source = read_sqlite(sqlite_path, SOURCE, name, str(sqlite_path))
    databases = {d: normalize(source, d) for d in DIALECT_NAMES}
    files = {}
    for db in databases.values():
        files.update(write_files(db, out_dir))
    postgres = databases["postgres"]
    with engine.connection() as conn:
        load = load_postgres(conn, postgres)
    results = []
    if load.loaded and queries:
        with engine.session(reads=(postgres.schema_name,)) as session:
            results = check_database(sqlite_path, postgres, queries, session)
    report = {
        "database": str(sqlite_path),
        "schema": postgres.schema_name,
        "tables": len(postgres.tables),
        "rows": source.row_count(),
        "files": files,
        "load": dataclasses.asdict(load) | {"verified": load.verified, "mismatches": load.mismatches()},
        "oracle_static_problems": check_database_ddl(DIALECTS["oracle"], databases["oracle"]),
        "gold_equivalence": summarize_equivalence(results),
        "queries": [r.as_row() for r in results],
    }
    path = out_dir / SOURCE / name / "report.json"
    path.write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
    report["report"] = str(path)
    return report


def summary_lines(report: dict) -> list[str]:
    load, gold = report["load"], report["gold_equivalence"]
    loaded = "loaded and verified" if load["verified"] else f"not verified: {load['error'] or load['mismatches']}"
    mismatches = f", mismatches {gold['mismatch']}" if gold["mismatch"] else ""
    return [
        f"{Path(report['database']).name}: {report['tables']} tables, {report['rows']} rows into schema "
        f"{report['schema']}: {loaded}; queries identical on PostgreSQL {gold['identical']} of {gold['total']}"
        + mismatches,
        f"DDL/DML and report: {report['report']}",
    ]
