"""Type mapping on top of sqlglot, owned as data tables.

sqlglot alone emits DDL these targets reject (DATETIME, AUTO_INCREMENT, STRUCT<>,
BOOLEAN DEFAULT 1, Oracle-23ai-only BOOLEAN...), so the decision is made here:

1. `SOURCE_RULES` maps a declared source type to a neutral family; the first
   matching rule wins and its id is recorded on the column.
2. `refine_family` checks the family against the column's values (SQLite is
   dynamically typed: an INTEGER column may hold text) and widens it, saying why.
3. Each target dialect maps a family to its column type (`Dialect.column_types`).

Identifiers are folded the way each dialect folds unquoted names, quoted when they
are not plain or are reserved, cut to the dialect's byte limit with a hash, and
de-duplicated after folding (`IdentifierMap`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass

from plbench.dialects import DIALECTS

ALL = frozenset({"sqlite", "bigquery", "snowflake"})
WAREHOUSES = frozenset({"bigquery", "snowflake"})

# (rule id, source dialects, pattern searched in the upper-cased declared type, family, why)
SOURCE_RULES: tuple[tuple[str, frozenset, str, str, str], ...] = (
    (
        "sqlite_bool_as_integer",
        frozenset({"sqlite"}),
        r"^(BOOL|BOOLEAN|BIT)\b",
        "integer",
        "SQLite has no boolean type: values are 0/1 integers and queries compare them with integers",
    ),
    ("date", ALL, r"^DATE$", "date", "calendar date"),
    (
        "timestamp",
        ALL,
        r"^(DATETIME|TIMESTAMP)",
        "timestamp",
        "date and time; time zones are not kept (sources store local or UTC times)",
    ),
    ("time", ALL, r"^TIME(\(\d+\))?$", "time", "time of day"),
    ("boolean", WAREHOUSES, r"^(BOOL|BOOLEAN)$", "boolean", "boolean"),
    (
        "bigquery_geography_wkt",
        frozenset({"bigquery"}),
        r"^GEOGRAPHY$",
        "text",
        "BigQuery shows GEOGRAPHY values as WKT text (POINT(...)), which is not JSON",
    ),
    (
        "nested_as_json",
        ALL,
        r"^(STRUCT|ARRAY|RECORD|VARIANT|OBJECT|JSONB?|GEOGRAPHY|GEOMETRY|POINT|MAP)\b",
        "json",
        "nested or spatial values are kept as JSON text (jsonb / CLOB IS JSON)",
    ),
    (
        "integer",
        ALL,
        r"^(INT64|INT|INTEGER|BIGINT|SMALLINT|TINYINT|BYTEINT|MEDIUMINT|INT2|INT4|INT8)$",
        "integer",
        "integer",
    ),
    ("number_scale_0", WAREHOUSES, r"^NUMBER\(\s*\d+\s*,\s*0\s*\)$", "integer", "NUMBER with scale 0"),
    (
        "decimal_scale_0",
        WAREHOUSES,
        r"^(DECIMAL|NUMERIC)\(\s*\d+\s*,\s*0\s*\)$",
        "integer",
        "DECIMAL with scale 0 (sqlglot spells Snowflake NUMBER(p,0) so)",
    ),
    ("decimal", ALL, r"^(DECIMAL|NUMERIC|NUMBER|BIGNUMERIC|BIGDECIMAL|DEC)\b", "decimal", "exact number"),
    ("float", ALL, r"^(FLOAT|FLOAT64|DOUBLE|REAL|FLOAT4|FLOAT8)", "float", "binary floating point"),
    ("binary", ALL, r"^(BYTES|BINARY|VARBINARY|BLOB)\b", "binary", "bytes"),
    ("text", ALL, r"^(STRING|VARCHAR|CHAR|TEXT|NVARCHAR|NCHAR|CHARACTER|CLOB|NTEXT)", "text", "character string"),
    # The SQLite affinity rules (SQLite "Datatypes", section 3.1) for any other declared type.
    ("sqlite_affinity_integer", frozenset({"sqlite"}), r"INT", "integer", "SQLite INTEGER affinity"),
    ("sqlite_affinity_text", frozenset({"sqlite"}), r"CHAR|CLOB|TEXT", "text", "SQLite TEXT affinity"),
    ("sqlite_affinity_real", frozenset({"sqlite"}), r"REAL|FLOA|DOUB", "float", "SQLite REAL affinity"),
    (
        "sqlite_untyped",
        frozenset({"sqlite"}),
        r"^$|BLOB",
        "text",
        "no declared type (BLOB affinity): the family is taken from the values",
    ),
    ("sqlite_affinity_numeric", frozenset({"sqlite"}), r".", "decimal", "SQLite NUMERIC affinity"),
    ("unknown_as_text", WAREHOUSES, r".", "text", "a type with no rule is kept as text"),
)


def is_warehouse(source: str) -> bool:
    """BigQuery and Snowflake: tables live in datasets and sample values come as JSON-export text."""
    return source in WAREHOUSES


# source dialect -> its rules in order, compiled
_RULES_BY_SOURCE = {
    source: tuple((rid, re.compile(pat), fam) for rid, sources, pat, fam, _ in SOURCE_RULES if source in sources)
    for source in sorted(ALL)
}
RULE_REASONS = {rid: why for rid, _, _, _, why in SOURCE_RULES}


def source_family(source_dialect: str, declared: str) -> tuple[str, str]:
    """(family, rule id) for a declared source type."""
    declared = declared.strip().upper()
    for rid, pattern, family in _RULES_BY_SOURCE.get(source_dialect, ()):
        if pattern.search(declared):
            return family, rid
    raise ValueError(f"no type rule for {source_dialect} type {declared!r}")


# ---- data refinement ---------------------------------------------------------------------

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}$")
_INT64 = 2**63


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -_INT64 <= v < _INT64


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _parses(pattern: re.Pattern, parse, v) -> bool:
    if not isinstance(v, str) or not pattern.match(v):
        return False
    try:
        parse(v)
        return True
    except ValueError:
        return False


def _is_json(v) -> bool:
    if isinstance(v, (dict, list)):
        return True
    if not isinstance(v, str):
        return False
    try:
        json.loads(v)
        return True
    except ValueError:
        return False


_FITS = {
    "integer": _is_int,
    "decimal": lambda v: _is_number(v) and not (isinstance(v, float) and not math.isfinite(v)),
    "float": _is_number,
    "text": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool) or v in (0, 1) or (isinstance(v, str) and v.lower() in ("true", "false")),
    "date": lambda v: isinstance(v, dt.date) or _parses(_DATE, dt.date.fromisoformat, v),
    "timestamp": lambda v: isinstance(v, dt.datetime) or _parses(_TIMESTAMP, dt.datetime.fromisoformat, v),
    "time": lambda v: isinstance(v, dt.time) or _parses(_TIME, dt.time.fromisoformat, v),
    "binary": lambda v: isinstance(v, (bytes, bytearray, memoryview)),
    "json": _is_json,
}

# What a family widens to when some value does not fit it, in order of preference.
_WIDER = {
    "integer": ("decimal", "float", "text"),
    "decimal": ("float", "text"),
    "float": ("text",),
    "boolean": ("integer", "text"),
    "date": ("timestamp", "text"),
    "timestamp": ("text",),
    "time": ("text",),
    "json": ("text",),
    "binary": ("text",),
    "text": (),
}


def _describe_misfit(values: list, family: str) -> str:
    bad = [v for v in values if not _FITS[family](v)]
    return f"{len(bad)} value(s) are not {family}, e.g. {bad[0]!r:.60}"


def refine_family(family: str, rule: str, values: list) -> tuple[str, str]:
    """The family the non-NULL `values` actually fit, and a note when it differs from `family`."""
    present = [v for v in values if v is not None]
    if rule == "sqlite_untyped":
        for candidate in ("integer", "float", "text", "binary"):
            if all(_FITS[candidate](v) for v in present):
                return candidate, "" if candidate == "text" else f"untyped column holds only {candidate} values"
        return "text", "untyped column holds mixed values: kept as text"
    if all(_FITS[family](v) for v in present):
        return family, ""
    why = _describe_misfit(present, family)
    wider_families = _WIDER[family]
    if family == "integer" and any(isinstance(v, float) for v in present):
        wider_families = ("float", "text")  # REAL values in an INTEGER column: keep SQLite's double semantics
    for wider in wider_families:
        if all(_FITS[wider](v) or (wider == "text" and v is not None) for v in present):
            return wider, f"declared {family}, widened to {wider}: {why}"
    return "text", f"declared {family}, kept as text: {why}"


# family -> the value types `coerce` returns unchanged
_UNCHANGED = {
    "text": {str},
    "integer": {int},
    "decimal": {decimal.Decimal},
    "float": {float},
    "boolean": {bool},
    "date": {dt.date, dt.datetime},
    "timestamp": {dt.datetime},
    "time": {dt.time},
    "binary": {bytes},
    "json": {str},
}


def coerce_column(values: list, family: str) -> list:
    """`coerce` over a column's values. A column whose value types all come out unchanged (most of
    them: SQLite gives text as str, integers as int) is returned as it is, unvisited."""
    if set(map(type, values)) - {type(None)} <= _UNCHANGED.get(family, set()):
        return values
    return [coerce(v, family) for v in values]


def coerce(value, family: str):
    """A source value as the Python value loaded into a column of `family` (None stays None)."""
    if value is None:
        return None
    if family == "text":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).decode("utf-8", "replace")
        if isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return value if isinstance(value, str) else str(value)
    if family == "integer":
        return int(value)
    if family == "decimal":
        return (
            value
            if isinstance(value, decimal.Decimal)
            else decimal.Decimal(repr(value) if isinstance(value, float) else str(value))
        )
    if family == "float":
        return float(value)
    if family == "boolean":
        return value.lower() == "true" if isinstance(value, str) else bool(value)
    if family == "date":
        return value if isinstance(value, dt.date) else dt.date.fromisoformat(value)
    if family == "timestamp":
        return value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)
    if family == "time":
        return value if isinstance(value, dt.time) else dt.time.fromisoformat(value)
    if family == "binary":
        return bytes(value)
    if family == "json":
        return json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (dict, list)) else value
    raise ValueError(f"unknown family {family!r}")


# ---- identifiers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetName:
    name: str  # the stored (folded) name
    quoted: bool
    why: str = ""  # why it differs from the plain folded source name, if it does

    @property
    def sql(self) -> str:
        return '"' + self.name.replace('"', '""') + '"' if self.quoted else self.name


class IdentifierMap:
    """Source names → target names in one dialect and one namespace (a database's tables, or
    one table's columns): folded, quoted when needed, within the byte limit, unique after folding."""

    def __init__(self, dialect: str):
        self.dialect = DIALECTS[dialect]
        self._limit = self.dialect.max_identifier_bytes
        self._names: dict[str, TargetName] = {}  # lower-cased source name -> target
        self._taken: set[str] = set()

    def add(self, source: str) -> TargetName:
        key = source.lower()
        if key in self._names:
            return self._names[key]
        name, whys = self.dialect.fold(source.replace('"', "")), []
        if len(name.encode()) > self._limit:
            # Folded too: an unquoted Oracle name ending in lower-case hex would be stored upper-cased.
            digest = self.dialect.fold(hashlib.sha1(source.encode()).hexdigest()[:8])
            name = name.encode()[: self._limit - 9].decode("utf-8", "ignore") + "_" + digest
            whys.append(f"longer than {self._limit} bytes")
        base, n = name, 2
        while name in self._taken:
            suffix = f"_{n}"
            name = base.encode()[: self._limit - len(suffix)].decode("utf-8", "ignore") + suffix
            n += 1
            whys.append("collides with another name after case folding or truncation")
        quoted = self.dialect.needs_quotes(name)
        self._taken.add(name)
        target = TargetName(name, quoted, "; ".join(whys))
        self._names[key] = target
        return target

    def __getitem__(self, source: str) -> TargetName:
        return self._names[source.lower()]

    def __contains__(self, source: str) -> bool:
        return source.lower() in self._names


@functools.lru_cache(maxsize=4096)
def namespace_targets(dialect: str, names: tuple[str, ...]) -> tuple[TargetName, ...]:
    """The target names of one namespace's source names, in order, as one `IdentifierMap` adds them.
    Spider 2.0 repeats one table's columns under hundreds of shard names: each column list is mapped once."""
    mapping = IdentifierMap(dialect)
    return tuple(map(mapping.add, names))
