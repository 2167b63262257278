"""A parametrized query in words, for requirements: what it selects, from where, which rows, in what order.

Each clause and expression kind has one phrase (tables `CLAUSES`-like below); an expression with no phrase
is quoted as SQL in backticks, which still specifies it exactly. Physical-order tie-breakers the
transpiler adds (`ctid`, `ROWID`) are left out: only deterministic references are released, so the
rows they would order never tie.
"""

from __future__ import annotations

from sqlglot import exp

_COMPARE = {
    exp.EQ: "equals",
    exp.NEQ: "differs from",
    exp.GT: "is greater than",
    exp.GTE: "is at least",
    exp.LT: "is less than",
    exp.LTE: "is at most",
}
_AGGREGATES = {exp.Avg: "the average of", exp.Sum: "the sum of", exp.Min: "the smallest", exp.Max: "the largest"}
_SET_OPERATIONS = {exp.Union: "together with", exp.Except: "except those of", exp.Intersect: "that are also in"}
_PHYSICAL = frozenset({"ctid", "rowid"})


def _code(node: exp.Expression) -> str:
    return f"`{node.sql(dialect='postgres')}`"


def _count(node: exp.Count) -> str:
    arg = node.this
    if arg is None or isinstance(arg, exp.Star):
        return "the number of rows"
    if isinstance(arg, exp.Distinct):
        return "the number of distinct " + ", ".join(expression(e) for e in arg.expressions)
    return f"the number of non-NULL values of {expression(arg)}"


def expression(node: exp.Expression) -> str:
    """One expression in words (a column or parameter in backticks)."""
    kind = type(node)
    if kind in _COMPARE:
        return f"{expression(node.left)} {_COMPARE[kind]} {expression(node.right)}"
    if kind is exp.And:
        return f"{expression(node.left)} and {expression(node.right)}"
    if kind is exp.Or:
        return f"({expression(node.left)} or {expression(node.right)})"
    if kind is exp.Not:
        return f"not ({expression(node.this)})"
    if kind is exp.Paren:
        return expression(node.this)
    if kind is exp.Count:
        return _count(node)
    if kind in _AGGREGATES:
        return f"{_AGGREGATES[kind]} {expression(node.this)}"
    if kind is exp.Alias:
        return expression(node.this)
    if kind is exp.Is and isinstance(node.expression, exp.Null):
        return f"{expression(node.this)} is NULL"
    if kind is exp.Like:
        return f"{expression(node.this)} matches the LIKE pattern {_code(node.expression)}"
    if kind is exp.In and node.args.get("query"):
        return f"{expression(node.this)} is among {query(node.args['query'].this)}"
    if kind is exp.In:
        return f"{expression(node.this)} is one of " + ", ".join(expression(e) for e in node.expressions)
    if kind is exp.Between:
        return f"{expression(node.this)} is between {expression(node.args['low'])} and {expression(node.args['high'])}"
    if kind is exp.Subquery:
        return f"({query(node.this)})"
    if kind is exp.Exists:
        return f"there is at least one row in ({query(node.this)})"
    return _code(node)


def _source(select: exp.Select) -> str:
    first = select.args.get("from_")
    parts = [_table(first.this)] if first else []
    for join in select.args.get("joins") or ():
        on = join.args.get("on")
        parts.append(f"joined with {_table(join.this)}" + (f" where {expression(on)}" if on else ""))
    return " ".join(parts)


def _table(node: exp.Expression) -> str:
    if isinstance(node, exp.Table):
        alias = f" (called {node.alias})" if node.alias and node.alias != node.name else ""
        return f"table `{node.name}`{alias}"
    if isinstance(node, exp.Subquery):
        return f"the rows of ({query(node.this)})"
    return _code(node)


def _ordering(order: exp.Order) -> str:
    keys = []
    for key in order.expressions:
        if isinstance(key.this, exp.Column) and key.this.name.lower() in _PHYSICAL:
            continue
        direction = "descending" if key.args.get("desc") else "ascending"
        nulls = "NULLs first" if key.args.get("nulls_first") else "NULLs last"
        keys.append(f"{expression(key.this)} {direction} ({nulls})")
    return "ordered by " + ", then ".join(keys) if keys else ""


def query(node: exp.Expression) -> str:
    """A SELECT (or a set operation of SELECTs) in words."""
    if type(node) in _SET_OPERATIONS:
        return f"the rows of ({query(node.left)}) {_SET_OPERATIONS[type(node)]} ({query(node.right)})"
    if not isinstance(node, exp.Select):
        return _code(node)
    distinct = "the distinct values of " if node.args.get("distinct") else ""
    projections = ", ".join(expression(e) for e in node.expressions)
    parts = [f"{distinct}{projections} from {_source(node)}"]
    if node.args.get("where"):
        parts.append(f"keeping only the rows where {expression(node.args['where'].this)}")
    if node.args.get("group"):
        parts.append("per group of equal " + ", ".join(expression(e) for e in node.args["group"].expressions))
    if node.args.get("having"):
        parts.append(f"keeping only the groups where {expression(node.args['having'].this)}")
    if node.args.get("order") and (ordering := _ordering(node.args["order"])):
        parts.append(ordering)
    if node.args.get("limit"):
        parts.append(f"only the first {expression(node.args['limit'].expression)} row(s) in that order")
    return ", ".join(parts)
