"""The rule templates of procedural ILE, as data, and how one changes a seed's procedure model.

A template adds one business rule to a validated seed: it edits the procedure model (so every
dialect's SQL tree is edited alike and `dialect_text` spells the rest), may add setup and a
written table, and fills in the requirement clause from the seed's own data. Each row of
`TEMPLATES` is (rule_id, clause, apply); `apply(context)` returns the `Change`, or None when the
rule does not apply to this seed (no nullable column, no numeric value written, ...).

The rules work on the seed's *action*: its first INSERT or UPDATE (the report insert, the summary
row, the flag update). "Rows that qualify" are the rows that action reads from, counted by a
`SELECT COUNT(*)` built from its own tree.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from plbench.procedures.archetypes import Seed
from plbench.procedures.dialect_text import ERROR_CODES, PROCEDURE_TEXT
from plbench.procedures.lift import Param, resolve_column
from plbench.procedures.model import CountInto, IfElse, Procedure, Raise, Sql, rebuild, walk
from plbench.procedures.suites import literal

NUMBER_FAMILIES = ("integer", "decimal", "float")
THRESHOLD_PARAM = "para_max_rows"
AUDIT_COLUMNS = ("procedure_name", "row_count")


@dataclass(frozen=True)
class RuleContext:
    """What a template may read: the seed, both databases' names, a workspace for the seed's data."""

    seed: Seed
    pg_db: object  # NormalizedDatabase
    oracle_db: object | None
    workspace: object  # plbench.procedures.workspace.Workspace
    round: int  # the round this change would be (1-based)

    @property
    def counter(self) -> str:
        return f"v_rows_{self.round}"


@dataclass(frozen=True)
class Change:
    """A template applied: the new seed (procedure, setup, writes, requirement) and the clause."""

    seed: Seed
    clause: str


@dataclass(frozen=True)
class ProcedureRule:
    rule_id: str
    clause: str  # str.format fields filled by apply
    apply: Callable[[RuleContext, str], Change | None]  # (context, clause template) -> change


# ---- the seed's action and its rows ------------------------------------------------------------


def action(proc: Procedure) -> Sql | None:
    return next((s for s in walk(proc.body) if isinstance(s, Sql) and s.kind in ("insert", "update")), None)


def _row_select(tree: exp.Expression) -> exp.Select | None:
    """The SELECT whose FROM / WHERE give the rows an action reads (None for a set operation)."""
    if isinstance(tree, exp.Update):
        return None
    source = tree.expression
    if isinstance(source, exp.Values):
        return source.find(exp.Subquery).this
    return source if isinstance(source, exp.Select) else None


def main_table(tree: exp.Expression) -> exp.Table | None:
    if isinstance(tree, exp.Update):
        return tree.this
    select = _row_select(tree)
    return (
        select.args["from_"].this if select is not None and isinstance(select.args["from_"].this, exp.Table) else None
    )


def count_tree(tree: exp.Expression) -> exp.Select:
    """`SELECT COUNT(*)` of the rows the action reads (the rows it inserts, for an INSERT ... SELECT)."""
    star = exp.Count(this=exp.Star())
    if isinstance(tree, exp.Update):
        return exp.select(star).from_(tree.this.copy()).where(tree.args["where"].this.copy())
    if isinstance(tree.expression, exp.Values):
        return _row_select(tree).copy().select(star, append=False)
    alias = exp.TableAlias(this=exp.to_identifier("plb_rows"))
    return exp.select(star).from_(exp.Subquery(this=tree.expression.copy(), alias=alias))


def count_at_gold(ctx: RuleContext, tree: exp.Select, scalar: bool = False):
    """The query's one value at the seed's gold arguments, on the seed's database (an int for a count)."""
    values = {p.name: p for p in ctx.seed.procedure.params}
    text = tree.copy().transform(
        lambda n: (
            sqlglot.parse_one(literal(values[n.name].gold_value, values[n.name], "postgres"), read="postgres")
            if isinstance(n, exp.Column) and not n.table and n.name in values
            else n
        )
    )
    result = ctx.workspace.copy_read(text.sql(dialect="postgres"), own=False)
    if not (result.ok and result.rows):
        return None
    value = result.rows[0][0]
    return value if scalar else int(value)


def _counting(ctx: RuleContext) -> tuple[CountInto, int] | None:
    """The COUNT INTO statement of the action's rows, and the count at the gold arguments."""
    act = action(ctx.seed.procedure)
    if act is None or set(act.trees) != set(ctx.seed.dialects):
        return None
    trees = {d: count_tree(t) for d, t in act.trees.items()}
    gold = count_at_gold(ctx, trees["postgres"])
    return (CountInto(ctx.counter, trees), gold) if gold is not None else None


def _main_name(ctx: RuleContext) -> str | None:
    act = action(ctx.seed.procedure)
    table = main_table(act.trees["postgres"]) if act else None
    return table.name if table is not None else None


def _with(ctx: RuleContext, body: tuple, **changes) -> Procedure:
    proc = ctx.seed.procedure
    counters = proc.counters + ((ctx.counter,) if any(_uses(s, ctx.counter) for s in walk(body)) else ())
    return replace(proc, body=body, counters=counters, _rendered={}, **changes)


def _uses(statement, var: str) -> bool:
    return (isinstance(statement, CountInto) and statement.var == var) or (
        isinstance(statement, IfElse) and var in statement.condition
    )


def _seed(ctx: RuleContext, proc: Procedure, clause: str, setup: dict | None = None, writes=()) -> Change:
    seed = ctx.seed
    new = replace(
        seed,
        procedure=proc,
        setup={d: list(seed.setup[d]) + list((setup or {}).get(d, [])) for d in seed.setup},
        writes=seed.writes + tuple(writes),
        requirement_lines=seed.requirement_lines + (clause,),
    )
    return Change(new, clause)


def _codes(error: str) -> dict[str, str]:
    return {"pg_code": ERROR_CODES[error]["postgres"].raised, "oracle_code": ERROR_CODES[error]["oracle"].raised}


def _edit_action(ctx: RuleContext, edit: Callable[[str, exp.Expression], exp.Expression | None]) -> tuple | None:
    """The body with `edit(dialect, action tree copy)` applied to the action in every dialect (None: not applicable)."""
    act = action(ctx.seed.procedure)
    trees = {}
    for d, tree in act.trees.items():
        edited = edit(d, tree.copy())
        if edited is None:
            return None
        trees[d] = edited
    return rebuild(ctx.seed.procedure.body, lambda s: Sql(s.kind, trees) if s is act else s)


# ---- the columns of the action's main table -----------------------------------------------------


@dataclass(frozen=True)
class TableColumn:
    table: str  # PostgreSQL name
    names: dict[str, str]  # dialect -> the column as that dialect's SQL writes it
    family: str
    nullable: bool


def _table_column(ctx: RuleContext, table, column) -> TableColumn:
    names = {"postgres": column.target.sql}
    if ctx.oracle_db is not None:
        names["oracle"] = ctx.oracle_db.table(table.source.name).columns[table.columns.index(column)].target.sql
    return TableColumn(table.target.name, names, column.source.family, column.source.nullable)


def _columns(ctx: RuleContext) -> list[TableColumn]:
    """The columns of the action's main table."""
    name = (_main_name(ctx) or "").lower()
    table = next((t for t in ctx.pg_db.tables if t.target.name.lower() == name), None)
    return [_table_column(ctx, table, c) for c in table.columns] if table is not None else []


def _qualifier(tree: exp.Expression) -> str:
    table = main_table(tree)
    return table.alias or table.name


def _has_null(ctx: RuleContext, column: TableColumn) -> bool:
    result = ctx.workspace.copy_read(
        f"SELECT COUNT(*) FROM {column.table} WHERE {column.names['postgres']} IS NULL", own=False
    )
    return result.ok and result.rows[0][0] > 0


# ---- the templates -------------------------------------------------------------------------------


def skip_null_rows(ctx: RuleContext, clause: str) -> Change | None:
    """`AND <column> IS NOT NULL` on the action's rows, for a nullable column with NULLs it does not test yet."""
    act = action(ctx.seed.procedure)
    if act is None:
        return None
    tested = {c.name.lower() for c in act.trees["postgres"].find_all(exp.Column)}
    column = next(
        (c for c in _columns(ctx) if c.nullable and c.names["postgres"].lower() not in tested and _has_null(ctx, c)),
        None,
    )
    if column is None or set(column.names) < set(act.trees):
        return None

    def edit(dialect: str, tree: exp.Expression):
        target = tree if isinstance(tree, exp.Update) else _row_select(tree)
        if target is None or target.args.get("where") is None:
            return None
        ref = exp.column(column.names[dialect], table=_qualifier(tree) if target.args.get("joins") else None)
        condition = exp.And(
            this=target.args["where"].this, expression=exp.Not(this=exp.Is(this=ref, expression=exp.Null()))
        )
        target.set("where", exp.Where(this=condition))
        return tree

    body = _edit_action(ctx, edit)
    if body is None:
        return None
    return _seed(ctx, _with(ctx, body), clause.format(table=column.table, column=column.names["postgres"]))


def empty_input_error(ctx: RuleContext, clause: str) -> Change | None:
    """Count the action's rows first; none qualifying raises the defined `no_rows` error."""
    counting = _counting(ctx)
    if counting is None:
        return None
    count, _ = counting
    body = (count, IfElse(f"{ctx.counter} = 0", (Raise("no_rows", "no row qualifies"),), ctx.seed.procedure.body))
    return _seed(ctx, _with(ctx, body), clause.format(table=_main_name(ctx), **_codes("no_rows")))


def threshold_parameter(ctx: RuleContext, clause: str) -> Change | None:
    """A new integer parameter: more qualifying rows than it allows raises `too_many_rows` instead of acting."""
    counting = _counting(ctx)
    if counting is None or any(p.name == THRESHOLD_PARAM for p in ctx.seed.procedure.params):
        return None
    count, gold = counting
    types = {d: PROCEDURE_TEXT[d].integer_type for d in PROCEDURE_TEXT}
    empty = {d: "" for d in PROCEDURE_TEXT}
    param = Param(THRESHOLD_PARAM, "integer", False, empty, empty, types, gold)
    raise_ = Raise("too_many_rows", "more rows qualify than allowed")
    body = (count, IfElse(f"{ctx.counter} > {THRESHOLD_PARAM}", (raise_,), ctx.seed.procedure.body))
    proc = _with(ctx, body, params=ctx.seed.procedure.params + (param,))
    return _seed(ctx, proc, clause.format(param=THRESHOLD_PARAM, table=_main_name(ctx), **_codes("too_many_rows")))


def _written(tree: exp.Expression) -> list[exp.Expression]:
    """The expressions an INSERT writes, in target-column order (none for an UPDATE or a set operation)."""
    source = tree.expression if isinstance(tree, exp.Insert) else None
    if isinstance(source, exp.Values):
        return list(source.expressions[0].expressions)
    return list(source.expressions) if isinstance(source, exp.Select) else []


def _gold_value(ctx: RuleContext, node: exp.Expression):
    """The value of a scalar subquery the action writes, at the gold arguments."""
    return count_at_gold(ctx, exp.select(node.copy()), scalar=True)


def _finite_number(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        return False
    return value == value and abs(value) != float("inf")  # NaN is not equal to itself


def _written_number(ctx: RuleContext, families: tuple[str, ...]) -> tuple[int, str, object] | None:
    """(position, target column, value at the gold call or None) of the first number the action writes that
    is a plain column of these families or a scalar subquery (the summary row's aggregate)."""
    act = action(ctx.seed.procedure)
    if act is None or not isinstance(act.trees["postgres"], exp.Insert):
        return None
    targets = [c.name for c in act.trees["postgres"].this.expressions]
    for i, e in enumerate(_written(act.trees["postgres"])):
        inner = e.unalias()
        if isinstance(inner, exp.Subquery):
            value = _gold_value(ctx, inner)  # a number, or NULL, a date, a text ... (then not this rule's)
            if _finite_number(value) and ("integer" not in families) == (value != int(value)):
                return i, targets[i], value
        elif isinstance(inner, exp.Column):
            resolved = resolve_column(inner, ctx.pg_db)
            if resolved and resolved[1].source.family in families:
                return i, targets[i], None
    return None


def _wrap_written(ctx: RuleContext, index: int, wrap: Callable[[exp.Expression], exp.Expression]) -> tuple:
    def edit(dialect: str, tree: exp.Expression):
        node = _written(tree)[index]
        inner = node.unalias()
        new = wrap(inner.copy())
        node.replace(exp.alias_(new, node.alias) if isinstance(node, exp.Alias) else new)
        return tree

    return _edit_action(ctx, edit)


def _lower_median_of(ctx: RuleContext, index: int):
    column = _written(action(ctx.seed.procedure).trees["postgres"])[index].unalias()
    table, col = resolve_column(column, ctx.pg_db)
    result = ctx.workspace.copy_read(
        f"SELECT DISTINCT {col.target.sql} FROM {table.target.sql} WHERE {col.target.sql} IS NOT NULL ORDER BY 1",
        own=False,
    )
    values = [r[0] for r in result.rows] if result.ok else []
    return values[(len(values) - 1) // 2] if len(values) >= 2 else None


def cap_value(ctx: RuleContext, clause: str) -> Change | None:
    """An integer the action writes is capped: a summary's aggregate one below its value at the gold call
    (so the gold call is capped), a column at the lower median of its distinct values."""
    found = _written_number(ctx, ("integer",))
    if found is None:
        return None
    index, target, gold = found
    cap = (int(gold) - 1 if gold >= 2 else None) if gold is not None else _lower_median_of(ctx, index)
    if cap is None:
        return None

    def wrap(node):
        limit = exp.Literal.number(cap)
        return exp.Case(ifs=[exp.If(this=exp.GT(this=node.copy(), expression=limit), true=limit.copy())], default=node)

    return _seed(ctx, _with(ctx, _wrap_written(ctx, index, wrap)), clause.format(column=target, cap=cap))


def round_down_value(ctx: RuleContext, clause: str) -> Change | None:
    """A fractional number the action writes is rounded down (FLOOR, the same in every dialect)."""
    found = _written_number(ctx, ("decimal", "float"))
    if found is None:
        return None
    index, target, _ = found
    body = _wrap_written(ctx, index, lambda node: exp.Floor(this=node))
    return _seed(ctx, _with(ctx, body), clause.format(column=target))


def _free_table(ctx: RuleContext, base: str) -> str:
    taken = {t.target.name.lower() for t in ctx.pg_db.tables} | {w.lower() for w in ctx.seed.writes}
    name, n = base, 2
    while name.lower() in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def audit_row(ctx: RuleContext, clause: str) -> Change | None:
    """After the action, one row in an audit table when at least as many rows qualified as at the gold call."""
    counting = _counting(ctx)
    if counting is None:
        return None
    count, gold = counting
    threshold = max(gold, 1)
    audit = _free_table(ctx, f"{_main_name(ctx)}_audit")
    proc = ctx.seed.procedure
    values = exp.Tuple(expressions=[exp.Literal.string(proc.name), exp.column(ctx.counter)])
    schema = exp.Schema(this=exp.to_table(audit), expressions=[exp.to_identifier(c) for c in AUDIT_COLUMNS])
    insert = Sql(
        "insert",
        {
            d: exp.Insert(this=schema.copy(), expression=exp.Values(expressions=[values.copy()]))
            for d in ctx.seed.dialects
        },
    )
    body = (count, *proc.body, IfElse(f"{ctx.counter} >= {threshold}", (insert,), ()))
    setup = {
        d: [
            text.create_table.format(
                table=audit, columns=f"{AUDIT_COLUMNS[0]} {text.text_type}, {AUDIT_COLUMNS[1]} {text.integer_type}"
            )
        ]
        for d, text in PROCEDURE_TEXT.items()
        if d in ctx.seed.setup
    }
    text = clause.format(threshold=threshold, table=_main_name(ctx), audit=audit, procedure=proc.name)
    return _seed(ctx, _with(ctx, body), text, setup, (audit,))


_RAISES = (
    "the call raises an error (PostgreSQL: SQLSTATE '{pg_code}'; Oracle: RAISE_APPLICATION_ERROR({oracle_code}, ...)) "
    "and changes nothing"
)

TEMPLATES: tuple[ProcedureRule, ...] = (
    ProcedureRule(
        "skip_null_rows",
        "Rows of `{table}` whose `{column}` is NULL are skipped: the procedure leaves them out of what it reads.",
        skip_null_rows,
    ),
    ProcedureRule(
        "empty_input_error", "If no row of `{table}` qualifies (0 rows), " + _RAISES + ".", empty_input_error
    ),
    ProcedureRule(
        "threshold_parameter",
        "The procedure takes one more parameter after the others, `{param}` (an integer): when more than "
        "`{param}` rows of `{table}` qualify, " + _RAISES + ".",
        threshold_parameter,
    ),
    ProcedureRule(
        "cap_value", "In what it writes, `{column}` is capped at {cap}: a larger value is written as {cap}.", cap_value
    ),
    ProcedureRule(
        "round_down_value", "In what it writes, `{column}` is rounded down to a whole number (FLOOR).", round_down_value
    ),
    ProcedureRule(
        "audit_row",
        "When at least {threshold} row(s) of `{table}` qualify, the call also appends one row to `{audit}` "
        "(procedure_name, row_count) holding '{procedure}' and that number of rows, counted before it writes; "
        "`{audit}` exists and is empty before the first call.",
        audit_row,
    ),
)
BY_ID = {t.rule_id: t for t in TEMPLATES}


def apply(rule: ProcedureRule, ctx: RuleContext) -> Change | None:
    return rule.apply(ctx, rule.clause)
