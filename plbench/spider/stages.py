"""The Spider stages as plain functions: raw files → normalized, loaded, verified databases.

The task rows are built from the databases' reports by plsql_tasks (Spider-PLSQL) and
spider2_rows (Spider 2.0-Lite).

`normalize_database` is the work of one `normalized_databases_<dialect>` partition (one database
in one dialect): it emits the DDL and data files, loads PostgreSQL, verifies row counts and
checksums, and runs the gold-query equivalence. Its `DatabaseReport` is the partition's value,
which Dagster stores and hands to the task stages whichever run produced it.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import multiprocessing.util
import os
import pickle
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from plbench.child_process import spawn_context
from plbench.collector import collector_paused
from plbench.config import BuildConfig, NotConfigured
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_database_ddl
from plbench.engines.base import Engine
from plbench.engines.postgres import PostgresEngine
from plbench.normalize.emit import DecisionsFile, NormalizedDatabase, normalize, write_files
from plbench.normalize.load import LoadReport, load_oracle, load_postgres
from plbench.normalize.schema import SourceDatabase
from plbench.normalize.sqlite_source import read_sqlite
from plbench.raw_sources import CATALOG, resolve
from plbench.records import Rejection
from plbench.spider.gold import GoldQuery, check_database, read_spider_dev, read_train_gold
from plbench.spider.gold import summarize as summarize_equivalence


@dataclass(kw_only=True)
class SpiderInputs:
    """One Spider dataset's verified raw files, read: its databases, and (in the subclasses) the
    questions its tasks are built from."""

    subset: str  # release subset: "spider_plsql" | "spider2"
    source: str  # raw dataset: "spider1" | "spider2_lite"
    databases: dict[str, Path]  # database -> its SQLite file (spider1) or description folder (spider2)
    missing: dict[str, str] = field(default_factory=dict)  # database named by the dataset but not loadable -> why
    rejections: list[Rejection] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)  # relative raw path -> sha256

    @property
    def input_count(self) -> int:
        return len(self.questions) + sum(1 for r in self.rejections if r.level == "task")

    def partition_keys(self) -> list[str]:
        return [partition_key(self.source, name) for name in sorted(self.databases)]


@dataclass(kw_only=True)
class Spider1Inputs(SpiderInputs):
    questions: list[GoldQuery]  # the dev questions tasks are built from
    train_queries: list[GoldQuery] = field(default_factory=list)  # gold queries used for verification only

    def read(self, name: str, row_cap: int | None) -> SourceDatabase:
        path = self.databases[name]
        return read_sqlite(path, "spider1", name, f"spider/database/{name}/{path.name}", row_cap)

    def gold_queries(self, name: str) -> list[GoldQuery]:
        """Every gold query on the database (dev and train), checked for equivalence on the target."""
        return [q for q in self.questions + self.train_queries if q.db_id == name]


@dataclass(kw_only=True)
class Spider2Inputs(SpiderInputs):
    questions: list  # spider2_tasks.Spider2Question: gold SQL and a schema description

    def read(self, name: str, row_cap: int | None) -> SourceDatabase:
        from plbench.spider.spider2 import DATABASES_DIR, read_database

        dialect, folder = name.split(".", 1)
        return read_database(self.databases[name], dialect, name, str(DATABASES_DIR / dialect / folder))

    def gold_queries(self, name: str) -> list[GoldQuery]:
        return []  # no data behind the samples to compare results on

    def questions_of(self, name: str) -> list:
        return [q for q in self.questions if q.database == name]


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


def ingest_spider1(config: BuildConfig) -> Spider1Inputs:
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
    return Spider1Inputs(
        subset="spider_plsql",
        source="spider1",
        databases=databases,
        missing=missing,
        questions=questions,
        train_queries=train,
        rejections=rejections,
        inputs=dict(sorted(inputs.items())),
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


def ingest_spider2(config: BuildConfig) -> Spider2Inputs:
    """Spider 2.0-Lite: every schema description (databases named `<source dialect>.<folder>`, since
    BigQuery and Snowflake share ten names) and the questions that have gold SQL."""
    from plbench.spider.spider2_tasks import select_questions

    databases = _spider2_databases(config)
    questions, rejections = select_questions(raw_root(config), {tuple(key.split(".", 1)): None for key in databases})
    inputs = {s.relative_path: s.sha256 for s in (config.catalog or CATALOG)["spider2_lite"]}
    return Spider2Inputs(
        subset="spider2",
        source="spider2_lite",
        databases=databases,
        questions=questions,
        rejections=rejections,
        inputs=dict(sorted(inputs.items())),
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
    decisions: DecisionsFile  # every mapping decision, in its file (hundreds of MB over the mirror)
    decision_counts: dict[str, int]  # decisions by kind (or column rule)
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


def load_source(config: BuildConfig, inputs: SpiderInputs, name: str) -> SourceDatabase:
    """The source database, read once for both dialects' partitions: the first to run keeps what it read
    in the cache (valid while the dataset's raw checksums and the row cap are unchanged). Both dialects' stages
    can run at once (pipelines/step_threads.py), so each writer has a temporary file of its own."""
    path = config.cache_dir / "sources" / inputs.source / f"{name}.pkl"
    key = hashlib.sha256(json.dumps([inputs.inputs, config.spider_row_cap], sort_keys=True).encode()).hexdigest()
    if path.exists():
        cached_key, source = pickle.loads(path.read_bytes())
        if cached_key == key:
            return source
    source = inputs.read(name, config.spider_row_cap)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
    tmp.write_bytes(pickle.dumps((key, source)))
    tmp.replace(path)
    return source


@collector_paused()
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
    decisions = next(path for path in files if path.endswith("/decisions.json"))
    report = DatabaseReport(
        source.source,
        name,
        dialect,
        db.schema_name,
        len(db.tables),
        source.row_count(),
        db.ddl_text(),
        files,
        DecisionsFile(str(config.normalized_dir / decisions), files[decisions]),
        dict(Counter(d.get("decision", d.get("rule", "")) for d in db.decisions)),
    )
    if DIALECTS[dialect].checked_statically:
        report.static_problems = check_database_ddl(DIALECTS[dialect], db)
    if isinstance(engine, NotConfigured):
        report.not_run = engine.reason
    elif isinstance(engine, PostgresEngine):
        _load_and_check_postgres(config, inputs, name, source, db, engine, report)
    else:
        with engine.session() as session:
            report.load = load_oracle(session, db)
            if report.load.loaded and inputs.source == "spider1":
                report.equivalence = check_database(
                    inputs.databases[name],
                    normalize(source, "postgres"),
                    inputs.gold_queries(name),
                    session,
                    oracle=db,
                    target="oracle",
                )
    report.seconds = time.perf_counter() - start
    return report


def normalize_databases(
    config: BuildConfig, inputs: dict[str, SpiderInputs], keys: list[str], engine: Engine | NotConfigured
) -> Iterator[tuple[str, DatabaseReport]]:
    """`normalize_database` of every partition key (`<source>.<database>`), in order.

    Without an engine (Oracle with no server: emission and static checks only) and on PostgreSQL, in
    `config.workers` processes: a database's work is mostly Python (reading, emitting, transpiling gold
    queries, checksums), which threads of one process take turns at; each PostgreSQL worker has an engine
    of its own on the same server (`PostgresEngine.__reduce__`). Where no process can be started (this
    one is a daemon), PostgreSQL's databases run on threads, one's Python beside another's server work;
    otherwise, and with another engine, one at a time."""

    def one(key: str) -> DatabaseReport:
        source, name = split_partition_key(key)
        return normalize_database(config, inputs[source], name, engine)

    pooled = config.workers > 1 and len(keys) > 1
    spawn = spawn_context()
    if pooled and isinstance(engine, NotConfigured | PostgresEngine) and spawn is not None:
        with ProcessPoolExecutor(config.workers, spawn, _set_worker_inputs, (config, inputs, engine)) as pool:
            yield from zip(keys, pool.map(_normalize_in_worker, keys))
    elif pooled and isinstance(engine, PostgresEngine):
        with ThreadPoolExecutor(config.workers, thread_name_prefix="plbench-normalize") as threads:
            yield from zip(keys, threads.map(one, keys))
    else:
        for key in keys:
            yield key, one(key)


_worker_inputs: tuple = ()  # (config, inputs, engine) in a worker process of normalize_databases


def _set_worker_inputs(config: BuildConfig, inputs: dict[str, SpiderInputs], engine: Engine | NotConfigured) -> None:
    global _worker_inputs
    _worker_inputs = config, inputs, engine
    if isinstance(engine, PostgresEngine):  # its connections end with the worker, not cut off by its exit
        multiprocessing.util.Finalize(None, engine.close, exitpriority=10)


def _normalize_in_worker(key: str) -> DatabaseReport:
    config, inputs, engine = _worker_inputs
    source, name = split_partition_key(key)
    return normalize_database(config, inputs[source], name, engine)


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
                raw_root(config), inputs.questions_of(name), source, db, conn if report.load.loaded else None
            )
    if report.load.loaded and inputs.source == "spider1":
        with engine.session(reads=(db.schema_name,)) as session:
            report.equivalence = check_database(inputs.databases[name], db, inputs.gold_queries(name), session)
        report.files.update(write_gold_files(config, db, report.equivalence))


def write_gold_files(config: BuildConfig, db: NormalizedDatabase, results: list) -> dict[str, str]:
    """gold_queries.sql per dialect beside the DDL: every gold query as transpiled (or why it is not)."""
    sums = {}
    for target in ("postgres", "oracle"):
        parts = []
        for r in results:
            text = r.texts.get(target)
            head = f"-- {r.query.split} {r.query.source_id}: {r.cls}"
            why = " ".join(r.untranslated.get(target, "").split())  # one comment line
            parts.append(f"{head}\n{text.rstrip().rstrip(';')};\n" if text else f"{head}; not transpiled: {why}\n")
        path = config.normalized_dir / db.source / db.name / target / "gold_queries.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(parts)
        path.write_text(text, encoding="utf-8")
        sums[str(path.relative_to(config.normalized_dir))] = hashlib.sha256(text.encode()).hexdigest()
    return sums
