"""What the rewrite rules know about a query: the names in scope, the type family of an
expression, and the shape of an aggregate query (group keys, bare columns, min()/max())."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS, Dialect
from plbench.normalize.emit import NormalizedColumn, NormalizedDatabase, NormalizedTable

NUMERIC_FAMILIES = frozenset({"integer", "decimal", "float"})
TEXT_LIKE_FAMILIES = frozenset({"text", "date", "timestamp", "time"})


class TranspileError(ValueError):
    """A query this module cannot translate faithfully; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Context:
    """What the rules know: the database's tables by lower-cased source name, and the target
    (its name; the dialect object holds the target's rules)."""

    db: NormalizedDatabase
    target: str
    tables: dict[str, NormalizedTable] = field(default_factory=dict)
    groups_resorted: bool = True  # SQLite's plan sorts GROUP BY groups in a temporary B-tree
    plan: tuple[str, ...] = ()  # SQLite's EXPLAIN QUERY PLAN lines (its loops, outermost first)

    @classmethod
    def of(cls, db: NormalizedDatabase, target: str, plan: list[str] | None) -> Context:
        resorted = plan is None or any("TEMP B-TREE FOR GROUP BY" in line for line in plan)
        return cls(db, target, {t.source.name.lower(): t for t in db.tables}, resorted, tuple(plan or ()))

    @property
    def dialect(self) -> Dialect:
        return DIALECTS[self.target]

    def loop_position(self, table: exp.Table) -> int:
        """Where SQLite's plan loops over `table` (SCAN / SEARCH by alias or name); after all if it does not say."""
        name = re.escape(table.alias_or_name)
        pattern = re.compile(rf"^(SCAN|SEARCH) {name}( |$)", re.IGNORECASE)
        return next((i for i, line in enumerate(self.plan) if pattern.match(line)), len(self.plan))


def innermost_first(tree: exp.Expression, *kinds: type) -> list[exp.Expression]:
    """The nodes of `kinds` in `tree`, each after every node inside it: a rule that rewrites a node
    into an expression holding a copy of it then copies the rewrites already made inside it."""
    return list(tree.find_all(*kinds, bfs=True))[::-1]


def column_of(table: NormalizedTable, name: str) -> NormalizedColumn | None:
    return next((c for c in table.columns if c.source.name.lower() == name.lower()), None)


def enclosing_selects(node: exp.Expression):
    """The SELECTs around `node`, innermost first (a correlated subquery sees its outer FROM)."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Select):
            yield parent
        parent = parent.parent


def sources_of(select: exp.Select, ctx: Context) -> dict[str, NormalizedTable | None]:
    """FROM and JOIN sources of one SELECT: alias (or table name) -> table; None for a derived table."""
    out: dict[str, NormalizedTable | None] = {}
    items = [select.args.get("from_")] + list(select.args.get("joins") or [])
    for item in items:
        source = item.this if item is not None else None
        if isinstance(source, exp.Table):
            out[(source.alias_or_name or "").lower()] = ctx.tables.get(source.name.lower())
        elif source is not None and source.alias_or_name:
            out[source.alias_or_name.lower()] = None
    return out


def resolve(col: exp.Column, ctx: Context) -> tuple[NormalizedTable | None, NormalizedColumn | None]:
    """The table and column a column reference names, by SQLite's scoping; (None, None) if unknown."""
    qualifier, name = col.table.lower(), col.name
    for select in enclosing_selects(col):
        sources = sources_of(select, ctx)
        if qualifier:
            if qualifier in sources:
                table = sources[qualifier]
                return (table, column_of(table, name)) if table else (None, None)
            continue
        hits = [(t, c) for t in sources.values() if t is not None and (c := column_of(t, name))]
        if hits:
            return hits[0]
        if any(t is None for t in sources.values()):
            return None, None  # may come from a derived table's projection
    return None, None


def literal_family(lit: exp.Literal) -> str:
    if lit.is_string:
        return "text"
    return "integer" if lit.is_int else "float"


_CAST_FAMILIES = {
    exp.DataType.Type.INT: "integer",
    exp.DataType.Type.BIGINT: "integer",
    exp.DataType.Type.FLOAT: "float",
    exp.DataType.Type.DOUBLE: "float",
    exp.DataType.Type.TEXT: "text",
    exp.DataType.Type.VARCHAR: "text",
}


def type_family(node: exp.Expression, ctx: Context) -> str | None:
    """The type family an expression evaluates to, where it can be told; None when unknown."""
    if isinstance(node, exp.Column):
        return (c := resolve(node, ctx)[1]) and c.source.family
    if isinstance(node, exp.Literal):
        return literal_family(node)
    if isinstance(node, (exp.Paren, exp.Neg, exp.Max, exp.Min, exp.Sum)):
        return type_family(node.this, ctx)
    if isinstance(node, exp.Subquery):
        return (inner := projection(node)) is not None and type_family(inner, ctx) or None
    if isinstance(node, exp.Count):
        return "integer"
    if isinstance(node, exp.Avg):
        return "float"
    if isinstance(node, exp.Cast):
        return _CAST_FAMILIES.get(node.to.this)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        fams = {type_family(node.left, ctx), type_family(node.right, ctx)}
        return fams.pop() if len(fams) == 1 else None
    return None


def is_number_literal(node: exp.Expression) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and not inner.is_string


def number_text(node: exp.Expression) -> str:
    """A number literal as SQLite renders it when TEXT affinity is applied to it."""
    inner = node.this if isinstance(node, exp.Neg) else node
    sign = "-" if isinstance(node, exp.Neg) else ""
    return sign + (str(int(inner.this)) if inner.is_int else repr(float(inner.this)))


def numeric_string(node: exp.Expression) -> str | None:
    """The text of a string literal that SQLite's NUMERIC affinity turns into a number, else None."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    text = node.this.strip()
    try:
        float(text)
    except ValueError:
        return None
    return text if text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity") else None


def under(node: exp.Expression, stop: exp.Expression, kinds: tuple) -> bool:
    """Whether some node strictly between `node` and its ancestor `stop` is one of `kinds`."""
    parent = node.parent
    while parent is not None and parent is not stop:
        if isinstance(parent, kinds):
            return True
        parent = parent.parent
    return False


def group_keys(select: exp.Select, ctx: Context) -> tuple[set, set]:
    """What a SELECT groups by: column keys, and the other expressions (by SQL text)."""
    columns, others = set(), set()
    projections = select.expressions
    for item in (select.args.get("group") or exp.Group()).expressions:
        if isinstance(item, exp.Literal) and item.is_int and 0 < int(item.this) <= len(projections):
            item = projections[int(item.this) - 1].unalias()
        if isinstance(item, exp.Column) and not item.table:
            target = next(
                (p.this for p in projections if isinstance(p, exp.Alias) and p.alias.lower() == item.name.lower()), None
            )
            item = target if target is not None else item
        if isinstance(item, exp.Column):
            columns.add(column_key(item, ctx))
        others.add(item.sql())
    return columns, others


def column_key(col: exp.Column, ctx: Context) -> tuple[str, str]:
    table, column = resolve(col, ctx)
    return (
        table.source.name.lower() if table else col.table.lower(),
        column.source.name.lower() if column else col.name.lower(),
    )


def extremes_of(select: exp.Select) -> list[exp.Expression]:
    """The min()/max() aggregates of this SELECT (not of its subqueries)."""
    found = []
    for part in [*select.expressions, select.args.get("having"), select.args.get("order")]:
        for agg in part.find_all(exp.Max, exp.Min) if part is not None else ():
            if nearest_select(agg) is select and not under(agg, select, (exp.Window,)):
                found.append(agg)
    return found


def nearest_select(node: exp.Expression) -> exp.Select | None:
    return next(enclosing_selects(node), None)


def bare_columns(select: exp.Select, ctx: Context) -> list[exp.Column]:
    """Columns of an aggregate query that are neither grouped nor inside an aggregate."""
    columns, others = group_keys(select, ctx)
    aliases = {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias)}
    parts = [*select.expressions, select.args.get("having"), select.args.get("order")]
    bare = []
    for part in (p for p in parts if p is not None):
        for col in part.find_all(exp.Column):
            if (
                nearest_select(col) is select
                and not under(col, select, (exp.AggFunc, exp.Window))
                and (not col.table or col.table.lower() in sources_of(select, ctx))
                and column_key(col, ctx) not in columns
                and col.sql() not in others
                and not (part is select.args.get("order") and not col.table and col.name.lower() in aliases)
            ):
                bare.append(col)
    return bare


def is_aggregate_query(select: exp.Select) -> bool:
    if select.args.get("group"):
        return True
    return any(
        nearest_select(a) is select and not under(a, select, (exp.Window,))
        for p in select.expressions
        for a in p.find_all(exp.AggFunc)
    )


def projection(query: exp.Expression) -> exp.Expression | None:
    """The single output expression of a subquery (the operand of IN (SELECT ...))."""
    select = query.this if isinstance(query, exp.Subquery) else query
    if isinstance(select, exp.Select) and len(select.expressions) == 1:
        return select.expressions[0].unalias()
    return None


def template(text: str, dialect: Dialect, **nodes: exp.Expression) -> exp.Expression:
    """An expression written in the dialect's SQL, with placeholder columns `plb_<name>` filled in."""
    tree = sqlglot.parse_one(f"SELECT {text}", read=dialect.sqlglot_name).expressions[0]
    for placeholder in list(tree.find_all(exp.Column)):
        if placeholder.name.startswith("plb_"):
            placeholder.replace(nodes[placeholder.name[4:]].copy())
    return tree
