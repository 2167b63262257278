"""Oracle / PL/SQL: schema-level TABLE OF and OBJECT types, nested comparison functions, DBMS_OUTPUT verdicts.

Rules (each a line of a table in the docs and a test):
- int → NUMBER (38 digits at most); float → BINARY_DOUBLE; str → VARCHAR2 (4000 bytes
  inside SQL types, 32767 in PL/SQL); bool → PL/SQL BOOLEAN at the top level, NUMBER(1)
  (1/0) inside SQL types, since SQL BOOLEAN exists only from 23ai.
- list / tuple / set → `CREATE TYPE plb_<elem>_tab AS TABLE OF <elem>`; tuple of mixed
  types → `AS OBJECT (f1 …, f2 …)`; dict → TABLE OF a (k, v) OBJECT; mixed scalar
  kinds → a tagged OBJECT (tag, int_v, float_v, str_v, bool_v); values of mixed shapes →
  CLOB holding JSON, compared with JSON_EQUAL.
- equality: always through comparison functions declared inside the block that uses
  them, because nested-table `=` ignores order and object `=` is not NULL-safe.
- '' is NULL in Oracle: an expected empty string compares equal to NULL, and the
  record of every task whose values hold '' says so.
"""

from __future__ import annotations

import datetime as dt
import json
import math
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
    shape_token,
    sort_unordered,
    variant_member,
)
from plbench.dialects.oracle_sqlglot import PLAIN_IDENTIFIER
from plbench.types import PyType

# V$RESERVED_WORDS with RESERVED = 'Y' plus the PL/SQL reserved words (PL/SQL Language
# Reference, appendix D); a parameter or function may not take these names unquoted.
ORACLE_RESERVED = frozenset(
    """
ACCESS ADD ALL ALTER AND ANY AS ASC AUDIT BETWEEN BY CHAR CHECK CLUSTER COLUMN COMMENT COMPRESS CONNECT
CREATE CURRENT DATE DECIMAL DEFAULT DELETE DESC DISTINCT DROP ELSE EXCLUSIVE EXISTS FILE FLOAT FOR FROM
GRANT GROUP HAVING IDENTIFIED IMMEDIATE IN INCREMENT INDEX INITIAL INSERT INTEGER INTERSECT INTO IS LEVEL
LIKE LOCK LONG MAXEXTENTS MINUS MLSLABEL MODE MODIFY NOAUDIT NOCOMPRESS NOT NOWAIT NULL NUMBER OF OFFLINE
ON ONLINE OPTION OR ORDER PCTFREE PRIOR PUBLIC RAW RENAME RESOURCE REVOKE ROW ROWID ROWNUM ROWS SELECT
SESSION SET SHARE SIZE SMALLINT START SUCCESSFUL SYNONYM SYSDATE TABLE THEN TO TRIGGER UID UNION UNIQUE
UPDATE USER VALIDATE VALUES VARCHAR VARCHAR2 VIEW WHENEVER WHERE WITH
BEGIN CASE CLUSTERS COLAUTH COLUMNS CRASH CURSOR DECLARE END EXCEPTION FETCH FUNCTION GOTO IF INDEXES
OVERLAPS PROCEDURE SQL SUBTYPE TABAUTH TYPE VIEWS WHEN
""".split()
)

# Built-in SQL functions of the STANDARD package: a schema-level function of the same name is
# not what an unqualified call reaches from PL/SQL, so task functions never take these names.
ORACLE_BUILTINS = frozenset(
    """
ABS ACOS ASCII ASIN ATAN AVG CEIL CHR CONCAT COS COUNT DECODE EXP FLOOR GREATEST INITCAP INSTR LEAST LENGTH LN
LOG LOWER LPAD LTRIM MAX MEDIAN MIN MOD NVL POWER REPLACE REVERSE ROUND RPAD RTRIM SIGN SIN SQRT SUBSTR SUM TAN
TRANSLATE TRIM TRUNC UPPER
""".split()
)

MAX_NUMBER_DIGITS = 38
SQL_VARCHAR_BYTES = 4000
PLSQL_VARCHAR_BYTES = 32767
LITERAL_CHUNK = 1000  # long strings are concatenated from chunks to stay below literal limits
INSERT_BATCH = 100  # rows per INSERT ALL (multi-row VALUES needs Oracle 23ai)

_SCALAR_SQL = {"int": "NUMBER", "float": "BINARY_DOUBLE", "json": "CLOB"}
_TYPE_TOKEN_INT = "num"


def _quote(text: str) -> str:
    if "\x00" in text:
        raise UnrepresentableValue("unsupported_value", "an Oracle string literal cannot hold a NUL character")
    chunks = [text[i : i + LITERAL_CHUNK] for i in range(0, len(text), LITERAL_CHUNK)] or [""]
    return " || ".join("'" + c.replace("'", "''") + "'" for c in chunks)


def _float(value: float) -> str:
    if math.isfinite(value):
        return f"{value!r}d"
    if math.isnan(value):
        return "BINARY_DOUBLE_NAN"
    return "BINARY_DOUBLE_INFINITY" if value > 0 else "-BINARY_DOUBLE_INFINITY"


class OracleDialect(Dialect):
    name = "oracle"
    display_name = "Oracle"
    max_identifier_bytes = 128
    reserved = ORACLE_RESERVED
    builtins = ORACLE_BUILTINS

    # ---- types -----------------------------------------------------------
    def int_type(self, values_fit_bigint: bool) -> str:
        return "NUMBER"

    def sql_type(self, t: PyType, env: TypeEnv, top: bool = True) -> str:
        """`top` is a PL/SQL parameter, return or variable; otherwise an attribute or element of a SQL type."""
        kind = t.kind
        if kind in _SCALAR_SQL:
            return _SCALAR_SQL[kind]
        if kind == "str":
            return "VARCHAR2" if top else f"VARCHAR2({SQL_VARCHAR_BYTES})"
        if kind == "bool":
            return "BOOLEAN" if top else "NUMBER(1)"
        if kind in ("list", "tuple_seq", "set"):
            return self._table_of(t.elem, env)
        if kind == "dict":
            kv = self._object(kv_token(t, _TYPE_TOKEN_INT), [("k", t.args[0]), ("v", t.args[1])], env)
            return self._named(self._token(t), f"TABLE OF {kv}", env)
        if kind == "record":
            return self._object(self._token(t), [(f"f{i + 1}", a) for i, a in enumerate(t.args)], env)
        if kind == "variant":
            fields = [("tag", PyType("str"))] + [(VARIANT_FIELDS[m.kind], m) for m in t.args]
            return self._object(self._token(t), fields, env)
        raise UnrepresentableValue("unsupported_type", f"no Oracle type for {t.describe()}")

    def _param_type(self, t: PyType, env: TypeEnv, top: bool) -> str:
        """PL/SQL parameters are unconstrained: VARCHAR2, NUMBER, never VARCHAR2(n) or NUMBER(1)."""
        if t.kind == "str":
            return "VARCHAR2"
        if t.kind == "bool" and not top:
            return "NUMBER"
        return self.sql_type(t, env, top)

    def variable_type(self, t: PyType, env: TypeEnv) -> str:
        return f"VARCHAR2({PLSQL_VARCHAR_BYTES})" if t.kind == "str" else self.sql_type(t, env)

    @staticmethod
    def _token(t: PyType) -> str:
        return shape_token(t, _TYPE_TOKEN_INT)

    def _table_of(self, elem: PyType, env: TypeEnv) -> str:
        return self._named(f"{self._token(elem)}_tab", f"TABLE OF {self.sql_type(elem, env, top=False)}", env)

    def _object(self, token: str, fields: list[tuple[str, PyType]], env: TypeEnv) -> str:
        attrs = ", ".join(f"{f} {self.sql_type(t, env, top=False)}" for f, t in fields)
        return self._named(token, f"OBJECT ({attrs})", env)

    def _named(self, token: str, definition: str, env: TypeEnv) -> str:
        name = self.type_identifier(token)
        env.types.setdefault(name, f"CREATE OR REPLACE TYPE {name} AS {definition};")
        return name

    # ---- literals ----------------------------------------------------------
    def literal(self, value: Any, t: PyType, env: TypeEnv, top: bool = True) -> str:
        if value is None:
            return "NULL"
        kind = t.kind
        if kind == "int":
            if len(str(abs(value))) > MAX_NUMBER_DIGITS:
                raise UnrepresentableValue("value_out_of_range", f"{value} has more than 38 digits (Oracle NUMBER)")
            return str(value)
        if kind == "float":
            return _float(float(value))
        if kind == "str":
            limit = PLSQL_VARCHAR_BYTES if top else SQL_VARCHAR_BYTES
            if len(value.encode()) > limit:
                raise UnrepresentableValue(
                    "value_out_of_range", f"a string of {len(value.encode())} bytes exceeds VARCHAR2({limit})"
                )
            return _quote(value)
        if kind == "bool":
            return ("TRUE" if value else "FALSE") if top else ("1" if value else "0")
        if kind == "json":
            chunks = _quote(json_text(value)).split(" || ")
            return " || ".join(f"TO_CLOB({c})" for c in chunks)
        if kind in ("list", "tuple_seq", "set"):
            items = sort_unordered(value) if kind == "set" else list(value)
            return f"{self.sql_type(t, env)}({', '.join(self.literal(v, t.elem, env, top=False) for v in items)})"
        if kind == "dict":
            table = self.sql_type(t, env)
            kv = self.type_identifier(kv_token(t, _TYPE_TOKEN_INT))
            pairs = [
                f"{kv}({self.literal(k, t.args[0], env, False)}, {self.literal(v, t.args[1], env, False)})"
                for k, v in sort_unordered(value)
            ]
            return f"{table}({', '.join(pairs)})"
        if kind == "record":
            fields = ", ".join(self.literal(v, a, env, top=False) for v, a in zip(value, t.args))
            return f"{self.sql_type(t, env)}({fields})"
        if kind == "variant":
            member = variant_member(value, t)
            fields = [_quote(member.kind)] + [
                self.literal(value if m == member else None, m, env, False) for m in t.args
            ]
            return f"{self.sql_type(t, env)}({', '.join(fields)})"
        raise UnrepresentableValue("unsupported_type", f"no Oracle literal for {t.describe()}")

    # ---- equality: nested functions, declared in the block that compares --------------
    def eq(self, t: PyType, a: str, b: str, env: TypeEnv, top: bool = True) -> str:
        token = ("set_" if t.kind == "set" else "") + self._token(t) + ("" if top or t.kind != "bool" else "_n")
        name = f"plb_eq_{token}"
        if name not in env.helpers:
            env.helpers[name] = ""  # reserve first: helpers of inner types must be declared before this one
            body = self._helper_body(t, env, top)
            sql = self._param_type(t, env, top)
            del env.helpers[name]
            env.helpers[name] = f"FUNCTION {name}(a {sql}, b {sql}) RETURN BOOLEAN IS\n{body}\nEND {name};"
        return f"{name}({a}, {b})"

    def _helper_body(self, t: PyType, env: TypeEnv, top: bool) -> str:
        null_check = "  IF a IS NULL OR b IS NULL THEN RETURN a IS NULL AND b IS NULL; END IF;\n"
        if t.kind == "json":  # JSON_EQUAL (18c+) compares documents, not their text
            return (
                f"  n PLS_INTEGER;\nBEGIN\n{null_check}"
                "  SELECT COUNT(*) INTO n FROM dual WHERE JSON_EQUAL(a, b);\n  RETURN n = 1;"
            )
        if t.kind == "float":
            return (
                f"BEGIN\n{null_check}  IF a = b THEN RETURN TRUE; END IF;\n"
                f"  RETURN ABS(a - b) <= {env.atol!r}d + {env.rtol!r}d * ABS(b);"
            )
        if t.is_scalar:
            return f"BEGIN\n{null_check}  RETURN a = b;"
        if t.kind in ("record", "variant"):
            names = (
                [("tag", PyType("str"))] + [(VARIANT_FIELDS[m.kind], m) for m in t.args]
                if t.kind == "variant"
                else [(f"f{i + 1}", x) for i, x in enumerate(t.args)]
            )
            checks = "\n".join(
                f"  IF NOT NVL({self.eq(x, f'a.{f}', f'b.{f}', env, top=False)}, FALSE) THEN RETURN FALSE; END IF;"
                for f, x in names
            )
            return f"BEGIN\n{null_check}{checks}\n  RETURN TRUE;"
        head = (
            f"  i PLS_INTEGER; j PLS_INTEGER; found BOOLEAN;\nBEGIN\n{null_check}"
            "  IF a.COUNT <> b.COUNT THEN RETURN FALSE; END IF;\n"
        )
        if t.kind in ("list", "tuple_seq"):
            # Walk both with FIRST/NEXT: nested tables may be sparse after DELETE, and `=` ignores order.
            cond = self.eq(t.elem, "a(i)", "b(j)", env, top=False)
            return (
                head + "  i := a.FIRST; j := b.FIRST;\n  WHILE i IS NOT NULL LOOP\n"
                f"    IF NOT NVL({cond}, FALSE) THEN RETURN FALSE; END IF;\n"
                "    i := a.NEXT(i); j := b.NEXT(j);\n  END LOOP;\n  RETURN TRUE;"
            )
        if t.kind == "set":
            match = self.eq(t.elem, "a(i)", "b(j)", env, top=False)
        else:
            key_eq = self.eq(t.args[0], "a(i).k", "b(j).k", env, top=False)
            match = f"NVL({key_eq}, FALSE) AND {self.eq(t.args[1], 'a(i).v', 'b(j).v', env, top=False)}"
        # b is the expected value (distinct elements / keys): equal sizes and every expected
        # element found in the actual one means a is a permutation of b.
        return (
            head + "  j := b.FIRST;\n  WHILE j IS NOT NULL LOOP\n    found := FALSE;\n    i := a.FIRST;\n"
            "    WHILE i IS NOT NULL AND NOT found LOOP\n"
            f"      found := NVL({match}, FALSE);\n      i := a.NEXT(i);\n    END LOOP;\n"
            "    IF NOT found THEN RETURN FALSE; END IF;\n    j := b.NEXT(j);\n  END LOOP;\n  RETURN TRUE;"
        )

    # ---- program units and harness ---------------------------------------------
    def typed_argument(self, literal: str, sql_type: str) -> str:
        return literal  # PL/SQL overloads do not compete with schema functions by argument type

    def create_function(self, unit: Unit, replace: bool = False) -> str:
        params = ", ".join(f"{n} IN {t}" for n, t in unit.params)
        decl = f"\n{unit.declarations}" if unit.declarations else ""
        return (
            f"CREATE OR REPLACE FUNCTION {unit.name}({params})\nRETURN {unit.returns}\nIS{decl}\n"
            f"BEGIN\n{unit.body}\nEND {unit.name};"
        )

    def scaffold_body(self) -> str:
        return "  NULL; -- Write the function body here."

    def local_var(self, t: PyType, env: TypeEnv) -> str:
        return self.variable_type(t, env)

    def emit_line(self, text_expr: str) -> str:
        return f"DBMS_OUTPUT.PUT_LINE({text_expr});"

    def error_text(self) -> str:
        return "SQLCODE || ': ' || SQLERRM"

    def replay_body(self, params, sql_returns, rows, env) -> tuple[str, str]:
        """A chain of IFs over the cases; arguments compared with the task's own equality
        functions (exact here), declared inside the function."""
        branches = []
        for args, out in rows:
            match = (
                " AND ".join(f"NVL({self.eq(t, n, lit, env)}, FALSE)" for (n, t), lit in zip(params, args)) or "TRUE"
            )
            branches.append(f"  IF {match} THEN\n    RETURN {out};\n  END IF;")
        raise_ = "  RAISE_APPLICATION_ERROR(-20001, 'plbench replay: no test case matches these arguments');"
        return "\n".join([*branches, raise_]), self.nested_helpers(env)

    def anonymous_block(self, declarations: str, body: str) -> str:
        return f"DECLARE\n{declarations}\nBEGIN\n{body}\nEND;"

    def harness_prelude(self, env: TypeEnv) -> list[str]:
        return []  # comparison functions live inside the block's DECLARE section

    def nested_helpers(self, env: TypeEnv) -> str:
        return "\n".join(env.helpers.values())

    def statement_separator(self) -> str:
        return "\n/\n"

    # ---- databases -------------------------------------------------------------------
    language = "PL/SQL"
    sqlglot_name = "plbenchoracle"  # oracle_sqlglot.PlbenchOracle: MINUS, and names Oracle takes unquoted
    column_types = {
        "integer": "NUMBER(19)",
        "decimal": "NUMBER",
        "float": "BINARY_DOUBLE",
        "text": f"VARCHAR2({SQL_VARCHAR_BYTES} BYTE)",
        "boolean": "NUMBER(1)",  # BOOLEAN columns exist only from 23ai; NUMBER(1) holds 0/1 everywhere
        "date": "DATE",
        "timestamp": "TIMESTAMP",
        "time": "VARCHAR2(32 BYTE)",  # no TIME type: the time of day is kept as 'HH:MM:SS' text
        "binary": "BLOB",
        "json": "CLOB",
    }
    plain_identifier = PLAIN_IDENTIFIER
    unchecked_foreign_key = " ENABLE NOVALIDATE"
    empty_string_is_null = True
    sized_families = frozenset({"text"})  # a VARCHAR2 holds 4,000 bytes: a longer text makes a CLOB
    checked_statically = True

    def fold(self, name: str) -> str:
        return name.upper()

    def column_type(self, family: str, max_text_bytes: int = 0) -> str:
        """Text longer than a VARCHAR2 holds is a CLOB."""
        if family == "text" and max_text_bytes > SQL_VARCHAR_BYTES:
            return "CLOB"
        return self.column_types[family]

    def stored_column(self, values: list) -> list:
        """'' is NULL; booleans are 0/1; a time of day is its ISO text. A column holding none of
        them is returned as it is."""
        types = set(map(type, values))
        if not types & {bool, dt.time} and not (str in types and "" in values):
            return values
        return [_stored_value(v) for v in values]

    def data_script(self, table) -> str:
        return "\n".join(self.insert_statements(table)) + "\n"

    def insert_statements(self, table) -> list[str]:
        """INSERT ALL batches (portable to Oracle releases before 23ai's multi-row VALUES)."""
        into = f"  INTO {table.target.sql} ({', '.join(table.column_names)}) VALUES ("
        literals = [", ".join(row) for row in zip(*map(_literal_column, zip(*table.rows)))]
        return [
            "INSERT ALL\n"
            + "\n".join(into + row + ")" for row in literals[start : start + INSERT_BATCH])
            + "\nSELECT 1 FROM DUAL;"
            for start in range(0, len(literals), INSERT_BATCH)
        ]

    # ---- Spider SQL --------------------------------------------------------------------
    row_id = "ROWID"
    text_type = "VARCHAR(4000)"
    date_text_formats = {"date": "YYYY-MM-DD", "timestamp": "YYYY-MM-DD HH24:MI:SS"}  # TO_CHAR follows NLS
    sqlite_number = (
        "CASE WHEN plb_x IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(plb_x), "
        r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS BINARY_DOUBLE), 0) END"
    )
    first_at_extreme = "MAX(plb_value) KEEP (DENSE_RANK FIRST ORDER BY plb_key {order} NULLS LAST{ties})"
    division_truncates_integers = False  # / is always exact

    def ascii_like(self, left: exp.Expression, right: exp.Expression) -> exp.Expression:
        return exp.Like(this=exp.Upper(this=left), expression=exp.Upper(this=right))

    # ---- Spider-PLSQL blocks -------------------------------------------------------------
    block_description = "an Oracle PL/SQL anonymous block (BEGIN ... END;)"
    print_description = "DBMS_OUTPUT.PUT_LINE(<line>)"
    field_prints = {
        "number": "RTRIM(TO_CHAR(ROUND({ref}, {decimals}), 'FM" + "9" * 30 + "0.{nines}'), '.')",
        "integer": "TO_CHAR({ref})",
        "date": "TO_CHAR({ref}, 'YYYY-MM-DD')",
        "timestamp": "TO_CHAR({ref}, 'YYYY-MM-DD HH24:MI:SS')",
        "boolean": "CASE WHEN {ref} = 1 THEN 'true' WHEN {ref} = 0 THEN 'false' END",
        "binary": "LOWER(RAWTOHEX({ref}))",
        "text": "TO_CHAR({ref})",
    }
    null_print = "NVL({inner}, '{null}')"
    renames_view_columns = False  # no `AS q(c1, ...)`: the query names its outputs C1..Cn itself

    def output_column(self, position: int) -> str:
        return f"C{position}"

    def print_rows_block(self, query: str, columns: list[str], line: str) -> str:
        return f"BEGIN\n  FOR r IN (\n{query}\n  ) LOOP\n    {self.emit_line(line)}\n  END LOOP;\nEND;\n/"

    def print_rows_scaffold(self, hint: str) -> str:
        return f"BEGIN\n  -- {self.emit_line(hint)}\n  NULL;\nEND;\n/"

    # ---- grading (plbench.grading) ---------------------------------------------------------
    def script_statements(self, script: str) -> list[str]:
        """A release script's statements, separated by `/` lines as SQL*Plus reads them."""
        return [s.strip() for s in script.split("\n/\n") if s.strip() and s.strip() != "/"]

    def fetched_value(self, data: Any, t: PyType) -> Any:
        """A graded call's result as the driver fetched it: a JSON value arrives as its CLOB text."""
        return json.loads(data) if t.kind == "json" and isinstance(data, str) else data

    def graded_value(self, value: Any, t: PyType) -> Any:
        """A value as the comparison sees it: in Oracle '' is NULL, so '' reads as None everywhere."""
        if value == "":
            return None
        if isinstance(value, (list, tuple)):
            return type(value)(self.graded_value(v, t) for v in value)
        if isinstance(value, (set, frozenset)):
            return {self.graded_value(v, t) for v in value}
        if isinstance(value, dict):
            return {self.graded_value(k, t): self.graded_value(v, t) for k, v in value.items()}
        return value


def _stored_value(value: Any) -> Any:
    if value == "":
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dt.time):
        return value.isoformat()
    return value


def _literal_column(values: tuple) -> list[str]:
    """`_data_literal` of each value of a column; a column of integers, or of texts of one chunk (at
    most 4,000 bytes), without a call a value, and a column of floats with one (`_float`)."""
    types = set(map(type, values)) - {type(None)}
    if types <= {int}:
        return ["NULL" if v is None else str(v) for v in values]
    if types == {float}:
        return ["NULL" if v is None else _float(v) for v in values]
    if types == {str} and max(len(v) for v in values if v is not None) <= LITERAL_CHUNK:
        return ["NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in values]
    return list(map(_data_literal, values))


def _data_literal(v) -> str:
    """A stored value as a literal of an INSERT."""
    if v is None:
        return "NULL"
    if isinstance(v, str):
        parts = [
            "'" + p.replace("'", "''") + "'"
            for p in (v[i : i + LITERAL_CHUNK] for i in range(0, len(v), LITERAL_CHUNK))
        ]
        if len(v.encode()) > SQL_VARCHAR_BYTES:  # VARCHAR2 || VARCHAR2 stops at 4000 bytes (ORA-01489)
            parts[0] = f"TO_CLOB({parts[0]})"
        return " || ".join(parts)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, bytes):
        return f"HEXTORAW('{v.hex()}')"
    return str(v)
