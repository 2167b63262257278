"""Gold equivalence: each gold query run on SQLite and, transpiled, on the target; classified."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from plbench.normalize.emit import NormalizedDatabase
from plbench.normalize.sqlite_source import connect_readonly
from plbench.spider.gold.comparison import compare
from plbench.spider.gold.reading import GoldQuery
from plbench.spider.gold.scope import TranspileError
from plbench.spider.gold.transpile import has_outer_order, oracle_names, sqlite_plan, transpile

SQLITE_TIMEOUT_S = 20.0

CLASSES = ("identical", "source_error", "transpile_error", "runtime_error", "result_mismatch")


@dataclass
class EquivalenceResult:
    query: GoldQuery
    cls: str  # one of CLASSES
    texts: dict[str, str] = field(default_factory=dict)  # dialect -> the transpiled gold (none where it failed)
    untranslated: dict[str, str] = field(default_factory=dict)  # dialect -> why no text could be made
    sqlstate: str = ""  # runtime_error: PostgreSQL's SQLSTATE
    detail: str = ""  # the error message, or the diff of a result mismatch
    source_rows: int | None = None
    target_rows: int | None = None

    @property
    def postgres_sql(self) -> str:
        return self.texts.get("postgres", "")

    @property
    def oracle_sql(self) -> str:
        return self.texts.get("oracle", "")

    @property
    def oracle_error(self) -> str:
        return self.untranslated.get("oracle", "")

    def as_row(self) -> dict:
        """A flat record for the failure table (and for the release's reports)."""
        q = self.query
        return {
            "split": q.split,
            "source_id": q.source_id,
            "db_id": q.db_id,
            "class": self.cls,
            "sql": q.sql,
            "postgres_sql": self.postgres_sql,
            "oracle_sql": self.oracle_sql,
            "oracle_error": self.oracle_error,
            "sqlstate": self.sqlstate,
            "detail": self.detail,
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
        }


def run_sqlite(conn: sqlite3.Connection, sql: str, timeout_s: float = SQLITE_TIMEOUT_S) -> list[tuple]:
    """Rows of `sql` on SQLite, interrupted after `timeout_s` (a few Spider queries are cross joins)."""
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.set_progress_handler(None, 0)


def _both_texts(
    query: GoldQuery,
    normalized: NormalizedDatabase,
    oracle: NormalizedDatabase,
    result: EquivalenceResult,
    plan: list[str] | None,
) -> bool:
    """Fill in the PostgreSQL and Oracle texts; False (class transpile_error) if PostgreSQL failed."""
    try:
        result.texts["oracle"] = transpile(query.sql, oracle, "oracle", plan)
    except TranspileError as exc:
        result.untranslated["oracle"] = exc.reason
    try:
        result.texts["postgres"] = transpile(query.sql, normalized, "postgres", plan)
    except TranspileError as exc:
        result.untranslated["postgres"] = exc.reason
        result.cls, result.detail = "transpile_error", exc.reason
        return False
    return True


def check_query(
    query: GoldQuery,
    source: sqlite3.Connection,
    normalized: NormalizedDatabase,
    oracle: NormalizedDatabase,
    session,
    target: str = "postgres",
) -> EquivalenceResult:
    """One gold query run on SQLite and, transpiled, in `session` (a `target` engine's); classified."""
    result = EquivalenceResult(query, "identical")
    try:
        expected = run_sqlite(source, query.sql)
    except sqlite3.Error as exc:
        result.cls, result.detail = "source_error", f"{type(exc).__name__}: {exc}"
        _both_texts(query, normalized, oracle, result, None)
        return result
    result.source_rows = len(expected)
    if not _both_texts(query, normalized, oracle, result, sqlite_plan(source, query.sql)):
        return result
    text = result.texts.get(target)
    if not text:
        result.cls, result.detail = "transpile_error", result.untranslated.get(target, "")
        return result
    got = session.query(text)
    if not got.ok:
        result.cls = "runtime_error"
        result.sqlstate = got.error.code if got.error else "57014"
        result.detail = got.error.message if got.error else "statement timeout"
        return result
    result.target_rows = len(got.rows)
    verdict = compare(expected, got.rows, has_outer_order(query.sql))
    if not verdict.equal:
        result.cls, result.detail = "result_mismatch", verdict.diff
    return result


def check_database(
    sqlite_path: Path,
    normalized: NormalizedDatabase,
    queries: list[GoldQuery],
    session,
    oracle: NormalizedDatabase | None = None,
    target: str = "postgres",
) -> list[EquivalenceResult]:
    """Every query of one database, compared between its SQLite file and its loaded PostgreSQL schema.

    `session` is a PostgreSQL session whose search_path reaches `normalized.schema_name`
    (`engine.session(reads=(normalized.schema_name,))`), or with `target="oracle"` an Oracle session
    holding the loaded tables; `oracle` defaults to `oracle_names(normalized)`.

    A query whose SQL text an earlier one of the list had is not run again: its result is that one's,
    for its own question (Spider repeats the gold of paraphrased questions: 9,535 queries, 5,208 texts).
    """
    oracle = oracle or oracle_names(normalized)
    source = connect_readonly(Path(sqlite_path))
    first: dict[str, EquivalenceResult] = {}  # SQL text -> the result of its first query
    try:
        results = []
        for q in queries:
            if q.sql not in first:
                first[q.sql] = check_query(q, source, normalized, oracle, session, target)
            results.append(_for_query(first[q.sql], q))
        return results
    finally:
        source.close()


def _for_query(result: EquivalenceResult, query: GoldQuery) -> EquivalenceResult:
    """The result of a query of the same SQL text, for `query` (its own dicts, so none is shared)."""
    if result.query is query:
        return result
    return replace(result, query=query, texts=dict(result.texts), untranslated=dict(result.untranslated))


def summarize(results: list[EquivalenceResult]) -> dict:
    """{"total", "identical", "mismatch": {class: n}} as the release manifest reports it."""
    counts = Counter(r.cls for r in results)
    return {
        "total": len(results),
        "identical": counts.get("identical", 0),
        "mismatch": {c: counts[c] for c in CLASSES[1:] if counts.get(c)},
    }
