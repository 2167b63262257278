"""SQLite gold text to target text: parse, apply every rule of `RULES` in order, render."""

from __future__ import annotations

import functools
import sqlite3

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS
from plbench.normalize.emit import NormalizedDatabase, normalize
from plbench.normalize.schema import SourceDatabase
from plbench.spider.gold.rules import RULES
from plbench.spider.gold.scope import Context, TranspileError


def sqlite_plan(conn: sqlite3.Connection, sql: str) -> list[str] | None:
    """SQLite's EXPLAIN QUERY PLAN lines for `sql` (None if it has none)."""
    try:
        return [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
    except sqlite3.Error:
        return None


@functools.lru_cache(maxsize=256)
def _parsed(sql: str) -> list[exp.Expression | None] | sqlglot.errors.SqlglotError:
    """sqlglot's statements of a SQLite query, or its error. A gold query is transpiled for both dialects and
    its order read as well, one after the other: parsed once, each use takes a copy (`parse`) or only reads."""
    try:
        return sqlglot.parse(sql, read="sqlite")
    except sqlglot.errors.SqlglotError as exc:
        return exc


def parse(sql: str) -> exp.Expression:
    """The query's one statement, a tree of its own (the rules rewrite it)."""
    trees = _parsed(sql)
    if isinstance(trees, sqlglot.errors.SqlglotError):
        raise TranspileError(f"sqlglot cannot parse the SQLite query: {str(trees)[:200]}") from trees
    if len(trees) != 1 or trees[0] is None:
        raise TranspileError(f"expected one statement, got {len(trees)}")
    return trees[0].copy()


def render(tree: exp.Expression, target: str) -> str:
    """The tree as target SQL, which must parse back in that dialect."""
    try:
        read = DIALECTS[target].sqlglot_name
        text = tree.sql(dialect=read, unsupported_level=sqlglot.ErrorLevel.RAISE)
        sqlglot.parse_one(text, read=read)
    except sqlglot.errors.SqlglotError as exc:
        raise TranspileError(f"no valid {target} text: {str(exc)[:200]}") from exc
    return text


def apply_rule(
    name: str, sql: str, db: NormalizedDatabase, target: str = "postgres", plan: list[str] | None = None
) -> str:
    """One rule alone on a SQLite query, rendered for `target` (to test and inspect rules one by one)."""
    rule = dict(RULES)[name]
    return render(rule(parse(sql), Context.of(db, target, plan)), target)


def transpile(sql: str, db: NormalizedDatabase, target: str = "postgres", plan: list[str] | None = None) -> str:
    """A SQLite gold query as `target` SQL against `db`'s target names; TranspileError if it can't.

    `plan` (`sqlite_plan`) tells how SQLite orders groups, which decides the order of tied rows.
    """
    if target not in DIALECTS:
        raise ValueError(f"unknown target {target!r}")
    tree, ctx = parse(sql), Context.of(db, target, plan)
    for _name, rule in RULES:
        tree = rule(tree, ctx)
    return render(tree, target)


def oracle_names(db: NormalizedDatabase) -> NormalizedDatabase:
    """The Oracle names of the same source tables (no rows): what Oracle transpiling maps to."""
    source = SourceDatabase(db.source, db.name, "sqlite", "", [t.source for t in db.tables])
    return normalize(source, "oracle")


def has_outer_order(sql: str) -> bool:
    """Whether the outermost statement sorts its result (then row order is part of the answer)."""
    trees = _parsed(sql)
    if isinstance(trees, sqlglot.errors.SqlglotError) or not trees or trees[0] is None:
        return False
    return trees[0].args.get("order") is not None  # the first statement, as sqlglot.parse_one reads it
