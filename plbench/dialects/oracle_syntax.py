"""The release's Oracle syntax gate: every Oracle statement it ships, parsed by the PL/SQL grammar.

Task rows (their setup's type DDL, scaffold, test block, reference block; a procedure row's setup
statements, reference procedure and calls), each database's DDL
and constraints, and the Oracle text of every gold query go to the parser in one call
(plbench.dialects.oracle_grammar), so its processes start once per build. An Oracle task row
whose statement fails is rejected (`oracle_syntax`, with the parser's line, column and message),
as is every Oracle task row over a database whose DDL fails; a failing gold query is named in
the manifest and in its database's row. Without the parser nothing is rejected and the manifest
says `ran: false` with the reason.

Rewrites keep the parse exact and the volume small (bench/oracle_grammar.py measures them):
- A test block's repeated cases are reduced to their assignments (plbench.validation.harness_condense).
- Spider 2.0 schemas repeat one table under hundreds of shard names, so each `CREATE TABLE` is
  parsed with its name replaced by `plb_table` (identical texts are parsed once), and the
  database's table names are parsed once each, one a line, as the columns of one statement: the
  grammar is context-free and a name is one identifier in both places.
- A gold query is parsed as `SELECT * FROM (<query>)`: alone, a script may run two statements
  together without a separator (`... FROM t EXCEPT SELECT ...` reads as alias `EXCEPT` and a
  second query), which is not what the query is used as.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace

from plbench.dialects import DIALECTS
from plbench.dialects.oracle_grammar import PARSER, GrammarCheck, SyntaxProblem, check_statements
from plbench.dialects.static_checks import without_table_name
from plbench.records import Rejection
from plbench.validation.harness_condense import condense

# Release columns holding Oracle code, and the artifact kind each is reported as.
TASK_FIELDS = {"setup_sql": "setup", "scaffold": "scaffold", "test_block": "test_block", "reference_code": "reference"}
TASK_KINDS = (*TASK_FIELDS.values(), "call")  # a procedure row's calls too
ORACLE = DIALECTS["oracle"]
DDL_SEPARATOR = ";\n\n"  # plbench.normalize.emit joins a database's statements so
GOLD_PREFIX, GOLD_SUFFIX = "SELECT * FROM (\n", "\n)"


@dataclass(frozen=True)
class Statement:
    kind: str  # setup | scaffold | test_block | reference | call | type_ddl | database_ddl | table_names | gold_query
    subset: str  # release subset, or the Spider source for databases and gold queries
    owner: str  # task_id, type name, database or gold query id
    text: str  # what is parsed
    database: str | None = None  # the database a task, DDL statement or gold query belongs to
    shown: str = ""  # the statement as shipped, when `text` is a rewriting of it
    line_offset: int = 0  # lines `text` adds before the shipped statement


@dataclass
class SyntaxGate:
    rows: list  # task rows (plbench.taskrow.TaskRow) kept
    rejections: list[Rejection]
    database_rows: list[dict]
    section: dict  # the manifest's `oracle_syntax`
    check: GrammarCheck | None = None


def release_statements(rows: list, database_rows: list[dict], gold_rows: list[dict]) -> dict[str, Statement]:
    """Every Oracle statement of the release, by a stable id (`rows`: TaskRow-like, by attribute)."""
    statements = {}
    oracle_rows = [r for r in rows if r.dialect == "oracle"]
    for row in oracle_rows:
        for key, kind, code in _task_statements(row):
            text = condense(code) if kind == "test_block" else code
            statements[f"{row.task_id}#{key}"] = Statement(kind, row.subset, row.task_id, text, row.database, code)
    for ddl in sorted({ddl for row in oracle_rows if not row.call_suite for ddl in _type_ddl(row)}):
        name = ddl.split()[4]  # CREATE OR REPLACE TYPE <name> AS ...
        statements[f"type/{name}#type_ddl"] = Statement("type_ddl", "types", name, ddl)
    for db in database_rows:
        if db["dialect"] == "oracle":
            statements.update(_database_statements(db))
    for gold in gold_rows:
        if gold.get("oracle_sql"):
            owner = f"{gold['source']}/{gold['split']}/{gold['source_id']}"
            text = GOLD_PREFIX + gold["oracle_sql"] + GOLD_SUFFIX
            statements[f"{owner}#gold"] = Statement(
                "gold_query", gold["source"], owner, text, gold["db_id"], gold["oracle_sql"], 1
            )
    return statements


def _task_statements(row) -> list[tuple[str, str, str]]:
    """(key, kind, text) of a task row's Oracle code. A procedure row (it has a call suite) holds its setup
    as a JSON array of statements and its calls as the JSON array `test_cases`: each is parsed alone."""
    if not row.call_suite:
        return [(kind, kind, code) for column, kind in TASK_FIELDS.items() if (code := getattr(row, column))]
    out = [
        (kind, kind, code)
        for column, kind in TASK_FIELDS.items()
        if column != "setup_sql" and (code := getattr(row, column))
    ]
    for n, statement in enumerate(json.loads(row.setup_sql or "[]")):
        out.append((f"setup/{n}", "setup", statement if statement.rstrip().endswith(";") else statement + ";"))
    out += [(f"call/{n}", "call", call) for n, call in enumerate(json.loads(row.test_cases))]
    return out


def _type_ddl(row) -> list[str]:
    """The type statements of a task's setup script (its only statements)."""
    parts = (row.setup_sql or "").split(ORACLE.statement_separator())
    return [part.strip() for part in parts if part.strip()]


def _database_statements(db: dict) -> dict[str, Statement]:
    """A database's DDL statement by statement, table names set aside, and the names themselves."""
    name, out, tables = db["database"], {}, []
    for n, statement in enumerate(db["ddl"].strip().removesuffix(";").split(DDL_SEPARATOR)):
        table, text = without_table_name(statement + ";")
        if table:
            tables.append(table)
        out[f"{db['source']}.{name}#ddl/{n}"] = Statement("database_ddl", db["source"], name, text, name, statement)
    if tables:
        names = "CREATE TABLE plb_names (\n" + ",\n".join(f"{t} NUMBER" for t in tables) + "\n);"
        out[f"{db['source']}.{name}#table_names"] = Statement("table_names", db["source"], name, names, name)
    return out


def _detail(statement: Statement, problem: SyntaxProblem) -> str:
    """The first error at its place in the statement as shipped, and that line."""
    line = problem.line - statement.line_offset
    lines = (statement.shown or statement.text).splitlines()
    where = lines[line - 1].strip()[:200] if 0 < line <= len(lines) else ""
    return f"{statement.kind} {line}:{problem.column} {problem.message}; line {line}: {where}"


def oracle_syntax_gate(
    rows: list, database_rows: list[dict] = (), gold_rows: list[dict] = (), workers: int = 2, cache_dir=None
) -> SyntaxGate:
    """Parse the release's Oracle statements; reject the Oracle task rows that do not parse.

    `cache_dir` keeps verdicts by text between builds (plbench.dialects.oracle_grammar.check_statements)."""
    statements = release_statements(rows, list(database_rows), list(gold_rows))
    check = check_statements({key: s.text for key, s in statements.items()}, workers=workers, cache_dir=cache_dir)
    if not check.ran:
        section = {"ran": False, "reason": check.reason, "parser": PARSER, "statements": len(statements)}
        return SyntaxGate(list(rows), [], list(database_rows), section, check)
    failures = [
        {"kind": s.kind, "subset": s.subset, "owner": s.owner, "database": s.database, "detail": _detail(s, found[0])}
        for key, found in sorted(check.failed().items())
        for s in [statements[key]]
    ]
    bad_tasks, bad_databases = {}, {}
    for f in failures:
        if f["kind"] in TASK_KINDS:
            bad_tasks.setdefault(f["owner"], f["detail"])
        elif f["kind"] in ("database_ddl", "table_names"):
            bad_databases.setdefault(f["owner"], f["detail"])
    kept, rejections = [], []
    for row in rows:
        db = row.database
        why = bad_tasks.get(row.task_id) or (f"database {db}: {bad_databases[db]}" if db in bad_databases else "")
        if row.dialect == "oracle" and why:
            rejections.append(
                Rejection(row.subset, row.source_id, "oracle_syntax", "oracle_syntax", why, dialect="oracle")
            )
        else:
            kept.append(row)
    databases = [_with_problems(db, failures) for db in database_rows]
    return SyntaxGate(kept, rejections, databases, _section(statements, check, failures), check)


def _with_problems(db: dict, failures: list[dict]) -> dict:
    """The Oracle database row with its grammar failures (DDL, gold queries) added to its static problems."""
    if db["dialect"] != "oracle":
        return db
    found = [
        f"oracle_syntax: {f['owner'] if f['kind'] == 'gold_query' else 'DDL'}: {f['detail']}"
        for f in failures
        if f["database"] == db["database"] and f["kind"] in ("database_ddl", "table_names", "gold_query")
    ]
    return dict(db, static_problems=list(db["static_problems"]) + found) if found else db


def _section(statements: dict[str, Statement], check: GrammarCheck, failures: list[dict]) -> dict:
    """parsed / failed per subset and artifact kind, each failure named, and the allowed constructs used.
    Nothing of how this run went (seconds, verdicts from the cache): the same inputs give the same section."""
    counts: dict[str, dict[str, Counter]] = {}
    for key, s in statements.items():
        counts.setdefault(s.subset, {}).setdefault(s.kind, Counter())[
            "failed" if check.problems[key] else "parsed"
        ] += 1
    return {
        "ran": True,
        "parser": PARSER,
        "statements": len(statements),
        "parsed": len(statements) - len(failures),
        "failed": len(failures),
        "by_subset": {
            subset: {kind: {"parsed": c["parsed"], "failed": c["failed"]} for kind, c in sorted(kinds.items())}
            for subset, kinds in sorted(counts.items())
        },
        "failures": failures,
        "allowed_constructs": dict(sorted(Counter(n for names in check.allowed.values() for n in names).items())),
    }


def gate_release_parts(parts: list, workers: int = 2, cache_dir=None) -> tuple[list, dict]:
    """The subsets' release parts (plbench.subsets.base.SubsetRelease) with the Oracle rows that do not
    parse moved to their rejections and the databases' rows annotated, and the manifest section."""
    tables = [dict(p.tables) for p in parts]
    databases = [row for t in tables for row in t.get("databases.parquet", ([], None))[0]]
    gold = [row for t in tables for row in t.get("gold_queries.parquet", ([], None))[0]]
    gate = oracle_syntax_gate([r for p in parts for r in p.rows], databases, gold, workers, cache_dir)
    kept = {id(r) for r in gate.rows}
    annotated = iter(gate.database_rows)  # in the order the parts gave them
    out = []
    for part, own in zip(parts, tables):
        if "databases.parquet" in own:
            rows, schema = own["databases.parquet"]
            own["databases.parquet"] = ([next(annotated) for _ in rows], schema)
        mine = [r for r in gate.rejections if r.subset == part.subset]
        rows = [r for r in part.rows if id(r) in kept]
        out.append(replace(part, rows=rows, rejections=list(part.rejections) + mine, tables=own))
    return out, gate.section
