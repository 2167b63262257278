"""The one rule that turns a result set into the text lines a Spider-PLSQL block must print.

One row per line, fields in column order separated by ',' with no quoting, and:
- NULL prints as `NULL`;
- integers print in full; other numbers are rounded half away from zero to 4 decimal
  places, trailing zeros and a trailing point removed (2.50 -> `2.5`, 3.0 -> `3`, -0.0 -> `0`);
- dates print as `YYYY-MM-DD`, timestamps as `YYYY-MM-DD HH24:MI:SS`;
- booleans as `true` / `false`; bytes as lower-case hex; text as it is.
A text value `NULL` and a NULL print alike, and text holding ',' makes a line ambiguous;
rows are compared whole, so neither changes a verdict in the released tasks.

The rule is implemented three times: in Python for the gold result (`format_row`), and as
SQL expressions for the PostgreSQL and Oracle reference blocks (`field_expression`, from each
dialect's `field_prints`).
"""

from __future__ import annotations

import datetime as dt
import decimal

from plbench.dialects import DIALECTS

DECIMALS = 4
NULL_TEXT = "NULL"
SEPARATOR = ","

_QUANTUM = decimal.Decimal(1).scaleb(-DECIMALS)


def format_number(value: decimal.Decimal | float | int) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(value))
    if not d.is_finite():
        return {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}[str(d)]
    text = format(d.quantize(_QUANTUM, rounding=decimal.ROUND_HALF_UP), "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def format_value(value) -> str:
    if value is None:
        return NULL_TEXT
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return format_number(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    return str(value)


def format_row(row: tuple) -> str:
    return SEPARATOR.join(format_value(v) for v in row)


# PostgreSQL type names (pg_type.typname) by how their values print.
_PG_NUMERIC = {"numeric", "float4", "float8", "money"}
_PG_INTEGER = {"int2", "int4", "int8", "oid"}


def type_class(pg_type: str) -> str:
    """`number`, `integer`, `date`, `timestamp`, `boolean`, `binary` or `text` for a PostgreSQL type name."""
    if pg_type in _PG_NUMERIC:
        return "number"
    if pg_type in _PG_INTEGER:
        return "integer"
    return {
        "date": "date",
        "timestamp": "timestamp",
        "timestamptz": "timestamp",
        "bool": "boolean",
        "bytea": "binary",
    }.get(pg_type, "text")


def field_expression(dialect: str, ref: str, kind: str) -> str:
    """SQL text printing the value `ref` (of type class `kind`) by the rule, NULL included."""
    return DIALECTS[dialect].print_field(ref, kind, DECIMALS, NULL_TEXT)


def line_expression(dialect: str, refs: list[str], kinds: list[str]) -> str:
    sep = f" || '{SEPARATOR}' || "
    return sep.join(field_expression(dialect, r, k) for r, k in zip(refs, kinds))
