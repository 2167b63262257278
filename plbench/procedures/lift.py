"""Lift a validated Spider gold query into a parametrized query: its literals become typed `para_…` parameters.

Only a literal compared with a plain column of a known table (`col > 5000`, `T2.name = 'Ann'`) is lifted:
then the column decides the parameter's type in each dialect, and the literal is the gold's own argument.
Both dialects' transpiled texts are lifted the same way; a comparison found in the PostgreSQL text but not
in the Oracle text leaves the seed without an Oracle text (and says why).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS
from plbench.normalize.emit import NormalizedColumn, NormalizedDatabase, NormalizedTable
from plbench.procedures.stored_trees import TreesStoredApart

MAX_PARAMS = 3
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
NUMBER_FAMILIES = frozenset({"integer", "decimal", "float"})
_TEXT_VALUE = {
    "text": str,
    "date": lambda s: dt.date.fromisoformat(s),
    "timestamp": lambda s: dt.datetime.fromisoformat(s),
}


class LiftError(ValueError):
    """The query cannot become a seed; `reason_code` names why."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class Param:
    name: str  # para_<column>
    family: str  # the column's neutral type family
    nullable: bool
    table: dict[str, str]  # dialect -> table name as the dialect's SQL writes it
    column: dict[str, str]  # dialect -> column name
    type: dict[str, str]  # dialect -> the column's type
    gold_value: object  # the literal the gold query used, as a Python value


@dataclass(frozen=True)
class Lifted(TreesStoredApart):
    source_id: str  # "<split>/<gold source id>"
    database: str
    question: str
    gold_sql: str
    trees: dict[str, exp.Expression]  # dialect -> the query with its literals replaced by parameters
    params: tuple[Param, ...]
    oracle_problem: str = ""  # why there is no Oracle tree ("" when there is)
    tables: tuple[str, ...] = field(default=())  # PostgreSQL names of the tables the query reads


def _value(literal: exp.Literal, family: str):
    """The literal as a Python value of the column's family, or None when the two do not agree."""
    text = literal.this
    if literal.is_string:
        convert = _TEXT_VALUE.get(family)
        if convert is None:
            return None
        try:
            return convert(text)
        except ValueError:
            return None
    if family not in NUMBER_FAMILIES:
        return None
    number = float(text)
    return int(text) if family == "integer" and number.is_integer() and "." not in text else number


def _tables_in_scope(column: exp.Column) -> dict[str, str]:
    """alias-or-name (lower case) -> table name, for the SELECT that encloses `column`."""
    select = column.find_ancestor(exp.Select)
    scope = {}
    for table in select.find_all(exp.Table) if select else ():
        if table.find_ancestor(exp.Select) is not select:
            continue
        scope[(table.alias or table.name).lower()] = table.name
    return scope


def resolve_column(column: exp.Column, db: NormalizedDatabase) -> tuple[NormalizedTable, NormalizedColumn] | None:
    by_name = {t.target.name.lower(): t for t in db.tables}
    scope = _tables_in_scope(column)
    names = [scope.get(column.table.lower())] if column.table else list(scope.values())
    hits = []
    for name in names:
        table = by_name.get((name or "").lower())
        for col in table.columns if table else ():
            if col.target.name.lower() == column.name.lower():
                hits.append((table, col))
    return hits[0] if len(hits) == 1 else None


def _liftable(
    tree: exp.Expression, db: NormalizedDatabase
) -> list[tuple[exp.Literal, NormalizedTable, NormalizedColumn]]:
    """(literal, table, column) of every comparison `column <op> literal` inside a WHERE clause."""
    out = []
    for comparison in tree.find_all(*COMPARISONS):
        if comparison.find_ancestor(exp.Where) is None:
            continue
        left, right = comparison.left, comparison.right
        column, literal = (left, right) if isinstance(left, exp.Column) else (right, left)
        if not (isinstance(column, exp.Column) and isinstance(literal, exp.Literal)):
            continue
        resolved = resolve_column(column, db)
        if resolved and _value(literal, resolved[1].source.family) is not None:
            out.append((literal, *resolved))
    return out


def _param_name(column: NormalizedColumn, taken: set[str]) -> str:
    base = "para_" + "".join(ch if ch.isalnum() else "_" for ch in column.source.name.lower())
    name, n = base[:60], 2
    while name in taken:
        name, n = f"{base[:56]}_{n}", n + 1
    taken.add(name)
    return name


def _placeholder(name: str) -> exp.Column:
    return exp.column(name)


def _oracle_side(
    oracle_sql: str, oracle_db: NormalizedDatabase | None, wanted: list[tuple[str, object, str]]
) -> tuple[exp.Expression | None, dict[str, tuple[str, str]], str]:
    """The Oracle tree with the same comparisons lifted, names per parameter, or why not."""
    if not oracle_sql or oracle_db is None:
        return None, {}, "no Oracle text of the gold query"
    tree = sqlglot.parse_one(oracle_sql, read=DIALECTS["oracle"].sqlglot_name)
    found = {}
    for literal, table, column in _liftable(tree, oracle_db):
        key = (column.source.name.lower(), _value(literal, column.source.family))
        found.setdefault(key, []).append((literal, table, column))
    names = {}
    for source_column, value, param in wanted:
        hits = found.get((source_column, value))
        if not hits:
            return None, {}, f"the Oracle text has no comparison of {source_column} with {value!r}"
        literal, table, column = hits.pop(0)
        literal.replace(_placeholder(param))
        names[param] = (table.target.sql, column.target.sql)
    return tree, names, ""


def lift(
    source_id: str,
    question: str,
    gold_sql: str,
    postgres_sql: str,
    oracle_sql: str,
    pg_db: NormalizedDatabase,
    oracle_db: NormalizedDatabase | None,
) -> Lifted:
    """The gold query with its liftable literals as parameters; LiftError when it has none (or too many)."""
    tree = sqlglot.parse_one(postgres_sql, read=DIALECTS["postgres"].sqlglot_name)
    found = _liftable(tree, pg_db)
    if not found:
        raise LiftError("no_liftable_literal", "no literal compared with a column in a WHERE clause")
    if len(found) > MAX_PARAMS:
        raise LiftError("too_many_literals", f"{len(found)} literals (at most {MAX_PARAMS} become parameters)")
    taken: set[str] = set()
    params, wanted = [], []
    for literal, table, column in found:
        name = _param_name(column, taken)
        value = _value(literal, column.source.family)
        literal.replace(_placeholder(name))
        wanted.append((column.source.name.lower(), value, name))
        params.append((name, table, column, value))
    oracle_tree, oracle_names, problem = _oracle_side(oracle_sql, oracle_db, wanted)
    out = []
    for name, table, column, value in params:
        o_table, o_column = oracle_names.get(name, ("", ""))
        o_type = _oracle_type(oracle_db, table, column) if oracle_tree is not None else ""
        out.append(
            Param(
                name,
                column.source.family,
                column.source.nullable,
                {"postgres": table.target.sql, "oracle": o_table},
                {"postgres": column.target.sql, "oracle": o_column},
                {"postgres": column.type_sql, "oracle": o_type},
                value,
            )
        )
    trees = {"postgres": tree} | ({"oracle": oracle_tree} if oracle_tree is not None else {})
    read = tuple(sorted({t.name for t in tree.find_all(exp.Table)}))
    return Lifted(source_id, pg_db.name, question, gold_sql, trees, tuple(out), problem, read)


def _oracle_type(oracle_db: NormalizedDatabase, table: NormalizedTable, column: NormalizedColumn) -> str:
    return oracle_db.table(table.source.name).columns[table.columns.index(column)].type_sql
