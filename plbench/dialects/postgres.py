"""PostgreSQL / PL/pgSQL: arrays, composite types, pg_temp comparison helpers, RAISE NOTICE verdicts.

Rules (each a line of a table in the docs and a test):
- int → bigint when every int of the task fits 64 bits, else numeric; float → double
  precision; str → text; bool → boolean.
- list / tuple / set of a non-collection → `<elem>[]`; a collection of collections
  uses a one-field wrapper composite (`plb_list_i8 AS (items bigint[])`), because
  PostgreSQL's multidimensional arrays cannot hold jagged or empty inner lists.
- tuple of mixed types → composite type; dict → array of a (k, v) composite;
  mixed scalar kinds → a tagged composite (tag, int_v, float_v, str_v, bool_v).
- equality: `IS NOT DISTINCT FROM` (NULL-safe, ordered, exact) unless the type holds a
  float (tolerance) or a set / dict (order-free); then a pg_temp helper function.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

from sqlglot import exp

from plbench.dialects.base import (
    VARIANT_FIELDS,
    Dialect,
    TypeEnv,
    Unit,
    UnrepresentableValue,
    json_text,
    kv_token,
    needs_tolerance,
    needs_unordered,
    shape_token,
    sort_unordered,
    variant_member,
)
from plbench.types import PyType

# SQL key words reserved in PostgreSQL (Appendix C: "reserved", "reserved, can be function or
# type", and "non-reserved, cannot be function or type", which parameter names may not be either)
# plus PL/pgSQL's reserved words; a parameter or function may not take these names unquoted.
POSTGRES_RESERVED = frozenset(
    """
ALL ANALYSE ANALYZE AND ANY ARRAY AS ASC ASYMMETRIC AUTHORIZATION BINARY BOTH CASE CAST CHECK COLLATE
COLLATION COLUMN CONCURRENTLY CONSTRAINT CREATE CROSS CURRENT_CATALOG CURRENT_DATE CURRENT_ROLE
CURRENT_SCHEMA CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DEFAULT DEFERRABLE DESC DISTINCT DO ELSE END
EXCEPT FALSE FETCH FOR FOREIGN FREEZE FROM FULL GRANT GROUP HAVING ILIKE IN INITIALLY INNER INTERSECT INTO
IS ISNULL JOIN LATERAL LEADING LEFT LIKE LIMIT LOCALTIME LOCALTIMESTAMP NATURAL NOT NOTNULL NULL OFFSET ON
ONLY OR ORDER OUTER OVERLAPS PLACING PRIMARY REFERENCES RETURNING RIGHT SELECT SESSION_USER SIMILAR SOME
SYMMETRIC SYSTEM_USER TABLE TABLESAMPLE THEN TO TRAILING TRUE UNION UNIQUE USER USING VARIADIC VERBOSE WHEN
WHERE WINDOW WITH
BEGIN BY DECLARE EXECUTE FOREACH IF LOOP STRICT WHILE
BETWEEN BIGINT BIT BOOLEAN CHAR CHARACTER COALESCE DEC DECIMAL EXISTS EXTRACT FLOAT GREATEST GROUPING INOUT INT
INTEGER INTERVAL JSON JSON_ARRAY JSON_ARRAYAGG JSON_OBJECT JSON_OBJECTAGG LEAST NATIONAL NCHAR NONE NORMALIZE NULLIF
NUMERIC OUT OVERLAY POSITION PRECISION REAL ROW SETOF SMALLINT SUBSTRING TIME TIMESTAMP TREAT TRIM VALUES VARCHAR
XMLATTRIBUTES XMLCONCAT XMLELEMENT XMLEXISTS XMLFOREST XMLNAMESPACES XMLPARSE XMLPI XMLROOT XMLSERIALIZE XMLTABLE
""".split()
)

_SCALAR_SQL = {"float": "double precision", "str": "text", "bool": "boolean", "json": "jsonb"}


def _quote(text: str) -> str:
    if "\x00" in text:
        raise UnrepresentableValue("unsupported_value", "PostgreSQL text cannot hold a NUL character")
    return "'" + text.replace("'", "''") + "'"


def _float(value: float) -> str:
    if math.isnan(value):
        return "'NaN'::double precision"
    if math.isinf(value):
        return f"'{'' if value > 0 else '-'}Infinity'::double precision"
    return f"{value!r}::double precision"


def _dollar_quote(body: str) -> str:
    tag = "plb"
    while f"${tag}$" in body:
        tag += "_"
    return f"${tag}$\n{body}\n${tag}$"


class PostgresDialect(Dialect):
    name = "postgres"
    display_name = "PostgreSQL"
    max_identifier_bytes = 63
    reserved = POSTGRES_RESERVED

    # ---- types -----------------------------------------------------------
    def int_type(self, values_fit_bigint: bool) -> str:
        return "bigint" if values_fit_bigint else "numeric"

    def _token(self, t: PyType, env: TypeEnv) -> str:
        return shape_token(t, "i8" if env.int_sql == "bigint" else "num")

    def sql_type(self, t: PyType, env: TypeEnv, top: bool = True) -> str:
        kind = t.kind
        if kind == "int":
            return env.int_sql
        if kind in _SCALAR_SQL:
            return _SCALAR_SQL[kind]
        if kind in ("list", "tuple_seq", "set"):
            return self._element_type(t.elem, env) + "[]"
        if kind == "dict":
            return self._kv(t, env) + "[]"
        if kind == "record":
            return self._composite(self._token(t, env), [(f"f{i + 1}", a) for i, a in enumerate(t.args)], env)
        if kind == "variant":
            fields = [("tag", PyType("str"))] + [(VARIANT_FIELDS[m.kind], m) for m in t.args]
            return self._composite(self._token(t, env), fields, env)
        raise UnrepresentableValue("unsupported_type", f"no PostgreSQL type for {t.describe()}")

    def _kv(self, t: PyType, env: TypeEnv) -> str:
        int_token = "i8" if env.int_sql == "bigint" else "num"
        return self._composite(kv_token(t, int_token), [("k", t.args[0]), ("v", t.args[1])], env)

    def _element_type(self, elem: PyType, env: TypeEnv) -> str:
        if elem.is_collection:  # arrays of arrays go through a wrapper composite
            return self._composite(self._token(elem, env), [("items", elem)], env)
        return self.sql_type(elem, env, top=False)

    def _composite(self, token: str, fields: list[tuple[str, PyType]], env: TypeEnv) -> str:
        name = self.type_identifier(token)
        if name not in env.types:
            columns = ", ".join(f"{f} {self.sql_type(t, env, top=False)}" for f, t in fields)
            env.types[name] = f"CREATE TYPE {name} AS ({columns});"
        return name

    # ---- literals ----------------------------------------------------------
    def literal(self, value: Any, t: PyType, env: TypeEnv, top: bool = True) -> str:
        if value is None:
            return f"NULL::{self.sql_type(t, env)}"
        kind = t.kind
        if kind == "int":
            return str(value) if env.int_sql == "bigint" else f"{value}::numeric"
        if kind == "float":
            return _float(float(value))
        if kind == "str":
            return _quote(value)
        if kind == "bool":
            return "TRUE" if value else "FALSE"
        if kind == "json":
            return f"{_quote(json_text(value))}::jsonb"
        if kind in ("list", "tuple_seq", "set"):
            items = sort_unordered(value) if kind == "set" else list(value)
            return self._array([self._element_literal(v, t.elem, env) for v in items], self.sql_type(t, env))
        if kind == "dict":
            kv = self._kv(t, env)
            pairs = [
                f"ROW({self.literal(k, t.args[0], env)}, {self.literal(v, t.args[1], env)})::{kv}"
                for k, v in sort_unordered(value)
            ]
            return self._array(pairs, kv + "[]")
        if kind == "record":
            fields = ", ".join(self.literal(v, a, env) for v, a in zip(value, t.args))
            return f"ROW({fields})::{self.sql_type(t, env)}"
        if kind == "variant":
            member = variant_member(value, t)
            fields = [self.literal(member.kind, PyType("str"), env)] + [
                self.literal(value if m == member else None, m, env) for m in t.args
            ]
            return f"ROW({', '.join(fields)})::{self.sql_type(t, env)}"
        raise UnrepresentableValue("unsupported_type", f"no PostgreSQL literal for {t.describe()}")

    def typed_argument(self, literal: str, sql_type: str) -> str:
        """A call argument cast to the parameter's type, so the task's function is an exact match.

        An untyped `3` would let pg_catalog's power(double precision, ...) or gcd(integer, ...)
        win overload resolution over a task function named power(bigint, bigint).
        """
        return literal if literal.endswith(f"::{sql_type}") else f"{literal}::{sql_type}"

    def _element_literal(self, value: Any, elem: PyType, env: TypeEnv) -> str:
        if elem.is_collection:
            wrapper = self._element_type(elem, env)
            return f"NULL::{wrapper}" if value is None else f"ROW({self.literal(value, elem, env)})::{wrapper}"
        return self.literal(value, elem, env, top=False)

    @staticmethod
    def _array(items: list[str], sql_type: str) -> str:
        return f"ARRAY[{', '.join(items)}]::{sql_type}"

    # ---- equality ------------------------------------------------------------
    def eq(self, t: PyType, a: str, b: str, env: TypeEnv) -> str:
        """A boolean expression that is TRUE only when a equals b under the task's rules."""
        if not needs_tolerance(t) and not needs_unordered(t):
            return f"({a} IS NOT DISTINCT FROM {b})"
        if t.kind == "float":
            self._helper(
                "f8",
                "a double precision, b double precision",
                _FLOAT_EQ.format(atol=repr(env.atol), rtol=repr(env.rtol)),
                env,
            )
            return f"pg_temp.plb_eq_f8({a}, {b})"
        token = ("set_" if t.kind == "set" else "") + self._token(t, env)
        sql = self.sql_type(t, env)
        self._helper(token, f"a {sql}, b {sql}", self._helper_body(t, env), env)
        return f"pg_temp.plb_eq_{token}({a}, {b})"

    def _helper(self, token: str, params: str, body: str, env: TypeEnv) -> None:
        name = f"pg_temp.plb_eq_{token}"
        if name not in env.helpers:
            env.helpers[name] = (
                f"CREATE FUNCTION {name}({params}) RETURNS boolean LANGUAGE plpgsql AS {_dollar_quote(body)};"
            )

    def _helper_body(self, t: PyType, env: TypeEnv) -> str:
        null_check = "  IF a IS NULL OR b IS NULL THEN RETURN a IS NULL AND b IS NULL; END IF;\n"
        if t.kind == "record" or t.kind == "variant":
            names = (
                [("tag", PyType("str"))] + [(VARIANT_FIELDS[m.kind], m) for m in t.args]
                if t.kind == "variant"
                else [(f"f{i + 1}", x) for i, x in enumerate(t.args)]
            )
            checks = " AND ".join(f"coalesce({self.eq(x, f'(a).{f}', f'(b).{f}', env)}, false)" for f, x in names)
            return f"BEGIN\n{null_check}  RETURN {checks};\nEND;"
        elem = t.elem if t.kind != "dict" else None
        ai, bj = "a[array_lower(a, 1) + i]", "b[array_lower(b, 1) + j]"
        head = (
            f"DECLARE i integer; j integer; found boolean;\nBEGIN\n{null_check}"
            "  IF cardinality(a) <> cardinality(b) THEN RETURN false; END IF;\n"
        )
        if t.kind in ("list", "tuple_seq"):
            cond = self.eq(
                elem, self._unwrap(ai, elem), self._unwrap(ai.replace("a[", "b[").replace("(a", "(b"), elem), env
            )
            return (
                head + "  FOR i IN 0 .. cardinality(a) - 1 LOOP\n"
                f"    IF NOT coalesce({cond}, false) THEN RETURN false; END IF;\n  END LOOP;\n  RETURN true;\nEND;"
            )
        if t.kind == "set":
            match = self.eq(elem, self._unwrap(bj, elem), self._unwrap("a[array_lower(a, 1) + i]", elem), env)
        else:  # dict: keys exact, values under the task's rules
            match = f"(({bj}).k IS NOT DISTINCT FROM (a[array_lower(a, 1) + i]).k) AND " + self.eq(
                t.args[1], f"({bj}).v", "(a[array_lower(a, 1) + i]).v", env
            )
        # b is the expected value (distinct elements / keys): equal sizes and every
        # expected element found in the actual one means a is a permutation of b.
        return (
            head + "  FOR j IN 0 .. cardinality(b) - 1 LOOP\n    found := false;\n"
            "    FOR i IN 0 .. cardinality(a) - 1 LOOP\n"
            f"      IF coalesce({match}, false) THEN found := true; EXIT; END IF;\n    END LOOP;\n"
            "    IF NOT found THEN RETURN false; END IF;\n  END LOOP;\n  RETURN true;\nEND;"
        )

    @staticmethod
    def _unwrap(expr: str, elem: PyType) -> str:
        return f"({expr}).items" if elem.is_collection else expr

    # ---- program units and harness ---------------------------------------------
    def create_function(self, unit: Unit, replace: bool = False) -> str:
        params = ", ".join(f"{n} {t}" for n, t in unit.params)
        decl = f"DECLARE\n{unit.declarations}\n" if unit.declarations else ""
        body = f"{decl}BEGIN\n{unit.body}\nEND;"
        verb = "CREATE OR REPLACE FUNCTION" if replace else "CREATE FUNCTION"
        head = f"{verb} {unit.name}({params})\nRETURNS {unit.returns}\nLANGUAGE plpgsql\n"
        settings = "".join(f"SET {setting}\n" for setting in unit.settings)
        return f"{head}{settings}AS {_dollar_quote(body)};"

    def scaffold_body(self) -> str:
        return "  -- Write the function body here."

    def local_var(self, t: PyType, env: TypeEnv) -> str:
        return self.sql_type(t, env)

    def emit_line(self, text_expr: str) -> str:
        return f"RAISE NOTICE '%', {text_expr};"

    def error_text(self) -> str:
        return "SQLSTATE || ': ' || SQLERRM"

    def replay_body(self, params, sql_returns, rows, env) -> tuple[str, str]:
        """One lookup over a VALUES list of the cases: a single cached plan scanned in C,
        much faster than a chain of PL/pgSQL IF statements for tasks with ~100 cases."""
        columns = [f"plb_a{i + 1}" for i in range(len(params))] + ["plb_out"]
        values = ",\n      ".join(f"({', '.join([*args, out])})" for args, out in rows)
        wanted = " AND ".join(f"plb_v.{c} IS NOT DISTINCT FROM {n}" for c, (n, _) in zip(columns, params)) or "TRUE"
        # Into a record, not a variable of the return type: SELECT INTO a composite variable
        # would spread a composite output over that variable's fields.
        body = (
            f"  SELECT plb_v.plb_out AS value INTO plb_match\n  FROM (VALUES\n      {values}\n  ) "
            f"AS plb_v({', '.join(columns)})\n  WHERE {wanted}\n  LIMIT 1;\n"
            "  IF NOT FOUND THEN\n    RAISE EXCEPTION 'plbench replay: no test case matches these arguments';\n"
            "  END IF;\n  RETURN plb_match.value;"
        )
        return body, "  plb_match record;"

    def anonymous_block(self, declarations: str, body: str) -> str:
        return _dollar_quote_block(declarations, body)

    def harness_prelude(self, env: TypeEnv) -> list[str]:
        return list(env.helpers.values())

    def nested_helpers(self, env: TypeEnv) -> str:
        return ""

    def statement_separator(self) -> str:
        return "\n"

    # ---- the constructs a task's types make a solution use ------------------------
    def type_constructs(self, types: list[PyType]) -> set[str]:
        """A collection of collections goes through a one-field composite (`plb_list_i8 AS (items
        bigint[])`): a solution reads its `items`, an object type."""
        found = super().type_constructs(types)
        nested = any(x.kind in ("list", "tuple_seq", "set") and x.elem.is_collection for t in types for x in t.walk())
        return found | {"object_type"} if nested else found

    # ---- databases -------------------------------------------------------------------
    language = "PL/pgSQL"
    sqlglot_name = "postgres"
    column_types = {
        "integer": "bigint",
        "decimal": "numeric",
        "float": "double precision",
        "text": "text",
        "boolean": "boolean",
        "date": "date",
        "timestamp": "timestamp",
        "time": "time",
        "binary": "bytea",
        "json": "jsonb",
    }
    plain_identifier = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
    unchecked_foreign_key = " NOT VALID"
    value_round_trip = True
    # The replay lookup (replay_body) is planned once per function, not again at every call: its
    # first five calls would each get a custom plan for their arguments, planning the whole VALUES list
    # (mbpp_plus/630: 57 cases, a 1.3 MB function; its test block ran in 5.8 s, 2.6 s with one plan).
    replay_settings = ("plan_cache_mode = force_generic_plan",)

    def fold(self, name: str) -> str:
        return name.lower()

    def data_script(self, table) -> str:
        """A COPY ... FROM stdin block (psql)."""
        return (
            f"COPY {table.target.sql} ({', '.join(table.column_names)}) FROM stdin;\n" + self.copy_text(table) + "\\.\n"
        )

    def copy_text(self, table) -> str:
        """The table's rows in COPY text format (what a loader streams, and what data.sql embeds), made once."""
        if table.data_text is None:
            table.data_text = "".join("\t".join(map(_copy_field, row)) + "\n" for row in table.rows)
        return table.data_text

    # ---- Spider SQL --------------------------------------------------------------------
    row_id = "ctid"
    text_type = "TEXT"
    sqlite_number = (
        "CASE WHEN plb_x IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(plb_x AS TEXT), "
        r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END"
    )
    first_at_extreme = "(ARRAY_AGG(plb_value ORDER BY plb_key {order} NULLS LAST{ties}))[1]"
    division_truncates_integers = True  # bigint / bigint

    def ascii_like(self, left: exp.Expression, right: exp.Expression) -> exp.Expression:
        return exp.ILike(this=left, expression=right)

    # ---- Spider-PLSQL blocks -------------------------------------------------------------
    block_description = "a PostgreSQL anonymous block (DO $$ ... $$)"
    print_description = "RAISE NOTICE '%', <line>"
    field_prints = {
        "number": "trim_scale(round(({ref})::numeric, {decimals}))::text",
        "date": "to_char({ref}, 'YYYY-MM-DD')",
        "timestamp": "to_char({ref}, 'YYYY-MM-DD HH24:MI:SS')",
        "binary": "encode({ref}, 'hex')",
        "text": "({ref})::text",
    }
    null_print = "coalesce({inner}, '{null}')"
    renames_view_columns = True

    def output_column(self, position: int) -> str:
        return f"c{position}"

    def print_rows_block(self, query: str, columns: list[str], line: str) -> str:
        return (
            f"DO $plbench$\nDECLARE\n  r record;\nBEGIN\n"
            f"  FOR r IN SELECT * FROM (\n{query.rstrip().rstrip(';')}\n  ) AS plb_q({', '.join(columns)}) LOOP\n"
            f"    {self.emit_line(line)}\n  END LOOP;\nEND\n$plbench$;"
        )

    def print_rows_scaffold(self, hint: str) -> str:
        return f"DO $$\nBEGIN\n  -- {self.emit_line(hint)}\nEND\n$$;"

    # ---- grading (plbench.grading) ---------------------------------------------------------
    def script_statements(self, script: str) -> list[str]:
        """A release script's statements: psql runs the whole text as one."""
        return [script]

    def fetched_value(self, data: Any, t: PyType) -> Any:
        """A graded call's result as to_jsonb rendered it: decoded as it is."""
        return data

    def graded_value(self, value: Any, t: PyType) -> Any:
        """A value as the comparison sees it: PostgreSQL keeps '' apart from NULL."""
        return value


def _copy_field(v) -> str:
    """One field of PostgreSQL COPY text format."""
    if v is None:
        return "\\N"
    kind = type(v)
    if kind is str:  # the only common type whose text can hold a character COPY escapes
        return v.translate(_COPY_ESCAPES) if _NEEDS_COPY_ESCAPE.search(v) else v
    if kind is int or kind is dt.date or kind is dt.time or kind is Decimal:
        return str(v)  # digits, signs, '.', '-', ':', 'E': nothing to escape
    if kind is float:
        return repr(v) if v == v and abs(v) != float("inf") else _NON_FINITE[repr(v)]
    if kind is dt.datetime:
        return v.isoformat(sep=" ")
    if kind is bytes:
        return "\\\\x" + v.hex()  # the hex input form, its backslash escaped
    return str(v).translate(_COPY_ESCAPES)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NEEDS_COPY_ESCAPE = re.compile(r"[\\\t\n\r]")


_FLOAT_EQ = """BEGIN
  IF a IS NULL OR b IS NULL THEN RETURN a IS NULL AND b IS NULL; END IF;
  IF a = b THEN RETURN true; END IF;
  RETURN abs(a - b) <= {atol} + {rtol} * abs(b);
END;"""


def _dollar_quote_block(declarations: str, body: str) -> str:
    decl = f"DECLARE\n{declarations}\n" if declarations else ""
    return f"DO {_dollar_quote(f'{decl}BEGIN{chr(10)}{body}{chr(10)}END;')};"
