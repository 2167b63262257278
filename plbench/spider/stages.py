"""The Spider stages as plain functions: raw files → normalized, loaded, verified databases → tasks.

`normalize_database` is the work of one `normalized_databases_<dialect>` partition (one database
in one dialect): it emits the DDL and data files, loads PostgreSQL, verifies row counts and
checksums, and runs the gold-query equivalence. Its `DatabaseReport` is the partition's value,
which Dagster stores and hands to the task stages whichever run produced it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot

from plbench.config import BuildConfig, NotConfigured
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_block_structure
from plbench.engines.base import Engine
from plbench.engines.postgres import PostgresEngine
from plbench.normalize.emit import NormalizedDatabase, normalize, write_files
from plbench.normalize.load import LoadReport, load_oracle, load_postgres
from plbench.normalize.schema import SourceDatabase
from plbench.normalize.sqlite_source import connect_readonly, read_sqlite
from plbench.raw_sources import CATALOG, resolve
from plbench.records import Rejection
from plbench.spider.gold import GoldQuery, check_database, read_spider_dev, read_train_gold
from plbench.spider.gold import summarize as summarize_equivalence
from plbench.spider.output_format import type_class
from plbench.spider.tasks import (
    ReferenceOutput,
    TaskBuildError,
    oracle_reference_block,
    output_kinds,
    outputs_match,
    postgres_reference_block,
    prompt,
    reference_output,
)
from plbench.taskrow import TaskRow


@dataclass
class SpiderInputs:
    """One Spider dataset's verified raw files, read: its databases and questions."""

    subset: str  # release subset: "spider_plsql" | "spider2"
    source: str  # raw dataset: "spider1" | "spider2_lite"
    databases: dict[str, Path]  # database -> its SQLite file (spider1) or description folder (spider2)
    missing: dict[str, str]  # database named by the dataset but not loadable -> why
    questions: list  # the questions tasks are built from
    extra_queries: list = field(default_factory=list)  # gold queries used for verification only
    rejections: list[Rejection] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)  # relative raw path -> sha256

    @property
    def input_count(self) -> int:
        return len(self.questions) + sum(1 for r in self.rejections if r.level == "task")

    def partition_keys(self) -> list[str]:
        return [partition_key(self.source, name) for name in sorted(self.databases)]


SPIDER1_TABLES = "spider/tables.json"


def partition_key(source: str, name: str) -> str:
    return f"{source}.{name}"


def split_partition_key(key: str) -> tuple[str, str]:
    source, name = key.split(".", 1)
    return source, name


def _resolve_all(config: BuildConfig, dataset: str, only: tuple[str, ...] | None = None) -> dict[str, Path]:
    sources = [s for s in (config.catalog or CATALOG)[dataset] if only is None or s.relative_path in only]
    return {s.relative_path: resolve(s, config.raw_dir, config.download_dir) for s in sources}


def database_keys(config: BuildConfig, source: str) -> list[str]:
    """A dataset's `<source>.<database>` partition keys, known before any stage runs (so one run can
    build every database): its loadable databases, as its ingest finds them."""
    if source == "spider1":
        (tables,) = _resolve_all(config, "spider1", only=(SPIDER1_TABLES,)).values()
        return [partition_key(source, name) for name in _spider1_databases(config, tables)[0]]
    return [partition_key(source, name) for name in sorted(_spider2_databases(config))]


def _spider1_databases(config: BuildConfig, tables: Path) -> tuple[list[str], dict[str, str]]:
    """The databases tables.json names that have a SQLite file, and why each other one is missing."""
    names = [db["db_id"] for db in json.loads(tables.read_text(encoding="utf-8"))]
    listed = {s.relative_path for s in (config.catalog or CATALOG)["spider1"]}
    loadable, missing = [], {}
    for name in sorted(names):
        if _sqlite_path(name) in listed:
            loadable.append(name)
        else:
            ddl_only = f"spider/database/{name}/{name}.sql" in listed
            missing[name] = (
                "the raw sources hold only its DDL (no rows)"
                if ddl_only
                else "its SQLite file is not in the raw sources"
            )
    return loadable, missing


def _sqlite_path(name: str) -> str:
    return f"spider/database/{name}/{name}.sqlite"


def ingest_spider1(config: BuildConfig) -> SpiderInputs:
    """Spider 1.0: every database tables.json names, the dev questions and the train gold queries."""
    paths = _resolve_all(config, "spider1")
    loadable, missing = _spider1_databases(config, paths[SPIDER1_TABLES])
    databases = {name: paths[_sqlite_path(name)] for name in loadable}
    dev = read_spider_dev(paths["spider/dev.json"], paths["spider/dev_gold.sql"])
    train = [q for q in read_train_gold(paths["spider/train_gold.sql"]) if q.db_id in databases]
    questions = [q for q in dev if q.db_id in databases]
    rejections = [
        Rejection("spider_plsql", q.source_id, "ingest", "database_missing", f"{q.db_id}: {missing[q.db_id]}")
        for q in dev
        if q.db_id not in databases
    ]
    inputs = {s.relative_path: s.sha256 for s in (config.catalog or CATALOG)["spider1"]}
    return SpiderInputs(
        "spider_plsql", "spider1", databases, missing, questions, train, rejections, dict(sorted(inputs.items()))
    )


def raw_root(config: BuildConfig) -> Path:
    """Where resolved raw files live, in the mirror's layout: the mirror, or the download cache."""
    return config.raw_dir or config.download_dir


def _spider2_databases(config: BuildConfig) -> dict[str, Path]:
    """`<source dialect>.<folder>` -> its schema description folder, the archives verified and unpacked."""
    from plbench.spider.spider2 import database_folders, unpack_archives

    _resolve_all(config, "spider2_lite")
    folders = database_folders(unpack_archives(raw_root(config), config.cache_dir))
    return {f"{dialect}.{name}": folder for dialect, name, folder in folders}


def ingest_spider2(config: BuildConfig) -> SpiderInputs:
    """Spider 2.0-Lite: every schema description (databases named `<source dialect>.<folder>`, since
    BigQuery and Snowflake share ten names) and the questions that have gold SQL."""
    from plbench.spider.spider2_tasks import select_questions

    databases = _spider2_databases(config)
    questions, rejections = select_questions(raw_root(config), {tuple(key.split(".", 1)): None for key in databases})
    inputs = {s.relative_path: s.sha256 for s in (config.catalog or CATALOG)["spider2_lite"]}
    return SpiderInputs(
        "spider2", "spider2_lite", databases, {}, questions, [], rejections, dict(sorted(inputs.items()))
    )


# ---- one partition: one database in one dialect -----------------------------------------------


@dataclass
class DatabaseReport:
    source: str
    name: str
    dialect: str
    schema_name: str
    tables: int
    rows: int
    ddl: str
    files: dict[str, str]  # path under the normalized folder -> sha256
    decisions: list[dict]
    load: LoadReport | None = None
    not_run: str = ""  # why the database was not loaded in this dialect
    equivalence: list = field(default_factory=list)  # spider.gold.EquivalenceResult, one per gold query
    spider2_tasks: list = field(default_factory=list)  # spider.spider2_tasks.Spider2Task of its questions
    static_problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        return partition_key(self.source, self.name)

    def equivalence_counts(self, split: str | None = None) -> dict:
        return summarize_equivalence([r for r in self.equivalence if split is None or r.query.split == split])


def reports_of(inputs: SpiderInputs, stored: dict[str, DatabaseReport], dialect: str) -> dict[str, DatabaseReport]:
    """This dataset's reports by database, from one dialect's reports keyed by partition; a missing one
    means its partition never ran."""
    absent = [key for key in inputs.partition_keys() if key not in stored]
    if absent:
        raise LookupError(
            f"no normalized_databases_{dialect} result for {len(absent)} database(s), e.g. "
            f"{absent[:3]}: materialize those partitions first"
        )
    return {name: stored[partition_key(inputs.source, name)] for name in sorted(inputs.databases)}


def read_source(inputs: SpiderInputs, name: str, row_cap: int | None = None) -> SourceDatabase:
    if inputs.source == "spider1":
        path = inputs.databases[name]
        return read_sqlite(path, "spider1", name, f"spider/database/{name}/{path.name}", row_cap)
    from plbench.spider.spider2 import DATABASES_DIR, read_database

    dialect, folder = name.split(".", 1)
    return read_database(inputs.databases[name], dialect, name, str(DATABASES_DIR / dialect / folder))


def load_source(config: BuildConfig, inputs: SpiderInputs, name: str) -> SourceDatabase:
    """The source database, read once for both dialects' partitions: the first to run keeps what it read
    in the cache (valid while the dataset's raw checksums and the row cap are unchanged)."""
    path = config.cache_dir / "sources" / inputs.source / f"{name}.pkl"
    key = hashlib.sha256(json.dumps([inputs.inputs, config.spider_row_cap], sort_keys=True).encode()).hexdigest()
    if path.exists():
        cached_key, source = pickle.loads(path.read_bytes())
        if cached_key == key:
            return source
    source = read_source(inputs, name, config.spider_row_cap)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps((key, source)))
    tmp.replace(path)
    return source


def spider2_questions_of(inputs: SpiderInputs, name: str) -> list[dict]:
    from plbench.spider.spider2_tasks import question_dialect

    return [q for q in inputs.questions if f"{question_dialect(q['instance_id'])}.{q['resolved']}" == name]


def oracle_static_problems(db: NormalizedDatabase) -> list[str]:
    """Server-free checks of Oracle DDL: it parses in sqlglot's Oracle dialect, names fit 128 bytes."""
    problems = []
    limit = DIALECTS["oracle"].max_identifier_bytes
    for statement in db.create_statements + db.constraint_statements:
        # sqlglot reads `... ENABLE NOVALIDATE` only as an opaque Command: check the rest as a real ALTER.
        text = statement.removesuffix(" ENABLE NOVALIDATE;")
        try:
            parsed = sqlglot.parse_one(text, read="oracle")
        except sqlglot.errors.ParseError as exc:
            problems.append(f"does not parse as Oracle: {statement[:80]}: {str(exc)[:200]}")
            continue
        if isinstance(parsed, sqlglot.exp.Command):
            problems.append(f"parses only as an opaque command in sqlglot's Oracle dialect: {statement[:80]}")
    names = [t.target.name for t in db.tables] + [c.target.name for t in db.tables for c in t.columns]
    problems += [f"identifier over {limit} bytes: {n}" for n in names if len(n.encode()) > limit]
    return problems


def normalize_database(
    config: BuildConfig, inputs: SpiderInputs, name: str, engine: Engine | NotConfigured
) -> DatabaseReport:
    """Emit, load and verify one database in the engine's dialect.

    Without a configured engine (`NotConfigured`, which says why), the database is emitted and, for
    Oracle, checked without a server only.
    """
    dialect = engine.dialect
    start = time.perf_counter()
    source = load_source(config, inputs, name)
    db = normalize(source, dialect)
    files = write_files(db, config.normalized_dir)
    report = DatabaseReport(
        source.source,
        name,
        dialect,
        db.schema_name,
        len(db.tables),
        source.row_count(),
        db.ddl_text(),
        files,
        db.decisions,
    )
    if dialect == "oracle":
        report.static_problems = oracle_static_problems(db)
    if isinstance(engine, NotConfigured):
        report.not_run = engine.reason
    elif dialect == "postgres":
        _load_and_check_postgres(config, inputs, name, source, db, engine, report)
    else:
        with engine.session() as session:
            report.load = load_oracle(session, db)
            if report.load.loaded and inputs.source == "spider1":
                report.equivalence = check_database(
                    inputs.databases[name],
                    normalize(source, "postgres"),
                    _queries_of(inputs, name),
                    session,
                    oracle=db,
                    target="oracle",
                )
    report.seconds = time.perf_counter() - start
    return report


def _load_and_check_postgres(
    config: BuildConfig,
    inputs: SpiderInputs,
    name: str,
    source: SourceDatabase,
    db: NormalizedDatabase,
    engine: PostgresEngine,
    report: DatabaseReport,
) -> None:
    with engine.connection() as conn:
        report.load = load_postgres(conn, db)
        if inputs.source == "spider2_lite":
            from plbench.spider.spider2_tasks import database_tasks

            report.spider2_tasks = database_tasks(
                raw_root(config), spider2_questions_of(inputs, name), source, db, conn if report.load.loaded else None
            )
    if report.load.loaded and inputs.source == "spider1":
        with engine.session(reads=(db.schema_name,)) as session:
            report.equivalence = check_database(inputs.databases[name], db, _queries_of(inputs, name), session)
        report.files.update(write_gold_files(config, db, report.equivalence))


def write_gold_files(config: BuildConfig, db: NormalizedDatabase, results: list) -> dict[str, str]:
    """gold_queries.sql per dialect beside the DDL: every gold query as transpiled (or why it is not)."""
    sums = {}
    for dialect, attr in (("postgres", "postgres_sql"), ("oracle", "oracle_sql")):
        parts = []
        for r in results:
            text = getattr(r, attr)
            head = f"-- {r.query.split} {r.query.source_id}: {r.cls}"
            why = " ".join((r.oracle_error if dialect == "oracle" else r.detail).split())  # one comment line
            parts.append(f"{head}\n{text.rstrip().rstrip(';')};\n" if text else f"{head}; not transpiled: {why}\n")
        path = config.normalized_dir / db.source / db.name / dialect / "gold_queries.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(parts)
        path.write_text(text, encoding="utf-8")
        sums[str(path.relative_to(config.normalized_dir))] = hashlib.sha256(text.encode()).hexdigest()
    return sums


def _queries_of(inputs: SpiderInputs, name: str) -> list[GoldQuery]:
    if inputs.source != "spider1":
        return []
    return [q for q in inputs.questions + inputs.extra_queries if q.db_id == name]


# ---- Spider-PLSQL tasks ------------------------------------------------------------------------

SPIDER_CONSTRUCTS = ("anonymous_block", "cursor_for_loop")
SPIDER_CROSSCHECK = "the crosscheck stage covers MBPP tasks"
SCAFFOLDS = {
    "postgres": "DO $$\nBEGIN\n  -- RAISE NOTICE '%', <one result row, fields separated by commas>;\nEND\n$$;",
    "oracle": "BEGIN\n  -- DBMS_OUTPUT.PUT_LINE(<one result row, fields separated by commas>);\n  NULL;\nEND;\n/",
}


@dataclass
class SpiderTasks:
    """Task rows (release schema) per dialect, and the questions each dialect did not release."""

    subset: str
    rows: list[TaskRow] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    validation: dict[str, dict] = field(default_factory=dict)  # dialect -> replay counts for the manifest
    seconds: float = 0.0


def _equivalence_by_query(reports: dict[str, DatabaseReport]) -> dict[tuple[str, str], object]:
    return {(r.query.split, r.query.source_id): r for rep in reports.values() for r in rep.equivalence}


def build_spider_plsql(
    config: BuildConfig,
    inputs: SpiderInputs,
    pg: dict[str, DatabaseReport],
    oracle: dict[str, DatabaseReport],
    engine: PostgresEngine,
    oracle_engine: Engine | NotConfigured,
) -> SpiderTasks:
    """A task per dev question and dialect whose reference block reproduces the gold output on PostgreSQL
    (and, with an Oracle server, on Oracle too)."""
    start = time.perf_counter()
    out = SpiderTasks(inputs.subset)
    equivalence = _equivalence_by_query(pg)
    passed = 0
    for name in sorted({q.db_id for q in inputs.questions}):
        questions = [q for q in inputs.questions if q.db_id == name]
        with (
            contextlib.closing(connect_readonly(inputs.databases[name])) as source,
            engine.session(reads=(pg[name].schema_name,)) as session,
        ):
            for q in questions:
                try:
                    rows, rejections = _question_rows(
                        q,
                        source,
                        session,
                        pg[name],
                        oracle.get(name),
                        equivalence.get(("dev", q.source_id)),
                        engine.version(),
                    )
                except TaskBuildError as exc:
                    out.rejections.append(
                        Rejection(inputs.subset, q.source_id, "spider_tasks", exc.reason_code, exc.detail[:1000])
                    )
                    continue
                out.rows += rows
                out.rejections += [
                    Rejection(inputs.subset, q.source_id, "spider_tasks", code, detail[:1000], dialect=dialect)
                    for dialect, code, detail in rejections
                ]
                passed += 1
    out.validation = {
        "postgres": {
            "ran": True,
            "engine": engine.version(),
            "passed": passed,
            "failed": len(inputs.questions) - passed,
        },
        "oracle": _validate_on_oracle(config, inputs, out, oracle_engine),
    }
    out.seconds = time.perf_counter() - start
    return out


def _validate_on_oracle(
    config: BuildConfig, inputs: SpiderInputs, out: SpiderTasks, engine: Engine | NotConfigured
) -> dict:
    """With an Oracle server: load each database there and run every Oracle row's reference block; a row
    that does not print its reference output is rejected for Oracle. Without one, the rows stay not_run."""
    if isinstance(engine, NotConfigured):
        return {"ran": False, "reason": engine.reason}
    failed, passed = set(), {}
    rows = [r for r in out.rows if r.dialect == "oracle"]
    for name in sorted({r.database for r in rows}):
        with engine.session() as session:
            load = load_oracle(session, normalize(load_source(config, inputs, name), "oracle"))
            for row in (r for r in rows if r.database == name):
                why = _oracle_verdict(session, row) if load.verified else f"{name} did not load: {load.error}"
                if why:
                    failed.add(row.task_id)
                    out.rejections.append(
                        Rejection(
                            inputs.subset,
                            row.source_id,
                            "spider_tasks",
                            "oracle_reference_failed",
                            why[:1000],
                            dialect="oracle",
                        )
                    )
                else:
                    passed[row.key] = row.with_(
                        replay_status="passed", replay_engine=engine.version(), replay_detail=None
                    )
    out.rows = [passed.get(r.key, r) for r in out.rows if not (r.dialect == "oracle" and r.task_id in failed)]
    return {"ran": True, "engine": engine.version(), "passed": len(rows) - len(failed), "failed": len(failed)}


def _oracle_verdict(session, row: TaskRow) -> str:
    """Why the row's Oracle reference block does not print its reference output ('' when it does)."""
    expected = json.loads(row.test_cases)
    printed = session.execute(row.reference_code)
    if not printed.ok:
        return f"{printed.error.code}: {printed.error.message}" if printed.error else "timed out"
    if outputs_match(ReferenceOutput(tuple(expected["expected_lines"]), expected["ordered"]), printed.lines):
        return ""
    return f"expected {expected['expected_lines'][:5]}, printed {printed.lines[:5]}"


def _question_rows(
    q: GoldQuery, source, session, pg: DatabaseReport, oracle: DatabaseReport | None, equivalence, engine_version: str
) -> tuple[list[TaskRow], list[tuple[str, str, str]]]:
    """The question's rows, and (dialect, reason, detail) for a dialect that does not release it.

    Raises TaskBuildError when no dialect can release it (the PostgreSQL reference fails)."""
    if not pg.load or not pg.load.verified:
        raise TaskBuildError("database_not_loaded", f"{q.db_id}: {pg.load.error if pg.load else pg.not_run}")
    if equivalence is None or equivalence.cls != "identical":
        outcome = equivalence.cls if equivalence else "not_checked"
        raise TaskBuildError(f"gold_{outcome}", f"{q.sql} -> {getattr(equivalence, 'detail', '')}")
    reference = reference_output(source, q.sql)
    pg_sql = equivalence.postgres_sql
    described = session.query(pg_sql)
    if not described.ok:
        raise TaskBuildError("gold_fails_on_postgres", f"{described.error}")
    kinds = output_kinds(described)
    pg_block = postgres_reference_block(pg_sql, kinds)
    printed = session.execute(pg_block)
    if not printed.ok:
        raise TaskBuildError("reference_block_failed", f"{printed.error}")
    if not outputs_match(reference, printed.lines):
        raise TaskBuildError(
            "reference_output_mismatch", f"expected {list(reference.lines)[:5]}, printed {printed.lines[:5]}"
        )
    rows = [_task_row(q, "postgres", pg, pg_block, reference, "passed", engine_version, "")]
    ora_sql = equivalence.oracle_sql
    if not ora_sql or oracle is None:
        return rows, [("oracle", "oracle_transpile_failed", equivalence.oracle_error or "no Oracle report")]
    try:
        ora_block = oracle_reference_block(ora_sql, kinds, oracle.ddl)
    except (TaskBuildError, sqlglot.errors.ParseError) as exc:
        return rows, [("oracle", "oracle_static_check_failed", str(exc))]
    problems = check_block_structure(ora_block)
    if problems:
        return rows, [("oracle", "oracle_static_check_failed", "; ".join(problems))]
    rows.append(_task_row(q, "oracle", oracle, ora_block, reference, "not_run", None, oracle.not_run))
    return rows, []


def _task_row(
    q: GoldQuery,
    dialect: str,
    db: DatabaseReport,
    block: str,
    reference: ReferenceOutput,
    status: str,
    engine: str | None,
    detail: str,
) -> TaskRow:
    expected = {"expected_lines": list(reference.lines), "ordered": reference.ordered}
    return TaskRow(
        task_id=f"spider_plsql/{q.source_id}",
        subset="spider_plsql",
        dialect=dialect,
        source_dataset="Spider 1.0 dev",
        source_id=q.source_id,
        database=q.db_id,
        prompt=prompt(q.question, q.db_id, dialect, db.ddl, reference.ordered),
        scaffold=SCAFFOLDS[dialect],
        reference_code=block,
        test_cases=json.dumps(expected, ensure_ascii=False),
        comparison=json.dumps({"ordered": reference.ordered, "output_format": "plbench.spider.output_format"}),
        plsql_constructs=SPIDER_CONSTRUCTS,
        replay_status=status,
        replay_engine=engine,
        replay_detail=detail or None,
        crosscheck_detail=SPIDER_CROSSCHECK,
    )


# ---- Spider 2.0-Lite task rows -----------------------------------------------------------------

MAX_PROMPT_SCHEMA_BYTES = 64 * 1024  # larger schemas (hundreds of date shards) are listed by table name

SPIDER2_NOT_RUN = (
    "only sample rows of the source database are available, so no block can reproduce the "
    "official result on them; the reference output is the official result file"
)


def build_spider2(
    config: BuildConfig, inputs: SpiderInputs, pg: dict[str, DatabaseReport], oracle: dict[str, DatabaseReport]
) -> SpiderTasks:
    """A row per Spider 2.0-Lite question with gold SQL and dialect whose gold transpiles (and, for Oracle,
    parses), with tables/columns required and the official result; recorded as not_run (see SPIDER2_NOT_RUN)."""
    from plbench.spider.spider2_tasks import read_reference_results

    start = time.perf_counter()
    out = SpiderTasks(inputs.subset)
    results = read_reference_results(raw_root(config))
    for name in sorted(pg):
        load = pg[name].load
        if not (load and load.verified):
            out.rejections += [
                Rejection(
                    "spider2",
                    t.instance_id,
                    "spider2_tasks",
                    "database_not_loaded",
                    f"{name}: {load.error if load else pg[name].not_run}"[:1000],
                )
                for t in pg[name].spider2_tasks
            ]
            continue
        for task in pg[name].spider2_tasks:
            task.reference_results = results.get(task.instance_id, {})
            rows, rejections = _spider2_rows(task, pg[name], oracle.get(name))
            out.rows += rows
            out.rejections += rejections
    on_samples = [t for rep in pg.values() for t in rep.spider2_tasks if t.executes_on_samples is not None]
    reason = (
        f"{SPIDER2_NOT_RUN}; the transpiled gold ran without error on the samples for "
        f"{sum(t.executes_on_samples for t in on_samples)} of {len(on_samples)} questions"
    )
    out.validation = {"postgres": {"ran": False, "reason": reason}, "oracle": {"ran": False, "reason": reason}}
    out.seconds = time.perf_counter() - start
    return out


def _spider2_rows(task, pg: DatabaseReport, oracle: DatabaseReport | None) -> tuple[list[TaskRow], list[Rejection]]:
    def reject(code: str, detail: str, dialect: str | None = None) -> Rejection:
        return Rejection("spider2", task.instance_id, "spider2_tasks", code, detail[:1000], dialect=dialect)

    if not task.gold_postgres:
        return [], [reject("gold_transpile_failed", task.transpile_error or "no PostgreSQL text")]
    if not task.reference_results:
        return [], [reject("no_reference_result", "no result file in exec_result.tar.gz (over 4 MiB upstream)")]
    rows = [_spider2_row(task, "postgres", pg, _spider2_reference(task, "postgres"))]
    if oracle is None or not task.oracle_parses:
        return rows, [
            reject("oracle_transpile_failed", task.transpile_error or "the Oracle text does not parse", "oracle")
        ]
    return rows + [_spider2_row(task, "oracle", oracle, _spider2_reference(task, "oracle"))], []


def _spider2_reference(task, dialect: str) -> str:
    """The cursor-loop block over the gold when the gold is one query whose output types are known (it
    ran on the samples); otherwise the transpiled gold itself."""
    gold = task.gold_postgres if dialect == "postgres" else task.gold_oracle
    if not task.output_types or ";\n" in gold:
        return gold
    kinds = [type_class(t) for t in task.output_types]
    try:
        return postgres_reference_block(gold, kinds) if dialect == "postgres" else oracle_reference_block(gold, kinds)
    except (TaskBuildError, sqlglot.errors.SqlglotError):
        return gold


def _prompt_schema(ddl: str, report: DatabaseReport) -> str:
    if len(ddl.encode()) <= MAX_PROMPT_SCHEMA_BYTES:
        return ddl
    names = re.findall(r"^CREATE TABLE (\S+)", ddl, re.M)
    return (
        f"-- {report.tables} tables; the full DDL is the `ddl` of database {report.name} in databases.parquet\n"
        + "\n".join(f"-- {n}" for n in names)
    )


def _spider2_row(task, dialect: str, db: DatabaseReport, gold: str) -> TaskRow:
    question = task.question.strip()
    if task.external_knowledge:
        question += f"\n\nExternal knowledge ({task.external_knowledge_file}):\n{task.external_knowledge.strip()}"
    ordered = _gold_ordered(gold, dialect)
    executed = (
        "not run"
        if task.executes_on_samples is None
        else "yes"
        if task.executes_on_samples
        else f"no ({task.sqlstate}: {task.execution_error})"
    )
    return TaskRow(
        task_id=f"spider2/{task.instance_id}",
        subset="spider2",
        dialect=dialect,
        source_dataset=f"Spider 2.0-Lite ({task.source_dialect})",
        source_id=task.instance_id,
        database=db.name,
        prompt=prompt(question, db.name, dialect, _prompt_schema(db.ddl, db), ordered),
        scaffold=SCAFFOLDS[dialect],
        reference_code=gold,
        test_cases=json.dumps({"reference_results": task.reference_results, "ordered": ordered}, ensure_ascii=False),
        comparison=json.dumps({"ordered": ordered, "output_format": "official Spider 2.0 result CSV"}),
        plsql_constructs=SPIDER_CONSTRUCTS,
        **_required_in_target_names(task, db),
        replay_status="not_run",
        replay_detail=f"{SPIDER2_NOT_RUN}; the transpiled gold on the samples ran without error: {executed}",
        crosscheck_detail=SPIDER_CROSSCHECK,
        notes=tuple(
            [f"unresolved name: {n}" for n in task.unresolved]
            + ([f"transpile: {task.transpile_error}"] if task.transpile_error else [])
        ),
    )


def _required_in_target_names(task, db: DatabaseReport) -> dict:
    """tables_required / columns_required as the dialect's schema names them (what the prompt shows and the
    reference code reads); a name with no table behind it (a wildcard such as `events_*`) stays as given."""
    origin = {d["fullname"].lower(): d["table"] for d in db.decisions if d.get("decision") == "table_origin"}
    targets = {d["table"]: d["target_table"] for d in db.decisions if "target_table" in d}
    columns = {(d["table"], d["column"].lower()): d["target_name"] for d in db.decisions if "target_table" in d}

    def table(name: str) -> tuple[str | None, str]:
        source = origin.get(name.lower())
        return source, targets.get(source, name)

    def column(name: str) -> str:
        full, _, col = name.rpartition(".")
        source, target = table(full)
        return f"{target}.{columns.get((source, col.lower()), col)}"

    return {
        "tables_required": tuple(sorted({table(t)[1] for t in task.tables_required})),
        "columns_required": tuple(sorted({column(c) for c in task.columns_required})),
    }


def _gold_ordered(gold: str, dialect: str) -> bool:
    try:
        trees = sqlglot.parse(gold, read=dialect)
    except sqlglot.errors.SqlglotError:
        return False
    return bool(trees) and trees[-1] is not None and trees[-1].args.get("order") is not None
