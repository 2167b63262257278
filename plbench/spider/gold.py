"""Spider 1.0 gold queries: read them, transpile SQLite to PostgreSQL and Oracle, prove equivalence.

A normalized database is only trustworthy if the questions asked of it still get
the answers the benchmark recorded. So every gold query is run on the source
SQLite file and, transpiled, on the loaded PostgreSQL schema, and the two results
are compared as multisets (as sequences when the outermost statement has ORDER BY).

Transpiling is sqlglot (read='sqlite'; it already spells out SQLite's NULL ordering
and NULL-on-division-by-zero) plus the schema-aware rules in `RULES`, each a small
function of (tree, context), named and tested on its own (`apply_rule`):
names mapped to the target's folded names; "x" read as a string when no column x
is in scope; bare columns of aggregate queries picked explicitly; SQLite's type
affinity in comparisons and arithmetic (text vs number, number before text, dates
stored as text); ASCII-only case-insensitive LIKE; Oracle's exact division; cross
joins; and the order SQLite gives to rows tied on the ORDER BY keys (rowid order,
or group-key order as its query plan says), so that LIMIT keeps the same rows.

`compare` normalizes values before comparing: Decimal/bool/int/float as numbers
(equal within FLOAT_REL_TOL relative, FLOAT_ABS_TOL absolute), dates and times as
ISO text, bytes as hex, and, in a column one side returns as numbers and the other
as text, numeric text as numbers.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp

from plbench.compare import Tolerance, same
from plbench.normalize.emit import NormalizedColumn, NormalizedDatabase, NormalizedTable, normalize
from plbench.normalize.schema import SourceDatabase
from plbench.normalize.sqlite_source import connect_readonly

SQLGLOT_DIALECT = {"postgres": "postgres", "oracle": "oracle"}
FLOAT_REL_TOL = 1e-6  # SQLite and PostgreSQL sum/avg floats in different orders; numeric vs double
FLOAT_ABS_TOL = 1e-9  # for values near zero, where a relative tolerance means nothing
SQLITE_TIMEOUT_S = 20.0
NUMERIC_FAMILIES = frozenset({"integer", "decimal", "float"})


class GoldFormatError(ValueError):
    """A gold file line that cannot be read (names the file and the line)."""


class TranspileError(ValueError):
    """A query this module cannot translate faithfully; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GoldQuery:
    source_id: str  # dev: 0-based index in dev.json; train: 1-based line number in train_gold.sql
    db_id: str
    question: str  # "" for train (train_gold.sql holds no questions)
    sql: str
    split: str  # "dev" | "train"


# ---- readers ---------------------------------------------------------------------------------


def _gold_line(path: Path, number: int, line: str) -> tuple[str, str]:
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise GoldFormatError(f"{path}:{number}: expected '<sql>\\t<db_id>', got {line[:80]!r}")
    return parts[0].strip(), parts[1].strip()


def _gold_lines(path: Path) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        return [_gold_line(path, n, line) for n, line in enumerate(handle, start=1) if line.strip()]


def read_spider_dev(dev_json_path: Path, dev_gold_path: Path) -> list[GoldQuery]:
    """dev.json's questions paired line by line with dev_gold.sql (whose SQL carries the 2020 fixes)."""
    entries = json.loads(Path(dev_json_path).read_text(encoding="utf-8"))
    gold = _gold_lines(Path(dev_gold_path))
    if len(entries) != len(gold):
        raise GoldFormatError(f"{dev_gold_path}: {len(gold)} queries for {len(entries)} questions in {dev_json_path}")
    out = []
    for i, (entry, (sql, db_id)) in enumerate(zip(entries, gold)):
        if not isinstance(entry, dict) or entry.get("db_id") != db_id or "question" not in entry:
            raise GoldFormatError(
                f"{dev_json_path}: entry {i} ({str(entry)[:60]}) does not match {dev_gold_path}:{i + 1} (db {db_id})"
            )
        out.append(GoldQuery(str(i), db_id, entry["question"], sql, "dev"))
    return out


def read_train_gold(train_gold_path: Path) -> list[GoldQuery]:
    """train_gold.sql: one '<sql>\\t<db_id>' per line; the source id is the line number."""
    path = Path(train_gold_path)
    with open(path, encoding="utf-8") as handle:
        return [
            GoldQuery(str(n), db_id, "", sql, "train")
            for n, line in enumerate(handle, start=1)
            if line.strip()
            for sql, db_id in [_gold_line(path, n, line)]
        ]


# ---- schema context --------------------------------------------------------------------------


@dataclass
class _Context:
    """What the rules know: the database's tables by lower-cased source name, and the target."""

    db: NormalizedDatabase
    target: str
    tables: dict[str, NormalizedTable] = field(default_factory=dict)
    groups_resorted: bool = True  # SQLite's plan sorts GROUP BY groups in a temporary B-tree

    @classmethod
    def of(cls, db: NormalizedDatabase, target: str, plan: list[str] | None) -> _Context:
        resorted = plan is None or any("TEMP B-TREE FOR GROUP BY" in line for line in plan)
        return cls(db, target, {t.source.name.lower(): t for t in db.tables}, resorted)


def _column_of(table: NormalizedTable, name: str) -> NormalizedColumn | None:
    return next((c for c in table.columns if c.source.name.lower() == name.lower()), None)


def _enclosing_selects(node: exp.Expression):
    """The SELECTs around `node`, innermost first (a correlated subquery sees its outer FROM)."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Select):
            yield parent
        parent = parent.parent


def _sources(select: exp.Select, ctx: _Context) -> dict[str, NormalizedTable | None]:
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


def _resolve(col: exp.Column, ctx: _Context) -> tuple[NormalizedTable | None, NormalizedColumn | None]:
    """The table and column a column reference names, by SQLite's scoping; (None, None) if unknown."""
    qualifier, name = col.table.lower(), col.name
    for select in _enclosing_selects(col):
        sources = _sources(select, ctx)
        if qualifier:
            if qualifier in sources:
                table = sources[qualifier]
                return (table, _column_of(table, name)) if table else (None, None)
            continue
        hits = [(t, c) for t in sources.values() if t is not None and (c := _column_of(t, name))]
        if hits:
            return hits[0]
        if any(t is None for t in sources.values()):
            return None, None  # may come from a derived table's projection
    return None, None


def _literal_family(lit: exp.Literal) -> str:
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


def _family(node: exp.Expression, ctx: _Context) -> str | None:
    """The type family an expression evaluates to, where it can be told; None when unknown."""
    if isinstance(node, exp.Column):
        return (c := _resolve(node, ctx)[1]) and c.source.family
    if isinstance(node, exp.Literal):
        return _literal_family(node)
    if isinstance(node, (exp.Paren, exp.Neg, exp.Max, exp.Min, exp.Sum)):
        return _family(node.this, ctx)
    if isinstance(node, exp.Subquery):
        return (inner := _projection(node)) is not None and _family(inner, ctx) or None
    if isinstance(node, exp.Count):
        return "integer"
    if isinstance(node, exp.Avg):
        return "float"
    if isinstance(node, exp.Cast):
        return _CAST_FAMILIES.get(node.to.this)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        fams = {_family(node.left, ctx), _family(node.right, ctx)}
        return fams.pop() if len(fams) == 1 else None
    return None


def _is_number_literal(node: exp.Expression) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and not inner.is_string


def _number_text(node: exp.Expression) -> str:
    """A number literal as SQLite renders it when TEXT affinity is applied to it."""
    inner = node.this if isinstance(node, exp.Neg) else node
    sign = "-" if isinstance(node, exp.Neg) else ""
    return sign + (str(int(inner.this)) if inner.is_int else repr(float(inner.this)))


def _numeric_string(node: exp.Expression) -> str | None:
    """The text of a string literal that SQLite's NUMERIC affinity turns into a number, else None."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    text = node.this.strip()
    try:
        float(text)
    except ValueError:
        return None
    return text if text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity") else None


def _under(node: exp.Expression, stop: exp.Expression, kinds: tuple) -> bool:
    """Whether some node strictly between `node` and its ancestor `stop` is one of `kinds`."""
    parent = node.parent
    while parent is not None and parent is not stop:
        if isinstance(parent, kinds):
            return True
        parent = parent.parent
    return False


# ---- rewrite rules ---------------------------------------------------------------------------


def rule_double_quoted_strings(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite reads "x" as a string when no column x is in scope (a legacy quirk Spider relies on);
    PostgreSQL and Oracle always read it as an identifier."""
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    for col in list(tree.find_all(exp.Column)):
        if (
            isinstance(col.this, exp.Identifier)
            and col.this.quoted
            and not col.table
            and col.name.lower() not in aliases
            and _resolve(col, ctx)[1] is None
        ):
            col.replace(exp.Literal.string(col.name))
    return tree


def _group_keys(select: exp.Select, ctx: _Context) -> tuple[set, set]:
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
            columns.add(_column_key(item, ctx))
        others.add(item.sql())
    return columns, others


def _column_key(col: exp.Column, ctx: _Context) -> tuple[str, str]:
    table, column = _resolve(col, ctx)
    return (
        table.source.name.lower() if table else col.table.lower(),
        column.source.name.lower() if column else col.name.lower(),
    )


def _extremes(select: exp.Select) -> list[exp.Expression]:
    """The min()/max() aggregates of this SELECT (not of its subqueries)."""
    found = []
    for part in [*select.expressions, select.args.get("having"), select.args.get("order")]:
        for agg in part.find_all(exp.Max, exp.Min) if part is not None else ():
            if _nearest_select(agg) is select and not _under(agg, select, (exp.Window,)):
                found.append(agg)
    return found


def _nearest_select(node: exp.Expression) -> exp.Select | None:
    return next(_enclosing_selects(node), None)


def _bare_columns(select: exp.Select, ctx: _Context) -> list[exp.Column]:
    """Columns of an aggregate query that are neither grouped nor inside an aggregate."""
    columns, others = _group_keys(select, ctx)
    aliases = {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias)}
    parts = [*select.expressions, select.args.get("having"), select.args.get("order")]
    bare = []
    for part in (p for p in parts if p is not None):
        for col in part.find_all(exp.Column):
            if (
                _nearest_select(col) is select
                and not _under(col, select, (exp.AggFunc, exp.Window))
                and (not col.table or col.table.lower() in _sources(select, ctx))
                and _column_key(col, ctx) not in columns
                and col.sql() not in others
                and not (part is select.args.get("order") and not col.table and col.name.lower() in aliases)
            ):
                bare.append(col)
    return bare


def _is_aggregate_query(select: exp.Select) -> bool:
    if select.args.get("group"):
        return True
    return any(
        _nearest_select(a) is select and not _under(a, select, (exp.Window,))
        for p in select.expressions
        for a in p.find_all(exp.AggFunc)
    )


def _template(text: str, target: str, **nodes: exp.Expression) -> exp.Expression:
    """An expression written in the target's SQL, with placeholder columns `plb_<name>` filled in."""
    tree = sqlglot.parse_one(f"SELECT {text}", read=SQLGLOT_DIALECT[target]).expressions[0]
    for placeholder in list(tree.find_all(exp.Column)):
        if placeholder.name.startswith("plb_"):
            placeholder.replace(nodes[placeholder.name[4:]].copy())
    return tree


def _row_id(select: exp.Select, target: str) -> exp.Expression | None:
    """The physical row id of a one-table SELECT's table (rows were loaded in SQLite rowid order)."""
    source = select.args["from_"].this if select.args.get("from_") else None
    if select.args.get("joins") or not isinstance(source, exp.Table):
        return None
    return exp.column("ctid" if target == "postgres" else "ROWID", table=source.alias_or_name)


def _pick_extreme(col: exp.Column, extreme: exp.Expression, select: exp.Select, target: str) -> exp.Expression:
    """The value of `col` on the first row (in rowid order, as SQLite scans) where the query's
    single min()/max() is reached."""
    order = "DESC" if isinstance(extreme, exp.Max) else "ASC"
    row_id = _row_id(select, target)
    ties = ", plb_rowid" if row_id is not None else ""
    text = (
        f"(ARRAY_AGG(plb_value ORDER BY plb_key {order} NULLS LAST{ties}))[1]"
        if target == "postgres"
        else f"MAX(plb_value) KEEP (DENSE_RANK FIRST ORDER BY plb_key {order} NULLS LAST{ties})"
    )
    return _template(text, target, value=col, key=extreme.this, rowid=row_id)


def rule_bare_columns(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite lets an aggregate query name a column that is neither grouped nor aggregated: with
    exactly one min()/max() it takes the value from that extreme row, otherwise from some row of the
    group. PostgreSQL and Oracle refuse it; the value is picked explicitly (the extreme row, or MIN,
    which is the same value whenever the column is determined by the group, as in Spider)."""
    for select in list(tree.find_all(exp.Select)):
        if not _is_aggregate_query(select):
            continue
        extremes = _extremes(select)
        for col in _bare_columns(select, ctx):
            if len(extremes) == 1:
                col.replace(_pick_extreme(col, extremes[0], select, ctx.target))
            else:
                col.replace(exp.Min(this=col.copy()))
    return tree


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _affinity_literal(column_side: exp.Expression, literal: exp.Expression, ctx: _Context) -> exp.Expression | None:
    """The literal rewritten as SQLite's affinity rules see it when compared with `column_side`."""
    family = _family(column_side, ctx) if isinstance(column_side, exp.Column) else None
    if family == "text" and _is_number_literal(literal):
        return exp.Literal.string(_number_text(literal))
    if family in NUMERIC_FAMILIES and (text := _numeric_string(literal)) is not None:
        return exp.Literal.number(text)
    return None


# Where a number stands against a text that is not a number: SQLite orders every number before
# every text, so the comparison is decided (for a non-NULL number) by the operator alone.
_NUMBER_BEFORE_TEXT = {exp.EQ: False, exp.NEQ: True, exp.LT: True, exp.LTE: True, exp.GT: False, exp.GTE: False}
_FLIPPED = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE}


def _number_before_text(col: exp.Expression, lit: exp.Expression, kind: type, ctx: _Context) -> bool | None:
    """The outcome of `col kind lit` when SQLite compares a number with a text, else None.

    A numeric column against a string that is not a number, or a date column (NUMERIC affinity,
    values stored as text) against a string that is one (SQLite turns it into a number)."""
    if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string):
        return None
    family, numeric = _family(col, ctx), _numeric_string(lit) is not None
    if family in NUMERIC_FAMILIES and not numeric:
        return _NUMBER_BEFORE_TEXT[kind]
    if family in {"date", "timestamp", "time"} and numeric:
        return _NUMBER_BEFORE_TEXT[_FLIPPED.get(kind, kind)]
    return None


def _decided(node: exp.Expression, ctx: _Context) -> exp.Expression | None:
    """A comparison SQLite decides by 'numbers before texts': `c = c` (true unless c is NULL) or
    `c <> c` (false unless NULL), which keeps SQLite's NULL result and is valid in both targets."""
    kind = type(node)
    for col, lit, as_seen in ((node.left, node.right, kind), (node.right, node.left, _FLIPPED.get(kind, kind))):
        outcome = _number_before_text(col, lit, as_seen, ctx)
        if outcome is not None:
            return (exp.EQ if outcome else exp.NEQ)(this=col.copy(), expression=col.copy())
    return None


def _date_as_text(col_side: exp.Expression, literal: exp.Expression, ctx: _Context) -> bool:
    """SQLite stores dates as text and compares them with a string as text ('2010' < '2010-05-01');
    PostgreSQL would parse the string as a date (or fail, 22007)."""
    return (
        isinstance(col_side, exp.Column)
        and isinstance(literal, exp.Literal)
        and literal.is_string
        and _family(col_side, ctx) in {"date", "timestamp", "time"}
    )


_ORACLE_DATE_FORMATS = {"date": "YYYY-MM-DD", "timestamp": "YYYY-MM-DD HH24:MI:SS"}


def _date_text(node: exp.Expression, family: str, target: str) -> exp.Expression:
    """A date as the ISO text SQLite stored (PostgreSQL's text cast is ISO; Oracle's follows NLS)."""
    if target == "oracle" and family in _ORACLE_DATE_FORMATS:
        return exp.func("TO_CHAR", node, exp.Literal.string(_ORACLE_DATE_FORMATS[family]))
    return _text_cast(node, target)


def rule_text_affinity_comparison(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite compares a TEXT column with a number as text ('2000' vs 2000 gives TEXT affinity to
    the number), a numeric column with a numeric string as numbers, with any other string as
    'number before text', and a date column with a string as text; PostgreSQL raises
    42883/22P02/22007 or compares dates."""
    for node in list(tree.find_all(*_COMPARISONS)):
        if (decided := _decided(node, ctx)) is not None:
            node.replace(decided)
            continue
        for col_side, lit_side in ((node.left, node.right), (node.right, node.left)):
            if _date_as_text(col_side, lit_side, ctx):
                col_side.replace(_date_text(col_side.copy(), _family(col_side, ctx), ctx.target))
                break
            new = _affinity_literal(col_side, lit_side, ctx)
            if new is not None:
                lit_side.replace(new)
    for node in list(tree.find_all(exp.In, exp.Between)):
        values = node.expressions if isinstance(node, exp.In) else [node.args["low"], node.args["high"]]
        for value in list(values):
            new = _affinity_literal(node.this, value, ctx)
            if new is not None:
                value.replace(new)
    return tree


# SQLite reads a number from the start of a text (leading spaces allowed, '12abc' is 12, 'abc' is 0).
_SQLITE_NUMBER = {
    "postgres": "CASE WHEN plb_x IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(plb_x AS TEXT), "
    r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END",
    "oracle": "CASE WHEN plb_x IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(plb_x), "
    r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS BINARY_DOUBLE), 0) END",
}
TEXT_LIKE_FAMILIES = frozenset({"text", "date", "timestamp", "time"})


def _sqlite_number(node: exp.Expression, target: str) -> exp.Expression:
    """`node` (text, or a date SQLite stores as text) read as a number the way SQLite does."""
    return _template(_SQLITE_NUMBER[target], target, x=node)


def _text_cast(node: exp.Expression, target: str) -> exp.Expression:
    return exp.cast(node, "TEXT" if target == "postgres" else "VARCHAR(4000)")


def _projection(query: exp.Expression) -> exp.Expression | None:
    """The single output expression of a subquery (the operand of IN (SELECT ...))."""
    select = query.this if isinstance(query, exp.Subquery) else query
    if isinstance(select, exp.Select) and len(select.expressions) == 1:
        return select.expressions[0].unalias()
    return None


def _mixed(a: exp.Expression, b: exp.Expression, ctx: _Context) -> bool:
    """Whether `a` is a numeric column and `b` a text column (not literals: see the literal rule)."""
    return (
        not isinstance(a, exp.Literal)
        and not isinstance(b, exp.Literal)
        and _family(a, ctx) in NUMERIC_FAMILIES
        and _family(b, ctx) == "text"
    )


def rule_mixed_affinity_comparison(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite compares a numeric column with a TEXT column (Spider joins INTEGER ids to TEXT ones)
    by giving the text NUMERIC affinity; PostgreSQL raises 42883. Equality compares the number's
    text with the text (the stored texts are canonical numbers); ordering reads the text as a number."""
    for node in list(tree.find_all(*_COMPARISONS)):
        for num, txt in ((node.left, node.right), (node.right, node.left)):
            if _mixed(num, txt, ctx):
                if isinstance(node, (exp.EQ, exp.NEQ)):
                    num.replace(_text_cast(num.copy(), ctx.target))
                else:
                    txt.replace(_sqlite_number(txt.copy(), ctx.target))
                break
    for node in list(tree.find_all(exp.In)):
        inner = _projection(node.args["query"]) if node.args.get("query") else None
        if inner is None:
            continue
        if _mixed(node.this, inner, ctx):
            node.this.replace(_text_cast(node.this.copy(), ctx.target))
        elif _mixed(inner, node.this, ctx):
            inner.replace(_text_cast(inner.copy(), ctx.target))
    return tree


def rule_text_arithmetic(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite's sum(), avg() and + - * / read text (and dates, which it stores as text) as numbers;
    PostgreSQL has no avg(text) or text - text (42883)."""
    operands = [agg.this for agg in tree.find_all(exp.Sum, exp.Avg)]
    for op in tree.find_all(exp.Add, exp.Sub, exp.Mul, exp.Div):
        operands += [op.left, op.right]
    for node in [n for n in operands if _family(n, ctx) in TEXT_LIKE_FAMILIES]:
        node.replace(_sqlite_number(node.copy(), ctx.target))
    return tree


def _as_text(node: exp.Expression, ctx: _Context) -> exp.Expression:
    """A copy of `node` (still in the tree) as text: SQLite's LIKE converts its operands to text,
    PostgreSQL's LIKE has no numeric form."""
    family = _family(node, ctx)
    if family is None or family == "text" or isinstance(node, exp.Literal):
        return node.copy()
    return _text_cast(node.copy(), ctx.target)


_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _ascii_lower(node: exp.Expression) -> exp.Expression:
    """Lower-case A-Z only, as SQLite's LIKE folds case (LOWER/ILIKE would also fold 'Ë' to 'ë')."""
    return exp.func("TRANSLATE", node, exp.Literal.string(_ASCII_UPPER), exp.Literal.string(_ASCII_UPPER.lower()))


def _ascii_pattern(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string and node.this.isascii()


def rule_like_case_insensitive(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite's LIKE folds ASCII letters only. With an ASCII pattern literal that is ILIKE in
    PostgreSQL and UPPER() on both sides in Oracle; otherwise both sides fold A-Z by TRANSLATE."""
    for like in list(tree.find_all(exp.Like)):
        left, right, negate = _as_text(like.this, ctx), like.expression.copy(), like.args.get("negate")
        if not _ascii_pattern(right):
            new = exp.Like(this=_ascii_lower(left), expression=_ascii_lower(right))
        elif ctx.target == "postgres":
            new = exp.ILike(this=left, expression=right)
        else:
            new = exp.Like(this=exp.Upper(this=left), expression=exp.Upper(this=right))
        like.replace(exp.Not(this=new) if negate else new)
    return tree


def rule_integer_division(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """SQLite divides integers as integers (truncating); Oracle's / is always exact: TRUNC it.
    PostgreSQL's bigint / bigint already truncates."""
    if ctx.target != "oracle":
        return tree
    for div in list(tree.find_all(exp.Div)):
        if _family(div.left, ctx) == "integer" and _family(div.right, ctx) == "integer":
            div.replace(exp.func("TRUNC", div.copy()))
    return tree


def rule_cross_join(tree: exp.Expression, ctx: _Context) -> exp.Expression:
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
    temporary B-tree (measured on SQLite 3.40; `_Context.groups_resorted` says which)."""
    projections = select.expressions
    keys = []
    for item in select.args["group"].expressions:
        if isinstance(item, exp.Literal) and item.is_int and 0 < int(item.this) <= len(projections):
            item = projections[int(item.this) - 1].unalias()
        keys.append(exp.Ordered(this=item.copy(), desc=desc, nulls_first=not desc))
    return keys


def _scan_tiebreak(select: exp.Select, target: str) -> list[exp.Expression]:
    """Rows of a one-table query tied on the ORDER BY keys come out of SQLite in rowid order; the
    loaded table holds them in that order, so the physical row id reproduces it."""
    row_id = _row_id(select, target)
    if row_id is None or select.args.get("distinct"):
        return []
    return [exp.Ordered(this=row_id, nulls_first=True)]


def rule_sqlite_tie_order(tree: exp.Expression, ctx: _Context) -> exp.Expression:
    """Rows with equal ORDER BY keys come out of SQLite in a definite order (and LIMIT keeps those
    first ones); PostgreSQL's sort is not stable. The tie order is spelled out as extra sort keys."""
    for select in list(tree.find_all(exp.Select)):
        order = select.args.get("order")
        if order is None or not order.expressions or not select.args.get("from_"):
            continue
        if select.args.get("group"):
            desc = ctx.groups_resorted and bool(order.expressions[-1].args.get("desc"))
            extra = [] if select.args.get("distinct") else _group_tiebreak(select, desc)
        elif _is_aggregate_query(select):
            extra = []
        else:
            extra = _scan_tiebreak(select, ctx.target)
        order.set("expressions", [*order.expressions, *extra])
    return tree


def _target_identifier(name) -> exp.Identifier:
    return exp.Identifier(this=name.name, quoted=name.quoted)


def _table_names(tree: exp.Expression, ctx: _Context) -> list[tuple[exp.Expression, exp.Expression]]:
    out = []
    for table in tree.find_all(exp.Table):
        known = ctx.tables.get(table.name.lower())
        if known is not None:
            out.append((table.this, _target_identifier(known.target)))
    return out


def _column_names(tree: exp.Expression, ctx: _Context) -> list[tuple[exp.Expression, exp.Expression]]:
    out = []
    for col in tree.find_all(exp.Column):
        table, column = _resolve(col, ctx)
        if column is not None and isinstance(col.this, exp.Identifier):
            out.append((col.this, _target_identifier(column.target)))
        qualifier = col.args.get("table")
        if col.table and col.table.lower() in ctx.tables and not _is_alias(col, ctx):
            out.append((qualifier, _target_identifier(ctx.tables[col.table.lower()].target)))
    return out


def _is_alias(col: exp.Column, ctx: _Context) -> bool:
    """Whether the column's qualifier is a table alias (T1) rather than a table's own name."""
    for select in _enclosing_selects(col):
        for item in [select.args.get("from_")] + list(select.args.get("joins") or []):
            source = item.this if item is not None else None
            if source is not None and source.alias and source.alias.lower() == col.table.lower():
                return True
    return False


def rule_names(tree: exp.Expression, ctx: _Context) -> exp.Expression:
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


def rule_sqlite_only_syntax(tree: exp.Expression, ctx: _Context) -> exp.Expression:
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


def sqlite_plan(conn: sqlite3.Connection, sql: str) -> list[str] | None:
    """SQLite's EXPLAIN QUERY PLAN lines for `sql` (None if it has none)."""
    try:
        return [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
    except sqlite3.Error:
        return None


def _parse(sql: str) -> exp.Expression:
    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except sqlglot.errors.SqlglotError as exc:
        raise TranspileError(f"sqlglot cannot parse the SQLite query: {str(exc)[:200]}") from exc
    if len(trees) != 1 or trees[0] is None:
        raise TranspileError(f"expected one statement, got {len(trees)}")
    return trees[0]


def _render(tree: exp.Expression, target: str) -> str:
    """The tree as target SQL, which must parse back in that dialect."""
    try:
        text = tree.sql(dialect=SQLGLOT_DIALECT[target], unsupported_level=sqlglot.ErrorLevel.RAISE)
        sqlglot.parse_one(text, read=SQLGLOT_DIALECT[target])
    except sqlglot.errors.SqlglotError as exc:
        raise TranspileError(f"no valid {target} text: {str(exc)[:200]}") from exc
    return text


def apply_rule(
    name: str, sql: str, db: NormalizedDatabase, target: str = "postgres", plan: list[str] | None = None
) -> str:
    """One rule alone on a SQLite query, rendered for `target` (to test and inspect rules one by one)."""
    rule = dict(RULES)[name]
    return _render(rule(_parse(sql), _Context.of(db, target, plan)), target)


def transpile(sql: str, db: NormalizedDatabase, target: str = "postgres", plan: list[str] | None = None) -> str:
    """A SQLite gold query as `target` SQL against `db`'s target names; TranspileError if it can't.

    `plan` (`sqlite_plan`) tells how SQLite orders groups, which decides the order of tied rows.
    """
    if target not in SQLGLOT_DIALECT:
        raise ValueError(f"unknown target {target!r}")
    tree, ctx = _parse(sql), _Context.of(db, target, plan)
    for _name, rule in RULES:
        tree = rule(tree, ctx)
    return _render(tree, target)


def oracle_names(db: NormalizedDatabase) -> NormalizedDatabase:
    """The Oracle names of the same source tables (no rows): what Oracle transpiling maps to."""
    source = SourceDatabase(db.source, db.name, "sqlite", "", [t.source for t in db.tables])
    return normalize(source, "oracle")


def has_outer_order(sql: str) -> bool:
    """Whether the outermost statement sorts its result (then row order is part of the answer)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return False
    return tree is not None and tree.args.get("order") is not None


# ---- result comparison -----------------------------------------------------------------------


def _scalar(value):
    """One result value in a comparable form: numbers as int/float, dates as ISO text, bytes as hex.

    PostgreSQL returns Decimal for numeric and bool for boolean; SQLite returns int/float and 0/1;
    SQLite keeps dates as text.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and value.is_finite() else float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _as_number(value):
    """A string that holds a number, as that number (SQLite affinity may return either form)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


def _lenient_columns(source: list[tuple], target: list[tuple]) -> set[int]:
    """Columns where one side returns numbers and the other text: compared as numbers there."""

    def kinds(rows, i):
        return {type(r[i]) for r in rows if i < len(r) and r[i] is not None}

    width = max((len(r) for r in source + target), default=0)
    out = set()
    for i in range(width):
        a, b = kinds(source, i), kinds(target, i)
        if (str in a and b & {int, float}) or (str in b and a & {int, float}):
            out.add(i)
    return out


def _normalize_rows(rows: list[tuple], lenient: set[int]) -> list[tuple]:
    out = []
    for row in rows:
        values = tuple(_scalar(v) for v in row)
        out.append(tuple(_as_number(v) if i in lenient else v for i, v in enumerate(values)))
    return out


def _rows_equal(a: tuple, b: tuple, float_tol: float) -> bool:
    return same(a, b, Tolerance(FLOAT_ABS_TOL, float_tol))


def _exact_key(row: tuple) -> tuple:
    """A hashable key equal for equal rows; floats rounded so near-equal ones usually meet."""
    return tuple(
        (1, float(f"{v:.9g}")) if isinstance(v, float) else (1, v) if isinstance(v, int) else (0, v) for v in row
    )


@dataclass(frozen=True)
class Comparison:
    equal: bool
    diff: str = ""


_MAX_PAIRINGS = 4_000_000  # rows left after exact matching, paired within tolerance one by one


def _unmatched(source: list[tuple], target: list[tuple], float_tol: float) -> tuple[list, list]:
    """Rows of each side with no partner on the other (exact keys first, then within tolerance)."""
    left = Counter(_exact_key(r) for r in source)
    right = Counter(_exact_key(r) for r in target)
    by_key = {_exact_key(r): r for r in source + target}
    only_source = [by_key[k] for k, n in (left - right).items() for _ in range(n)]
    only_target = [by_key[k] for k, n in (right - left).items() for _ in range(n)]
    if len(only_source) * len(only_target) > _MAX_PAIRINGS:
        return only_source, only_target  # too many to pair one by one: already far apart
    still = []
    for row in only_source:
        partner = next((i for i, t in enumerate(only_target) if _rows_equal(row, t, float_tol)), None)
        if partner is None:
            still.append(row)
        else:
            only_target.pop(partner)
    return still, only_target


def _show(rows: list[tuple], limit: int = 3) -> str:
    text = ", ".join(repr(r) for r in rows[:limit])
    return text + (f" (+{len(rows) - limit} more)" if len(rows) > limit else "")


def compare(
    source_rows: list[tuple], target_rows: list[tuple], ordered: bool, float_tol: float = FLOAT_REL_TOL
) -> Comparison:
    """Whether two results are the same answer: the same multiset of rows (the same sequence when
    `ordered`), values normalized by `_scalar`, numbers equal within `float_tol` (relative)."""
    lenient = _lenient_columns(source_rows, target_rows)
    src, tgt = _normalize_rows(source_rows, lenient), _normalize_rows(target_rows, lenient)
    only_src, only_tgt = _unmatched(src, tgt, float_tol)
    if only_src or only_tgt:
        return Comparison(
            False,
            (f"{len(src)} vs {len(tgt)} rows; only in source: {_show(only_src)}; only in target: {_show(only_tgt)}")[
                :1000
            ],
        )
    if ordered:
        for i, (a, b) in enumerate(zip(src, tgt)):
            if not _rows_equal(a, b, float_tol):
                return Comparison(False, f"same rows, different order: row {i} is {a!r} vs {b!r}"[:1000])
    return Comparison(True)


# ---- equivalence -----------------------------------------------------------------------------

CLASSES = ("identical", "source_error", "transpile_error", "runtime_error", "result_mismatch")


@dataclass
class EquivalenceResult:
    query: GoldQuery
    cls: str  # one of CLASSES
    postgres_sql: str = ""
    oracle_sql: str = ""
    oracle_error: str = ""  # why no Oracle text could be made ("" when there is one)
    sqlstate: str = ""  # runtime_error: PostgreSQL's SQLSTATE
    detail: str = ""  # the error message, or the diff of a result mismatch
    source_rows: int | None = None
    target_rows: int | None = None

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
        result.oracle_sql = transpile(query.sql, oracle, "oracle", plan)
    except TranspileError as exc:
        result.oracle_error = exc.reason
    try:
        result.postgres_sql = transpile(query.sql, normalized, "postgres", plan)
    except TranspileError as exc:
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
    text = result.postgres_sql if target == "postgres" else result.oracle_sql
    if not text:
        result.cls, result.detail = "transpile_error", result.oracle_error
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
    """
    oracle = oracle or oracle_names(normalized)
    source = connect_readonly(Path(sqlite_path))
    try:
        return [check_query(q, source, normalized, oracle, session, target) for q in queries]
    finally:
        source.close()


def summarize(results: list[EquivalenceResult]) -> dict:
    """{"total", "identical", "mismatch": {class: n}} as the release manifest reports it."""
    counts = Counter(r.cls for r in results)
    return {
        "total": len(results),
        "identical": counts.get("identical", 0),
        "mismatch": {c: counts[c] for c in CLASSES[1:] if counts.get(c)},
    }
