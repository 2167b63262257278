"""Spider 2.0-Lite task rows: a row per question with gold SQL and dialect whose gold transpiles (and,
for Oracle, parses), with the tables and columns it reads and the official result."""

from __future__ import annotations

import functools
import json
import re
import time

import sqlglot

from plbench.config import BuildConfig
from plbench.dialects import DIALECTS
from plbench.normalize.emit import DecisionsFile, decisions_with
from plbench.records import Rejection
from plbench.spider.output_format import type_class
from plbench.spider.plsql_tasks import (
    GOLD_ONLY_CONSTRUCTS,
    SCAFFOLDS,
    SPIDER_CONSTRUCTS,
    SPIDER_CROSSCHECK,
    SpiderTasks,
)
from plbench.spider.stages import DatabaseReport, SpiderInputs, raw_root
from plbench.spider.tasks import TaskBuildError, prompt, reference_block
from plbench.taskrow import TaskRow

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
    # Whether row order is part of the answer is the gold's, asked once: the reference may be a block
    # looping over the gold, in which the gold's ORDER BY sits below what a parse of the block sees.
    ordered = _gold_ordered(task.gold_postgres)
    rows = [_spider2_row(task, "postgres", pg, ordered, *_spider2_reference(task, "postgres"))]
    if oracle is None or not task.oracle_parses:
        return rows, [
            reject("oracle_transpile_failed", task.transpile_error or "the Oracle text does not parse", "oracle")
        ]
    return rows + [_spider2_row(task, "oracle", oracle, ordered, *_spider2_reference(task, "oracle"))], []


def _spider2_reference(task, dialect: str) -> tuple[str, tuple[str, ...]]:
    """The cursor-loop block over the gold when the gold is one query whose output types are known (it
    ran on the samples); otherwise the transpiled gold itself, whose row claims only the scaffold's
    anonymous block. With the constructs the reference shows."""
    gold = getattr(task, f"gold_{dialect}")  # Spider2Task.gold_postgres / gold_oracle
    if not task.output_types or ";\n" in gold:
        return gold, GOLD_ONLY_CONSTRUCTS
    kinds = [type_class(t) for t in task.output_types]
    try:
        return reference_block(dialect, gold, kinds), SPIDER_CONSTRUCTS
    except (TaskBuildError, sqlglot.errors.SqlglotError):
        return gold, GOLD_ONLY_CONSTRUCTS


def _prompt_schema(ddl: str, report: DatabaseReport) -> str:
    if len(ddl.encode()) <= MAX_PROMPT_SCHEMA_BYTES:
        return ddl
    names = re.findall(r"^CREATE TABLE (\S+)", ddl, re.M)
    return (
        f"-- {report.tables} tables; the full DDL is the `ddl` of database {report.name} in databases.parquet\n"
        + "\n".join(f"-- {n}" for n in names)
    )


def _spider2_row(
    task, dialect: str, db: DatabaseReport, ordered: bool, gold: str, constructs: tuple[str, ...]
) -> TaskRow:
    question = task.question.strip()
    if task.external_knowledge:
        question += f"\n\nExternal knowledge ({task.external_knowledge_file}):\n{task.external_knowledge.strip()}"
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
        plsql_constructs=constructs,
        **_required_in_target_names(task, db),
        replay_status="not_run",
        replay_detail=f"{SPIDER2_NOT_RUN}; the transpiled gold on the samples ran without error: {executed}",
        crosscheck_detail=SPIDER_CROSSCHECK,
        notes=tuple(
            [f"unresolved name: {n}" for n in task.unresolved]
            + ([f"transpile: {task.transpile_error}"] if task.transpile_error else [])
        ),
    )


class _TargetNames:
    """A database's names as its decisions give them: a table's full name -> its target table and (column ->
    target column). A table's decisions are decoded when a question first names it: the decisions run to
    tens of MB on a wide schema (one a column), and its questions read a few tables."""

    def __init__(self, decisions: DecisionsFile):
        self.lines = decisions.lines()
        origins = decisions_with(self.lines, "decision", "table_origin")
        self.origin = {d["fullname"].lower(): d["table"] for d in origins}
        self.tables: dict[str, tuple[str | None, dict[str, str]]] = {}

    def of(self, fullname: str) -> tuple[str | None, dict[str, str]]:
        """(target table, column -> target column); (None, {}) for a name with no table behind it."""
        source = self.origin.get(fullname.lower())
        if source is None:
            return None, {}
        if source not in self.tables:
            columns = [d for d in decisions_with(self.lines, "table", source) if "target_table" in d]
            target = columns[0]["target_table"] if columns else None
            self.tables[source] = target, {d["column"].lower(): d["target_name"] for d in columns}
        return self.tables[source]


@functools.lru_cache(maxsize=2)  # the rows are built database by database, in both dialects
def _target_names(decisions: DecisionsFile) -> _TargetNames:
    return _TargetNames(decisions)


def _required_in_target_names(task, db: DatabaseReport) -> dict:
    """tables_required / columns_required as the dialect's schema names them (what the prompt shows and the
    reference code reads); a name with no table behind it (a wildcard such as `events_*`) stays as given."""
    names = _target_names(db.decisions)

    def column(name: str) -> str:
        full, _, col = name.rpartition(".")
        target, columns = names.of(full)
        return f"{target or full}.{columns.get(col.lower(), col)}"

    return {
        "tables_required": tuple(sorted({names.of(t)[0] or t for t in task.tables_required})),
        "columns_required": tuple(sorted({column(c) for c in task.columns_required})),
    }


def _gold_ordered(gold: str) -> bool:
    """Whether the gold's last statement sorts its result (its PostgreSQL text, which every kept question has)."""
    try:
        trees = sqlglot.parse(gold, read=DIALECTS["postgres"].sqlglot_name)
    except sqlglot.errors.SqlglotError:
        return False
    return bool(trees) and trees[-1] is not None and trees[-1].args.get("order") is not None
