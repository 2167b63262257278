"""SQLite's type affinity, spelled out: how it compares and computes with text, numbers and dates.

SQLite compares a TEXT column with a number as text, a numeric column with a numeric string as
numbers, a number with any other text as 'number before text', a date (stored as text) as text,
and reads text as a number in arithmetic; PostgreSQL and Oracle raise or compare otherwise.
"""

from __future__ import annotations

from sqlglot import exp

from plbench.dialects import Dialect
from plbench.spider.gold.scope import (
    NUMERIC_FAMILIES,
    TEXT_LIKE_FAMILIES,
    Context,
    innermost_first,
    is_number_literal,
    number_text,
    numeric_string,
    projection,
    template,
    type_family,
)

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _affinity_literal(column_side: exp.Expression, literal: exp.Expression, ctx: Context) -> exp.Expression | None:
    """The literal rewritten as SQLite's affinity rules see it when compared with `column_side`."""
    family = type_family(column_side, ctx) if isinstance(column_side, exp.Column) else None
    if family == "text" and is_number_literal(literal):
        return exp.Literal.string(number_text(literal))
    if family in NUMERIC_FAMILIES and (text := numeric_string(literal)) is not None:
        return exp.Literal.number(text)
    return None


# Where a number stands against a text that is not a number: SQLite orders every number before
# every text, so the comparison is decided (for a non-NULL number) by the operator alone.
_NUMBER_BEFORE_TEXT = {exp.EQ: False, exp.NEQ: True, exp.LT: True, exp.LTE: True, exp.GT: False, exp.GTE: False}
_FLIPPED = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE}


def _number_before_text(col: exp.Expression, lit: exp.Expression, kind: type, ctx: Context) -> bool | None:
    """The outcome of `col kind lit` when SQLite compares a number with a text, else None.

    A numeric column against a string that is not a number, or a date column (NUMERIC affinity,
    values stored as text) against a string that is one (SQLite turns it into a number)."""
    if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string):
        return None
    family, numeric = type_family(col, ctx), numeric_string(lit) is not None
    if family in NUMERIC_FAMILIES and not numeric:
        return _NUMBER_BEFORE_TEXT[kind]
    if family in {"date", "timestamp", "time"} and numeric:
        return _NUMBER_BEFORE_TEXT[_FLIPPED.get(kind, kind)]
    return None


def _decided(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    """A comparison SQLite decides by 'numbers before texts': `c = c` (true unless c is NULL) or
    `c <> c` (false unless NULL), which keeps SQLite's NULL result and is valid in both targets."""
    kind = type(node)
    for col, lit, as_seen in ((node.left, node.right, kind), (node.right, node.left, _FLIPPED.get(kind, kind))):
        outcome = _number_before_text(col, lit, as_seen, ctx)
        if outcome is not None:
            return (exp.EQ if outcome else exp.NEQ)(this=col.copy(), expression=col.copy())
    return None


def _date_as_text(col_side: exp.Expression, literal: exp.Expression, ctx: Context) -> bool:
    """SQLite stores dates as text and compares them with a string as text ('2010' < '2010-05-01');
    PostgreSQL would parse the string as a date (or fail, 22007)."""
    return (
        isinstance(col_side, exp.Column)
        and isinstance(literal, exp.Literal)
        and literal.is_string
        and type_family(col_side, ctx) in {"date", "timestamp", "time"}
    )


def _date_text(node: exp.Expression, family: str, dialect: Dialect) -> exp.Expression:
    """A date as the ISO text SQLite stored (a text cast, or TO_CHAR where the cast follows settings)."""
    if family in dialect.date_text_formats:
        return exp.func("TO_CHAR", node, exp.Literal.string(dialect.date_text_formats[family]))
    return text_cast(node, dialect)


def rule_text_affinity_comparison(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite compares a TEXT column with a number as text ('2000' vs 2000 gives TEXT affinity to
    the number), a numeric column with a numeric string as numbers, with any other string as
    'number before text', and a date column with a string as text; PostgreSQL raises
    42883/22P02/22007 or compares dates."""
    for node in innermost_first(tree, *_COMPARISONS):
        if (decided := _decided(node, ctx)) is not None:
            node.replace(decided)
            continue
        for col_side, lit_side in ((node.left, node.right), (node.right, node.left)):
            if _date_as_text(col_side, lit_side, ctx):
                col_side.replace(_date_text(col_side.copy(), type_family(col_side, ctx), ctx.dialect))
                break
            new = _affinity_literal(col_side, lit_side, ctx)
            if new is not None:
                lit_side.replace(new)
    for node in innermost_first(tree, exp.In, exp.Between):
        values = node.expressions if isinstance(node, exp.In) else [node.args["low"], node.args["high"]]
        for value in list(values):
            new = _affinity_literal(node.this, value, ctx)
            if new is not None:
                value.replace(new)
    return tree


def sqlite_number(node: exp.Expression, dialect: Dialect) -> exp.Expression:
    """`node` (text, or a date SQLite stores as text) read as a number the way SQLite does: from the
    start of the text (leading spaces allowed, '12abc' is 12, 'abc' is 0)."""
    return template(dialect.sqlite_number, dialect, x=node)


def text_cast(node: exp.Expression, dialect: Dialect) -> exp.Expression:
    return exp.cast(node, dialect.text_type)


def _mixed(a: exp.Expression, b: exp.Expression, ctx: Context) -> bool:
    """Whether `a` is a numeric column and `b` a text column (not literals: see the literal rule)."""
    return (
        not isinstance(a, exp.Literal)
        and not isinstance(b, exp.Literal)
        and type_family(a, ctx) in NUMERIC_FAMILIES
        and type_family(b, ctx) == "text"
    )


def rule_mixed_affinity_comparison(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite compares a numeric column with a TEXT column (Spider joins INTEGER ids to TEXT ones)
    by giving the text NUMERIC affinity; PostgreSQL raises 42883. Equality compares the number's
    text with the text (the stored texts are canonical numbers); ordering reads the text as a number."""
    for node in innermost_first(tree, *_COMPARISONS):
        for num, txt in ((node.left, node.right), (node.right, node.left)):
            if _mixed(num, txt, ctx):
                if isinstance(node, (exp.EQ, exp.NEQ)):
                    num.replace(text_cast(num.copy(), ctx.dialect))
                else:
                    txt.replace(sqlite_number(txt.copy(), ctx.dialect))
                break
    for node in innermost_first(tree, exp.In):
        inner = projection(node.args["query"]) if node.args.get("query") else None
        if inner is None:
            continue
        if _mixed(node.this, inner, ctx):
            node.this.replace(text_cast(node.this.copy(), ctx.dialect))
        elif _mixed(inner, node.this, ctx):
            inner.replace(text_cast(inner.copy(), ctx.dialect))
    return tree


def rule_text_arithmetic(tree: exp.Expression, ctx: Context) -> exp.Expression:
    """SQLite's sum(), avg() and + - * / read text (and dates, which it stores as text) as numbers;
    PostgreSQL has no avg(text) or text - text (42883). Innermost first: in avg(a - b) the text
    operands a and b are read as numbers, and a - b, then a number, is left as it is."""
    for op in innermost_first(tree, exp.Sum, exp.Avg, exp.Add, exp.Sub, exp.Mul, exp.Div):
        operands = [op.this] if isinstance(op, (exp.Sum, exp.Avg)) else [op.left, op.right]
        for node in operands:
            if type_family(node, ctx) in TEXT_LIKE_FAMILIES:
                node.replace(sqlite_number(node.copy(), ctx.dialect))
    return tree
