"""The catalogue of seed archetypes: how a lifted gold query becomes a procedure that changes state.

Each archetype is one row of `ARCHETYPES`: when it applies to a lifted query, and how it builds the
procedure, the setup that creates what the procedure owns, and the A1-style requirement lines.
- result_table: the query's rows replace the contents of a result table the procedure owns;
- summary_row: a one-value aggregate is logged as a row holding the arguments and the value;
- status_update: rows of the queried table that satisfy the predicate get a status and a counter;
- raise_missing: a key parameter that matches no row raises a defined error; otherwise as result_table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS
from plbench.procedures.describe import query as describe_query
from plbench.procedures.dialect_text import ERROR_CODES, PROCEDURE_TEXT, RESULT_TYPES
from plbench.procedures.lift import Lifted, LiftError
from plbench.procedures.model import CountInto, IfElse, Procedure, Raise, Sql

STATUS_COLUMN, COUNT_COLUMN, SELECTED = "review_status", "review_count", "selected"


@dataclass(frozen=True)
class OutputColumn:
    name: str
    pg_type: str  # the PostgreSQL type name the described query reports


@dataclass(frozen=True)
class Seed:
    seed_id: str
    archetype: str
    lifted: Lifted
    procedure: Procedure
    setup: dict[str, list[str]]  # dialect -> statements creating what the procedure owns
    writes: tuple[str, ...]  # tables the procedure writes (PostgreSQL names)
    requirement_lines: tuple[str, ...]  # the numbered behaviour lines, dialect-neutral

    @property
    def dialects(self) -> tuple[str, ...]:
        return self.procedure.dialects()


def _parse(text: str, dialect: str) -> exp.Expression:
    return sqlglot.parse_one(text, read=PROCEDURE_TEXT[dialect].sqlglot)


def main_table(lifted: Lifted) -> exp.Table:
    tree = lifted.trees["postgres"]
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    return select.args["from_"].this


def _free_name(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name.lower() in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def _result_columns(output: list[OutputColumn]) -> list[tuple[str, dict[str, str]]]:
    names: set[str] = set()
    out = []
    for i, col in enumerate(output, start=1):
        types = RESULT_TYPES.get(col.pg_type)
        if types is None:
            raise LiftError("unsupported_output_type", f"output column {i} has type {col.pg_type}")
        plain = "".join(ch if ch.isalnum() else "_" for ch in col.name.lower()).strip("_")
        base = plain if plain and plain[0].isalpha() and len(plain) <= 30 else f"value_{i}"
        out.append((_free_name(base, names), types))
        names.add(out[-1][0])
    return out


def _declared(column: str, dialect: str) -> exp.Identifier:
    """A column of a table the seed creates, spelt by the dialect's DDL rule in its setup and in its procedure
    alike (a column named `date` is `"DATE"` in Oracle, as the normalized schemas declare such names)."""
    return DIALECTS[dialect].new_identifier(column)


def _without_order(lifted: Lifted, dialect: str) -> exp.Expression:
    """The query as the INSERT's source: an ORDER BY without LIMIT orders nothing in a table."""
    tree = lifted.trees[dialect].copy()
    if tree.args.get("order") is not None and tree.args.get("limit") is None and not tree.args.get("fetch"):
        tree.set("order", None)
    return tree


def _replace_rows(lifted: Lifted, table: str, columns: list[str]) -> tuple[Sql, Sql]:
    delete, insert = {}, {}
    for d in lifted.trees:
        delete[d] = _parse(f"DELETE FROM {table}", d)
        insert[d] = exp.Insert(
            this=exp.Schema(this=exp.to_table(table), expressions=[_declared(c, d) for c in columns]),
            expression=_without_order(lifted, d),
        )
    return Sql("delete", delete), Sql("insert", insert)


def _create(table: str, columns: list[tuple[str, dict[str, str]]], dialects) -> dict[str, list[str]]:
    return {
        d: [
            PROCEDURE_TEXT[d].create_table.format(
                table=table,
                columns=", ".join(
                    f"{_declared(name, d).sql(dialect=PROCEDURE_TEXT[d].sqlglot)} {types[d]}" for name, types in columns
                ),
            )
        ]
        for d in dialects
    }


def _signature_line(lifted: Lifted) -> str:
    params = ", ".join(
        f"`{p.name}` (the type of `{p.table['postgres']}.{p.column['postgres']}`)" for p in lifted.params
    )
    return f"Parameters, in this order: {params}."


def _common_lines(lifted: Lifted, writes: str) -> list[str]:
    tables = ", ".join(f"`{t}`" for t in lifted.tables)
    return [
        _signature_line(lifted),
        f"It reads {tables}; it writes {writes}; no other table changes.",
    ]


def build_result_table(lifted: Lifted, output: list[OutputColumn], taken: set[str], seq: str) -> Seed:
    main = main_table(lifted).name
    table = _free_name(f"{main}_report", taken)
    columns = _result_columns(output)
    delete, insert = _replace_rows(lifted, table, [c for c, _ in columns])
    proc = Procedure(f"sp_report_{main}"[:60], lifted.params, (delete, insert))
    lines = _common_lines(lifted, f"only `{table}`") + [
        f"Table `{table}` ({', '.join(c for c, _ in columns)}) exists and is empty before the first call.",
        f"Each call first removes every row of `{table}`, then inserts one row per row of: "
        f"{describe_query(lifted.trees['postgres'])}.",
        "When no row qualifies, the table is left empty; NULL arguments compare as SQL does (they match nothing).",
        "Rows of the result table carry no order; duplicates are kept.",
    ]
    return Seed(
        f"{seq}/result_table",
        "result_table",
        lifted,
        proc,
        _create(table, columns, lifted.trees),
        (table,),
        tuple(lines),
    )


def _single_aggregate(lifted: Lifted) -> bool:
    tree = lifted.trees["postgres"]
    return (
        isinstance(tree, exp.Select)
        and len(tree.expressions) == 1
        and isinstance(tree.expressions[0].unalias(), exp.AggFunc)
        and not tree.args.get("group")
        and not tree.args.get("limit")
    )


def build_summary_row(lifted: Lifted, output: list[OutputColumn], taken: set[str], seq: str) -> Seed:
    if not _single_aggregate(lifted):
        raise LiftError("not_applicable", "summary_row needs a single aggregate without GROUP BY")
    main = main_table(lifted).name
    table = _free_name(f"{main}_summary", taken)
    value_types = _result_columns(output)[0][1]
    args = [(f"arg_{p.name.removeprefix('para_')}", p.type) for p in lifted.params]
    columns = [*args, ("result_value", value_types)]
    trees = {}
    for d in lifted.trees:
        values = exp.Tuple(
            expressions=[exp.column(p.name) for p in lifted.params] + [exp.Subquery(this=lifted.trees[d].copy())]
        )
        schema = exp.Schema(this=exp.to_table(table), expressions=[_declared(c, d) for c, _ in columns])
        trees[d] = exp.Insert(this=schema, expression=exp.Values(expressions=[values]))
    proc = Procedure(f"sp_summarize_{main}"[:60], lifted.params, (Sql("insert", trees),))
    lines = _common_lines(lifted, f"only `{table}`") + [
        f"Table `{table}` ({', '.join(c for c, _ in columns)}) exists and is empty before the first call.",
        f"Each call appends exactly one row: the arguments in {', '.join(c for c, _ in args)} and, in result_value, "
        f"{describe_query(lifted.trees['postgres'])}.",
        "When no row qualifies, result_value is what the aggregate gives on no rows (0 for a count, else NULL).",
        "Earlier rows are never changed or removed.",
    ]
    setup = {d: _create(table, [(c, t) for c, t in columns], [d])[d] for d in lifted.trees}
    return Seed(f"{seq}/summary_row", "summary_row", lifted, proc, setup, (table,), tuple(lines))


def build_status_update(lifted: Lifted, output: list[OutputColumn], taken: set[str], seq: str) -> Seed:
    tree = lifted.trees["postgres"]
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or not tree.args.get("where"):
        raise LiftError("not_applicable", "status_update needs one table and a WHERE clause")
    if tree.args.get("group") or any(isinstance(e.unalias(), exp.AggFunc) for e in tree.expressions):
        raise LiftError("not_applicable", "status_update needs a row-level query")
    main = main_table(lifted)
    trees, setup = {}, {}
    for d in lifted.trees:
        source = lifted.trees[d]
        table = source.args["from_"].this.copy()
        assignments = [
            exp.EQ(this=exp.column(STATUS_COLUMN), expression=exp.Literal.string(SELECTED)),
            exp.EQ(this=exp.column(COUNT_COLUMN), expression=_parse(f"{COUNT_COLUMN} + 1", d)),
        ]
        trees[d] = exp.Update(this=table, expressions=assignments, where=source.args["where"].copy())
        text = PROCEDURE_TEXT[d]
        name = table.this.sql(dialect=text.sqlglot)  # as the database's DDL spells it (quoted where it must be)
        setup[d] = [
            text.add_column.format(table=name, column=STATUS_COLUMN, type=text.text_type, default="'unreviewed'"),
            text.add_column.format(table=name, column=COUNT_COLUMN, type=text.integer_type, default="0"),
        ]
    proc = Procedure(f"sp_flag_{main.name}"[:60], lifted.params, (Sql("update", trees),))
    where = describe_query(tree).split("keeping only the rows where ", 1)[-1]
    lines = _common_lines(lifted, f"only columns {STATUS_COLUMN} and {COUNT_COLUMN} of `{main.name}`") + [
        f"Table `{main.name}` has two extra columns: {STATUS_COLUMN} (text, 'unreviewed' on every row at the start) "
        f"and {COUNT_COLUMN} (integer, 0 at the start).",
        f"Each call sets {STATUS_COLUMN} to '{SELECTED}' and adds 1 to {COUNT_COLUMN} on every row where {where}.",
        "Rows that do not satisfy that condition (including those where it is NULL) are left unchanged; "
        "no row is inserted or deleted.",
    ]
    return Seed(f"{seq}/status_update", "status_update", lifted, proc, setup, (main.name,), tuple(lines))


def build_raise_missing(lifted: Lifted, output: list[OutputColumn], taken: set[str], seq: str) -> Seed:
    keys = [p for p in lifted.params if _compared_by_equality(lifted, p.name)]
    if not keys:
        raise LiftError("not_applicable", "raise_missing needs a parameter compared by equality")
    key = keys[0]
    report = build_result_table(lifted, output, taken, seq)
    counts = {
        d: _parse(f"SELECT COUNT(*) FROM {key.table[d]} WHERE {key.column[d]} = {key.name}", d) for d in lifted.trees
    }
    message = f"no row of {key.table['postgres']} has {key.column['postgres']} equal to the argument"
    body = (
        CountInto("v_matches", counts),
        IfElse("v_matches = 0", (Raise("no_match", message),), report.procedure.body),
    )
    proc = Procedure(f"sp_checked_report_{main_table(lifted).name}"[:60], lifted.params, body, counters=("v_matches",))
    codes = ERROR_CODES["no_match"]
    table = report.writes[0]
    lines = list(report.requirement_lines[:3]) + [
        f"If no row of `{key.table['postgres']}` has `{key.column['postgres']}` equal to `{key.name}` "
        f"(NULL included), the call raises an error (PostgreSQL: SQLSTATE '{codes['postgres'].reported}'; "
        f"Oracle: RAISE_APPLICATION_ERROR({codes['oracle'].raised}, ...)) and changes nothing.",
        "Otherwise: " + report.requirement_lines[3][0].lower() + report.requirement_lines[3][1:],
        *report.requirement_lines[4:],
    ]
    return Seed(f"{seq}/raise_missing", "raise_missing", lifted, proc, report.setup, (table,), tuple(lines))


def _compared_by_equality(lifted: Lifted, param: str) -> bool:
    return any(
        isinstance(c, exp.EQ) and param in {col.name for col in c.find_all(exp.Column)}
        for c in lifted.trees["postgres"].find_all(exp.EQ)
    )


Builder = Callable[[Lifted, list[OutputColumn], set[str], str], Seed]

ARCHETYPES: tuple[tuple[str, Builder], ...] = (
    ("result_table", build_result_table),
    ("summary_row", build_summary_row),
    ("status_update", build_status_update),
    ("raise_missing", build_raise_missing),
)
