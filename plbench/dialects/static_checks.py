"""Checks of emitted SQL that need no server, per dialect.

Oracle cannot run here, so everything about its artifacts that can be checked
without a server is checked on every build: type DDL shape, type names within
the identifier limit and not reserved, attribute and element types that parse in
sqlglot's Oracle dialect (or name a type created before), and PL/SQL text whose
blocks, parentheses and string literals balance. PostgreSQL gets the structural
checks too, though its real check is execution.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from plbench.dialects.base import Dialect

_TYPE_DDL = {
    "oracle": re.compile(r"^CREATE OR REPLACE TYPE (\w+) AS (?:TABLE OF (.+)|OBJECT \((.+)\));$", re.S),
    "postgres": re.compile(r"^CREATE TYPE (\w+) AS \((.+)\);$", re.S),
}
_SQLGLOT_DIALECT = {"oracle": "oracle", "postgres": "postgres"}
_TOKEN = re.compile(r"'(?:[^']|'')*'|\$(\w*)\$|--[^\n]*|\b(BEGIN|END|LOOP|IF|CASE)\b|[()]", re.I)


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
    try:
        parsed = exp.DataType.build(base, dialect=_SQLGLOT_DIALECT[dialect.name])
    except sqlglot.errors.ParseError as exc:
        return f"type {type_text!r} does not parse: {exc}"
    if parsed.this == exp.DataType.Type.USERDEFINED:
        return f"type {type_text!r} is neither built in nor created earlier"
    return None


def check_block_structure(text: str) -> list[str]:
    """Unbalanced BEGIN/END, parentheses or string literals in PL/SQL or PL/pgSQL text.

    END IF / END LOOP / END CASE close their own keyword; every other END closes a BEGIN.
    """
    problems, stack, depth = [], [], 0
    tokens = list(_TOKEN.finditer(text))
    for i, tok in enumerate(tokens):
        word = (tok.group(2) or "").upper()
        if tok.group(0) == "(":
            depth += 1
        elif tok.group(0) == ")":
            depth -= 1
        elif word in ("BEGIN", "LOOP", "IF", "CASE"):
            if word in ("LOOP", "IF", "CASE") and i and (tokens[i - 1].group(2) or "").upper() == "END":
                continue  # the closing half of END IF / END LOOP / END CASE
            stack.append(word)
        elif word == "END":
            follower = (tokens[i + 1].group(2) or "").upper() if i + 1 < len(tokens) else ""
            adjacent = i + 1 < len(tokens) and not text[tok.end():tokens[i + 1].start()].strip()
            expected = follower if follower in ("LOOP", "IF", "CASE") and adjacent else "BEGIN"
            if not stack or stack[-1] != expected:
                problems.append(f"END {expected if expected != 'BEGIN' else ''} at offset {tok.start()} closes "
                                f"{stack[-1] if stack else 'nothing'}".replace("  ", " "))
                break
            stack.pop()
        if depth < 0:
            problems.append(f"unbalanced ')' at offset {tok.start()}")
            break
    if not problems and (stack or depth):
        problems.append(f"unclosed {stack or ['(']}")
    stripped = re.sub(r"'(?:[^']|'')*'", "", text)
    if "'" in stripped:
        problems.append("unterminated string literal")
    return problems
