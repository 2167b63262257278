"""Checks of emitted SQL that need no server, per dialect.

Oracle cannot run here, so everything about its artifacts that can be checked
without a server is checked on every build: type DDL shape, type names within
the identifier limit and not reserved, attribute and element types that parse in
sqlglot's Oracle dialect (or name a type created before), and PL/SQL text whose
blocks, parentheses and string literals balance. PostgreSQL gets the structural
checks too, though its real check is execution.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp

from plbench.dialects.base import Dialect

_TYPE_DDL = {
    "oracle": re.compile(r"^CREATE OR REPLACE TYPE (\w+) AS (?:TABLE OF (.+)|OBJECT \((.+)\));$", re.S),
    "postgres": re.compile(r"^CREATE TYPE (\w+) AS \((.+)\);$", re.S),
}
_STRING = re.compile(r"'[^']*(?:''[^']*)*'")
_COMMENT = re.compile(r"--[^\n]*")
_NOT_PAREN = re.compile(r"[^()]+")
_KEYWORD = re.compile(r"\b(BEGIN|END|LOOP|IF|CASE)\b", re.I)


def _split_attributes(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in parts + [current]]


def check_type_ddl(dialect: Dialect, statements: list[str]) -> list[str]:
    """Problems in a task's type DDL (empty when it is well-formed)."""
    problems, known = [], set()
    pattern = _TYPE_DDL[dialect.name]
    for ddl in statements:
        m = pattern.match(ddl)
        if not m:
            problems.append(f"type DDL has an unexpected shape: {ddl[:120]}")
            continue
        name = m.group(1)
        problems += _name_problems(dialect, name)
        if dialect.name == "oracle" and m.group(2):
            element_types = [m.group(2)]
        else:
            attrs = _split_attributes(m.group(3) if dialect.name == "oracle" else m.group(2))
            element_types = [a.split(None, 1)[1] if len(a.split(None, 1)) == 2 else "" for a in attrs]
            problems += [p for a in attrs for p in _name_problems(dialect, a.split(None, 1)[0])]
        problems += [f"{name}: {p}" for t in element_types if (p := _type_problem(dialect, t, known))]
        known.add(name.lower())
    return problems


def _name_problems(dialect: Dialect, name: str) -> list[str]:
    problems = []
    if len(name.encode()) > dialect.max_identifier_bytes:
        problems.append(f"identifier {name} exceeds {dialect.max_identifier_bytes} bytes")
    if name.upper() in dialect.reserved:
        problems.append(f"identifier {name} is a reserved word")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_$#]*", name):
        problems.append(f"identifier {name} needs quoting")
    return problems


def _type_problem(dialect: Dialect, type_text: str, known: set[str]) -> str | None:
    base = type_text.strip().removesuffix("[]")
    if base.lower() in known:
        return None
    return _builtin_type_problem(dialect.sqlglot_name, base)


@functools.lru_cache(maxsize=1024)
def _builtin_type_problem(sqlglot_dialect: str, type_text: str) -> str | None:
    """Why a type name is not a built-in type of the dialect (parsing is slow: a few shapes recur)."""
    try:
        parsed = exp.DataType.build(type_text, dialect=sqlglot_dialect)
    except sqlglot.errors.ParseError as exc:
        return f"type {type_text!r} does not parse: {exc}"
    if parsed.this == exp.DataType.Type.USERDEFINED:
        return f"type {type_text!r} is neither built in nor created earlier"
    return None


def check_block_structure(text: str) -> list[str]:
    """Unbalanced BEGIN/END, parentheses or string literals in PL/SQL or PL/pgSQL text.

    END IF / END LOOP / END CASE close their own keyword; a bare END closes a SQL CASE
    expression when one is open, else a BEGIN.
    String literals and comments are set aside first, so what they contain does not count.
    """
    code = _COMMENT.sub(" ", _STRING.sub("''", text))
    problems = []
    if "'" in code.replace("''", ""):
        problems.append("unterminated string literal")
    parens = _NOT_PAREN.sub("", code)
    while "()" in parens:  # peel matched pairs from the inside out
        parens = parens.replace("()", "")
    if parens:
        problems.append(f"unbalanced parentheses: {parens[:10]} left over")
    return problems + _block_problems([(m.group(1).upper(), m.start(), m.end()) for m in _KEYWORD.finditer(code)], code)


def _block_problems(tokens: list[tuple[str, int, int]], code: str) -> list[str]:
    stack = []
    for i, (word, begin, end) in enumerate(tokens):
        if (
            word in ("LOOP", "IF", "CASE")
            and i
            and tokens[i - 1][0] == "END"
            and not code[tokens[i - 1][2] : begin].strip()
        ):
            continue  # the closing half of END IF / END LOOP / END CASE
        if word != "END":
            stack.append(word)
            continue
        follower = tokens[i + 1] if i + 1 < len(tokens) else None
        if follower and follower[0] in ("LOOP", "IF", "CASE") and not code[end : follower[1]].strip():
            closes = follower[0]
        else:  # a bare END closes a SQL CASE expression, or a BEGIN
            closes = "CASE" if stack and stack[-1] == "CASE" else "BEGIN"
        if not stack or stack[-1] != closes:
            return [
                f"END {'' if closes == 'BEGIN' else closes} at offset {begin} closes "
                f"{stack[-1] if stack else 'nothing'}".replace("  ", " ")
            ]
        stack.pop()
    return [f"unclosed {stack}"] if stack else []


CREATE_TABLE = re.compile(r'^CREATE TABLE ("[^"]+"|[A-Za-z][\w$#]*) \(')
TABLE_PLACEHOLDER = "plb_table"


def without_table_name(statement: str) -> tuple[str | None, str]:
    """A CREATE TABLE's name and the statement with `plb_table` in its place (other statements: None,
    unchanged). Spider 2.0 schemas repeat one table under hundreds of shard names: its text without
    the name is parsed once, and a name is one identifier however it is spelled."""
    m = CREATE_TABLE.match(statement)
    if not m:
        return None, statement
    return m.group(1), f"CREATE TABLE {TABLE_PLACEHOLDER} (" + statement[m.end() :]


@functools.lru_cache(maxsize=4096)
def _statement_problem(sqlglot_dialect: str, display_name: str, text: str) -> str | None:
    """Why a DDL statement is not a real statement of the dialect in sqlglot, or None."""
    try:
        parsed = sqlglot.parse_one(text, read=sqlglot_dialect)
    except sqlglot.errors.ParseError as exc:
        return f"does not parse as {display_name}: {str(exc)[:200]}"
    if isinstance(parsed, exp.Command):
        return f"parses only as an opaque command in sqlglot's {display_name} dialect"
    return None


_TABLE_HEAD = f"CREATE TABLE {TABLE_PLACEHOLDER} (\n"
_TABLE_TAIL = "\n);"
# sqlglot dialect -> column and key lines of CREATE TABLEs that parsed (see `_table_problem`)
_PARSED_LINES: dict[str, set[str]] = {}


def _table_problem(sqlglot_dialect: str, display_name: str, text: str) -> str | None:
    """`_statement_problem` of a CREATE TABLE as the emitter writes it (one column or key a line), parsing
    only its lines no CREATE TABLE parsed before. A table's column and key list parses element by element,
    and the mirror's 3,043 table shapes hold 22,757 distinct lines: the lines are what is new. When the new
    lines do not parse, the whole statement is parsed, so a problem reads as it always did."""
    if not (text.startswith(_TABLE_HEAD) and text.endswith(_TABLE_TAIL)):
        return _statement_problem(sqlglot_dialect, display_name, text)
    lines = text[len(_TABLE_HEAD) : -len(_TABLE_TAIL)].split(",\n")
    if any(line.count('"') % 2 for line in lines):  # a quoted name holding ",\n" split: not one line each
        return _statement_problem(sqlglot_dialect, display_name, text)
    parsed = _PARSED_LINES.setdefault(sqlglot_dialect, set())
    new = [line for line in lines if line not in parsed]
    if (
        not new
        or _statement_problem(sqlglot_dialect, display_name, _TABLE_HEAD + ",\n".join(new) + _TABLE_TAIL) is None
    ):
        parsed.update(new)
        return None
    return _statement_problem(sqlglot_dialect, display_name, text)


def check_database_ddl(dialect: Dialect, db) -> list[str]:
    """Server-free checks of a `NormalizedDatabase`'s DDL: every statement parses in sqlglot's
    dialect as a real statement, and table and column names fit the identifier limit."""
    problems = []
    limit = dialect.max_identifier_bytes
    for statement in db.create_statements + db.constraint_statements:
        # sqlglot reads an unchecked foreign key (`... ENABLE NOVALIDATE`) only as an opaque Command:
        # the rest is checked as a real ALTER.
        table, text = without_table_name(statement.removesuffix(f"{dialect.unchecked_foreign_key};"))
        check = _table_problem if table else _statement_problem
        problem = check(dialect.sqlglot_name, dialect.display_name, text)
        if problem:
            head, _, detail = problem.partition(": ")
            problems.append(f"{head}: {statement[:80]}" + (f": {detail}" if detail else ""))
    names = [t.target.name for t in db.tables] + [c.target.name for t in db.tables for c in t.columns]
    problems += [f"identifier over {limit} bytes: {n}" for n in names if len(n.encode()) > limit]
    return problems
