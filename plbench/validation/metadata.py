"""Metadata accuracy: do a task's `plsql_constructs`, `tables_required` and `columns_required` say
what its code actually does?

Why: researchers slice results by these fields ("how do models do on cursor loops?"). A claim
nobody checked is a guess; this module compares each claim with the task's code and reports
under-claims (found in the code, not claimed) and over-claims (claimed, not found). It is a
report, not a gate, except for claims that are plainly wrong (see `plainly_wrong`).

The code inspected is the row's `reference_code` when it is a program (Spider's reference
blocks); an MBPP row has none, and a Spider 2.0 row whose gold could not be wrapped in a block
has a bare query, so their `setup_sql` and `scaffold` are inspected instead: they fix the
interface the claims are derived from (the block or function, its collection and object types).

The construct detector is deliberately simple: one case-insensitive regular expression per
construct (`CONSTRUCT_PATTERNS`), applied after comments and single-quoted string literals are
removed (so `'... LOOP'` in a message does not count). It does not parse PL/SQL; a construct
written in an unusual way (a function body in a single-quoted string, a cursor loop over a
cursor variable declared elsewhere) can be missed.

Tables and columns: the SQL statements embedded in the code (cursor FOR loop queries,
`CURSOR c IS ...`, `OPEN c FOR ...`, and SELECT/INSERT/UPDATE/DELETE/MERGE/WITH statements) are
parsed with sqlglot in the row's dialect. Tables are real table references (CTE names
excluded), compared by their last name part, case-insensitively. Columns are `table.column`
when the qualifier resolves to a table (or the statement reads one table), else `column`; a
claim `t.c` matches a found `t.c` or an unresolved `c`.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS

CONSTRUCT_PATTERNS = {
    "anonymous_block": r"\A\s*(DO\b|DECLARE\b|BEGIN\b)",  # the code itself is a block
    "function": r"\bFUNCTION\s+[\w\".]+\s*(\(|RETURN)",
    "procedure": r"\bPROCEDURE\s+[\w\".]+",
    "package": r"\bCREATE\s+(OR\s+REPLACE\s+)?PACKAGE\b",
    "trigger": r"\bCREATE\s+(OR\s+REPLACE\s+)?TRIGGER\b",
    "cursor_for_loop": r"\bFOR\s+\w+\s+IN\s+(\(\s*)?(SELECT|WITH)\b",
    "explicit_cursor": r"\bCURSOR\s+\w+\s+IS\b|\b\w+\s+(NO\s+)?(SCROLL\s+)?CURSOR\b|\bOPEN\s+\w+\s+FOR\b",
    "exception_handler": r"\bEXCEPTION\s+WHEN\b",
    "collection_type": r"\bTABLE\s+OF\b|\bVARRAY\b|\bVARYING\s+ARRAY\b|\w\s*\[\]",
    "object_type": r"\bAS\s+OBJECT\b|\bCREATE\s+(OR\s+REPLACE\s+)?TYPE\s+[\w\".]+\s+AS\s*\(",
    "dynamic_sql": r"\bEXECUTE\s+IMMEDIATE\b|\bDBMS_SQL\.|\bEXECUTE\s+(?!FUNCTION\b|PROCEDURE\b)[\w'(]",
    "bulk_operation": r"\bBULK\s+COLLECT\b|\bFORALL\b",
    # what a stored procedure does (the procedures subset claims these)
    "dml_insert": r"\bINSERT\s+INTO\b",
    "dml_update": r"\bUPDATE\s+[\w\".]+(\s+AS)?(\s+\w+)?\s+SET\b",
    "dml_delete": r"\bDELETE\s+FROM\b",
    "select_into": r"\bSELECT\s[^;]*?\bINTO\s+[\w\".]+\s+FROM\b",
    "if_else": r"\bIF\b[^;]*?\bTHEN\b",
    "raise_error": r"\bRAISE\s+EXCEPTION\b|\bRAISE_APPLICATION_ERROR\b",
}
CONSTRUCTS = frozenset(CONSTRUCT_PATTERNS)
_COMPILED = {name: re.compile(p, re.IGNORECASE | re.MULTILINE) for name, p in CONSTRUCT_PATTERNS.items()}
_NOISE = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", re.DOTALL)
_STATEMENT_START = re.compile(
    r"^\s*(?:(?:BEGIN|DECLARE|THEN|ELSE|LOOP|DO|\$\w*\$)\s+)*"
    r"((?:SELECT|WITH|INSERT|UPDATE|DELETE|MERGE)\b.*)",
    re.IGNORECASE | re.DOTALL,
)
_CURSOR_QUERY = re.compile(
    r"\bFOR\s+\w+\s+IN\s+(?=\(?\s*(?:SELECT|WITH)\b)|\bCURSOR\s+\w+\s+(?:IS|FOR)\s+"
    r"|\bOPEN\s+\w+\s+FOR\s+(?!EXECUTE\b)",
    re.IGNORECASE,
)
_PROGRAM = re.compile(
    r"\A\s*(DO\b|DECLARE\b|BEGIN\b|CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|PACKAGE|TRIGGER)\b)", re.IGNORECASE
)
_SELECT_INTO = re.compile(r"\bINTO\s+(?:STRICT\s+)?[\w.,\s]+?(?=\bFROM\b)", re.IGNORECASE)
EXAMPLES = 10  # tasks listed per kind of finding


def strip_noise(code: str) -> str:
    """The code without comments and single-quoted literals (replaced by '' to keep token boundaries)."""
    return _NOISE.sub(lambda m: "''" if m.group(0).startswith("'") else " ", code)


def detect_constructs(code: str) -> set[str]:
    """The constructs of `CONSTRUCT_PATTERNS` the code contains."""
    text = strip_noise(code)
    return {name for name, pattern in _COMPILED.items() if pattern.search(text)}


# ---- embedded SQL --------------------------------------------------------------------------------


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesis closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)


def _cursor_query(text: str, start: int) -> tuple[str, int]:
    """The query starting at `start` (parenthesized, or up to LOOP / ;) and where it ends."""
    if text[start] == "(":
        end = _balanced(text, start)
        return text[start + 1 : end - 1], end
    stop = re.compile(r"\bLOOP\b|;", re.IGNORECASE).search(text, start)
    end = stop.start() if stop else len(text)
    return text[start:end], end


def embedded_queries(code: str) -> list[str]:
    """The SQL statements a PL/SQL or PL/pgSQL block runs (without literals' content or comments)."""
    text = strip_noise(code)
    queries, spans = [], []
    for match in _CURSOR_QUERY.finditer(text):
        query, end = _cursor_query(text, match.end())
        queries.append(query)
        spans.append((match.start(), end))
    for a, b in reversed(spans):
        text = text[:a] + " ; " + text[b:]
    for piece in text.split(";"):
        found = _STATEMENT_START.match(piece)
        if found:
            statement = found.group(1)
            queries.append(_SELECT_INTO.sub("", statement) if statement[:6].upper() == "SELECT" else statement)
    return [q.strip() for q in queries if q.strip()]


def _scope_tables(tree: exp.Expression) -> tuple[set[str], dict[str, str]]:
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tables, aliases = set(), {}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if not name or name in ctes:
            continue
        tables.add(name)
        aliases[(table.alias or table.name).lower()] = name
    return tables, aliases


def _columns(tree: exp.Expression, tables: set[str], aliases: dict[str, str]) -> set[str]:
    outputs = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    found = set()
    for column in tree.find_all(exp.Column):
        name, qualifier = column.name.lower(), column.table.lower()
        if not name or (not qualifier and name in outputs):
            continue  # an output alias referenced in ORDER BY, not a stored column
        if qualifier and qualifier not in aliases:
            continue  # a derived table's or CTE's column
        table = aliases.get(qualifier) if qualifier else (next(iter(tables)) if len(tables) == 1 else None)
        found.add(f"{table}.{name}" if table else name)
    return found


def referenced_schema(code: str, dialect: str) -> tuple[set[str], set[str], list[str]]:
    """Tables, columns and parse errors of the SQL embedded in the code."""
    tables, columns, errors = set(), set(), []
    for query in embedded_queries(code):
        scope_tables, scope_columns, error = _query_schema(query, dialect)
        tables |= scope_tables
        columns |= scope_columns
        errors += [error] if error else []
    return tables, columns, errors


@functools.lru_cache(maxsize=8192)  # a release's tasks embed ~21,000 queries, ~4,600 distinct
def _query_schema(query: str, dialect: str) -> tuple[frozenset[str], frozenset[str], str | None]:
    """(tables, columns, parse error) of one embedded query."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[dialect].sqlglot_name)
    except sqlglot.errors.SqlglotError as exc:
        return frozenset(), frozenset(), f"{query[:60]!r}: {str(exc)[:120]}"
    scope_tables, aliases = _scope_tables(tree)
    return frozenset(scope_tables), frozenset(_columns(tree, scope_tables, aliases)), None


# ---- claims vs code ------------------------------------------------------------------------------


def _last(name: str) -> str:
    return name.strip().strip('"').split(".")[-1].strip('"').lower()


def compare_tables(claimed: list[str], found: set[str]) -> tuple[set[str], set[str]]:
    """(under-claimed, over-claimed) table names."""
    claims = {_last(t) for t in claimed}
    return found - claims, claims - found


def _normal_column(name: str) -> str:
    return ".".join(p.strip().strip('"') for p in name.lower().split(".")[-2:])


def _matched(name: str, others: set[str]) -> bool:
    """`t.c` matches `t.c` or a bare `c`; a bare `c` matches any `*.c`."""
    bare = name.split(".")[-1]
    return name in others or bare in others or ("." not in name and any(o.endswith("." + bare) for o in others))


def compare_columns(claimed: list[str], found: set[str]) -> tuple[set[str], set[str]]:
    """(under-claimed, over-claimed) columns."""
    claims = {_normal_column(c) for c in claimed}
    return {f for f in found if not _matched(f, claims)}, {c for c in claims if not _matched(c, found)}


def inspected_code(row: dict) -> tuple[str, str]:
    """(source name, code) the row's claims are checked against: the reference code when it is a
    program (a block or a program unit); otherwise the setup and the scaffold, which fix the
    interface a solution fills in. A reference that is a bare query (a Spider 2.0 gold that could
    not be wrapped in a block) is what a solution runs, not a solution: its constructs are not the task's."""
    reference = row.get("reference_code")
    if reference and _PROGRAM.match(strip_noise(reference)):
        return "reference_code", reference
    return "setup_sql+scaffold", "\n".join(filter(None, (row.get("setup_sql"), row.get("scaffold"))))


def row_findings(row: dict) -> dict:
    """One row's under- and over-claims, and whatever in its claims is plainly wrong."""
    source, code = inspected_code(row)
    claimed = set(row.get("plsql_constructs") or [])
    found = detect_constructs(code)
    findings = {
        "source": source,
        "constructs_under": sorted(found - claimed),
        "constructs_over": sorted((claimed - found) & CONSTRUCTS),
        "wrong": [],
    }
    if claimed - CONSTRUCTS:
        findings["wrong"].append(f"unknown constructs {sorted(claimed - CONSTRUCTS)}")
    if not claimed and code:
        findings["wrong"].append("plsql_constructs is empty")
    if row.get("tables_required") or row.get("columns_required"):
        _schema_findings(row, findings)
    return findings


def _schema_findings(row: dict, findings: dict) -> None:
    tables, columns, errors = referenced_schema(row.get("reference_code") or "", row["dialect"])
    findings["parse_errors"] = errors
    findings["tables_under"], findings["tables_over"] = map(
        sorted, compare_tables(row.get("tables_required") or [], tables)
    )
    findings["columns_under"], findings["columns_over"] = map(
        sorted, compare_columns(row.get("columns_required") or [], columns)
    )
    claimed = row.get("tables_required") or []
    if tables and claimed and not (tables & {_last(t) for t in claimed}):
        findings["wrong"].append(f"tables_required {sorted(claimed)} names none of the tables read {sorted(tables)}")


FINDING_KINDS = (
    "constructs_under",
    "constructs_over",
    "tables_under",
    "tables_over",
    "columns_under",
    "columns_over",
    "parse_errors",
)


# The columns `row_findings` is given (it reads nothing else): rows equal in them (a procedure's scenarios,
# its ILE and multi-turn tasks share their reference) get the same findings, found once.
CLAIM_INPUTS = (
    "dialect",
    "reference_code",
    "setup_sql",
    "scaffold",
    "plsql_constructs",
    "tables_required",
    "columns_required",
)


def _claim_inputs(row: dict) -> dict:
    return {c: row.get(c) for c in CLAIM_INPUTS}


def _hashable(claims: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in claims.values())


def metadata_accuracy(rows: list[dict]) -> dict:
    """Tasks per kind of finding, per construct, examples `{task_id/dialect: [...]}`, and `plainly_wrong`."""
    known: dict[tuple, dict] = {}  # claim inputs -> findings
    findings = {}
    for row in rows:
        claims = _claim_inputs(row)
        key = _hashable(claims)
        if key not in known:
            known[key] = row_findings(claims)  # the projection: findings cannot depend on another column
        findings[f"{row['task_id']}/{row['dialect']}"] = known[key]
    examples = {}
    for kind in FINDING_KINDS:
        hits = {key: f[kind] for key, f in findings.items() if f.get(kind)}
        if hits:
            examples[kind] = dict(list(hits.items())[:EXAMPLES])
    wrong = {key: f["wrong"] for key, f in findings.items() if f["wrong"]}
    return {
        "rows": len(rows),
        "rows_with_schema_claims": sum("tables_under" in f for f in findings.values()),
        "tasks_with": {kind: sum(1 for f in findings.values() if f.get(kind)) for kind in FINDING_KINDS},
        "constructs_under": dict(sorted(Counter(c for f in findings.values() for c in f["constructs_under"]).items())),
        "constructs_over": dict(sorted(Counter(c for f in findings.values() for c in f["constructs_over"]).items())),
        "examples": examples,
        "plainly_wrong_count": len(wrong),
        "plainly_wrong": dict(list(wrong.items())[:50]),
    }
