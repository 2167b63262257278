"""What every dialect shares: per-task emission state, identifier rules, shape tokens.

A dialect turns the dialect-neutral `PyType` model into SQL: type spellings,
named type DDL (emitted once per unique shape, with deterministic names),
literals, equality expressions and program-unit text. Shape tokens name types
by their SQL shape in prefix notation with arities (`rec2_i8_txt`,
`list_rec2_i8_txt`, `dict_txt_i8`), so two different shapes never share a name; the
(key, value) element of a dict is `kv_<key>_<value>`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from plbench.types import PyType


class UnrepresentableValue(ValueError):
    """A value the dialect cannot encode (e.g. a NUL byte in PostgreSQL text)."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


@dataclass
class TypeEnv:
    """Emission state for one task in one dialect.

    `types` and `helpers` map a name to its DDL / function text in creation
    order, so a type is created after the types it uses and only once.
    """

    int_sql: str  # spelling of Python int for this task (decided once per task)
    atol: float = 0.0
    rtol: float = 0.0
    types: dict[str, str] = field(default_factory=dict)
    helpers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unit:
    """A program unit (function) in neutral form, rendered by the dialect."""

    name: str
    params: tuple[tuple[str, str], ...]  # (identifier, SQL type)
    returns: str
    body: str  # statements between BEGIN and END
    declarations: str = ""
    settings: tuple[str, ...] = ()  # `name = value` the function runs under (the dialect's replay_settings)


class Dialect:
    name: str
    display_name: str
    max_identifier_bytes: int
    reserved: frozenset[str]

    # ---- identifiers ---------------------------------------------------
    builtins: frozenset[str] = frozenset()

    def identifier(self, name: str, taken: set[str], function: bool = False) -> tuple[str, str | None]:
        """A safe unquoted identifier for a Python name, and why it was renamed (or None).

        Names are folded the way the dialect folds unquoted identifiers, so two
        Python names that differ only in case would collide: those are renamed too.
        A function also avoids the names of the dialect's built-in functions.
        """
        candidate, why = name, None
        if candidate.upper() in self.reserved:
            candidate, why = f"{name}_", f"'{name}' is a reserved word in {self.display_name}"
        elif function and candidate.upper() in self.builtins:
            candidate, why = f"{name}_", f"'{name}' is a built-in function in {self.display_name}"
        if len(candidate.encode()) > self.max_identifier_bytes:
            digest = hashlib.sha1(name.encode()).hexdigest()[:8]
            candidate = f"{name[: self.max_identifier_bytes - 9]}_{digest}"
            why = f"'{name}' exceeds {self.max_identifier_bytes} bytes"
        base, n = candidate, 2
        while candidate.lower() in taken:
            candidate, n = f"{base}_{n}", n + 1
            why = f"'{name}' collides with another name after case folding"
        taken.add(candidate.lower())
        return candidate, why

    def type_identifier(self, token: str) -> str:
        """Deterministic name of a named type from its shape token, within the length limit."""
        name = f"plb_{token}"
        if len(name) <= min(self.max_identifier_bytes, 60):
            return name
        return "plb_t_" + hashlib.sha1(token.encode()).hexdigest()[:16]

    def concat(self, *parts: str) -> str:
        """String concatenation in both targets' SQL."""
        return " || ".join(parts)

    # ---- to be provided by each dialect ---------------------------------
    def int_type(self, values_fit_bigint: bool) -> str:
        raise NotImplementedError

    def sql_type(self, t: PyType, env: TypeEnv, top: bool = True) -> str:
        raise NotImplementedError

    def literal(self, value: Any, t: PyType, env: TypeEnv, top: bool = True) -> str:
        raise NotImplementedError

    # ---- the constructs a task's types make a solution use ------------------------
    def type_constructs(self, types: list[PyType]) -> set[str]:
        """`collection_type` for a collection, `object_type` for a record, a dict's (key, value)
        pair or a tagged variant (metadata `plsql_constructs`; see plbench.validation.metadata)."""
        kinds = {x.kind for t in types for x in t.walk()}
        found = set()
        if kinds & {"list", "tuple_seq", "set", "dict"}:
            found.add("collection_type")
        if kinds & {"record", "dict", "variant"}:
            found.add("object_type")
        return found

    # ---- databases: column types, names and data of a normalized schema -------------
    language: str  # the procedural language, as prompts name it
    sqlglot_name: str  # what sqlglot calls this dialect
    column_types: dict[str, str]  # neutral type family (plbench.normalize.schema) -> column type
    plain_identifier: re.Pattern[str]  # a folded name that needs no quotes
    unchecked_foreign_key: str  # ends a foreign key that the rows already loaded need not satisfy
    empty_string_is_null: bool = False  # '' is stored as NULL
    sized_families: frozenset[str] = frozenset()  # families whose column type depends on the longest text

    def fold(self, name: str) -> str:
        """The name as the dialect stores an unquoted identifier."""
        raise NotImplementedError

    def needs_quotes(self, stored: str) -> bool:
        """Whether a stored (folded) name must be quoted to be declared and reached: it is no plain
        identifier, or a reserved word (the normalized DDL's rule, plbench.normalize.typemap.IdentifierMap)."""
        return not self.plain_identifier.match(stored) or stored.upper() in self.reserved

    def new_identifier(self, name: str) -> exp.Identifier:
        """A name the project creates (a result table's column), spelt by the DDL's rule: quoted and as the
        dialect stores it when it must be (`date` is `"DATE"` in Oracle), else as given (the dialect folds it)."""
        stored = self.fold(name)
        return exp.Identifier(this=stored, quoted=True) if self.needs_quotes(stored) else exp.to_identifier(name)

    def column_type(self, family: str, max_text_bytes: int = 0) -> str:
        """The column type of a family, given the longest text the column holds (measured for
        `sized_families` only, else 0)."""
        return self.column_types[family]

    def stored_column(self, values: list) -> list:
        """A column's coerced source values as this dialect's column holds them."""
        return values

    def data_script(self, table) -> str:
        """The rows of a `NormalizedTable` as a script that loads them."""
        raise NotImplementedError

    # No server is assumed for this dialect: its DDL and code are checked statically on every build
    # (plbench.dialects.static_checks), whether or not an engine runs them too.
    checked_statically: bool = False
    value_round_trip: bool = False  # plbench.validation.roundtrip reads this dialect's values back
    replay_settings: tuple[str, ...] = ()  # `name = value` a replay function runs under (Unit.settings)

    # ---- Spider SQL: the target side of the gold transpiler (plbench.spider.gold) ----
    row_id: str  # the pseudo-column of a row's physical place (rows are loaded in SQLite rowid order)
    text_type: str  # the type a CAST to text names
    date_text_formats: dict[str, str] = {}  # date family -> TO_CHAR format, where a text cast is not ISO
    sqlite_number: str  # `plb_x` read as a number the way SQLite reads a text
    first_at_extreme: str  # `plb_value` of the first row by `plb_key {order}`, then `{ties}`
    division_truncates_integers: bool  # integer / integer truncates, as in SQLite

    def ascii_like(self, left: exp.Expression, right: exp.Expression) -> exp.Expression:
        """`left LIKE right` folding ASCII case only, for an ASCII pattern (SQLite's LIKE)."""
        raise NotImplementedError

    # ---- Spider-PLSQL blocks: printing result rows (plbench.spider.output_format) ------
    block_description: str  # an anonymous block, as prompts name it
    print_description: str  # printing one line, as prompts name it
    field_prints: dict[str, str]  # output type class -> text of `{ref}`; "text" for every other class
    null_print: str  # `{inner}`, or `{null}` when the value is NULL
    renames_view_columns: bool  # an inline view's columns can be renamed (`AS q(c1, ...)`)

    def print_field(self, ref: str, kind: str, decimals: int, null_text: str) -> str:
        """SQL text printing the value `ref` of type class `kind` by the output rule, NULL included."""
        template = self.field_prints.get(kind, self.field_prints["text"])
        inner = template.format(ref=ref, decimals=decimals, nines="9" * decimals)
        return self.null_print.format(inner=inner, null=null_text)

    def output_column(self, position: int) -> str:
        """The name a reference block gives the query's output column at `position` (from 1)."""
        raise NotImplementedError

    def print_rows_block(self, query: str, columns: list[str], line: str) -> str:
        """An anonymous block looping over the query's rows (record `r`), printing `line` for each."""
        raise NotImplementedError

    def print_rows_scaffold(self, hint: str) -> str:
        """The empty block a Spider task's solution fills in, `hint` naming what it prints."""
        raise NotImplementedError


SCALAR_TOKENS = {"float": "f8", "str": "txt", "bool": "bool", "json": "json"}


def shape_token(t: PyType, int_token: str) -> str:
    """Prefix-notation token of a type's SQL shape; nullability does not change the shape."""
    if t.kind == "int":
        return int_token
    if t.kind in SCALAR_TOKENS:
        return SCALAR_TOKENS[t.kind]
    if t.kind in ("list", "tuple_seq", "set"):
        return "list_" + shape_token(t.elem, int_token)
    if t.kind == "dict":
        return "dict_" + shape_token(t.args[0], int_token) + "_" + shape_token(t.args[1], int_token)
    prefix = {"record": "rec", "variant": "var"}[t.kind]
    return f"{prefix}{len(t.args)}_" + "_".join(shape_token(a, int_token) for a in t.args)


def needs_tolerance(t: PyType) -> bool:
    return any(x.kind == "float" for x in t.walk())


def needs_unordered(t: PyType) -> bool:
    return any(x.kind in ("set", "dict") for x in t.walk())


VARIANT_FIELDS = {"int": "int_v", "float": "float_v", "str": "str_v", "bool": "bool_v"}


def variant_member(value: Any, t: PyType) -> PyType:
    """The member of a variant type that holds this value (None holds no member)."""
    for member in t.args:
        if member.kind == "float" and isinstance(value, float):
            return member
        if member.kind == {bool: "bool", int: "int", str: "str", float: "float"}.get(type(value)):
            return member
    if isinstance(value, int) and not isinstance(value, bool):
        return next(m for m in t.args if m.kind == "float")
    raise UnrepresentableValue("unsupported_value_type", f"{value!r} fits no member of {t.describe()}")


def sort_unordered(value: Any) -> list:
    """A deterministic order for set / dict literals (their Python order is not part of equality)."""
    from plbench.values import dumps

    items = list(value.items()) if isinstance(value, dict) else list(value)
    return sorted(items, key=dumps)


def json_text(value: Any) -> str:
    """A JSON document for a value of type json: tuples become arrays; keys must be strings."""
    import json
    import math

    def convert(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [convert(x) for x in v]
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise UnrepresentableValue("unsupported_value", "a JSON object needs string keys")
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, float) and not math.isfinite(v):
            raise UnrepresentableValue("unsupported_value", "JSON has no infinity or NaN")
        if isinstance(v, (set, frozenset)):
            raise UnrepresentableValue("unsupported_value", "JSON has no sets")
        if isinstance(v, str) and "\x00" in v:
            raise UnrepresentableValue("unsupported_value", "a JSON string here cannot hold a NUL character")
        return v

    return json.dumps(convert(value), ensure_ascii=False, separators=(",", ":"))


def kv_token(t: PyType, int_token: str) -> str:
    """Token of the (key, value) element type of a dict type."""
    return "kv_" + shape_token(t.args[0], int_token) + "_" + shape_token(t.args[1], int_token)
