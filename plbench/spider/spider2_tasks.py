"""Spider 2.0-Lite task records: the questions that have gold SQL, with the gold transpiled and analysed.

For each of the 547 questions either a `Spider2Task` or a `Rejection` is made
(input = records + rejections). A task keeps the gold in its source dialect,
transpiled by sqlglot to PostgreSQL and Oracle against the normalized schema
(table references become `<schema>.<table>` with the target's names, so the
PostgreSQL text runs on the sample-row database), and the tables and columns the
gold reads, found by qualifying it (`sqlglot.optimizer.qualify`) against the
schema description. Names the schema cannot resolve are listed, not guessed.

BigQuery wildcard tables (`events_*`) are resolved to the shards they match;
`tables_required` names the wildcard (as the gold does) and its columns come
from the matching shards. They cannot run on PostgreSQL (there is no wildcard
table there), which the execution check reports.
"""

from __future__ import annotations

import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from plbench.dialects import DIALECTS
from plbench.normalize.emit import NormalizedDatabase, normalize
from plbench.normalize.schema import SourceDatabase
from plbench.records import Rejection
from plbench.spider.spider2 import DIALECT_PREFIXES, LITE_DIR

QUESTIONS = LITE_DIR / "spider2-lite.jsonl"
GOLD_DIR = LITE_DIR / "evaluation_suite" / "gold" / "sql"
EXEC_RESULTS = LITE_DIR / "evaluation_suite" / "gold" / "exec_result.tar.gz"
DOCUMENTS = LITE_DIR / "resource" / "documents"
SUBSET = "spider2"
STATEMENT_TIMEOUT_MS = 10_000


@dataclass
class Spider2Task:
    instance_id: str
    db: str  # as the question names it
    resolved_db: str  # the schema description's folder name
    source_dialect: str  # sqlite | bigquery | snowflake
    question: str
    external_knowledge_file: str | None
    external_knowledge: str  # the document's text ('' when none is named)
    gold_sql: str  # in the source dialect
    gold_postgres: str = ""
    gold_oracle: str = ""
    oracle_parses: bool = False
    transpile_error: str = ""
    tables_required: list[str] = field(default_factory=list)  # source full names, as the schema gives them
    columns_required: list[str] = field(default_factory=list)  # `<table full name>.<column>`
    unresolved: list[str] = field(default_factory=list)  # names the schema could not resolve
    reference_results: dict[str, str] = field(default_factory=dict)  # CSV file name -> its text
    executes_on_samples: bool | None = None  # the PostgreSQL gold on the sample rows (None: not run)
    sqlstate: str = ""
    execution_error: str = ""
    output_types: list[str] = field(default_factory=list)  # PostgreSQL type names of the gold's columns


def question_dialect(instance_id: str) -> str:
    """The source dialect from the id prefix: local* SQLite, bq*/ga* BigQuery, sf* Snowflake."""
    for prefix, source in DIALECT_PREFIXES:
        if instance_id.startswith(prefix):
            return source
    raise ValueError(f"unknown instance id prefix: {instance_id}")


def _fold(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def resolve_database(name: str, dialect: str, databases: dict[tuple[str, str], SourceDatabase]) -> str | None:
    """The folder name for a question's db: exact, else the one equal after dropping case and punctuation
    (`Db-IMDB` → `DB_IMDB`, `sqlite-sakila` → `SQLITE_SAKILA`); None when none or several match."""
    if (dialect, name) in databases:
        return name
    matches = [n for d, n in databases if d == dialect and _fold(n) == _fold(name)]
    return matches[0] if len(matches) == 1 else None


def read_reference_results(raw_root: Path) -> dict[str, dict[str, str]]:
    """instance id -> {CSV name: text} from exec_result.tar.gz (`<id>.csv`, `<id>_a.csv`, ...)."""
    out: dict[str, dict[str, str]] = {}
    with tarfile.open(Path(raw_root) / EXEC_RESULTS) as tar:
        for member in tar:
            name = Path(member.name).name
            m = re.match(r"^(.+?)(?:_[a-z])?\.csv$", name)
            if member.isfile() and m:
                out.setdefault(m.group(1), {})[name] = tar.extractfile(member).read().decode("utf-8", "replace")
    return out


# ---- the schema as sqlglot sees it --------------------------------------------------------------


@dataclass(frozen=True)
class SchemaTable:
    name: str  # the table's name in SourceDatabase
    parts: tuple[str, ...]  # catalog, db, table as the source qualifies it
    columns: tuple[tuple[str, str], ...]  # (name, declared type)

    @property
    def fullname(self) -> str:
        return ".".join(self.parts)


# A warehouse table named by fewer than three parts: its full name, from (database, dataset, table).
_FULL_NAMES = {
    "snowflake": lambda database, dataset, table: (database, dataset, table),
    "bigquery": lambda database, dataset, table: (*dataset.split("."), table),
}


def schema_tables(db: SourceDatabase) -> list[SchemaTable]:
    """Every table with its source-qualified name (from the `table_origin` decisions of spider2.py)."""
    origins = {d["table"]: d for d in db.decisions if d.get("decision") == "table_origin"}
    out = []
    for t in db.tables:
        origin = origins.get(t.name, {})
        parts = tuple(p for p in (origin.get("fullname") or t.name).replace("`", "").split(".") if p)
        qualify = _FULL_NAMES.get(db.source_dialect)
        if qualify is not None and len(parts) < 3:
            parts = qualify(db.name, origin.get("dataset", ""), parts[-1])
        out.append(SchemaTable(t.name, parts, tuple((c.name, c.source_type or "TEXT") for c in t.columns)))
    return out


def _table_parts(table: exp.Table) -> tuple[str, ...]:
    return tuple(p for p in (table.catalog, table.db, table.name) if p)


def match_tables(table: exp.Table, tables: list[SchemaTable]) -> list[SchemaTable]:
    """The schema tables a reference names: a suffix of their qualified name (case-insensitive);
    a trailing `*` (BigQuery wildcard table) matches every shard with that prefix."""
    parts = [p.lower() for p in _table_parts(table)]
    if not parts:
        return []
    last, qualifiers = parts[-1], parts[:-1]
    found = []
    for t in tables:
        own = [p.lower() for p in t.parts]
        if qualifiers and [p for p in own[:-1]][-len(qualifiers) :] != qualifiers:
            continue
        if (last.endswith("*") and own[-1].startswith(last[:-1])) or own[-1] == last:
            found.append(t)
    return found


def _columns_of(matched: list[SchemaTable]) -> dict[str, str]:
    cols: dict[str, str] = {}
    for t in matched:
        for name, type_sql in t.columns:
            cols.setdefault(name, type_sql)
    return cols


def _nest(schema: dict, parts: tuple[str, ...], columns: dict[str, str]) -> None:
    node = schema
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = columns


# ---- analysing one gold query -------------------------------------------------------------------


@dataclass
class GoldAnalysis:
    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    error: str = ""  # why qualifying failed ('' when it worked)


def _cte_names(tree: exp.Expression) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _base_tables(tree: exp.Expression) -> list[exp.Table]:
    ctes = _cte_names(tree)
    return [
        t
        for t in tree.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and not (not t.db and t.name.lower() in ctes)
    ]


def bind_tables(tree: exp.Expression, tables: list[SchemaTable], unresolved: list[str]) -> dict[int, list[SchemaTable]]:
    """id(reference) -> matched schema tables; each matched reference is qualified in full in place."""
    bound = {}
    for ref in _base_tables(tree):
        matched = match_tables(ref, tables)
        if not matched:
            unresolved.append(f"table {'.'.join(_table_parts(ref))}")
            continue
        qualifiers = matched[0].parts[:-1]
        if len(qualifiers) >= 1:
            ref.set("db", exp.to_identifier(qualifiers[-1]))
        if len(qualifiers) >= 2:
            ref.set("catalog", exp.to_identifier(qualifiers[-2]))
        bound[id(ref)] = matched
    return bound


def _query_schema(tree: exp.Expression, bound: dict[int, list[SchemaTable]]) -> dict:
    schema: dict = {}
    for ref in _base_tables(tree):
        if id(ref) in bound:
            _nest(schema, _table_parts(ref), _columns_of(bound[id(ref)]))
    return schema


def _required_name(ref: exp.Table, matched: list[SchemaTable]) -> str:
    return ".".join(_table_parts(ref)) if len(matched) > 1 or ref.name.endswith("*") else matched[0].fullname


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _unquote_plain(tree: exp.Expression) -> None:
    """Names are matched without regard to case: Snowflake golds quote lower-case names ("number") that
    the description spells NUMBER, and quoting would make them case-sensitive for qualify."""
    for ident in tree.find_all(exp.Identifier):
        if ident.quoted and _PLAIN.match(ident.name):
            ident.set("quoted", False)


def analyse_gold(tree: exp.Expression, dialect: str, tables: list[SchemaTable]) -> GoldAnalysis:
    """tables_required / columns_required of a parsed gold query (qualified in place), and what is unresolved."""
    out = GoldAnalysis()
    _unquote_plain(tree)
    bound = bind_tables(tree, tables, out.unresolved)
    out.tables = sorted({_required_name(ref, bound[id(ref)]) for ref in _base_tables(tree) if id(ref) in bound})
    try:
        qualify(
            tree,
            schema=_query_schema(tree, bound),
            dialect=dialect,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
    except (sqlglot.errors.SqlglotError, KeyError, ValueError) as exc:
        out.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return out
    columns, unresolved = set(), set(out.unresolved)
    for scope in traverse_scope(tree):
        for col in scope.columns:
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table) and id(source) in bound:
                known = {c.lower(): c for c in _columns_of(bound[id(source)])}
                table_name = _required_name(source, bound[id(source)])
                if col.name.lower() in known:  # the schema's spelling (qualify folds BigQuery names)
                    columns.add(f"{table_name}.{known[col.name.lower()]}")
                else:
                    unresolved.add(f"column {table_name}.{col.name}")
            elif not col.table and col.name:
                unresolved.add(f"column {col.name}")
    out.columns, out.unresolved = sorted(columns), sorted(unresolved)
    return out


# ---- transpiling to a target ----------------------------------------------------------------------


def _mark_bound(tree: exp.Expression, tables: list[SchemaTable]) -> None:
    """Remember on each reference which schema table it names (meta survives copy(), ids do not)."""
    for ref in _base_tables(tree):
        matched = match_tables(ref, tables)
        if len(matched) == 1 and not ref.name.endswith("*"):
            ref.meta["spider2_table"] = matched[0].name


def _target_identifier(target) -> exp.Identifier:
    return exp.Identifier(this=target.name, quoted=target.quoted)


def retarget(tree: exp.Expression, normalized: NormalizedDatabase) -> exp.Expression:
    """A copy of the (qualified) gold whose tables and columns carry the target's schema and names."""
    tree = tree.copy()
    for scope in traverse_scope(tree):
        for col in scope.columns:
            source = scope.sources.get(col.table)
            name = source.meta.get("spider2_table") if isinstance(source, exp.Table) else None
            if name is None:
                continue
            cols = {c.source.name.lower(): c.target for c in normalized.table(name).columns}
            if col.name.lower() in cols:
                col.set("this", _target_identifier(cols[col.name.lower()]))
    for ref in tree.find_all(exp.Table):
        name = ref.meta.get("spider2_table")
        if name is not None:
            ref.set("catalog", None)
            ref.set("db", exp.to_identifier(normalized.schema_name))
            ref.set("this", _target_identifier(normalized.table(name).target))
    return tree


def transpile_gold(tree: exp.Expression, dialect: str, normalized: NormalizedDatabase) -> tuple[str, str]:
    """(text, what sqlglot says the target does not support ('' when nothing))."""
    target, write = retarget(tree, normalized), DIALECTS[dialect].sqlglot_name
    try:
        return target.sql(dialect=write, unsupported_level=ErrorLevel.RAISE), ""
    except sqlglot.errors.UnsupportedError as exc:
        return target.sql(dialect=write, unsupported_level=ErrorLevel.IGNORE), f"unsupported in {dialect}: {exc}"


def oracle_parses(text: str) -> bool:
    try:
        return bool(sqlglot.parse(text, read=DIALECTS["oracle"].sqlglot_name))
    except sqlglot.errors.SqlglotError:
        return False


def execute_on_samples(conn: psycopg.Connection, text: str) -> tuple[bool, str, str, list[str]]:
    """(runs without error, SQLSTATE, message, output column type names) of the PostgreSQL gold on the
    sample rows; always rolled back."""
    try:
        with conn.transaction(force_rollback=True), conn.cursor() as cur:
            cur.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
            cur.execute(text)
            if cur.description is None:
                return True, "", "", []
            cur.fetchall()
            types = [getattr(conn.adapters.types.get(d.type_code), "name", str(d.type_code)) for d in cur.description]
        return True, "", "", types
    except psycopg.Error as exc:
        return False, exc.sqlstate or "", (exc.diag.message_primary or str(exc))[:300], []


# ---- the task records -----------------------------------------------------------------------------


def read_questions(raw_root: Path) -> list[dict]:
    with (Path(raw_root) / QUESTIONS).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _knowledge(raw_root: Path, name: str | None) -> str:
    path = Path(raw_root) / DOCUMENTS / name if name else None
    return path.read_text(encoding="utf-8") if path and path.is_file() else ""


class _Targets:
    """One database's schema tables and its normalization per dialect, each made once; every dialect's
    gold names the schema the PostgreSQL load uses."""

    def __init__(self, db: SourceDatabase, postgres: NormalizedDatabase):
        self.db, self.tables = db, schema_tables(db)
        self._normalized = {"postgres": postgres}

    def normalized(self, dialect: str) -> NormalizedDatabase:
        if dialect not in self._normalized:
            out = normalize(self.db, dialect)
            out.schema_name = self._normalized["postgres"].schema_name
            self._normalized[dialect] = out
        return self._normalized[dialect]


def _merge_analysis(task: Spider2Task, analysis: GoldAnalysis) -> None:
    task.tables_required = sorted(set(task.tables_required) | set(analysis.tables))
    task.columns_required = sorted(set(task.columns_required) | set(analysis.columns))
    extra = analysis.unresolved + ([f"qualify: {analysis.error}"] if analysis.error else [])
    task.unresolved = sorted(set(task.unresolved) | set(extra))


def _transpile_all(task: Spider2Task, trees: list[exp.Expression], targets: _Targets) -> None:
    texts: dict[str, list[str]] = {"postgres": [], "oracle": []}
    problems = []
    for tree in trees:
        for dialect, out in texts.items():
            text, problem = transpile_gold(tree, dialect, targets.normalized(dialect))
            out.append(text)
            problems += [problem] if problem else []
    task.gold_postgres, task.gold_oracle = ";\n".join(texts["postgres"]), ";\n".join(texts["oracle"])
    task.transpile_error = "; ".join(dict.fromkeys(problems))[:500]
    task.oracle_parses = oracle_parses(task.gold_oracle)


def _fill_gold(task: Spider2Task, targets: _Targets) -> None:
    """Analysis of every statement (DECLARE, CREATE TEMP FUNCTION, the query) and both transpilations."""
    try:
        trees = [t for t in sqlglot.parse(task.gold_sql, read=task.source_dialect) if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        task.transpile_error = f"parse: {str(exc).splitlines()[0][:200]}"
        return
    tables = targets.tables
    for tree in trees:
        _merge_analysis(task, analyse_gold(tree, task.source_dialect, tables))
        _mark_bound(tree, tables)
    try:
        _transpile_all(task, trees, targets)
    except (sqlglot.errors.SqlglotError, KeyError, ValueError) as exc:
        task.transpile_error = f"transpile: {type(exc).__name__}: {str(exc)[:200]}"


def question_database(q: dict, databases) -> tuple[str, str | None]:
    """(source dialect, the schema description's folder or None) a question names."""
    dialect = question_dialect(q["instance_id"])
    return dialect, resolve_database(q["db"], dialect, databases)


@dataclass(frozen=True)
class Spider2Question:
    """A Spider 2.0-Lite question a task can be built from: it has gold SQL and a schema description."""

    instance_id: str
    db: str  # as the question names it
    resolved: str  # the schema description's folder name
    source_dialect: str
    question: str
    external_knowledge: str | None  # a document's file name

    @property
    def database(self) -> str:
        """The database (and partition) name: `<source dialect>.<folder>`."""
        return f"{self.source_dialect}.{self.resolved}"


def select_questions(raw_root: Path, databases) -> tuple[list[Spider2Question], list[Rejection]]:
    """The questions a task can be built from (gold SQL and a resolvable database), and a Rejection for
    every other. `databases` holds (dialect, folder name) keys."""
    kept, rejections = [], []
    for q in sorted(read_questions(raw_root), key=lambda q: q["instance_id"]):
        iid = q["instance_id"]
        dialect, resolved = question_database(q, databases)
        if resolved is None:
            rejections.append(
                Rejection(
                    SUBSET,
                    iid,
                    "spider2_tasks",
                    "database_not_found",
                    f"no {dialect} schema description named {q['db']!r}",
                )
            )
        elif not (Path(raw_root) / GOLD_DIR / f"{iid}.sql").is_file():
            rejections.append(
                Rejection(SUBSET, iid, "spider2_tasks", "no_gold_sql", f"{GOLD_DIR}/{iid}.sql does not exist")
            )
        else:
            kept.append(Spider2Question(iid, q["db"], resolved, dialect, q["question"], q.get("external_knowledge")))
    return kept, rejections


def question_task(
    raw_root: Path, q: Spider2Question, targets: _Targets, conn: psycopg.Connection | None = None
) -> Spider2Task:
    """The task record of one kept question on its database."""
    task = Spider2Task(
        q.instance_id,
        q.db,
        q.resolved,
        q.source_dialect,
        q.question,
        q.external_knowledge,
        _knowledge(raw_root, q.external_knowledge),
        (Path(raw_root) / GOLD_DIR / f"{q.instance_id}.sql").read_text(encoding="utf-8"),
    )
    _fill_gold(task, targets)
    if conn is not None and task.gold_postgres:
        task.executes_on_samples, task.sqlstate, task.execution_error, task.output_types = execute_on_samples(
            conn, task.gold_postgres
        )
    return task


def database_tasks(
    raw_root: Path,
    questions: list[Spider2Question],
    db: SourceDatabase,
    postgres: NormalizedDatabase,
    conn: psycopg.Connection | None = None,
) -> list[Spider2Task]:
    """The task records of the questions on one database, whose PostgreSQL normalization `postgres` is
    loaded (its names and schema are reused, not computed again)."""
    targets = _Targets(db, postgres)
    return [question_task(raw_root, q, targets, conn) for q in questions]
