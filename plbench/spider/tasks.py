"""Spider-PLSQL tasks (PLSQLBench §Spider-PLSQL): a question, its schema, and the lines a block must print.

For each question the reference output is the gold query's result on the source SQLite
database, printed by `output_format`. The task's reference block is a cursor loop over the
transpiled gold query that prints each row by the same rule; on PostgreSQL it must print
exactly the reference output (in order when the gold query orders its rows, as a multiset
otherwise), or the task is rejected. The Oracle block is emitted from the same pieces and
checked without a server (it parses; its identifiers are valid) unless an Oracle DSN is set.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from plbench.dialects import DIALECTS
from plbench.engines.base import QueryResult
from plbench.spider.gold import has_outer_order, run_sqlite
from plbench.spider.output_format import DECIMALS, NULL_TEXT, format_row, line_expression, type_class


class TaskBuildError(Exception):
    def __init__(self, reason_code: str, detail: str):
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code, self.detail = reason_code, detail


@dataclass(frozen=True)
class ReferenceOutput:
    lines: tuple[str, ...]
    ordered: bool  # the gold query orders its rows: compare in order


def reference_output(sqlite_conn: sqlite3.Connection, sql: str) -> ReferenceOutput:
    """The gold result on the source database, printed by the output rule."""
    try:
        rows = run_sqlite(sqlite_conn, sql)
    except sqlite3.Error as exc:
        raise TaskBuildError("gold_fails_on_source", f"{type(exc).__name__}: {exc}") from exc
    return ReferenceOutput(tuple(format_row(r) for r in rows), has_outer_order(sql))


def outputs_match(reference: ReferenceOutput, printed: list[str]) -> bool:
    if reference.ordered:
        return list(reference.lines) == printed
    return sorted(reference.lines) == sorted(printed)


def reference_block(dialect: str, query: str, kinds: list[str], ddl: str = "") -> str:
    """A block looping over the query and printing each row by the output rule. Where the dialect
    cannot rename an inline view's columns, the query names its outputs itself (`alias_outputs`;
    `ddl`, the schema, spells out a `SELECT *` first)."""
    target = DIALECTS[dialect]
    if not target.renames_view_columns:
        read = target.sqlglot_name
        query, n = alias_outputs(expand_stars(query, ddl, read) if ddl else query, read)
        if n != len(kinds):
            raise TaskBuildError(
                "unsupported_gold_shape", f"{n} {target.display_name} output columns, {len(kinds)} expected"
            )
    columns = [target.output_column(i) for i in range(1, len(kinds) + 1)]
    line = line_expression(dialect, [f"r.{c}" for c in columns], kinds)
    return target.print_rows_block(query, columns, line)


def _outermost_select(tree: exp.Expression) -> exp.Select:
    node = tree
    while isinstance(node, (exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
        node = node.this
    if not isinstance(node, exp.Select):
        raise TaskBuildError("unsupported_gold_shape", f"the gold query is a {type(node).__name__}")
    return node


def alias_outputs(query: str, dialect: str) -> tuple[str, int]:
    """The query with its output columns renamed C1..Cn (ORDER BY references follow), and n.

    Oracle cannot rename an inline view's columns (no `AS q(c1, ...)`), so the names a
    cursor loop reads are given in the query itself.
    """
    tree = sqlglot.parse_one(query, read=dialect)
    select = _outermost_select(tree)
    renamed, projections = {}, []
    for i, projection in enumerate(select.expressions, start=1):
        alias = f"C{i}"
        if isinstance(projection, exp.Alias):
            renamed[projection.alias.upper()] = alias
            projection = projection.this
        projections.append(exp.alias_(projection, alias))
    select.set("expressions", projections)
    order = tree.args.get("order")
    if order is not None:
        for col in order.find_all(exp.Column):
            if not col.table and col.name.upper() in renamed:
                col.replace(exp.column(renamed[col.name.upper()]))
    return tree.sql(dialect=dialect), len(projections)


def ddl_schema(ddl: str, dialect: str) -> dict[str, dict[str, str]]:
    """{table: {column: type}} of the CREATE TABLE statements in `ddl` (what sqlglot's optimizer reads)."""
    schema = {}
    for statement in sqlglot.parse(ddl, read=dialect):
        if isinstance(statement, exp.Create) and isinstance(statement.this, exp.Schema):
            schema[statement.this.this.name] = {
                c.name: c.args["kind"].sql(dialect) for c in statement.this.expressions if isinstance(c, exp.ColumnDef)
            }
    return schema


def expand_stars(query: str, ddl: str, dialect: str) -> str:
    """`SELECT *` spelled out from the schema, so each output column can be named (see alias_outputs)."""
    tree = sqlglot.parse_one(query, read=dialect)
    if not any(
        isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
        for p in _outermost_select(tree).expressions
    ):
        return query
    qualified = qualify(
        tree,
        schema=ddl_schema(ddl, dialect),
        dialect=dialect,
        expand_stars=True,
        validate_qualify_columns=False,
        identify=False,
    )
    return qualified.sql(dialect=dialect)


def output_kinds(result: QueryResult) -> list[str]:
    return [type_class(t) for t in result.types]


def prompt(question: str, database: str, dialect: str, schema_ddl: str, ordered: bool) -> str:
    target = DIALECTS[dialect]
    order = (
        "Print the rows in the order the question asks for." if ordered else "The order of the rows does not matter."
    )
    return (
        f"Database `{database}` ({target.display_name}). Its tables:\n\n"
        f"{schema_ddl.strip()}\n\n"
        f"Question: {question.strip()}\n\n"
        f"Write {target.block_description} in {target.language} that answers the question by printing the "
        f"result rows, one row per line with {target.print_description}, the fields of a row separated by commas "
        f"in the order the question names them, with no header. Print {NULL_TEXT} for a null value, integers in "
        f"full, other numbers rounded to at most {DECIMALS} decimal places without trailing zeros, dates as "
        f"YYYY-MM-DD and timestamps as YYYY-MM-DD HH24:MI:SS. {order} Return the block only."
    )
