"""The schema-aware rewrite rules, each a small function of (tree, context), and their order (`RULES`).

Names mapped to the target's folded names; "x" read as a string when no column x is in scope;
bare columns of aggregate queries picked explicitly; ASCII-only case-insensitive LIKE; Oracle's
exact division; cross joins; the order SQLite gives to rows tied on the ORDER BY keys; and the
type-affinity rules of `affinity`.
"""

from __future__ import annotations

from sqlglot import exp

from plbench.dialects import Dialect
from plbench.spider.gold.affinity import (
    rule_mixed_affinity_comparison,
    rule_text_affinity_comparison,
    rule_text_arithmetic,
    text_cast,
)
from plbench.spider.gold.scope import (
    Context,
    TranspileError,
    bare_columns,
    enclosing_selects,
    extremes_of,
    innermost_first,
    is_aggregate_query,
    resolve,
    template,
    type_family,
)


def rule_double_quoted_strings(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite reads "x" as a string when no column x is in scope (a legacy quirk Spider relies on);
    PostgreSQL and Oracle always read it as an identifier."""
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    for col in list(tree.find_all(exp.Column)):
        if (
            isinstance(col.this, exp.Identifier)
            and col.this.quoted
            and not col.table
            and col.name.lower() not in aliases
            and resolve(col, ctx)[1] is None
        ):
            col.replace(exp.Literal.string(col.name))
    return tree


def row_id_column(select: exp.Select, dialect: Dialect) -> exp.Expression | None:
    """The physical row id of a one-table SELECT's table (rows were loaded in SQLite rowid order)."""
    source = select.args["from_"].this if select.args.get("from_") else None
    if select.args.get("joins") or not isinstance(source, exp.Table):
        return None
    return exp.column(dialect.row_id, table=source.alias_or_name)


def _loop_row_ids(select: exp.Select, ctx: Context) -> list[exp.Expression]:
    """The row ids of a SELECT's tables in the order SQLite's plan nests its loops (the first row
    of the outermost loop is met first); none when a source is not a table (no row id to follow)."""
    items = [select.args.get("from_")] + list(select.args.get("joins") or [])
    tables = [item.this for item in items if item is not None]
    if not tables or not all(isinstance(t, exp.Table) for t in tables):
        return []
    return [exp.column(ctx.dialect.row_id, table=t.alias_or_name) for t in sorted(tables, key=ctx.loop_position)]


def _pick_extreme(col: exp.Column, extreme: exp.Expression, select: exp.Select, ctx: Context) -> exp.Expression:
    """The value of `col` on the first row SQLite meets (in the row-id order of its loops) where the
    query's single min()/max() is reached."""
    order = "DESC" if isinstance(extreme, exp.Max) else "ASC"
    row_ids = _loop_row_ids(select, ctx)
    ties = "".join(f", plb_rowid{i}" for i in range(len(row_ids)))
    text = ctx.dialect.first_at_extreme.format(order=order, ties=ties)
    row_id_nodes = {f"rowid{i}": node for i, node in enumerate(row_ids)}
    return template(text, ctx.dialect, value=col, key=extreme.this, **row_id_nodes)


def rule_bare_columns(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite lets an aggregate query name a column that is neither grouped nor aggregated: with
    exactly one min()/max() it takes the value from that extreme row, otherwise from some row of the
    group. PostgreSQL and Oracle refuse it; the value is picked explicitly (the extreme row, or MIN,
    which is the same value whenever the column is determined by the group, as in Spider)."""
    for select in innermost_first(tree, exp.Select):
        if not is_aggregate_query(select):
            continue
        extremes = extremes_of(select)
        for col in bare_columns(select, ctx):
            if len(extremes) == 1:
                col.replace(_pick_extreme(col, extremes[0], select, ctx))
            else:
                col.replace(exp.Min(this=col.copy()))
    return tree


def _as_text(node: exp.Expression, ctx: Context) -> exp.Expression:
    """A copy of `node` (still in the tree) as text: SQLite's LIKE converts its operands to text,
    PostgreSQL's LIKE has no numeric form."""
    family = type_family(node, ctx)
    if family is None or family == "text" or isinstance(node, exp.Literal):
        return node.copy()
    return text_cast(node.copy(), ctx.dialect)


_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _ascii_lower(node: exp.Expression) -> exp.Expression:
    """Lower-case A-Z only, as SQLite's LIKE folds case (LOWER/ILIKE would also fold 'Ë' to 'ë')."""
    return exp.func("TRANSLATE", node, exp.Literal.string(_ASCII_UPPER), exp.Literal.string(_ASCII_UPPER.lower()))


def _ascii_pattern(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string and node.this.isascii()


def rule_like_case_insensitive(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite's LIKE folds ASCII letters only. With an ASCII pattern literal that is the dialect's
    `ascii_like` (ILIKE in PostgreSQL, UPPER() on both sides in Oracle); otherwise both sides fold
    A-Z by TRANSLATE."""
    for like in innermost_first(tree, exp.Like):
        left, right, negate = _as_text(like.this, ctx), like.expression.copy(), like.args.get("negate")
        if not _ascii_pattern(right):
            new = exp.Like(this=_ascii_lower(left), expression=_ascii_lower(right))
        else:
            new = ctx.dialect.ascii_like(left, right)
        like.replace(exp.Not(this=new) if negate else new)
    return tree


def rule_integer_division(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite divides integers as integers (truncating); where the dialect's / is exact (Oracle),
    TRUNC it. PostgreSQL's bigint / bigint already truncates."""
    if ctx.dialect.division_truncates_integers:
        return tree
    for div in innermost_first(tree, exp.Div):
        if type_family(div.left, ctx) == "integer" and type_family(div.right, ctx) == "integer":
            div.replace(exp.func("TRUNC", div.copy()))
    return tree


def rule_cross_join(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite's JOIN without ON is a cross join; sqlglot writes ON TRUE, which Oracle before 23ai rejects."""
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        if isinstance(on, exp.Boolean) and on.this is True and not join.args.get("using") and not join.side:
            join.set("on", None)
            join.set("kind", "CROSS")
    return tree


def _group_tiebreak(select: exp.Select, desc: bool) -> list[exp.Expression]:
    """SQLite forms the groups of an aggregate query in GROUP BY key order, so rows tied on the
    ORDER BY keys come out in group-key order: ascending when the groups come from an index or
    the table's order, and in the direction of the last ORDER BY term when SQLite sorted them in a
    temporary B-tree (measured on SQLite 3.40; `Context.groups_resorted` says which)."""
    projections = select.expressions
    keys = []
    for item in select.args["group"].expressions:
        if isinstance(item, exp.Literal) and item.is_int and 0 < int(item.this) <= len(projections):
            item = projections[int(item.this) - 1].unalias()
        keys.append(exp.Ordered(this=item.copy(), desc=desc, nulls_first=not desc))
    return keys


def _scan_tiebreak(select: exp.Select, dialect: Dialect) -> list[exp.Expression]:
    """Rows of a one-table query tied on the ORDER BY keys come out of SQLite in rowid order; the
    loaded table holds them in that order, so the physical row id reproduces it."""
    row_id = row_id_column(select, dialect)
    if row_id is None or select.args.get("distinct"):
        return []
    return [exp.Ordered(this=row_id, nulls_first=True)]


def rule_sqlite_tie_order(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """Rows with equal ORDER BY keys come out of SQLite in a definite order (and LIMIT keeps those
    first ones); PostgreSQL's sort is not stable. The tie order is spelled out as extra sort keys."""
    for select in list(tree.find_all(exp.Select)):
        order = select.args.get("order")
        if order is None or not order.expressions or not select.args.get("from_"):
            continue
        if select.args.get("group"):
            desc = ctx.groups_resorted and bool(order.expressions[-1].args.get("desc"))
            extra = [] if select.args.get("distinct") else _group_tiebreak(select, desc)
        elif is_aggregate_query(select):
            extra = []
        else:
            extra = _scan_tiebreak(select, ctx.dialect)
        order.set("expressions", [*order.expressions, *extra])
    return tree


def _target_identifier(name) -> exp.Identifier:
    return exp.Identifier(this=name.name, quoted=name.quoted)


def _table_names(tree: exp.Expression, ctx: Context) -> list[tuple[exp.Expression, exp.Expression]]:
    out = []
    for table in tree.find_all(exp.Table):
        known = ctx.tables.get(table.name.lower())
        if known is not None:
            out.append((table.this, _target_identifier(known.target)))
    return out


def _column_names(tree: exp.Expression, ctx: Context) -> list[tuple[exp.Expression, exp.Expression]]:
    out = []
    for col in tree.find_all(exp.Column):
        table, column = resolve(col, ctx)
        if column is not None and isinstance(col.this, exp.Identifier):
            out.append((col.this, _target_identifier(column.target)))
        qualifier = col.args.get("table")
        if col.table and col.table.lower() in ctx.tables and not _is_alias(col, ctx):
            out.append((qualifier, _target_identifier(ctx.tables[col.table.lower()].target)))
    return out


def _is_alias(col: exp.Column, ctx: Context) -> bool:
    """Whether the column's qualifier is a table alias (T1) rather than a table's own name."""
    for select in enclosing_selects(col):
        for item in [select.args.get("from_")] + list(select.args.get("joins") or []):
            source = item.this if item is not None else None
            if source is not None and source.alias and source.alias.lower() == col.table.lower():
                return True
    return False


def rule_names(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """Table and column names as the target stores them (folded; quoted only where needed).
    Other quoted names (aliases) are unquoted when plain, so their case folds like their uses."""
    replacements = _table_names(tree, ctx) + _column_names(tree, ctx)
    mapped = {id(old) for old, _ in replacements}
    for ident in list(tree.find_all(exp.Identifier)):
        if (
            id(ident) not in mapped
            and ident.quoted
            and ident.name.replace("_", "a").isalnum()
            and ident.name.isascii()
            and not ident.name[:1].isdigit()
        ):
            ident.set("quoted", False)
    for old, new in replacements:
        old.replace(new)
    return tree


def rule_sqlite_only_syntax(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """Constructs sqlglot passes through unchanged although the targets lack them: refuse them
    here rather than emit text that fails on the server."""
    if tree.find(exp.Glob) is not None:
        raise TranspileError(f"SQLite GLOB has no {ctx.target} translation here")
    if any(t.args.get("indexed") is not None for t in tree.find_all(exp.Table)):
        raise TranspileError(f"SQLite INDEXED BY / NOT INDEXED has no {ctx.target} equivalent")
    return tree


RULES = (
    ("sqlite_only_syntax", rule_sqlite_only_syntax),
    ("double_quoted_strings", rule_double_quoted_strings),
    ("bare_columns", rule_bare_columns),
    ("text_affinity_comparison", rule_text_affinity_comparison),
    ("mixed_affinity_comparison", rule_mixed_affinity_comparison),
    ("text_arithmetic", rule_text_arithmetic),
    ("like_case_insensitive", rule_like_case_insensitive),
    ("integer_division", rule_integer_division),
    ("cross_join", rule_cross_join),
    ("sqlite_tie_order", rule_sqlite_tie_order),
    ("names", rule_names),  # last: the rules above look columns up by their source names
)
